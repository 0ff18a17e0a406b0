"""The accept queue: every ready lane, each through the guarded accept, in an order the radar chose.

`lanes-tui accept --queue` and the dashboard's queue key take the ready lanes and order them:

1. lanes of a plan after their blockers: a lane whose record names a `plan` and a `ticket` follows
   the ready lanes of the tickets it is blocked by (directly or through other tickets), when the
   frozen plan is readable; every other lane goes by creation time;
2. a lane whose trial merge (`git.radar`) conflicts with the target, or with a lane placed before
   it, goes last — so is a lane whose blocker went last — and the lanes that merge cleanly go first.

Each lane is then accepted with `decisions.accept.Accept` (commit, rebase and gates again when the
target moved, fast-forward): nothing is reimplemented here. A lane with nothing to merge (the plan's
`NothingToMerge` refusal: it changed no file against its base) is skipped with that said, and the
queue goes on: no accept can ever take it, and the lanes after it do not depend on it. Every other
outcome that is not an accept stops the queue (refused, rebase conflict, gates failed), with its
reason; the lanes after it are left as they are, ready.

The command line and the dashboard run it through `decisions.api.Decisions` (`plan_queue`,
`accept_queue`); the dashboard's radar, whose trial merges the queue reuses, is `live.radar_watch`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.atomic import read_json
from lanes_tui.engine.core.clock import Clock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.accept import Accept
from lanes_tui.engine.decisions.accept_plan import NothingToMerge
from lanes_tui.engine.git.radar import Radar, RadarReport, radar_report
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore

__all__ = ["QueueEntry", "QueuePlan", "QueueReport", "QueueStep", "frozen_blockers",
           "order_lanes", "plan_queue", "run_queue"]

#: A plan name → {ticket id: the ticket ids blocking it}, or None when that plan cannot be read.
PlanBlockers = Callable[[str], Mapping[str, Sequence[str]] | None]
#: The steps after which the queue goes on to the next lane; any other one stops it.
_WENT_ON = ("accepted", "skipped")
_PLAN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}")  # as `plans.state` names them


@dataclass(frozen=True)
class QueueEntry:
    """One lane's place in the queue and why it is there."""

    lane_id: str
    why: str
    #: Sent to the end: its trial merge conflicts (or a blocker of it was sent there).
    last: bool = False


@dataclass(frozen=True)
class QueuePlan:
    """The order the queue will accept in, and the radar report it rests on."""

    entries: tuple[QueueEntry, ...]
    report: RadarReport = field(default_factory=RadarReport)

    @property
    def order(self) -> list[str]:
        return [e.lane_id for e in self.entries]

    def describe(self) -> list[str]:
        """One line per lane (`accept --queue --dry-run`, the dashboard's confirm dialog)."""
        if not self.entries:
            return ["no ready lanes: nothing to accept"]
        width = max(len(e.lane_id) for e in self.entries)
        return [f"{i}. {e.lane_id:<{width}}  {e.why}" for i, e in enumerate(self.entries, 1)]


@dataclass(frozen=True)
class QueueStep:
    """What happened to one lane: accepted, skipped (nothing to merge), conflict, rejected (gates),
    refused, or left (not tried)."""

    lane_id: str
    state: str
    message: str

    def line(self) -> str:
        if self.state == "accepted":
            return self.message
        if self.state == "left":
            return f"left ready {self.lane_id}: {self.message}"
        if self.state == "skipped":
            return f"skipped {self.lane_id}: {self.message}"
        return f"stopped at {self.lane_id}: {self.message}"


@dataclass(frozen=True)
class QueueReport:
    steps: tuple[QueueStep, ...]

    @property
    def ok(self) -> bool:
        """Nothing stopped the queue: every lane was accepted or skipped (each skip says so)."""
        return all(s.state in _WENT_ON for s in self.steps)

    @property
    def skipped(self) -> tuple[QueueStep, ...]:
        return tuple(s for s in self.steps if s.state == "skipped")

    @property
    def stopped_at(self) -> QueueStep | None:
        return next((s for s in self.steps if s.state not in (*_WENT_ON, "left")), None)

    def lines(self) -> list[str]:
        return [s.line() for s in self.steps] or ["no ready lanes: nothing to accept"]


