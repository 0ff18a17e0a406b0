"""Best-of-N: the rank of each lane in a group that worked on one task, once every one has ended.

`run --best-of N` starts N lanes on the same task under one group id (`lanes.launcher.launch_group`)
so the lead can keep the best attempt. Which one is best is decided by figures the lead can check by
hand, in this order: the gates passed (a lane that failed them, exited, stalled or was lost is below
every lane that passed), the review verdict (CLEAN above MISSING or none above BLOCKING), fewer
lines changed (the smaller change is the easier one to trust), lower cost, shorter time. Lanes
with the same figures share a rank. A figure nobody could read (no cost reported, the worktree gone)
sorts below every known one: an unknown is never a reason to win.

Until every lane of the group has ended (none live, checking or reviewing, no supervisor still on
its way to a packet) the group has no ranks at all: half a race ranks nothing.

`rank_group` and `rank_reasons` are pure. `GroupRanks` gathers the figures (each lane's packet, and
its lines changed from one `git diff --numstat` plus the new files) and is called on the status path,
so it does nothing for lanes without a group, nothing for a group still running, and remembers a
group's ranks while its members' records stay the same (the dashboard asks every tick).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.packet import read_packet
from lanes_tui.engine.git.commands import nul_list, refuse_option, run_git
from lanes_tui.engine.lanes.launcher import supervisor_alive
from lanes_tui.engine.state.model import LIVE_STATES, SETTLING_STATES
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.status import LaneStatus

__all__ = ["ACTIVE_STATES", "GroupRanks", "LaneFigures", "RankedLane", "rank_group", "rank_reasons",
           "with_ranks"]

#: States in which a lane's figures may still change: the group waits for it.
ACTIVE_STATES = LIVE_STATES | {"checking", "reviewing"}
#: States of a lane whose gates did not pass (or never ran), whatever its packet says.
FAILED_STATES = frozenset({"exited", "stalled", "lost"})
#: Review verdicts, best first; None (no review decided) counts as MISSING.
REVIEW_ORDER: Mapping[str | None, int] = {"CLEAN": 0, "MISSING": 1, None: 1, "BLOCKING": 2}
#: Read-only git: no optional lock (the lane's index is not refreshed), no external diff or textconv.
READ_ONLY = ("--no-optional-locks", "--literal-pathspecs")
DIFF_OPTIONS = ("--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "--numstat", "-z")
#: New (untracked) files are counted by reading them: at most this many files, this many bytes each.
MAX_NEW_FILES = 2000
MAX_NEW_FILE_BYTES = 1024 * 1024
#: The figures in key order, as the reasons name them.
KEY_NAMES = ("gates", "review", "lines changed", "cost", "time")


@dataclass(frozen=True)
class LaneFigures:
    """What the ranking reads besides the status: the packet's gates and review, the lane's diff size."""

    #: The packet's `gates_status` (passed, none, failed, not-run); None when the lane has no packet.
    gates_status: str | None = None
    #: The review verdict (the status's copy first, else the packet's); None when none was decided.
    review: str | None = None
    #: Lines added plus lines removed against the lane's base; None when they could not be read.
    lines_changed: int | None = None


@dataclass(frozen=True)
class RankedLane:
    """One lane of a ranked group, with the figures its rank rests on."""

    status: LaneStatus
    rank: int
    passed: bool
    review: str | None
    lines_changed: int | None
    cost_usd: float | None
    duration_s: float | None

    @property
    def key(self) -> tuple[float, ...]:
        """The order key, smaller is better; an unknown figure is infinity (below every known one)."""
        return (0.0 if self.passed else 1.0, float(REVIEW_ORDER.get(self.review, 1)), _known(self.lines_changed),
                _known(self.cost_usd), _known(self.duration_s))

    def figures(self) -> str:
        """`gates passed, review CLEAN, 12 lines, $0.31, 41s`: the figures as the lead reads them."""
        gates = "gates passed" if self.passed else f"gates not passed ({self.status.state})"
        lines = "lines unknown" if self.lines_changed is None else (
            f"{self.lines_changed} line{'' if self.lines_changed == 1 else 's'}")
        cost = "cost unknown" if self.cost_usd is None else f"${self.cost_usd:.2f}"
        took = "time unknown" if self.duration_s is None else f"{self.duration_s:.1f}s"
        return f"{gates}, review {self.review or 'MISSING'}, {lines}, {cost}, {took}"


def lane_ended(status: LaneStatus) -> bool:
    """The lane does nothing more by itself (pure: a supervisor still alive is `GroupRanks`' check)."""
    return status.state not in ACTIVE_STATES


def gates_passed(status: LaneStatus, gates_status: str | None) -> bool:
    """Did the lane's work pass its gates? A lane rejected by its review alone still did (the review
    ranks it next); one that exited, stalled or was lost never ran them to the end."""
    if status.state in FAILED_STATES:
        return False
    if status.state == "ready":
        return True
    return status.result == "OK" and gates_status in ("passed", "none")


def lane_duration(status: LaneStatus) -> float | None:
    """Seconds the lane's providers ran, all runs added up; None when no run reported its time."""
    times = [t for t in (a.get("duration_s") for a in status.providers_tried)
             if isinstance(t, int | float) and not isinstance(t, bool) and math.isfinite(t) and t >= 0]
    return float(sum(times)) if times else None


def rank_group(statuses: Sequence[LaneStatus], figures: Mapping[str, LaneFigures]) -> list[RankedLane]:
    """The group best first, each lane with its rank (equal figures share one: 1, 1, 3); [] while
    any lane is still active, or for an empty group. `figures` is by lane id (missing: all unknown)."""
    if not statuses or not all(lane_ended(s) for s in statuses):
        return []
    unranked = []
    for status in statuses:
        found = figures.get(status.id, LaneFigures())
        cost = status.cost_usd if status.cost_usd is not None and math.isfinite(status.cost_usd) else None
        unranked.append(RankedLane(status=status, rank=0, passed=gates_passed(status, found.gates_status),
                                   review=status.review or found.review, lines_changed=found.lines_changed,
                                   cost_usd=cost, duration_s=lane_duration(status)))
    unranked.sort(key=lambda r: (r.key, r.status.created, r.status.id))
    ranked: list[RankedLane] = []
    for place, lane in enumerate(unranked, start=1):
        tied = ranked and ranked[-1].key == lane.key
        ranked.append(replace(lane, rank=ranked[-1].rank if tied else place))
    return ranked


def rank_reasons(ranked: Sequence[RankedLane]) -> list[str]:
    """One line per lane, best first: its rank, its figures, and the figure that put it below the
    lane before it (or the lane it ties with)."""
    lines = []
    for i, lane in enumerate(ranked):
        line = f"#{lane.rank} {lane.status.id}: {lane.figures()}"
        if i:
            above = ranked[i - 1]
            if above.key == lane.key:
                line += f"; tied with {above.status.id}"
            else:
                which = next(n for n, a, b in zip(KEY_NAMES, above.key, lane.key, strict=True) if a != b)
                line += f"; below {above.status.id} on {which}"
        lines.append(line)
    return lines


def with_ranks(statuses: Iterable[LaneStatus], ranks: Mapping[str, int]) -> list[LaneStatus]:
    """The statuses with `rank` filled from `ranks` (None for a grouped lane without one)."""
    return [replace(s, rank=ranks.get(s.id)) if s.group and s.rank != ranks.get(s.id) else s for s in statuses]


class GroupRanks:
    """Each grouped lane's rank, computed when its whole group has ended and kept while the members'
    records (id, state, last write) stay the same; a group still on its way is asked again each time."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.paths = StatePaths(repo)
        self._cache: dict[str, tuple[tuple[tuple[str, str, float], ...], dict[str, int]]] = {}

    def ranks(self, statuses: Iterable[LaneStatus]) -> dict[str, int]:
        """Lane id → rank for every lane of every ended group among `statuses` (give all members)."""
        groups: dict[str, list[LaneStatus]] = {}
        for status in statuses:
            if status.group and not status.superseded_by:  # a relaunched member counts by its new attempt
                groups.setdefault(status.group, []).append(status)
        for gone in set(self._cache) - set(groups):
            del self._cache[gone]
        found: dict[str, int] = {}
        for group, members in groups.items():
            found.update(self._group(group, members))
        return found

    def ranked(self, members: Sequence[LaneStatus]) -> list[RankedLane]:
        """One group's ranking with its figures (for the reasons); [] while it has not ended."""
        if not self._ended(members):
            return []
        return rank_group(members, {s.id: self.figures(s) for s in members})

    def _group(self, group: str, members: list[LaneStatus]) -> dict[str, int]:
        stamp = tuple(sorted((s.id, s.state, s.updated) for s in members))
        cached = self._cache.get(group)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        ranks = {lane.status.id: lane.rank for lane in self.ranked(members)}
        if ranks:  # an unfinished group is not kept: its supervisors may finish without a record write
            self._cache[group] = (stamp, ranks)
        return ranks

    def _ended(self, members: Sequence[LaneStatus]) -> bool:
        if not all(lane_ended(s) for s in members):
            return False
        return not any(s.state in SETTLING_STATES and supervisor_alive(self.repo, s.id) for s in members)

    def figures(self, status: LaneStatus) -> LaneFigures:
        """The lane's packet figures and its lines changed (None where they cannot be read)."""
        try:
            packet = read_packet(self.paths.lane(status.id)) or {}
        except LanesError:  # an id no lane can have: nothing to read
            packet = {}
        gates = packet.get("gates_status")
        review = packet.get("review")
        return LaneFigures(gates_status=gates if isinstance(gates, str) else None,
                           review=review if isinstance(review, str) else None,
                           lines_changed=self._lines(status, packet))

    def _lines(self, status: LaneStatus, packet: Mapping[str, object]) -> int | None:
        """Lines added + removed: the accepted commit range for an accepted lane, else the worktree."""
        try:
            refuse_option(status.base_sha, "base commit")
            merged = packet.get("accepted_sha")
            if status.state == "accepted" and isinstance(merged, str):
                refuse_option(merged, "accepted commit")
                return _numstat(run_git(self.repo, *READ_ONLY, "diff", *DIFF_OPTIONS, status.base_sha, merged,
                                        "--").stdout)
            where = packet.get("worktree")
            worktree = Path(where) if isinstance(where, str) and where else Path(status.worktree)
            if status.state == "abandoned" or not status.worktree or not worktree.is_dir():
                return None
            tracked = _numstat(run_git(worktree, *READ_ONLY, "diff", *DIFF_OPTIONS, status.base_sha, "--").stdout)
            new = nul_list(run_git(worktree, *READ_ONLY, "ls-files", "--others", "--exclude-standard", "-z").stdout)
            return tracked + sum(_count_lines(worktree, name) for name in new[:MAX_NEW_FILES])
        except LanesError:  # a worktree git cannot read, a base that is gone: unknown, ranked below the known
            return None


def _numstat(out: bytes) -> int:
    """Added + removed over a `--numstat -z` listing (a binary file's `-` counts as nothing)."""
    total = 0
    for entry in out.split(b"\0"):
        parts = entry.split(b"\t", 2)
        if len(parts) == 3:
            total += sum(int(p) for p in parts[:2] if p.isdigit())
    return total


def _count_lines(worktree: Path, name: str) -> int:
    """The lines of a new file (a last line without its newline counts); 0 for a link or unreadable."""
    path = worktree / name
    try:
        if path.is_symlink() or not path.is_file():
            return 0
        with open(path, "rb") as handle:
            data = handle.read(MAX_NEW_FILE_BYTES)
    except OSError:
        return 0
    if b"\0" in data[:8000]:  # binary, as git would call it
        return 0
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _known(value: float | None) -> float:
    return math.inf if value is None else float(value)

