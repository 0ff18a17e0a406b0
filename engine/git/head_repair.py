"""A lane's HEAD, reflog and index set back when they name what only the lane's own store holds.

A contained agent writes objects into its lane's private store (`lanes.confine`, `git.harden`), while
the worktree's `HEAD`, its reflog (`logs/HEAD`), its per-worktree refs (`refs/worktree/…`,
`refs/bisect/…`) and its index live in the lane's admin folder, `<common>/worktrees/<id>`, which the
agent may write. An agent that detaches and commits (`git checkout --detach && git commit`, an
interrupted `git rebase`) leaves `HEAD` naming a commit that exists only in that private store; one
that stages a file (`git add`, `commit -a` refused at the ref) leaves index entries naming private
blobs. git's reachability walks every worktree's HEAD, reflog, refs and index, so until the lane is
gone the lead's `git gc`, `git prune` and `git fsck` in the main checkout fail ("bad object
worktrees/<id>/HEAD", "unable to read <blob>").

So after every agent run (the supervisor) and when `status` sees a HEAD naming a private object,
lanes-tui puts the lane back on its branch and keeps its files:

- `HEAD` is made `refs/heads/lane/<id>` again (`git symbolic-ref`), and an operation the agent left
  half done (`rebase-merge/`, `rebase-apply/`, `REBASE_HEAD`, `CHERRY_PICK_HEAD`, …) is dropped with it;
- the worktree's reflog entries and per-worktree refs that name an object missing from the shared store
  are dropped (the reflog rewritten atomically, or removed when nothing is left);
- the index, when it was moved with HEAD or names a private object, is rebuilt from the branch
  (`read-tree HEAD` + `update-index --refresh`): the files in the worktree are untouched, and they are
  what accept commits (it rehashes them in a fresh index).

Everything here is in the lane's admin folder, found from the repository's side (`git.harden`: the
lane's id and the repository's common dir, never the worktree's `.git` file). Whether an object is
in the shared store is asked of git in the main checkout, where lanes-tui's git never adds the lane's
store as an alternate (`READ_COMMANDS` applies only to a registered lane's worktree).
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from lanes_tui.engine.core.atomic import read_json, write_bytes_atomic, write_json_atomic
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import branch_for
from lanes_tui.engine.core.trees import remove_tree
from lanes_tui.engine.git.commands import run_git
from lanes_tui.engine.git.harden import LaneGitDirs, common_dir, register_lane

__all__ = ["NOTE_FILE", "HeadRepair", "head_note", "private_head", "record_repair", "repair_after_run",
           "repair_from_status", "repair_lane_head"]

#: In the lane's state folder: the last repair, for the packet's warnings (`head_note`).
NOTE_FILE = "head-repair.json"
#: What a half-done operation of the agent's leaves in its admin folder; dropped when HEAD is moved back.
OPERATION_STATE = ("rebase-merge", "rebase-apply", "REBASE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "MERGE_HEAD",
                   "MERGE_MSG", "MERGE_MODE", "AUTO_MERGE", "ORIG_HEAD", "sequencer", "BISECT_LOG")
_OID = re.compile(rb"^[0-9a-f]{40}([0-9a-f]{24})?$")


@dataclass
class HeadRepair:
    """What was set back in one lane's admin folder."""

    lane_id: str
    branch: str
    #: What HEAD named before: a commit id, or `ref: refs/heads/…` of another branch; "" if it was the branch.
    was: str = ""
    #: Whether that commit was missing from the shared store (only in the lane's own).
    private: bool = False
    reflog_dropped: int = 0
    refs_dropped: list[str] = field(default_factory=list)
    index_reset: bool = False
    cleared: list[str] = field(default_factory=list)

    @property
    def reattached(self) -> bool:
        return bool(self.was)

    def reason(self) -> str:
        """One sentence for the lane's reason and its packet's warnings."""
        if self.reattached:
            where = f"HEAD was detached at {self.was[:12]}" if not self.was.startswith("ref:") else \
                f"HEAD was on {self.was[len('ref: refs/heads/'):]}"
            only = ", a commit only in the lane's own object store" if self.private else ""
            return (f"the agent's own commits were discarded ({where}{only}): HEAD is {self.branch} again, "
                    "its files are kept as they are and accept commits them")
        return ("the agent's staging was discarded (its index named objects only in the lane's own store): "
                "its files are kept as they are and accept commits them")

    def event(self) -> dict[str, Any]:
        return {"detached": self.was, "private": self.private, "branch": self.branch,
                "reflog_dropped": self.reflog_dropped, "refs_dropped": self.refs_dropped,
                "index_reset": self.index_reset, "cleared": self.cleared, "reason": self.reason()}