# the order -----------------------------------------------------------------------------------------
def plan_queue(repo: Path, config: Config, *, radar: Radar | None = None,
               plan_blockers: PlanBlockers | None = None) -> QueuePlan:
    """The ready lanes in the order the queue would accept them, each with why (changes nothing)."""
    del config  # the same signature as the accept's plan; the order needs no setting (yet)
    records = LaneStore(StatePaths(repo)).all()
    report = radar.scan(records) if radar is not None else radar_report(repo, records)
    ready = [r for r in records if r.state == "ready"]
    blockers = plan_blockers if plan_blockers is not None else frozen_blockers(repo)
    return QueuePlan(tuple(order_lanes(ready, report, blockers)), report)


def order_lanes(records: Sequence[LaneRecord], report: RadarReport,
                plan_blockers: PlanBlockers | None = None) -> list[QueueEntry]:
    """Blockers first (plans), else creation time; then whatever would conflict goes last."""
    base = sorted(records, key=lambda r: (r.created, r.id))
    after = _plan_after(base, plan_blockers)
    first: list[QueueEntry] = []
    last: list[QueueEntry] = []
    for record in _topological(base, after):
        lane = record.id
        late = sorted(d for d in after[lane] if d in {e.lane_id for e in last})
        target_files = report.target_conflict(lane)
        clash = next(((e.lane_id, files) for e in first if (files := report.merge_conflict(lane, e.lane_id))), None)
        if late:
            last.append(QueueEntry(lane, f"last: after {', '.join(late)}, which it is blocked by and which "
                                   f"went last", True))
        elif target_files:
            last.append(QueueEntry(lane, f"last: its trial merge into {record.target_branch} conflicts in "
                                   f"{_names(target_files)}", True))
        elif clash is not None:
            last.append(QueueEntry(lane, f"last: its trial merge with {clash[0]} (queued before it) conflicts in "
                                   f"{_names(clash[1])}", True))
        else:
            first.append(QueueEntry(lane, _why_first(record, after[lane], report)))
    return first + last


def _why_first(record: LaneRecord, blockers: set[str], report: RadarReport) -> str:
    plan, ticket = _tag(record, "plan"), _tag(record, "ticket")
    if plan and ticket:
        why = f"plan {plan} ticket {ticket}" + (f", after {', '.join(sorted(blockers))}" if blockers else "")
    else:
        why = "created " + time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.created))
    overlaps = sorted(c.lane for c in report.of(record.id) if c.kind == "overlap" and c.lane)
    why += f"; merges cleanly into {record.target_branch} and with the lanes before it"
    if overlaps:
        why += f" (shares files with {', '.join(overlaps)})"
    return why


def _plan_after(records: Sequence[LaneRecord], plan_blockers: PlanBlockers | None) -> dict[str, set[str]]:
    """Lane id → the queued lanes it must follow: those of its ticket's blockers, transitively."""
    after: dict[str, set[str]] = {r.id: set() for r in records}
    if plan_blockers is None:
        return after
    tickets: dict[tuple[str, str], str] = {}
    for record in records:
        plan, ticket = _tag(record, "plan"), _tag(record, "ticket")
        if plan and ticket:
            tickets[(plan, ticket)] = record.id
    graphs: dict[str, Mapping[str, Sequence[str]] | None] = {}
    for (plan, ticket), lane in tickets.items():
        if plan not in graphs:
            graphs[plan] = plan_blockers(plan)
        graph = graphs[plan]
        if graph is None:
            continue
        seen: set[str] = set()
        todo = list(graph.get(ticket, ()))
        while todo:
            blocker = todo.pop()
            if blocker in seen or blocker == ticket:
                continue
            seen.add(blocker)
            todo.extend(graph.get(blocker, ()))
            if (plan, blocker) in tickets:
                after[lane].add(tickets[(plan, blocker)])
    return after


