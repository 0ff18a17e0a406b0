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

Cost: a scan asks git for one `status` per lane, one worktree list and one ref list. The rest is
cached by what decides it: a lane's committed files by (base, HEAD); its snapshot by (HEAD, a
digest of its uncommitted files' `lstat`: kind, size, times, inode — nothing is read); a trial merge
by the two commits merged. When no lane's HEAD,
changed files or content and no target moved, the previous report is returned as it was.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
import re
import subprocess
import tempfile
import threading
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import branch_for
from lanes_tui.engine.git.commands import GIT_TIMEOUT_S, first_line, list_worktrees, nul_list, run_git
from lanes_tui.engine.git.frozen_work import FROZEN_PREFIX
from lanes_tui.engine.git.harden import hardened_env
from lanes_tui.engine.git.patches import large_files
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
_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
#: The snapshot's author and committer: fixed, so the same work is always the same commit.
_SNAPSHOT_ENV = {
    "GIT_AUTHOR_NAME": "lanes-tui radar", "GIT_AUTHOR_EMAIL": "radar@lanes-tui.invalid",
    "GIT_AUTHOR_DATE": "@0 +0000", "GIT_COMMITTER_NAME": "lanes-tui radar",
    "GIT_COMMITTER_EMAIL": "radar@lanes-tui.invalid", "GIT_COMMITTER_DATE": "@0 +0000",
    "GIT_LITERAL_PATHSPECS": "1",
}


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