def missing_from_shared(repo: Path, oids: set[str]) -> set[str]:
    """The ids among `oids` the shared store lacks: `git cat-file --batch-check` in the main checkout,
    which never sees a lane's private store."""
    if not oids:
        return set()
    listed = "".join(f"{oid}\n" for oid in sorted(oids)).encode()
    proc = run_git(repo, "cat-file", "--batch-check", stdin=listed)
    found = set()
    for line in proc.stdout.decode("ascii", "replace").splitlines():
        oid, _, rest = line.partition(" ")
        if rest.strip() == "missing":
            found.add(oid)
    return found


def _head_text(dirs: LaneGitDirs) -> str | None:
    path = dirs.git_dir / "HEAD"
    if os.path.islink(path):
        return None  # never followed; git itself no longer writes a HEAD link
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def private_head(repo: Path, lane_id: str) -> str | None:
    """The commit a lane's HEAD names when it is detached at an object the shared store lacks, else None.

    `status`'s cheap look: one file read per lane, a git process only for a detached HEAD.
    """
    text = _head_text(LaneGitDirs(Path(), common_dir(repo) / "worktrees" / lane_id, common_dir(repo)))
    if text is None or text.startswith("ref:") or not _OID.match(text.encode()):
        return None
    return text if missing_from_shared(repo, {text}) else None


def repair_lane_head(repo: Path, lane_id: str, worktree: Path, *, only_private: bool = False) -> HeadRepair | None:
    """Set the lane's HEAD, reflog, per-worktree refs and index back (module doc); None when all was fine.

    `only_private`: move HEAD only when it names an object missing from the shared store (`status`,
    which may run while lanes-tui's own accept is mid-rebase on shared commits); otherwise (after an
    agent run) HEAD is moved back whenever it is not the lane's branch.
    """
    dirs = register_lane(repo, lane_id, worktree)
    if not dirs.git_dir.is_dir() or not worktree.is_dir():
        return None
    branch = branch_for(lane_id)
    ref = f"refs/heads/{branch}"
    repair = HeadRepair(lane_id, branch)
    text = _head_text(dirs)
    if text is not None and text != f"ref: {ref}":
        oid = text if _OID.match(text.encode()) else ""
        repair.private = bool(oid) and bool(missing_from_shared(repo, {oid}))
        if repair.private or not only_private:
            repair.was = text
            run_git(worktree, "symbolic-ref", "HEAD", ref)
            repair.cleared = _clear_operations(dirs.git_dir)
    private_store = dirs.objects.is_dir() and any(True for _ in _walk_files(dirs.objects))
    if private_store:
        repair.reflog_dropped = _clean_reflog(repo, dirs.git_dir / "logs" / "HEAD")
        repair.refs_dropped = _clean_worktree_refs(repo, dirs.git_dir)
    if repair.reattached or (private_store and _index_private(repo, worktree)):
        run_git(worktree, "read-tree", "HEAD")  # no alternate for read-tree: the branch's tree, shared
        run_git(worktree, "update-index", "-q", "--refresh", check=False)  # stat info only; changes stay changes
        repair.index_reset = True
    if not (repair.reattached or repair.reflog_dropped or repair.refs_dropped or repair.index_reset):
        return None
    return repair


def _walk_files(folder: Path) -> Any:
    for _top, _dirs, files in os.walk(folder):
        yield from files


def _clear_operations(admin: Path) -> list[str]:
    """Drop a half-done rebase, merge or cherry-pick of the agent's: its HEAD is gone."""
    cleared = []
    for name in OPERATION_STATE:
        path = admin / name
        if not os.path.lexists(path):
            continue
        if path.is_dir() and not path.is_symlink():
            remove_tree(path)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)
        cleared.append(name)
    return cleared


def _clean_reflog(repo: Path, log: Path) -> int:
    """Rewrite the worktree's HEAD reflog without the entries naming a private object; the count dropped."""
    if os.path.islink(log) or not log.is_file():
        return 0
    try:
        lines = log.read_bytes().splitlines(keepends=True)
    except OSError:
        return 0
    oids = {part.decode() for line in lines for part in line.split(b" ", 2)[:2] if _OID.match(part)}
    missing = missing_from_shared(repo, {o for o in oids if set(o) != {"0"}})
    if not missing:
        return 0
    kept = [line for line in lines if not any(part.decode("ascii", "replace") in missing
                                              for part in line.split(b" ", 2)[:2])]
    if kept:
        write_bytes_atomic(log, b"".join(kept), mode=None)
    else:
        log.unlink()
    return len(lines) - len(kept)