def _topological(base: list[LaneRecord], after: Mapping[str, set[str]]) -> list[LaneRecord]:
    """`base` reordered so each lane follows those it must; otherwise the order is kept."""
    placed: set[str] = set()
    pending = list(base)
    out: list[LaneRecord] = []
    while pending:
        # A cycle cannot come from a validated plan; should one appear, creation order breaks it.
        pick = next((r for r in pending if after[r.id] <= placed), pending[0])
        pending.remove(pick)
        placed.add(pick.id)
        out.append(pick)
    return out


def frozen_blockers(repo: Path) -> PlanBlockers:
    """Reads each frozen plan's blockers from `.lanes/state/plans/NAME/plan.json` (`plans.state`).

    The file is within an agent's reach, so it is only read: a name that is not a plain plan name, a
    file that is missing, too large or of another shape gives None (the lanes go by creation time).
    """
    folder = StatePaths(repo).state / "plans"

    def read(name: str) -> Mapping[str, Sequence[str]] | None:
        if not _PLAN_NAME.fullmatch(name):
            return None
        path = folder / name / "plan.json"
        try:
            if path.stat().st_size > 4 * 1024 * 1024:
                return None
            data: Any = read_json(path)
        except (OSError, ValueError):
            return None
        plan = data.get("plan", data) if isinstance(data, dict) else None  # {"plan": Plan.to_json(), …}
        tickets = plan.get("tickets") if isinstance(plan, dict) else None
        if not isinstance(tickets, list):
            return None
        graph: dict[str, tuple[str, ...]] = {}
        for ticket in tickets:
            blockers = ticket.get("blockers", []) if isinstance(ticket, dict) else None
            if not isinstance(ticket, dict) or not isinstance(ticket.get("id"), str) \
                    or not isinstance(blockers, list) or not all(isinstance(b, str) for b in blockers):
                return None
            graph[ticket["id"]] = tuple(blockers)
        return graph

    return read


# the run ---------------------------------------------------------------------------------------------
async def run_queue(repo: Path, config: Config, *, plan: QueuePlan | None = None, radar: Radar | None = None,
                    clock: Clock | None = None, on_step: Callable[[QueueStep], None] | None = None) -> QueueReport:
    """Accept the plan's lanes in order; skip one with nothing to merge; stop at the first other lane
    that is not accepted and leave the rest ready."""
    plan = plan or plan_queue(repo, config, radar=radar)
    steps: list[QueueStep] = []
    stopped: str | None = None
    for entry in plan.entries:
        if stopped is not None:
            step = QueueStep(entry.lane_id, "left", f"the queue stopped at {stopped}")
        else:
            try:
                outcome = await Accept(repo, config, entry.lane_id, clock).run(message=None, override=None)
                step = QueueStep(entry.lane_id, outcome.state, outcome.message)
            except NothingToMerge:
                step = QueueStep(entry.lane_id, "skipped", f"nothing to merge (abandon it: `lanes-tui abandon "
                                 f"{entry.lane_id}`)")
            except LanesError as exc:
                step = QueueStep(entry.lane_id, "refused", str(exc))
            if step.state not in _WENT_ON:
                stopped = entry.lane_id
        steps.append(step)
        if on_step is not None:
            on_step(step)
    return QueueReport(tuple(steps))


def _tag(record: LaneRecord, name: str) -> str:
    """A plan or ticket name from the record (fields a plan's lanes have), or ""."""
    value = getattr(record, name, None)
    return value if isinstance(value, str) else ""


def _names(files: Sequence[str], shown: int = 6) -> str:
    return ", ".join(files[:shown]) + (f" and {len(files) - shown} more" if len(files) > shown else "")
