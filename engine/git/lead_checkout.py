"""The lead's own checkout as a lane found it: branch, HEAD, staged changes, uncommitted files, submodules.

An agent runs as the lead's user, so only the provider's own sandbox keeps it from writing outside
its worktree. lanes-tui cannot prevent that, but it can notice it: when a lane starts, the launcher
records a `snapshot` of the repository's main checkout (in the lane's `origin.json`), and `check`
and the accept plan `compare` it with the checkout as it is now.

What is compared is the checkout *relative to its HEAD* — the staged changes against HEAD, each
uncommitted file with its content, the submodules — plus the branch, and whether HEAD still contains
the recorded commit. New commits on top of HEAD are not reported: accepts fast-forward the lead's
checkout and the lead commits all day, and neither is what this is for. The index is digested from
`git diff --cached` rather than from `.git/index`, whose bytes change whenever git refreshes its
stat cache.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from lanes_tui.engine.git.commands import run_git
from lanes_tui.engine.git.worktrees import current_branch, describe_path

#: Above this many uncommitted paths only the digest is kept, not the names (the warning then says
#: "files changed" without naming them).
MAX_NAMED_FILES = 500
#: An uncommitted file bigger than this is known by its size and mtime, not read: a lane's start must
#: not hash a lead's multi-gigabyte data file.
MAX_HASHED_BYTES = 64 << 20


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def snapshot(repo: Path) -> dict[str, Any]:
    """What the checkout at `repo` holds now, as digests (and the uncommitted paths by name)."""
    head_proc = run_git(repo, "rev-parse", "--verify", "--quiet", "HEAD", check=False)
    head = os.fsdecode(head_proc.stdout).strip() if head_proc.returncode == 0 else ""
    staged = run_git(repo, "diff", "--cached", "--raw", "-z", "--no-renames", "--no-abbrev",
                     "--ignore-submodules=none", *([head] if head else []), check=False).stdout
    status = run_git(repo, "status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=all",
                     "--ignore-submodules=none").stdout
    files: dict[str, str] = {}
    for entry in status.split(b"\0"):
        if len(entry) > 3:
            name = os.fsdecode(entry[3:])
            files[name] = f"{os.fsdecode(entry[:2])}:{_fingerprint(repo, name)}"
    return {
        "branch": current_branch(repo) or "",
        "head": head,
        "index": _sha(staged),
        "status": _sha(json.dumps(files, sort_keys=True).encode()),
        "submodules": _sha(submodule_status(repo)),
        "files": files if len(files) <= MAX_NAMED_FILES else None,
    }


def submodule_status(repo: Path) -> bytes:
    """What `git submodule status --recursive` prints, or `unreadable` when it fails.

    Its list is the index's gitlinks, so with none it prints nothing: that is read from `ls-files` (a
    millisecond) instead of starting `git submodule`, a shell script before git 2.43 (40–50 ms, run at
    every launch, check and accept). A gitlink staged by anyone is in the index, so it is never missed.
    """
    index = run_git(repo, "ls-files", "--stage", "-z", check=False)
    if index.returncode == 0 and not any(entry.startswith(b"160000 ") for entry in index.stdout.split(b"\0")):
        return b""
    modules = run_git(repo, "submodule", "status", "--recursive", check=False)
    return modules.stdout if modules.returncode == 0 else b"unreadable"


def _fingerprint(repo: Path, name: str) -> str:
    try:
        st = (repo / name).lstat()
    except OSError:
        st = None
    if st is not None and st.st_size > MAX_HASHED_BYTES:
        return f"large:{st.st_size}:{st.st_mtime_ns}"
    kind, content = describe_path(repo, repo / name)
    return f"{kind}:{content.decode()}"


def compare(repo: Path, before: Any, now: dict[str, Any]) -> list[str]:
    """What differs between a recorded snapshot and `now`; empty when nothing (or nothing recorded)."""
    if not isinstance(before, dict) or not before.get("status"):
        return []  # a lane started before snapshots were recorded
    changes = []
    if before.get("branch") != now["branch"]:
        changes.append(f"it is on {_branch(now['branch'])}, not {_branch(before.get('branch'))}")
    elif isinstance(before.get("head"), str) and before["head"] and before["head"] != now["head"] \
            and not _contains(repo, now["head"], before["head"]):  # (a str: origin.json may be hand-made)
        changes.append(f"its HEAD {now['head'][:10] or '(none)'} no longer contains {str(before['head'])[:10]}")
    if before.get("index") != now["index"]:
        changes.append("its staged changes differ")
    if before.get("status") != now["status"]:
        old, new = before.get("files"), now["files"]
        if isinstance(old, dict) and isinstance(new, dict):
            names = sorted(n for n in set(old) | set(new) if old.get(n) != new.get(n))
            shown = ", ".join(names[:8]) + (f" (+{len(names) - 8} more)" if len(names) > 8 else "")
            changes.append(f"uncommitted files changed: {shown}")
        else:
            changes.append("its uncommitted files changed")
    if before.get("submodules") != now["submodules"]:
        changes.append("its submodules changed (`git submodule status`)")
    return changes


def _branch(name: Any) -> str:
    return f"branch {name}" if name else "a detached HEAD"


def _contains(repo: Path, descendant: str, ancestor: str) -> bool:
    if not descendant:
        return False
    return run_git(repo, "merge-base", "--is-ancestor", ancestor, descendant, check=False).returncode == 0


def changed_since(repo: Path, lane_id: str, recorded: Any) -> list[str]:
    """The warning for `check` and the accept plan, or nothing: a snapshot recorded when the lane
    started (its origin's `lead_checkout`) against the checkout now."""
    if not isinstance(recorded, dict) or not recorded:
        return []
    changes = compare(repo, recorded, snapshot(repo))
    if not changes:
        return []
    return [f"the lead checkout CHANGED since lane {lane_id} started: " + "; ".join(changes)
            + " (an agent may have written outside its worktree; your own edits count too)"]