def _clean_worktree_refs(repo: Path, admin: Path) -> list[str]:
    """Remove the per-worktree refs (`refs/worktree/…`, `refs/bisect/…`) naming a private object, and
    their reflogs: the shared refs are not the agent's to write (`lanes.confine`)."""
    refs = admin / "refs"
    found: dict[str, Path] = {}
    for top, _dirs, files in os.walk(refs):
        for name in files:
            path = Path(top) / name
            with contextlib.suppress(OSError):
                text = path.read_bytes().strip()
                if _OID.match(text) and not path.is_symlink():
                    found[text.decode()] = path
    missing = missing_from_shared(repo, set(found))
    dropped = []
    for oid, path in found.items():
        if oid in missing:
            name = str(path.relative_to(admin))
            with contextlib.suppress(OSError):
                path.unlink()
            with contextlib.suppress(OSError):
                (admin / "logs" / name).unlink()
            dropped.append(name)
    return sorted(dropped)


def _index_private(repo: Path, worktree: Path) -> bool:
    """Whether the lane's index names a blob missing from the shared store."""
    listed = run_git(worktree, "ls-files", "--stage", "-z", check=False)
    if listed.returncode != 0:
        return True  # an index git cannot read: rebuilt from the branch
    oids = set()
    for entry in listed.stdout.split(b"\0"):
        meta = entry.split(b"\t", 1)[0].split(b" ")
        if len(meta) == 3 and _OID.match(meta[1]) and meta[0] != b"160000":  # a submodule's commit: not ours
            oids.add(meta[1].decode())
    return bool(missing_from_shared(repo, oids))


class _Store(Protocol):
    def event(self, lane_id: str, kind: str, **data: Any) -> None: ...


def record_repair(store: _Store, lane_id: str, attempt: int, lane_dir: Path, repair: HeadRepair) -> None:
    """The `head-reattached` event (or `index-reset`), and the note the packet's warnings read."""
    kind = "head-reattached" if repair.reattached else "index-reset"
    store.event(lane_id, kind, **repair.event())
    with contextlib.suppress(OSError):
        write_json_atomic(lane_dir / NOTE_FILE, {"attempt": attempt, "kind": kind, "reason": repair.reason()})


def head_note(lane_dir: Path, attempt: int) -> str | None:
    """The warning of this attempt's last repair, if any (for `check`'s and the supervisor's packet)."""
    try:
        note = read_json(lane_dir / NOTE_FILE)
    except (OSError, ValueError, LanesError):
        return None
    if not isinstance(note, dict) or note.get("attempt") != attempt or not isinstance(note.get("reason"), str):
        return None
    return str(note["reason"])


def repair_after_run(repo: Path, store: _Store, lane_id: str, attempt: int, worktree: Path,
                     lane_dir: Path) -> str | None:
    """After an agent run: repair, record, and return the sentence for the lane's reason (None: all fine).

    A git failure here is said in an event, never the end of the supervisor: the decisions refuse a lane
    whose HEAD is not its branch anyway.
    """
    try:
        repair = repair_lane_head(repo, lane_id, worktree)
    except LanesError as exc:
        store.event(lane_id, "head-repair-failed", reason=str(exc))
        return None
    if repair is None:
        return None
    record_repair(store, lane_id, attempt, lane_dir, repair)
    return repair.reason()



def repair_from_status(repo: Path, store: Any, record: Any) -> None:
    """`status`'s look at a lane no agent is running in: a HEAD detached at a private commit is set back
    (`only_private`: lanes-tui's own accept, mid-rebase on shared commits, is never touched)."""
    from lanes_tui.engine.git.lane_paths import locate_lane
    from lanes_tui.engine.state.model import FINAL_STATES, LIVE_STATES

    if record.runner != "local" or record.state in LIVE_STATES or record.state in FINAL_STATES:
        return
    try:
        if private_head(repo, record.id) is None:
            return
        location = locate_lane(repo, record.id, record)  # the worktree derived from the lane's id and root
        repair = repair_lane_head(repo, record.id, location.worktree, only_private=True)
    except LanesError as exc:
        store.event(record.id, "head-repair-failed", reason=str(exc))
        return
    if repair is not None:
        record_repair(store, record.id, record.attempt, store.lane_paths(record.id).dir, repair)
