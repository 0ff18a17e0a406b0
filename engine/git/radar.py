"""The conflict radar: which lanes touch the same files, and which would conflict when merged.

For every pair of live, checking or ready lanes (planned or not) the radar names the files both
changed since their base, as accept would stage them (commits on the branch, the index, the working
tree, new files; `worktrees.changed_files` gives the same list). A `checking` lane is in because its
gates judge exactly that diff and it is `ready` moments later. For ready lanes it also tries the merges the
accepts would do — the lane into its target, and each pair of ready lanes with the same target —
with `git merge-tree --write-tree` (git ≥ 2.38), which writes objects and nothing else: no worktree,
index or ref moves, so neither the lanes nor the lead see anything change.

A ready lane's work is what its check froze before the gates (`git.frozen_work`,
`refs/lanes-tui/frozen/<id>`): the radar takes that commit's files and merges that commit, so files
the gates left in the worktree (a `.pyc`) never count. A ready lane with no frozen work (a lane no
gate ran in) is looked at as it stands: its work is usually uncommitted (accept commits it), so the
trial merge runs on a snapshot commit: the lane's HEAD plus its uncommitted files, staged in a temporary index
(`GIT_INDEX_FILE` in a temporary folder) and written with `git commit-tree`. The snapshot has a
fixed author and date, so the same work always gives the same commit; nothing refers to it, and
git's gc removes it in time.

What is trusted: a lane's worktree is the folder git lists on `lane/<id>` (derived from the id,
never the path in `lane.json`); its base must look like a commit id; file names come from git with
`-z`. Every call is an argv list (`git.commands`), never a shell. `git status` runs with
`--no-optional-locks`, so a poll never takes the lane's index lock from under its agent.

Cost: a scan asks git for one worktree list, one ref list and one `status` per lane that works in
its worktree; a ready lane whose frozen work sits on its branch's head needs none (its side is that
commit, and its head is its branch's, from the ref list). The rest is cached by what decides it: a
lane's committed files by (base, HEAD); its snapshot by (HEAD, a digest of its uncommitted files'
`lstat`: kind, size, times, inode — nothing is read); a trial merge by the two commits merged. A
trial merge that cannot conflict is not run (`git.radar_merges`: the same base, no path in common,
none inside another's folder, nothing deleted), and at most `MERGES_PER_LOOK` run in one scan, those
sharing files first; the rest are `pending` and run at the next scans. When no lane's HEAD, changed
files or content and no target moved, the previous report is returned as it was.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import branch_for
from lanes_tui.engine.git.commands import list_worktrees, nul_list, run_git
from lanes_tui.engine.git.frozen_work import FROZEN_PREFIX
from lanes_tui.engine.git.radar_merges import cannot_conflict, trial_merge
from lanes_tui.engine.git.radar_snapshot import SHA as _SHA
from lanes_tui.engine.git.radar_snapshot import snapshot_commit, stat_digest, worktree_state
from lanes_tui.engine.state.model import LIVE_STATES, LaneRecord
from lanes_tui.engine.state.status import LaneStatus

__all__ = ["KINDS", "RADAR_STATES", "Conflict", "Radar", "RadarReport", "radar_report", "with_conflicts"]

log = logging.getLogger(__name__)

#: The lanes the radar looks at: those still working, those whose gates are running (their worktree's
#: diff is what the gates judge, and they are `ready` in a moment: a clash must show before then), and
#: those waiting for the lead's accept. Only ready lanes get trial merges; the others, shared files.
RADAR_STATES = LIVE_STATES | {"checking", "ready"}
#: The kinds of finding, most serious first: the lane's trial merge into its target conflicts, its
#: trial merge with another ready lane conflicts, or it changed files another lane changed too.
KINDS = ("target", "merge", "overlap")
#: Trial merges one scan runs at most (each a `git merge-tree`, 3–10 ms): a hundred ready lanes of one
#: target are 4,950 pairs, and a scan holds the engine's scan lock while it runs.
MERGES_PER_LOOK = 40


@dataclass(frozen=True)
class Conflict:
    """One finding about a lane: with which lane (None: its target), of which kind, in which files."""

    kind: str
    lane: str | None
    files: tuple[str, ...]
    target: str = ""

    def to_json(self) -> dict[str, Any]:
        """The object in `LaneStatus.conflicts` and `status --json`."""
        return {"lane": self.lane, "files": list(self.files), "kind": self.kind, "target": self.target}

    @property
    def blocking(self) -> bool:
        """A trial merge conflicts: the accept would stop. An overlap alone may still merge cleanly."""
        return self.kind in ("target", "merge")


@dataclass(frozen=True)
class RadarReport:
    """What one scan found: each looked-at lane's findings, and the lanes git could not read."""

    conflicts: Mapping[str, tuple[Conflict, ...]] = field(default_factory=dict)
    #: Lane id → why the radar could not read it (no worktree yet, a broken base, a git failure).
    problems: Mapping[str, str] = field(default_factory=dict)

    def of(self, lane_id: str) -> tuple[Conflict, ...]:
        return self.conflicts.get(lane_id, ())

    def merge_conflict(self, lane_id: str, other: str) -> tuple[str, ...]:
        """The files of the trial merge of two ready lanes that conflict (empty: it merges cleanly)."""
        return next((c.files for c in self.of(lane_id) if c.kind == "merge" and c.lane == other), ())

    def target_conflict(self, lane_id: str) -> tuple[str, ...]:
        return next((c.files for c in self.of(lane_id) if c.kind == "target"), ())

    def as_json(self, lane_id: str) -> tuple[dict[str, Any], ...]:
        return tuple(c.to_json() for c in self.of(lane_id))


