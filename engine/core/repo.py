"""The one function that finds the repository a command works on, for every command.

It lives in `core` (standard library only) because `ask`, `answer` and `inbox` must not load git's
module or any third-party package, and they too must agree with the dashboard on which repository's
`.lanes/state` they read. From a linked worktree (a lead's second checkout, or a lane's own worktree
where an agent runs `lanes-tui ask`) the answer is the **main** repository: the worktree that owns
the common git dir, since that is where the lanes' state is kept.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from lanes_tui.engine.core.errors import LanesError

NOT_A_REPO_FIX = "run lanes-tui in a repository or pass --repo PATH"
#: Set by git hooks and wrappers; they would silently point our calls at another repository.
GIT_ENV_DROP = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX", "GIT_EXTERNAL_DIFF",
)
_TIMEOUT_S = 30.0
#: Set over every git lanes-tui runs, whatever the repository's config says (issue 28): an agent's
#: `git config core.fsmonitor PROG` or a hook it writes into the shared hooks folder must never run
#: as the lead. The hooks path is a file, so git finds no hook in it. `git.harden` adds the
#: lane-written filter, diff and merge drivers on top; this part needs no repository, so `ask` has it too.
GIT_FIXED_CONFIG = (("core.fsmonitor", "false"), ("core.hooksPath", os.devnull))


def with_git_config(env: dict[str, str], pairs: tuple[tuple[str, str], ...] | list[tuple[str, str]]) -> dict[str, str]:
    """`env` with `pairs` added as git's command-line config (`GIT_CONFIG_COUNT`, git 2.31+).

    Through the environment rather than `-c`, so it reaches every git a git starts (a rebase's own
    commits) and GitPython's processes alike; added after any the environment already carries, so
    ours win (the last value of a key is the one git uses).
    """
    try:
        count = max(int(env.get("GIT_CONFIG_COUNT", "0") or "0"), 0)
    except ValueError:
        count = 0
    for key, value in pairs:
        env[f"GIT_CONFIG_KEY_{count}"] = key
        env[f"GIT_CONFIG_VALUE_{count}"] = value
        count += 1
    env["GIT_CONFIG_COUNT"] = str(count)
    return env


def git_env() -> dict[str, str]:
    """The environment every git lanes-tui runs starts from: no hook's variables, fixed messages, no
    prompt, and `GIT_FIXED_CONFIG`."""
    env = {k: v for k, v in os.environ.items() if k not in GIT_ENV_DROP}
    env.update(LC_ALL="C", GIT_TERMINAL_PROMPT="0")
    return with_git_config(env, GIT_FIXED_CONFIG)


def _git(where: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = git_env()
    try:
        return subprocess.run(["git", *args], cwd=where, env=env, capture_output=True, check=False,
                              stdin=subprocess.DEVNULL, timeout=_TIMEOUT_S)
    except FileNotFoundError:
        raise LanesError("git is not installed (not on PATH)", "install git, then try again") from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LanesError(f"cannot run git in {where}: {exc}", NOT_A_REPO_FIX) from None


def _first_line(data: bytes) -> str:
    lines = os.fsdecode(data).strip().splitlines()
    return lines[0].removeprefix("fatal: ") if lines else "git failed"


def find_repo_root(start: Path) -> Path:
    """The main worktree's root of the repository containing `start` (a file or a folder).

    In the main worktree that is `--show-toplevel`. In a linked worktree it is the parent of the
    common git dir when that dir is a `.git` folder (the usual layout, one git call in all), else the
    first entry of `git worktree list` (a main worktree made with `--separate-git-dir`). A bare main
    repository has no root of its own, so the current worktree stands in.
    """
    start = Path(start).expanduser()
    where = start if start.is_dir() else start.parent
    if not where.is_dir():
        raise LanesError(f"{start} is not inside a git repository", NOT_A_REPO_FIX)
    proc = _git(where, "rev-parse", "--show-toplevel", "--git-dir", "--git-common-dir")
    if proc.returncode != 0:
        line = _first_line(proc.stderr)
        if "not a git repository" in line:
            raise LanesError(f"{start} is not inside a git repository", NOT_A_REPO_FIX)
        raise LanesError(f"{start}: {line}", NOT_A_REPO_FIX)
    toplevel, git_dir, common_dir = (os.fsdecode(x) for x in proc.stdout.splitlines()[:3])
    top = Path(toplevel).resolve()
    common = (where / common_dir).resolve()
    if (where / git_dir).resolve() == common:
        return top
    if common.name == ".git" and (common.parent / ".git").is_dir():
        return common.parent
    listing = os.fsdecode(_git(where, "worktree", "list", "--porcelain").stdout)
    first = listing.split("\n\n", 1)[0].splitlines()
    if not first or not first[0].startswith("worktree ") or "bare" in first[1:]:
        return top
    return Path(first[0][len("worktree "):]).resolve()
