"""`[lanes] copy`: the lead's uncommitted files (`.env`, a local config) copied into a new worktree.

Called by the launcher right after `git worktree add`, before the supervisor starts, so the setup
steps and the agent find them. A copied file must never reach the lane's diff or a commit, but git
reads `info/exclude` only from the repository's common folder: writing there would also hide the
lead's own untracked files in the lead checkout and in every other lane. So the exclusion is scoped
to this worktree instead: `extensions.worktreeConfig` on (git ≥ 2.20; a no-op for everything else)
and a per-worktree `core.excludesFile` naming a file in the worktree's own git folder, which lists
the copied paths after the lead's global excludes (the setting replaces the global file, so its
lines are carried over). Every git command run in the worktree (the agent's `git add -A`, the
lane's diff, accept's commit) then ignores the copies; the file goes with the worktree's git folder.

Missing sources are a warning in the lane's events, not a failure: a fresh clone may not have its
`.env` yet. Symlinks are followed for their content only; a copy is always a regular file, never a
link, and never written through a link that leaves the worktree.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from lanes_tui.engine.config.cli_facts import worktree_state
from lanes_tui.engine.config.providers import ProviderConfig
from lanes_tui.engine.config.worktree_keys import check_copy_path
from lanes_tui.engine.core.atomic import write_text_atomic
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.limits import repository_file
from lanes_tui.engine.git.commands import git_out, run_git
from lanes_tui.engine.state.paths import inside
from lanes_tui.engine.state.store import LaneStore

__all__ = ["EXCLUDE_FILE", "chain_state", "copy_into_worktree", "exclude_agent_state", "exclude_in_worktree"]

#: The per-worktree excludes file, in the worktree's own git folder (`.git/worktrees/ID/`).
EXCLUDE_FILE = "lanes-tui-exclude"
#: The lead's global excludes carried over into it, at most this many bytes.
MAX_GLOBAL_EXCLUDES = 256 * 1024


def copy_into_worktree(repo: Path, worktree: Path, paths: Sequence[str], store: LaneStore,
                       lane_id: str) -> list[str]:
    """Copy each `paths` entry from `repo` into `worktree`; returns those copied (and now excluded)."""
    copied: list[str] = []
    for entry in paths:
        why = _copy_one(repo, worktree, entry)
        if why is None:
            copied.append(entry)
        else:
            store.event(lane_id, "copy-skipped", path=entry, reason=why)
    if copied:
        exclude_in_worktree(repo, worktree, copied)
        store.event(lane_id, "copied", paths=copied)
    return copied


def _copy_one(repo: Path, worktree: Path, entry: str) -> str | None:
    """Copy one file; None when done, else why not (the lane's warning)."""
    if (why := check_copy_path(entry)) is not None:  # the parser refused it already; never trust a record
        return f"the path {why}"
    source = repo / entry
    if not source.exists():
        return f"{entry} does not exist in the lead checkout {repo}"
    try:  # a link is followed only to a file of the repository (not its .git): never to the lead's other files
        real = repository_file(source, repo, "copy entry", "")
    except LanesError as exc:
        return f"{exc.what}: not copied"
    real = real.resolve()
    if not real.is_file():
        return f"{entry} is not a regular file (folders and devices are not copied)"
    target = worktree / entry
    if target.is_symlink() or not inside(target.parent.resolve(), worktree.resolve()):
        return f"{entry} in the worktree is a link or lies outside it: not written through"
    if target.exists():
        return f"{entry} is already in the worktree (a file the branch tracks): left as it is"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(real, target, follow_symlinks=True)  # a regular file with the content, never a link
        os.chmod(target, real.stat().st_mode & 0o777)
    except OSError as exc:
        return f"copying {entry} failed: {exc.strerror or exc}"
    return None


def exclude_in_worktree(repo: Path, worktree: Path, paths: Sequence[str]) -> Path:
    """Make git in `worktree` (only there) ignore `paths`; returns the excludes file written."""
    git_dir = Path(git_out(worktree, "rev-parse", "--absolute-git-dir"))
    common = (worktree / git_out(worktree, "rev-parse", "--git-common-dir")).resolve()
    if git_dir.resolve() == common:
        raise LanesError(f"{worktree} is not a linked worktree", "copy files only into a lane's worktree")
    lines = [_global_excludes(repo), "# lanes-tui: [lanes] copy, never committed"]
    lines += ["/" + _escaped(p) for p in paths]
    target = git_dir / EXCLUDE_FILE
    write_text_atomic(target, "\n".join(line for line in lines if line) + "\n")
    enabled = run_git(repo, "config", "--bool", "--get", "extensions.worktreeConfig", check=False)
    if os.fsdecode(enabled.stdout).strip() != "true":  # written once: parallel `run`s would race for config.lock
        run_git(repo, "config", "extensions.worktreeConfig", "true")
    run_git(worktree, "config", "--worktree", "core.excludesFile", str(target))
    return target


def chain_state(providers: Mapping[str, ProviderConfig], chain: Sequence[str]) -> list[str]:
    """The patterns of the own files of every CLI the lane's chain may run (`config.cli_facts.worktree_state`)."""
    patterns: list[str] = []
    for name in chain:
        provider = providers.get(name)
        for pattern in worktree_state(provider) if provider is not None else ():
            if pattern not in patterns:
                patterns.append(pattern)
    return patterns


def exclude_agent_state(repo: Path, worktree: Path, patterns: Sequence[str]) -> bool:
    """Make git in `worktree` ignore the agent CLI's own files (gitignore `patterns`, e.g. aider's
    `.aider*`), after whatever the excludes file already holds; True if it had to be written.

    The CLI keeps them in the worktree (a chat history, a tags cache): they are no change of the lane's
    and must never reach its diff or an accept, yet the repository's .gitignore is the lead's. Called
    by the launcher before the lane's git-config snapshot, like the copies' exclusion."""
    if not patterns:
        return False
    git_dir = Path(git_out(worktree, "rev-parse", "--absolute-git-dir"))
    target = git_dir / EXCLUDE_FILE
    try:
        current = target.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        current = ""
    missing = [p for p in patterns if p not in current.splitlines()]
    if not missing:
        return False
    if not current:  # the setting replaces the lead's global excludes: carry them over
        exclude_in_worktree(repo, worktree, [])
        current = target.read_text(encoding="utf-8", errors="replace")
    lines = [current.rstrip("\n"), "# lanes-tui: the agent CLI's own files, never committed", *missing]
    write_text_atomic(target, "\n".join(line for line in lines if line) + "\n")
    return True


def _global_excludes(repo: Path) -> str:
    """The lead's global excludes (`core.excludesFile`, else git's XDG default), which ours replaces."""
    proc = run_git(repo, "config", "--path", "--get", "core.excludesFile", check=False)
    written = os.fsdecode(proc.stdout).strip()
    if written:
        path = Path(written)
    else:
        xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        path = Path(xdg) / "git" / "ignore"
    try:
        with open(path, "rb") as handle:
            return handle.read(MAX_GLOBAL_EXCLUDES).decode("utf-8", "replace")
    except OSError:
        return ""


def _escaped(path: str) -> str:
    """`path` as a gitignore pattern matching exactly it: wildcards, `!`, `#` and trailing spaces escaped."""
    out = "".join("\\" + c if c in "*?[]\\" else c for c in path)
    if out[:1] in ("!", "#"):
        out = "\\" + out
    if out.endswith(" "):
        out = out[:-1] + "\\ "
    return out