@dataclass(frozen=True)
class _Side:
    """One lane as this scan saw it."""

    lane_id: str
    state: str
    target: str
    files: frozenset[str]
    #: The commit a trial merge uses (ready lanes only): HEAD, or HEAD plus the uncommitted work.
    snapshot: str | None
    #: What decides this lane's findings: HEAD, its changed files and (ready lanes) their content.
    key: tuple[Any, ...]
    #: The base its files are counted from, and whether any of them is a deletion (unknown: True).
    base: str = ""
    deletes: bool = True
    #: A ready lane's side is its frozen work (not its worktree as it stands).
    frozen: bool = False


class Radar:
    """The radar of one repository, with its caches; `scan` is safe from several threads."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._lock = threading.Lock()
        #: (base, commit) → the files that differ, and whether any was deleted.
        self._committed: dict[tuple[str, str], tuple[frozenset[str], bool]] = {}
        #: (base, target's head) → the target's own changes since that base, the same way.
        self._target_files: dict[tuple[str, str], tuple[frozenset[str], bool]] = {}
        self._used_targets: set[tuple[str, str]] = set()
        self._snapshots: dict[tuple[str, ...], str] = {}
        self._merges: dict[tuple[str, str], tuple[str, ...] | None] = {}
        #: Frozen work (`git.frozen_work`) → its parent commit: a commit never changes.
        self._parents: dict[str, str] = {}
        self._signature: tuple[Any, ...] | None = None
        self._report = RadarReport()
        #: Each lane's side in the last scan, reused for a quiet running lane.
        self._sides: dict[str, _Side] = {}
        #: How many trial merges and snapshots git was asked for, and quiet sides reused (tests read them).
        self.merges_run = 0
        self.snapshots_made = 0
        self.quiet_reused = 0
        #: Trial merges skipped because they cannot conflict, and `git status` runs (tests, the bench).
        self.merges_skipped = 0
        self.statuses_run = 0
        #: Trial merges left for the next scan by `MERGES_PER_LOOK`: the report lacks their findings.
        self.pending = 0
        #: Ready lanes the last scan looked at as they stand (no frozen work on their head): their
        #: worktree is read at every scan, so a scan of them is never skipped (`live.radar_watch`).
        self.unfrozen_ready: frozenset[str] = frozenset()

    @property
    def report(self) -> RadarReport:
        """The newest report, without looking again."""
        return self._report

    def scan(self, records: Iterable[LaneRecord], quiet: Collection[str] = ()) -> RadarReport:
        """Look at the live and ready lanes of `records` now; reuse what did not move.

        `quiet` names lanes whose supervisor saw no file change since the last scan: a running lane
        among them keeps the side it had (same state), without a `git status` in its worktree. A
        hundred printing lanes cost a hundred git processes every five seconds otherwise.
        """
        with self._lock:
            return self._scan([r for r in records if r.state in RADAR_STATES], frozenset(quiet))

    def _scan(self, records: list[LaneRecord], quiet: frozenset[str] = frozenset()) -> RadarReport:
        if not records:
            self._signature, self._report, self._sides = (), RadarReport(), {}
            return self._report
        worktrees = {entry.branch: entry.path for entry in list_worktrees(self.repo)}
        targets, frozen = _branch_heads(self.repo)
        sides: list[_Side] = []
        problems: dict[str, str] = {}
        unfrozen: set[str] = set()
        self._learn_parents([frozen[r.id] for r in records if r.state == "ready" and r.id in frozen])
        used_committed: set[tuple[str, str]] = set()
        used_snapshots: set[tuple[str, ...]] = set()
        for record in records:
            before = self._sides.get(record.id)
            branch = branch_for(record.id)
            if (record.id in quiet and record.state != "ready" and before is not None
                    and before.state == record.state and branch in worktrees
                    and targets.get(branch) == before.key[0]):  # (a lane that committed is not quiet)
                used_committed.add((record.base_sha, before.key[0]))
                sides.append(before)
                self.quiet_reused += 1
                continue
            try:
                side = self._side(record, worktrees, used_committed, used_snapshots, frozen.get(record.id),
                                  targets.get(branch))
            except (LanesError, OSError) as exc:  # one unreadable lane never blinds the radar to the others
                problems[record.id] = str(exc)
                continue
            if side is not None:
                sides.append(side)
                if side.state == "ready" and not side.frozen:
                    unfrozen.add(side.lane_id)
        self.unfrozen_ready = frozenset(unfrozen)
        self._sides = {side.lane_id: side for side in sides}
        self._committed = {k: v for k, v in self._committed.items() if k in used_committed}
        self._snapshots = {k: v for k, v in self._snapshots.items() if k in used_snapshots}
        signature = tuple(sorted((s.lane_id, s.state, s.target, s.key, targets.get(s.target)) for s in sides)) \
            + tuple(sorted(problems.items()))
        if signature == self._signature and not self.pending:
            return self._report
        self._signature = signature
        self._report = RadarReport(self._findings(sides, targets), problems)
        return self._report

    # one lane ------------------------------------------------------------------------------------
    def _side(self, record: LaneRecord, worktrees: Mapping[str, Path], used_committed: set[tuple[str, str]],
              used_snapshots: set[tuple[str, ...]], frozen: str | None = None,
              branch_head: str | None = None) -> _Side | None:
        worktree = worktrees.get(branch_for(record.id))  # git's word for where the lane works
        if worktree is None or not worktree.is_dir():
            return None  # not created yet (queued), or gone: nothing changed that the radar can see
        base = record.base_sha
        if not _SHA.fullmatch(base):
            raise LanesError(f"lane {record.id}: its base {base!r} is not a commit id")
        if (record.state == "ready" and frozen is not None and branch_head is not None
                and self._parent(frozen) == branch_head):
            # The work its check froze, on the head it was frozen on: what accept merges, without the
            # gates' files. The worktree is on its branch (git listed it there), so its HEAD is the
            # branch's head: no `git status` (a lane whose HEAD moved since is looked at as it stands).
            work, deletes = self._files(base, frozen, used_committed)
            return _Side(record.id, record.state, record.target_branch, work, frozen, (branch_head, work, frozen),
                         base, deletes, frozen=True)
        head, dirty = worktree_state(worktree)
        self.statuses_run += 1
        if head is None:
            return None
        committed, deleted = self._files(base, head, used_committed)
        files = committed | frozenset(dirty)
        if record.state != "ready":
            return _Side(record.id, record.state, record.target_branch, files, None, (head, files), base)
        digest = stat_digest(worktree, dirty) if dirty else ""
        cache_key = (record.id, head, digest)
        snapshot = self._snapshots.get(cache_key)
        if snapshot is None:
            snapshot = self._snapshots[cache_key] = snapshot_commit(worktree, head, dirty, record.id)
            self.snapshots_made += 1
        used_snapshots.add(cache_key)
        # Uncommitted deletions are not told apart from changes here: a dirty lane counts as deleting.
        return _Side(record.id, record.state, record.target_branch, files, snapshot, (head, files, digest),
                     base, deleted or bool(dirty))

    def _files(self, base: str, commit: str, used: set[tuple[str, str]]) -> tuple[frozenset[str], bool]:
        """The files that differ between `base` and `commit`, and whether any was deleted (cached)."""
        key = (base, commit)
        used.add(key)
        known = self._committed.get(key)
        if known is None:
            out = run_git(self.repo, "diff", "--name-status", "-z", "--no-renames", base, commit, "--").stdout
            items = nul_list(out)  # status, path, status, path, … (no renames: one path each)
            statuses, names = items[0::2], items[1::2]
            known = self._committed[key] = (frozenset(names), any(st.startswith("D") for st in statuses))
        return known

    def _learn_parents(self, commits: Collection[str]) -> None:
        """The first parents of these frozen commits, in one `git log` for all those not known yet
        (a fresh dashboard's first look at a hundred ready lanes: one git process, not a hundred)."""
        unknown = sorted({c for c in commits if c not in self._parents and _SHA.fullmatch(c)})
        if not unknown:
            return
        if len(self._parents) + len(unknown) > 1000:
            self._parents.clear()
        proc = run_git(self.repo, "log", "--no-walk=unsorted", "--format=%H %P", *unknown, "--", check=False)
        if proc.returncode != 0:
            return  # one commit git cannot read: each is asked alone (`_parent`)
        for line in os.fsdecode(proc.stdout).splitlines():
            commit, _, parents = line.partition(" ")
            self._parents[commit] = parents.split(" ")[0] if parents else ""

    def _parent(self, commit: str) -> str:
        if commit not in self._parents:
            if len(self._parents) > 1000:
                self._parents.clear()
            proc = run_git(self.repo, "rev-parse", "--verify", "--quiet", f"{commit}^", check=False)
            self._parents[commit] = os.fsdecode(proc.stdout).strip() if proc.returncode == 0 else ""
        return self._parents[commit]

    # the findings ----------------------------------------------------------------------------------
    def _findings(self, sides: list[_Side], targets: Mapping[str, str]) -> dict[str, tuple[Conflict, ...]]:
        found: dict[str, list[Conflict]] = {s.lane_id: [] for s in sides}
        used: set[tuple[str, str]] = set()
        self._used_targets = set()
        # Every trial merge this report needs: (lane, other lane or None for the target, ours, theirs).
        wanted: list[tuple[_Side, _Side | None, str, str]] = []
        for side in sides:
            target_sha = targets.get(side.target)
            if side.snapshot is None or target_sha is None:
                continue
            if not self._target_cannot_conflict(side, target_sha):
                wanted.append((side, None, target_sha, side.snapshot))
        for a, b in itertools.combinations(sides, 2):
            common = tuple(sorted(a.files & b.files))
            if a.snapshot and b.snapshot and a.target == b.target:
                if common or not cannot_conflict((a.base, a.files, a.deletes), (b.base, b.files, b.deletes)):
                    ours, theirs = sorted((a.snapshot, b.snapshot))
                    wanted.append((a, b, ours, theirs))
                else:
                    self.merges_skipped += 1
            if common:
                found[a.lane_id].append(Conflict("overlap", b.lane_id, common, a.target))
                found[b.lane_id].append(Conflict("overlap", a.lane_id, common, b.target))
        # Those already tried first (free), then the ones sharing files (likeliest to conflict).
        wanted.sort(key=lambda w: ((w[2], w[3]) not in self._merges,
                                   w[1] is not None and not w[0].files & w[1].files))
        budget, self.pending = MERGES_PER_LOOK, 0
        for side, other, ours, theirs in wanted:
            if (ours, theirs) not in self._merges:
                if budget <= 0:
                    self.pending += 1
                    continue
                budget -= 1
            files = self._merge(ours, theirs, used)
            if not files:
                continue
            if other is None:
                found[side.lane_id].append(Conflict("target", None, files, side.target))
            else:
                found[side.lane_id].append(Conflict("merge", other.lane_id, files, side.target))
                found[other.lane_id].append(Conflict("merge", side.lane_id, files, other.target))
        self._merges = {k: v for k, v in self._merges.items() if k in used}
        self._target_files = {k: v for k, v in self._target_files.items() if k in self._used_targets}
        return {lane: tuple(sorted(items, key=lambda c: (KINDS.index(c.kind), c.lane or "")))
                for lane, items in found.items()}

    def _target_cannot_conflict(self, side: _Side, target_sha: str) -> bool:
        """The lane's trial merge into its target cannot conflict: the target's own changes since the
        lane's base (cached per pair of commits) pass `cannot_conflict` against the lane's."""
        if side.deletes:
            return False
        if target_sha == side.base:
            self.merges_skipped += 1
            return True  # the target has not moved: a fast-forward
        key = (side.base, target_sha)
        self._used_targets.add(key)
        if key not in self._target_files:
            self._target_files[key] = self._files(side.base, target_sha, set())
        files, deletes = self._target_files[key]
        if cannot_conflict((side.base, side.files, side.deletes), (side.base, files, deletes)):
            self.merges_skipped += 1
            return True
        return False

    def _merge(self, ours: str, theirs: str, used: set[tuple[str, str]]) -> tuple[str, ...]:
        key = (ours, theirs)
        used.add(key)
        if key not in self._merges:
            self._merges[key] = trial_merge(self.repo, ours, theirs)
            self.merges_run += 1
        return self._merges[key] or ()


def radar_report(repo: Path, records: Iterable[LaneRecord]) -> RadarReport:
    """One scan with fresh caches (the command line); a failing git leaves the report empty."""
    try:
        return Radar(repo).scan(records)
    except LanesError as exc:
        log.info("the conflict radar could not look: %s", exc)
        return RadarReport()


def with_conflicts(status: LaneStatus, report: RadarReport) -> LaneStatus:
    """The status with the radar's findings for its lane (the same object when they did not change)."""
    found = report.as_json(status.id)
    return status if found == tuple(status.conflicts) else replace(status, conflicts=found)


# git ---------------------------------------------------------------------------------------------
def _branch_heads(repo: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Every local branch → its commit, and every lane's frozen work (lane id → commit), in one call."""
    out = os.fsdecode(run_git(repo, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/",
                              FROZEN_PREFIX).stdout)
    heads, frozen = {}, {}
    for line in out.splitlines():
        sha, _, ref = line.partition(" ")
        if ref.startswith(FROZEN_PREFIX):
            frozen[ref.removeprefix(FROZEN_PREFIX)] = sha
        else:
            heads[ref.removeprefix("refs/heads/")] = sha
    return heads, frozen
