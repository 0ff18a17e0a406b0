"""A launched plan on disk: the frozen plan, each ticket's memo, and the decision log.

`.lanes/state/plans/NAME/` in the plan's repository (also for tickets that run in another one):

- `plan.json`: the plan as frozen by `plan launch`, rewritten only by `plan amend` (atomically).
- `tickets.json`: the plan's state (`open`, `done`, `cancelled`) and one memo per ticket: since when
  its attempts count (an amend that changes the ticket starts them again), launch errors, the state
  and lane the scheduler last saw. Everything else a ticket is (running, ready, accepted, …) is
  derived from its lanes' records on every tick, so a restart rebuilds it from disk.
- `log.jsonl`: the decisions, one JSON line each: who, what, when, why (an amend adds its diff).
- `supervisor.json`, `supervisor.log`: the plan supervisor's identity and log (`plans.supervisor`).
- `tick/`, `supervisor-lock/`: `flock` slots — one scheduler tick at a time, one supervisor per plan.

Nothing read from here is trusted for a name or a path: the plan's name must be its folder's, every
ticket id, scope entry and blocker is checked again, a memo for an id the frozen plan does not have
is dropped, and a ticket's repository is derived from the plan's repository and its `repo` entry.
"""

from __future__ import annotations

import contextlib
import difflib
import getpass
import json
import math
import os
import posixpath
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lanes_tui.engine.core import slots
from lanes_tui.engine.core.atomic import append_jsonl, read_json, read_jsonl, write_json_atomic
from lanes_tui.engine.core.clock import Clock, RealClock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.schema import NewerSchema, check_schema, stamped
from lanes_tui.engine.plans.model import TICKET_STATES, Plan, Ticket
from lanes_tui.engine.plans.stored import PLAN_NAME_RE, plan_from_json, validate_plan_name
from lanes_tui.engine.state.paths import StatePaths

__all__ = [
    "PLAN_STATES",
    "FrozenPlan",
    "PlanPaths",
    "PlanRecord",
    "PlanStore",
    "TicketMemo",
    "lead_name",
    "plan_from_json",
    "plan_names",
    "plans_dir",
    "validate_plan_name",
]

#: A launched plan is `open` until every ticket is accepted (`done`) or the lead cancels it.
PLAN_STATES = ("open", "done", "cancelled")
#: How long a command waits for a scheduler tick in progress (it may be starting lanes).
LOCK_WAIT_S = 60.0


def plans_dir(repo: Path) -> Path:
    return StatePaths(repo).state / "plans"


def plan_names(repo: Path) -> list[str]:
    """Every launched plan of `repo` (a folder with a valid name and a `plan.json`), sorted."""
    folder = plans_dir(repo)
    try:
        entries = list(folder.iterdir())
    except OSError:
        return []
    return sorted(p.name for p in entries if PLAN_NAME_RE.match(p.name) and (p / "plan.json").is_file())


