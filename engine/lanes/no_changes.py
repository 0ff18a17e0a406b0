"""Did the agent change anything? The test behind the `NO-CHANGES` result (PRODUCT.md: "no changes is
not ready"), shared by the supervisor (`supervisor.retry.settle`, after a run) and the lead's `check`
(which must not make a lane that did nothing `ready`).

Changed means: a commit since the lane's base, or a file staged, modified or untracked that git does
not ignore (the lane's `.gitignore` files count), as `git.worktrees.changed_files` lists them for the
packet. The files a CLI writes for itself (`AGENT_OWN_FILES`, aider's `.aider*`) are not the agent's work.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

from lanes_tui.engine.config.provider_facts import AGENT_OWN_FILES

__all__ = ["NO_CHANGES", "NO_CHANGES_REASON", "agent_files", "unchanged"]

NO_CHANGES = "NO-CHANGES"
NO_CHANGES_REASON = "exited 0 and changed nothing"


def unchanged(worktree: Path, base_sha: str) -> bool:
    """True when nothing but ignored files and the CLIs' own files differs from `base_sha`; raises
    LanesError when git cannot tell."""
    from lanes_tui.engine.git.worktrees import changed_files  # loaded once an agent is done

    return not agent_files(changed_files(worktree, base_sha))


def agent_files(files: list[str]) -> list[str]:
    """The paths of `files` that are the agent's work (not its CLI's own files)."""
    return [path for path in files if not _own(path)]


def _own(path: str) -> bool:
    top = path.split("/", 1)[0]
    return any(fnmatch.fnmatchcase(top, pattern) for pattern in AGENT_OWN_FILES)
