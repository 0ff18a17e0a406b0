"""Running git: one argv list per call, a clean environment, and errors as one-line LanesErrors.

The layer under `git.worktrees` (which re-exports the constants and `WorktreeEntry`): git runs
through `run_git` with an argv list, never a shell, so a lane id, a path or a branch name can never
be read as shell syntax, and with the variables of a surrounding hook removed, so it always acts on
the repository it was pointed at. Output stays bytes so file names that are not UTF-8 survive.
Every call is hardened by `git.harden` (issue 28): nothing a lane wrote into the shared config or
hooks folder runs as the lead.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.repo import GIT_ENV_DROP, NOT_A_REPO_FIX, with_git_config
from lanes_tui.engine.git.harden import hardened_env, read_command

__all__ = [
    "DEFAULT_FIX", "GIT_ENV_DROP", "GIT_TIMEOUT_S", "NOT_A_REPO_FIX", "WorktreeEntry", "branch_exists", "first_line",
    "git_out", "list_worktrees", "nul_list", "refuse_option", "run_git", "run_git_capped",
]

GIT_TIMEOUT_S = 300.0
DEFAULT_FIX = "check the repository with `git status` and try again"
# The fix for "not a repository" and the variables dropped from git's environment are the
# repository-root function's (core.repo): one definition, kept where `ask` may load it.


@dataclass(frozen=True)
class WorktreeEntry:
    """One lane worktree as `git worktree list --porcelain` reports it."""

    path: Path
    head: str
    branch: str
    locked: bool
    prunable: bool


def run_git(cwd: Path, *args: str, fix: str = DEFAULT_FIX, check: bool = True,
            stdin: bytes | None = None, extra_env: Mapping[str, str] | None = None,
            ) -> subprocess.CompletedProcess[bytes]:
    """Run `git args…` in `cwd`; raise a one-line LanesError on failure when `check`.

    Output stays bytes so file names that are not UTF-8 survive (decoded with `os.fsdecode`).
    `extra_env` is set over the cleaned environment (a temporary `GIT_INDEX_FILE`, an author).
    The environment is `git.harden`'s: no fsmonitor, hook or lane-written driver runs, and in a
    registered lane's worktree the git dir is the one derived from the lane's id, not its `.git` file,
    and only a command that writes no object and no ref sees the lane's private objects.
    """
    env = hardened_env(cwd, dict(extra_env or {}), reads=read_command(args))
    try:
        proc = subprocess.run(
            ["git", *args], cwd=cwd, env=env, capture_output=True, timeout=GIT_TIMEOUT_S,
            input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL, check=False,
        )
    except (FileNotFoundError, NotADirectoryError) as exc:
        if not cwd.is_dir():
            raise LanesError(f"folder {cwd} does not exist", fix) from exc
        raise LanesError("git is not installed or not on PATH", "install git") from exc
    except subprocess.TimeoutExpired as exc:
        raise LanesError(f"git {args[0]} in {cwd} took longer than {GIT_TIMEOUT_S:.0f}s", fix) from exc
    if check and proc.returncode != 0:
        command = " ".join(a for a in args[:2] if not a.startswith("-"))
        raise LanesError(f"git {command} failed in {cwd}: {first_line(proc.stderr)}", fix)
    return proc


def run_git_capped(cwd: Path, *args: str, timeout_s: float,
                   config: tuple[tuple[str, str], ...] = ()) -> subprocess.CompletedProcess[bytes]:
    """Run `git args…` (a fetch, a push) for at most `timeout_s`; never raises on git's own failure.

    The network commands start helpers (ssh, git-remote-https) that would keep the output pipes open
    after git itself is killed, so git runs in a session of its own and the whole session is killed
    when the time is up: the cap holds even when the remote never answers. A timeout is a LanesError.
    """
    env = with_git_config(hardened_env(cwd), config)  # and no terminal in the new session: ssh cannot prompt
    try:
        proc = subprocess.Popen(["git", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise LanesError("git is not installed or not on PATH", "install git") from exc
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise LanesError(f"git {args[0]} took longer than {timeout_s:g}s") from exc
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def first_line(stderr: bytes) -> str:
    """git's first non-blank stderr line: the part of a failure worth showing the lead."""
    for line in stderr.decode("utf-8", "replace").splitlines():
        if line.strip():
            return line.strip()
    return "(no message from git)"


def git_out(cwd: Path, *args: str, fix: str = DEFAULT_FIX) -> str:
    """The stdout of a git command that must succeed, decoded, without the final newline."""
    return os.fsdecode(run_git(cwd, *args, fix=fix).stdout).rstrip("\n")


def nul_list(data: bytes) -> list[str]:
    """The names of a `-z` listing (NUL-separated, so any file name survives)."""
    return [os.fsdecode(item) for item in data.split(b"\0") if item]


def refuse_option(value: str, what: str) -> None:
    """A ref starting with '-' would be parsed by git as an option; no real ref looks like that."""
    if not value or value.startswith("-"):
        raise LanesError(f"invalid {what} {value!r}", f"name an existing {what}")


def branch_exists(repo: Path, branch: str) -> bool:
    return run_git(repo, "show-ref", "--verify", "--quiet", f"refs/heads/{branch}", check=False).returncode == 0


def list_worktrees(repo: Path) -> list[WorktreeEntry]:
    """Every worktree of the repository (main and detached included), parsed from porcelain."""
    text = os.fsdecode(run_git(repo, "worktree", "list", "--porcelain").stdout)
    entries: list[WorktreeEntry] = []
    for block in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            key, _, value = line.partition(" ")
            fields[key] = value
        if "worktree" not in fields:
            continue
        ref = fields.get("branch", "")
        entries.append(WorktreeEntry(
            path=Path(fields["worktree"]),
            head=fields.get("HEAD", ""),
            branch=ref[len("refs/heads/"):] if ref.startswith("refs/heads/") else "",
            locked="locked" in fields,
            prunable="prunable" in fields,
        ))
    return entries