class Radar:
    """The radar of one repository, with its caches; `scan` is safe from several threads."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._lock = threading.Lock()
        self._committed: dict[tuple[str, str], frozenset[str]] = {}
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
                side = self._side(record, worktrees, used_committed, used_snapshots, frozen.get(record.id))
            except (LanesError, OSError) as exc:  # one unreadable lane never blinds the radar to the others
                problems[record.id] = str(exc)
                continue
            if side is not None:
                sides.append(side)
        self._sides = {side.lane_id: side for side in sides}
        self._committed = {k: v for k, v in self._committed.items() if k in used_committed}
        self._snapshots = {k: v for k, v in self._snapshots.items() if k in used_snapshots}
        signature = tuple(sorted((s.lane_id, s.state, s.target, s.key, targets.get(s.target)) for s in sides)) \
            + tuple(sorted(problems.items()))
        if signature == self._signature:
            return self._report
        self._signature = signature
        self._report = RadarReport(self._findings(sides, targets), problems)
        return self._report

    # one lane ------------------------------------------------------------------------------------
    def _side(self, record: LaneRecord, worktrees: Mapping[str, Path], used_committed: set[tuple[str, str]],
              used_snapshots: set[tuple[str, ...]], frozen: str | None = None) -> _Side | None:
        worktree = worktrees.get(branch_for(record.id))  # git's word for where the lane works
        if worktree is None or not worktree.is_dir():
            return None  # not created yet (queued), or gone: nothing changed that the radar can see
        base = record.base_sha
        if not _SHA.fullmatch(base):
            raise LanesError(f"lane {record.id}: its base {base!r} is not a commit id")
        head, dirty = _worktree_state(worktree)
        if head is None:
            return None
        committed = self._committed.get((base, head))
        if committed is None:
            names = run_git(self.repo, "diff", "--name-only", "-z", "--no-renames", base, head, "--").stdout
            committed = self._committed[(base, head)] = frozenset(nul_list(names))
        used_committed.add((base, head))
        files = committed | frozenset(dirty)
        if record.state != "ready":
            return _Side(record.id, record.state, record.target_branch, files, None, (head, files))
        if frozen is not None and self._parent(frozen) == head:  # the work its check froze: what accept
            # merges, without the gates' files (a lane whose HEAD moved since is looked at as it stands)
            work = self._committed.get((base, frozen))
            if work is None:
                names = run_git(self.repo, "diff", "--name-only", "-z", "--no-renames", base, frozen, "--").stdout
                work = self._committed[(base, frozen)] = frozenset(nul_list(names))
            used_committed.add((base, frozen))
            return _Side(record.id, record.state, record.target_branch, work, frozen, (head, work, frozen))
        digest = _stat_digest(worktree, dirty) if dirty else ""
        cache_key = (record.id, head, digest)
        snapshot = self._snapshots.get(cache_key)
        if snapshot is None:
            snapshot = self._snapshots[cache_key] = snapshot_commit(worktree, head, dirty, record.id)
            self.snapshots_made += 1
        used_snapshots.add(cache_key)
        return _Side(record.id, record.state, record.target_branch, files, snapshot, (head, files, digest))

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
        for side in sides:
            target_sha = targets.get(side.target)
            if side.snapshot is None or target_sha is None:
                continue
            files = self._merge(target_sha, side.snapshot, used)
            if files:
                found[side.lane_id].append(Conflict("target", None, files, side.target))
        for a, b in itertools.combinations(sides, 2):
            if a.snapshot and b.snapshot and a.target == b.target:
                ours, theirs = sorted((a.snapshot, b.snapshot))
                files = self._merge(ours, theirs, used)
                if files:
                    found[a.lane_id].append(Conflict("merge", b.lane_id, files, a.target))
                    found[b.lane_id].append(Conflict("merge", a.lane_id, files, b.target))
            common = tuple(sorted(a.files & b.files))
            if common:
                found[a.lane_id].append(Conflict("overlap", b.lane_id, common, a.target))
                found[b.lane_id].append(Conflict("overlap", a.lane_id, common, b.target))
        self._merges = {k: v for k, v in self._merges.items() if k in used}
        return {lane: tuple(sorted(items, key=lambda c: (KINDS.index(c.kind), c.lane or "")))
                for lane, items in found.items()}

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
def trial_merge(repo: Path, ours: str, theirs: str) -> tuple[str, ...] | None:
    """The files a merge of two commits would leave conflicted ((): clean; None: git could not try).

    `merge-tree --write-tree` writes the merged tree's objects and nothing else.
    """
    proc = run_git(repo, "merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", ours, theirs,
                   check=False)
    if proc.returncode == 0:
        return ()
    if proc.returncode == 1:
        names = nul_list(proc.stdout)[1:]  # the merged tree's id first, then each conflicted file
        return tuple(dict.fromkeys(names)) or ("(git named no file)",)
    log.info("trial merge of %s and %s failed: %s", ours[:10], theirs[:10], first_line(proc.stderr))
    return None


def snapshot_commit(worktree: Path, head: str, dirty: list[str], lane_id: str) -> str:
    """HEAD plus the uncommitted work of `dirty`, as a commit nothing refers to; HEAD when nothing is dirty.

    Staged in a temporary index, so the lane's own index and files are never touched. A file over
    `git.patches.MAX_SHOWN_BYTES` keeps its committed version there: `git add` would read it whole
    (and store it), and an agent's 20 GB sparse file held every `status` for minutes.
    """
    if not dirty:
        return head
    large = large_files(worktree, dirty)
    present = [name for name in dirty if _inside_lexists(worktree, name) and name not in large]
    missing = sorted(set(dirty) - set(present) - set(large))
    with tempfile.TemporaryDirectory(prefix="lanes-radar-") as tmp:
        env = {**_SNAPSHOT_ENV, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        _git_env(worktree, env, "read-tree", head)
        if present:
            _git_env(worktree, env, "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul",
                     stdin=_nul_join(present))
        if missing:
            _git_env(worktree, env, "rm", "-q", "--cached", "--ignore-unmatch", "--pathspec-from-file=-",
                     "--pathspec-file-nul", stdin=_nul_join(missing))
        tree = _git_env(worktree, env, "write-tree").strip()
        return _git_env(worktree, env, "commit-tree", "--no-gpg-sign", tree, "-p", head,
                        "-m", f"lanes-tui radar: uncommitted work of lane {lane_id}").strip()


def _worktree_state(worktree: Path) -> tuple[str | None, list[str]]:
    """(HEAD, every uncommitted path: staged, unstaged, untracked) from one porcelain v2 status."""
    out = run_git(worktree, "--no-optional-locks", "status", "--porcelain=v2", "-z", "--branch",
                  "--untracked-files=all", "--no-renames").stdout
    head: str | None = None
    names: list[str] = []
    source = False
    for item in out.split(b"\0"):
        if not item:
            continue
        text = os.fsdecode(item)
        if source:  # a rename's source path (not expected with --no-renames): changed as well
            names.append(text)
            source = False
        elif text.startswith("# branch.oid "):
            oid = text[len("# branch.oid "):]
            head = oid if _SHA.fullmatch(oid) else None
        elif text[:2] == "1 ":
            names.append(text.split(" ", 8)[8])
        elif text[:2] == "2 ":
            names.append(text.split(" ", 9)[9])
            source = True
        elif text[:2] == "u ":
            names.append(text.split(" ", 10)[10])
        elif text[:2] == "? ":
            names.append(text[2:])
    return head, sorted(set(names))


def _stat_digest(worktree: Path, names: list[str]) -> str:
    """A digest of the uncommitted files' kind, size, change time and inode (as git's index keeps them).

    Cheap enough for every look: nothing is read, so an agent's large new file costs one `lstat`.
    A content change that leaves all four alike is what git itself would miss too.
    """
    outer = hashlib.sha256()
    for name in names:
        _inside_lexists(worktree, name)  # refuses a name that would leave the worktree
        try:
            st = (worktree / name).lstat()
            facts = f"{st.st_mode} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns} {st.st_ino}"
        except OSError:
            facts = "missing"
        outer.update(os.fsencode(name) + b"\0" + facts.encode() + b"\n")
    return outer.hexdigest()


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


def _inside_lexists(worktree: Path, name: str) -> bool:
    rel = Path(name)
    if rel.is_absolute() or ".." in rel.parts:
        raise LanesError(f"git named {name!r}, which is not inside the worktree")
    return os.path.lexists(worktree / rel)


def _nul_join(names: list[str]) -> bytes:
    return b"".join(os.fsencode(name) + b"\0" for name in names)


def _git_env(cwd: Path, extra: Mapping[str, str], *args: str, stdin: bytes | None = None) -> str:
    """`run_git` with some variables set (a temporary index): the same clean environment and timeout."""
    env = hardened_env(cwd, dict(extra))
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, timeout=GIT_TIMEOUT_S,
                              input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LanesError(f"git {args[0]} in {cwd} failed: {exc}") from exc
    if proc.returncode != 0:
        raise LanesError(f"git {args[0]} failed in {cwd}: {first_line(proc.stderr)}")
    return os.fsdecode(proc.stdout)
