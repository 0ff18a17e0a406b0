"""Shipping the programme branch: `finish --pr` through GitHub's `gh`, and the optional pre-push hook.

`finish` pushes (`git.upstream.push_branch`); this module adds what goes around it. The pull request
is opened only by a `gh` that is installed and logged in, checked before `finish` touches anything,
so a refusal names the reason and changes nothing. The hook (`lanes-tui init --hooks`) is a short
shell script that runs `python -m lanes_tui.engine.decisions.shipping` with the interpreter that
installed it: a push of the programme branch runs the configured gates in the lead's checkout first,
and a failing gate stops the push (`git push --no-verify` skips it, as for any hook).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

from lanes_tui.engine.config.settings import Config, load_config
from lanes_tui.engine.core.ansi import terminal_text
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.gates.run import run_gates
from lanes_tui.engine.git import worktrees
from lanes_tui.engine.git.commands import git_out, run_git
from lanes_tui.engine.git.harden import common_dir

GH_TIMEOUT_S = 60.0
#: The first lines of the hook `init --hooks` writes; `--force` is needed to replace any other file.
HOOK_MARK = "# lanes-tui pre-push hook"


def programme_branch(repo: Path, config: Config) -> str:
    """The branch lanes merge into (`lanes.target_branch`, or the branch checked out in the repository)."""
    branch = config.lanes.target_branch or worktrees.current_branch(repo)
    if not branch:
        raise LanesError("the repository has no branch checked out (detached HEAD)",
                         "check out the programme branch, or set lanes.target_branch")
    return branch


def _gh(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """gh in a session of its own (its helpers too), the whole group killed when the time is up."""
    env = {**os.environ, "GH_PROMPT_DISABLED": "1", "NO_COLOR": "1"}
    try:
        proc = subprocess.Popen(["gh", *args], cwd=repo, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
    except FileNotFoundError as exc:
        raise LanesError("gh is not installed", "install GitHub's CLI (https://cli.github.com)") from exc
    try:
        out, err = proc.communicate(timeout=GH_TIMEOUT_S)
    except BaseException as exc:  # the deadline, or Ctrl-C: gh's group goes with it
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        if isinstance(exc, subprocess.TimeoutExpired):
            raise LanesError(f"gh {args[0]} took longer than {GH_TIMEOUT_S:.0f}s",
                             "try again, or open it by hand") from exc
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def check_gh(repo: Path) -> None:
    """Refuse `--pr` before anything is done: gh must be installed and logged in."""
    if shutil.which("gh") is None:
        raise LanesError("gh is not installed", "install GitHub's CLI (https://cli.github.com), or leave out --pr")
    if _gh(repo, "auth", "status").returncode != 0:
        raise LanesError("gh is not logged in", "run `gh auth login`, or leave out --pr")


def open_pr(repo: Path, branch: str) -> str:
    """`gh pr create --fill` for the branch; returns what gh printed (the pull request's address)."""
    proc = _gh(repo, "pr", "create", "--fill", "--head", branch)
    if proc.returncode != 0:
        why = next((line.strip() for line in proc.stderr.splitlines() if line.strip()), "(no message from gh)")
        raise LanesError(f"gh pr create failed: {why}", "open the pull request by hand, or fix what gh says")
    lines = [line.strip() for line in proc.stdout.splitlines() if line.strip()]
    return lines[-1] if lines else "(gh printed nothing)"


def hook_path(repo: Path) -> Path:
    """The pre-push hook's file, where git looks for it (`core.hooksPath` included)."""
    # `--git-path hooks` with the lead's own core.hooksPath: lanes-tui's git runs with hooks off (git.harden).
    configured = os.fsdecode(run_git(repo, "config", "--get-all", "--show-scope", "core.hooksPath", check=False).stdout)
    lead = [line.split("\t", 1)[1] for line in configured.splitlines()
            if "\t" in line and not line.startswith("command\t")]
    hooks = Path(git_out(repo, "-c", f"core.hooksPath={lead[-1]}", "rev-parse", "--git-path", "hooks")) if lead \
        else common_dir(repo) / "hooks"
    return (hooks if hooks.is_absolute() else repo / hooks) / "pre-push"


def install_pre_push(repo: Path, *, force: bool) -> Path:
    """Write the pre-push hook; an existing file is replaced only with `force`."""
    path = hook_path(repo)
    if (path.exists() or path.is_symlink()) and not force:
        raise LanesError(f"a pre-push hook already exists: {path}",
                         "keep it, or replace it with `lanes-tui init --hooks --force`")
    path.parent.mkdir(parents=True, exist_ok=True)
    text = (f"#!/bin/sh\n{HOOK_MARK} (`lanes-tui init --hooks`): a push of the programme branch runs the gates\n"
            "# first, in this checkout; `git push --no-verify` skips it.\n"
            f"exec '{_sh_quote(sys.executable)}' -m lanes_tui.engine.decisions.shipping \"$@\"\n")
    tmp = path.with_name(".pre-push.lanes-tui.tmp")
    tmp.write_text(text)
    tmp.chmod(tmp.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    tmp.replace(path)
    return path


def _sh_quote(text: str) -> str:
    return text.replace("'", "'\"'\"'")


def run_pre_push(repo: Path, refs: list[str]) -> int:
    """The hook's body: `refs` are git's stdin lines (`LOCAL_REF LOCAL_SHA REMOTE_REF REMOTE_SHA`).

    Only a push of the programme branch runs the gates, and only when the checkout's HEAD is the commit
    being pushed (the gates run in the checkout, so they must see what is pushed). Exit 1 stops the push.
    """
    config = load_config(repo)
    branch = programme_branch(repo, config)
    pushed = [line.split() for line in refs if len(line.split()) == 4]
    shas = [sha for ref, sha, _remote_ref, _remote_sha in pushed if ref == f"refs/heads/{branch}"]
    if not shas:
        return 0
    if git_out(repo, "rev-parse", "HEAD") != shas[0]:
        print(f"lanes-tui pre-push: {branch} is not checked out at the commit being pushed; the gates cannot run "
              f"on it here (check out {branch}, or `git push --no-verify`)", file=sys.stderr)
        return 1
    if not config.gates.commands:
        return 0
    print(f"lanes-tui pre-push: running the gates on {branch} before it is pushed", file=sys.stderr)
    results = asyncio.run(run_gates(repo, config.gates, env=dict(os.environ),
                                    holder={"lane": "(pre-push)", "repo": str(repo)}))
    for result in results:
        print(f"[gate] {result.command}: {result.status} (exit {result.exit_code}, {result.duration_s:.1f}s)",
              file=sys.stderr)
        if not result.passed and result.output_tail:
            print(terminal_text(result.output_tail.rstrip()), file=sys.stderr)  # the gates' output is the code's
    failed = [r.command for r in results if not r.passed]
    if failed:
        print(f"lanes-tui pre-push: push stopped, gates failed: {', '.join(failed)} "
              "(`git push --no-verify` skips the hook)", file=sys.stderr)
        return 1
    return 0


def main() -> int:
    """`python -m lanes_tui.engine.decisions.shipping`: the pre-push hook's entry point."""
    try:
        repo = worktrees.find_repo_root(Path.cwd())
        return run_pre_push(repo, sys.stdin.read().splitlines())
    except LanesError as exc:
        print(f"lanes-tui pre-push: {exc.what}" + (f" ({exc.fix})" if exc.fix else ""), file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