def lead_name() -> str:
    """Who the lead is in the decision log: `lead (USER)`."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return f"lead ({user})"


@dataclass(frozen=True)
class PlanPaths:
    """The files of one launched plan, derived from the repository and the (checked) name."""

    dir: Path

    @property
    def plan(self) -> Path:
        return self.dir / "plan.json"

    @property
    def tickets(self) -> Path:
        return self.dir / "tickets.json"

    @property
    def log(self) -> Path:
        return self.dir / "log.jsonl"

    @property
    def supervisor(self) -> Path:
        return self.dir / "supervisor.json"

    @property
    def supervisor_log(self) -> Path:
        return self.dir / "supervisor.log"

    @property
    def supervisor_lock(self) -> Path:
        return self.dir / "supervisor-lock"

    @property
    def tick_lock(self) -> Path:
        return self.dir / "tick"


@dataclass(frozen=True)
class FrozenPlan:
    """The plan as launched (or last amended), with the repository it belongs to."""

    plan: Plan
    #: The plan's repository: where its state lives and what a ticket's `repo` is relative to.
    repo: Path
    frozen_at: float
    amendment: int = 0
    source: str = ""

    @property
    def name(self) -> str:
        return self.plan.name

    def ticket_repo(self, ticket: Ticket) -> Path:
        """Where the ticket's lanes run: the plan's repository, or `repo` relative to it (derived, normalised)."""
        if not ticket.repo:
            return self.repo
        return Path(posixpath.normpath(str(self.repo / ticket.repo)))

    def repo_label(self, ticket: Ticket) -> str:
        """How `plan status` names the ticket's repository: `.` or the plan's `repo` entry."""
        return ticket.repo or "."

    def to_json(self) -> dict[str, Any]:
        return {"plan": self.plan.to_json(), "frozen_at": self.frozen_at, "amendment": self.amendment,
                "source": self.source}


@dataclass
class TicketMemo:
    """What the scheduler keeps of a ticket between ticks (the rest comes from its lanes)."""

    #: Lanes of the ticket created from then on count against its attempts (reset by an amend).
    since: float
    launch_errors: int = 0
    last_error: str = ""
    #: No launch is tried again before then (after a launch error).
    retry_at: float = 0.0
    #: The state and lane the scheduler last derived (what the decision log compares against).
    state: str = ""
    lane: str | None = None


@dataclass
class PlanRecord:
    """`tickets.json`: the plan's own state and its tickets' memos."""

    state: str = "open"
    tickets: dict[str, TicketMemo] = field(default_factory=dict)
    updated: float = 0.0

    def memo(self, ticket_id: str, since: float) -> TicketMemo:
        return self.tickets.setdefault(ticket_id, TicketMemo(since=since))

    def to_json(self) -> dict[str, Any]:
        return {"state": self.state, "updated": self.updated,
                "tickets": {tid: vars(memo).copy() for tid, memo in self.tickets.items()}}


class PlanStore:
    """One launched plan's folder: read, write, log, and the locks."""

    def __init__(self, repo: Path, name: str, clock: Clock | None = None) -> None:
        self.repo = repo
        self.name = validate_plan_name(name)
        self.paths = PlanPaths(plans_dir(repo) / self.name)
        self.clock = clock or RealClock()

    def exists(self) -> bool:
        return self.paths.plan.is_file()

    # the frozen plan -----------------------------------------------------------------------------
    def freeze(self, plan: Plan, *, source: str, who: str) -> FrozenPlan:
        """Write the plan for good (`plan launch`); refuses a name already launched."""
        if plan.name != self.name:
            raise LanesError(f"the plan is named {plan.name!r}, not {self.name!r}")
        if self.exists():
            raise LanesError(f"plan {self.name} was launched already",
                             f"see `lanes-tui plan status {self.name}`; change it with `lanes-tui plan amend "
                             f"{self.name} --reason TEXT FILE`, or give the new plan another [plan] name")
        StatePaths(self.repo).ensure()
        self.paths.dir.parent.mkdir(mode=0o700, exist_ok=True)
        self.paths.dir.mkdir(mode=0o700, exist_ok=True)
        now = self.clock.time()
        frozen = FrozenPlan(plan, self.repo, now, 0, source)
        record = PlanRecord(tickets={t.id: TicketMemo(since=now) for t in plan.tickets})
        self.write_record(record)
        # last: a plan exists once it is whole
        write_json_atomic(self.paths.plan, stamped(frozen.to_json(), "plan.json"))
        self.log(who, "launch", f"plan launched from {source}", tickets=[t.id for t in plan.tickets])
        return frozen

    def read_plan(self) -> FrozenPlan:
        try:
            data = read_json(self.paths.plan)
        except FileNotFoundError:
            raise LanesError(f"no launched plan {self.name!r}", "see `lanes-tui plan status` for the plans") from None
        except (OSError, ValueError) as exc:
            raise LanesError(f"plan {self.name}: {self.paths.plan} cannot be read: {exc}",
                             "restore it from a backup, or cancel the plan") from None
        check_schema(data, "plan.json", f"plan.json of plan {self.name}")  # newer: refused as is
        try:
            if not isinstance(data, dict):
                raise LanesError("it is not a JSON object")
            plan = plan_from_json(data.get("plan"))
            frozen_at, amendment = data.get("frozen_at"), data.get("amendment", 0)
            if not _number(frozen_at) or not isinstance(amendment, int) or isinstance(amendment, bool):
                raise LanesError("frozen_at or amendment is not a number")
            assert isinstance(frozen_at, int | float)  # for mypy: `_number` said so
        except LanesError as exc:
            raise LanesError(f"plan {self.name}: plan.json is corrupt: {exc.what}",
                             "restore it from a backup, or cancel the plan") from None
        if plan.name != self.name:
            raise LanesError(f"plan {self.name}: plan.json names plan {plan.name!r}, not its folder's",
                             "restore it from a backup, or cancel the plan")
        source = data["source"] if isinstance(data.get("source"), str) else ""
        return FrozenPlan(plan, self.repo, float(frozen_at), amendment, source)

    def amend(self, new: Plan, *, reason: str, who: str, source: str) -> list[str]:
        """Replace the frozen plan (the caller holds the tick lock); returns the diff that was logged.

        A ticket whose definition changed (or that is new) starts its attempts again; its lanes so far
        still count for `accepted`, so an accepted ticket is never run twice by an amend.
        """
        if not reason.strip():
            raise LanesError("an amend needs a reason", "give --reason TEXT: it is recorded with the change")
        old = self.read_plan()
        if new.name != self.name:
            raise LanesError(f"the file's plan is named {new.name!r}, not {self.name!r}",
                             f"set [plan] name = \"{self.name}\" in it")
        record = self.read_record(old)
        if record.state == "cancelled":
            raise LanesError(f"plan {self.name} is cancelled", "launch the changed plan under another name")
        now = self.clock.time()
        before = {t.id: t for t in old.plan.tickets}
        changed = [t.id for t in new.tickets if before.get(t.id) != t]
        memos = {t.id: record.tickets.get(t.id) or TicketMemo(since=now) for t in new.tickets}
        for tid in changed:
            memos[tid] = replace(memos[tid], since=now, launch_errors=0, last_error="", retry_at=0.0)
        record.tickets = memos
        if record.state == "done":  # the scheduler says `done` again on its next tick if it still is
            record.state = "open"
        diff = plan_diff(old.plan, new)
        frozen = FrozenPlan(new, self.repo, old.frozen_at, old.amendment + 1, source)
        self.write_record(record)
        write_json_atomic(self.paths.plan, stamped(frozen.to_json(), "plan.json"))
        self.log(who, "amend", reason, amendment=frozen.amendment, changed=changed,
                 removed=[tid for tid in before if tid not in memos], diff=diff, source=source)
        return diff

    def state(self) -> str:
        """The plan's state alone (`open`, `done`, `cancelled`), read cheaply; `open` when unreadable."""
        with contextlib.suppress(OSError, ValueError):
            data = read_json(self.paths.tickets)
            if isinstance(data, dict) and data.get("state") in PLAN_STATES:
                return str(data["state"])
        return "open"

    # the tickets' memos --------------------------------------------------------------------------
    def read_record(self, frozen: FrozenPlan | None = None) -> PlanRecord:
        """`tickets.json`, with a memo for every ticket of the frozen plan and for nothing else."""
        frozen = frozen or self.read_plan()
        try:
            data = read_json(self.paths.tickets)
        except (OSError, ValueError):
            data = {}
        try:
            check_schema(data, "tickets.json", f"tickets.json of plan {self.name}")
        except NewerSchema:
            raise  # rewritten in this format, it would lose what this version cannot read
        except LanesError:
            data = {}
        record = PlanRecord()
        raw: dict[str, Any] = {}
        if isinstance(data, dict):
            if data.get("state") in PLAN_STATES:
                record.state = data["state"]
            if _number(data.get("updated")):
                record.updated = float(data["updated"])
            if isinstance(data.get("tickets"), dict):
                raw = data["tickets"]
        for ticket in frozen.plan.tickets:  # ids come from the frozen plan, never from this file
            record.tickets[ticket.id] = _memo(raw.get(ticket.id), frozen.frozen_at)
        return record

    def write_record(self, record: PlanRecord) -> None:
        record.updated = self.clock.time()
        write_json_atomic(self.paths.tickets, stamped(record.to_json(), "tickets.json"))

    def set_state(self, state: str, *, who: str, why: str) -> None:
        """`cancelled` (the lead) or `done` (the scheduler); the caller holds the tick lock."""
        if state not in PLAN_STATES:
            raise ValueError(state)
        record = self.read_record()
        record.state = state
        self.write_record(record)
        self.log(who, state if state != "cancelled" else "cancel", why)

    # the decision log ----------------------------------------------------------------------------
    def log(self, who: str, what: str, why: str, **data: Any) -> None:
        append_jsonl(self.paths.log, {"t": self.clock.time(), "who": who, "what": what, "why": why,
                                      "plan": self.name, **data})

    def read_log(self) -> list[dict[str, Any]]:
        return [e for e in read_jsonl(self.paths.log) if isinstance(e, dict)]

    # locks -------------------------------------------------------------------------------------
    def try_tick_lock(self, who: str) -> slots.Slot | None:
        """The tick lock, or None while another scheduler (the dashboard, the plan supervisor) ticks."""
        return slots.try_acquire(self.paths.tick_lock, 1, {"lane": f"plan {self.name}", "command": who})

    @contextlib.contextmanager
    def tick_lock(self, who: str, wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
        """Wait for the tick lock (a command that changes the plan): a tick in progress finishes first."""
        end = time.monotonic() + wait_s
        while (slot := self.try_tick_lock(who)) is None:
            if time.monotonic() > end:
                raise LanesError(f"plan {self.name} is busy: its scheduler has held it for {wait_s:g}s",
                                 "try again in a moment")
            time.sleep(0.1)
        try:
            yield
        finally:
            slot.release()


def plan_diff(old: Plan, new: Plan) -> list[str]:
    """A unified diff of the two plans as JSON (what the decision log keeps of an amend)."""
    def lines(plan: Plan) -> list[str]:
        return json.dumps(plan.to_json(), indent=2, sort_keys=True).splitlines()

    return list(difflib.unified_diff(lines(old), lines(new), "plan (before)", "plan (after)", lineterm=""))


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _memo(raw: Any, frozen_at: float) -> TicketMemo:
    """A memo from `tickets.json`, each field kept only when it has the right type and range."""
    memo = TicketMemo(since=frozen_at)
    if not isinstance(raw, dict):
        return memo
    if _number(raw.get("since")):
        memo.since = max(frozen_at, float(raw["since"]))
    errors = raw.get("launch_errors")
    if isinstance(errors, int) and not isinstance(errors, bool) and 0 <= errors <= 1000:
        memo.launch_errors = errors
    if isinstance(raw.get("last_error"), str):
        memo.last_error = raw["last_error"][:500]
    if _number(raw.get("retry_at")):
        memo.retry_at = float(raw["retry_at"])
    if raw.get("state") in TICKET_STATES:
        memo.state = raw["state"]
    lane = raw.get("lane")
    if isinstance(lane, str) and PLAN_NAME_RE.match(lane):
        memo.lane = lane
    return memo
