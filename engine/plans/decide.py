"""The scheduler's decisions: which tickets start now, which wait and why, which need the lead.

`decide` is pure: the frozen plan, the tickets' memos and the lanes as `LaneFact`s in, every ticket's
`TicketStatus` and the `Launch`es to make out, so it is tested with scripted histories
(`plans.scheduler` gathers the facts from disk and starts the lanes). The rules:

- a ticket's lanes are `<ticket>-aN` in its repository, of this plan (or by the lead's hand, e.g.
  `recover --relaunch`, after the plan was launched); the newest decides its state;
- a ticket starts when all its blockers are `accepted` (in whatever repository they run) and none of
  its scope is owned by an active lane (live, checking, ready or in conflict, of any plan or none,
  in the same repository: the same path, or a file inside an owned folder); at most `max_parallel`
  of the plan's tickets run at once (the lanes' own queue still holds each provider's `max`);
- a lane that ends rejected, stalled, failed, lost, abandoned or in conflict is relaunched with its
  findings until the ticket's attempts are used; then the ticket is `takeover`: the lead acts
  (`recover --relaunch`, whose lane the scheduler follows, `plan amend`, or `plan cancel`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lanes_tui.engine.core.ids import LANE_ID_PARTS_RE
from lanes_tui.engine.plans.model import Ticket, TicketStatus
from lanes_tui.engine.plans.scope import overlap
from lanes_tui.engine.plans.state import FrozenPlan, TicketMemo

__all__ = ["ACTIVE_STATES", "Decision", "LaneFact", "Launch", "decide", "ticket_lanes"]

#: Lane states in which a lane owns its scope: its work is on the way to (or waiting for) the target.
ACTIVE_STATES = frozenset({"queued", "launching", "running", "waiting", "checking", "reviewing", "ready",
                           "conflict", "unreachable"})
#: Ends after which a ticket's lane is tried again (with its findings) or handed to the lead.
FAILED_STATES = frozenset({"rejected", "lost", "abandoned", "conflict"})


@dataclass(frozen=True)
class LaneFact:
    """What the scheduler needs of one lane record (and whether its supervisor still runs)."""

    id: str
    repo: Path
    state: str
    result: str | None = None
    attempt: int = 1
    scope: tuple[str, ...] = ()
    plan: str | None = None
    ticket: str | None = None
    created: float = 0.0
    superseded_by: str | None = None
    supervisor_alive: bool = False
    reason: str = ""

    @property
    def outcome(self) -> str:
        """`accepted`, `ready`, `live` (still on its way), `failed`, or `stuck` (exited OK, no verdict)."""
        if self.state in ("accepted", "ready"):
            return self.state
        if self.state in FAILED_STATES:
            return "failed"
        if self.state in ("exited", "stalled"):
            if self.supervisor_alive:  # on its way to a packet
                return "live"
            return "stuck" if self.state == "exited" and self.result == "OK" else "failed"
        return "live"

    @property
    def active(self) -> bool:
        """Does this lane own its scope now?"""
        if self.superseded_by is not None:
            return False
        return self.state in ACTIVE_STATES or (self.state in ("exited", "stalled") and self.supervisor_alive)

    def describe_end(self) -> str:
        return f"{self.state} {self.result}" if self.state == "exited" and self.result else self.state


@dataclass(frozen=True)
class Launch:
    """A lane to start for a ticket: in its repository, after `after` (whose findings it gets) if set."""

    ticket: str
    repo: Path
    why: str
    after: str | None = None


@dataclass(frozen=True)
class Decision:
    """One look at a plan: every ticket's status and what to start now."""

    plan: str
    state: str
    statuses: tuple[TicketStatus, ...]
    launches: tuple[Launch, ...] = ()
    #: The lanes this tick started (`plans.scheduler.advance`); empty for a look.
    started: tuple[str, ...] = ()

    @property
    def done(self) -> bool:
        """Every ticket accepted."""
        return bool(self.statuses) and all(s.state == "accepted" for s in self.statuses)

    @property
    def finished(self) -> bool:
        """Nothing more for a scheduler to do: done or cancelled."""
        return self.done or self.state != "open"


def ticket_lanes(frozen: FrozenPlan, ticket: Ticket, lanes: Iterable[LaneFact]) -> list[LaneFact]:
    """The ticket's lanes, oldest attempt first: `<ticket>-aN` in its repository, of this plan, or
    of no plan and made after the plan was launched (the lead's `recover --relaunch`)."""
    repo = frozen.ticket_repo(ticket)
    found = []
    for lane in lanes:
        match = LANE_ID_PARTS_RE.match(lane.id)
        if lane.repo != repo or match is None or match.group("slug") != ticket.id:
            continue
        ours = lane.plan == frozen.name or (lane.plan is None and lane.created >= frozen.frozen_at)
        if ours and lane.ticket in (None, ticket.id):
            found.append(lane)
    return sorted(found, key=lambda lane: (lane.attempt, lane.created))


@dataclass
class _Pass:
    """What one `decide` pass has handed out so far: running tickets and scopes reserved."""

    running: int
    reserved: list[tuple[Path, str, tuple[str, ...]]] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)


def decide(frozen: FrozenPlan, plan_state: str, memos: Mapping[str, TicketMemo], lanes: Sequence[LaneFact], *,
           now: float, max_parallel: int) -> Decision:
    """Every ticket's status and the launches to make, from the lanes as they are (no side effect)."""
    plan = frozen.plan
    owned = {t.id: ticket_lanes(frozen, t, lanes) for t in plan.tickets}
    accepted = {tid for tid, mine in owned.items() if any(lane.state == "accepted" for lane in mine)}
    live = sum(1 for mine in owned.values() if mine and mine[-1].outcome == "live")
    todo = _Pass(running=live)
    statuses = []
    for ticket in plan.tickets:
        memo = memos.get(ticket.id) or TicketMemo(since=frozen.frozen_at)
        status = _ticket_status(frozen, plan_state, ticket, owned[ticket.id], accepted, memo, lanes, todo,
                                now=now, max_parallel=max_parallel)
        statuses.append(status)
    return Decision(plan.name, plan_state, tuple(statuses), tuple(todo.launches))


def _ticket_status(frozen: FrozenPlan, plan_state: str, ticket: Ticket, mine: list[LaneFact], accepted: set[str],
                   memo: TicketMemo, lanes: Sequence[LaneFact], todo: _Pass, *, now: float,
                   max_parallel: int) -> TicketStatus:
    latest = mine[-1] if mine else None
    used = sum(1 for lane in mine if lane.created >= memo.since)

    def status(state: str, reason: str, *, blocked_by: tuple[str, ...] = (), lane: str | None = None) -> TicketStatus:
        return TicketStatus(plan=frozen.name, id=ticket.id, title=ticket.title, state=state,
                            lane=lane or (latest.id if latest else None), attempts=used,
                            max_attempts=ticket.attempts, blocked_by=blocked_by, owned_files=len(ticket.scope),
                            repo=frozen.repo_label(ticket), reason=reason, scope=ticket.scope)

    if ticket.id in accepted:
        done = next(lane for lane in reversed(mine) if lane.state == "accepted")
        return status("accepted", f"{done.id} was accepted", lane=done.id)
    if plan_state == "cancelled":
        return status("cancelled", "the plan was cancelled")
    where = f" --repo {ticket.repo}" if ticket.repo else ""
    if latest is not None and latest.outcome == "live":
        return status("running", f"{latest.id} is {latest.state}: {latest.reason}"[:200])
    if latest is not None and latest.outcome == "ready":
        return status("ready", f"{latest.id} waits for the lead: `lanes-tui{where} accept {latest.id}`")
    if latest is not None and latest.outcome == "stuck":
        return status("takeover", f"{latest.id} exited without a verdict ({latest.reason})"[:160]
                      + f": `lanes-tui{where} check {latest.id}` runs its gates again")
    missing = tuple(b for b in ticket.blockers if b not in accepted)
    if missing:
        return status("blocked", f"waits for {', '.join(missing)} to be accepted", blocked_by=missing)
    if latest is not None and used >= ticket.attempts:
        return status("takeover", f"{latest.id} ended {latest.describe_end()} after {used} attempt"
                      f"{'s' * (used != 1)} (the plan allows {ticket.attempts}): the lead decides "
                      f"(`lanes-tui{where} recover {latest.id} --relaunch`, "
                      f"`lanes-tui plan amend {frozen.name} --reason TEXT FILE` or "
                      f"`lanes-tui plan cancel {frozen.name}`)")
    if memo.launch_errors >= ticket.attempts:
        return status("takeover", f"could not start a lane ({memo.last_error}); fix it and "
                      f"`lanes-tui plan amend {frozen.name} --reason TEXT FILE`")
    if plan_state != "open":
        return status("waiting", f"the plan is {plan_state}")
    if memo.retry_at > now:
        return status("waiting", f"starting a lane failed ({memo.last_error}); tried again in "
                      f"{memo.retry_at - now:.0f}s")
    repo = frozen.ticket_repo(ticket)
    if owner := _scope_owner(ticket, repo, mine, lanes, todo):
        return status("waiting", owner)
    if todo.running >= max_parallel:
        return status("waiting", f"{todo.running} tickets of the plan run already (max_parallel {max_parallel})")
    todo.running += 1
    todo.reserved.append((repo, ticket.id, ticket.scope))
    if latest is None:
        why = ("its blockers are accepted (" + ", ".join(ticket.blockers) + ")" if ticket.blockers
               else "it has no blockers") + (" and no active lane owns its files" if ticket.scope else "")
        todo.launches.append(Launch(ticket.id, repo, why))
        return status("waiting", "can start now: the scheduler starts it on its next tick")
    why = (f"{latest.id} ended {latest.describe_end()}; attempt {used + 1} of {ticket.attempts} "
           "with its findings")
    todo.launches.append(Launch(ticket.id, repo, why, after=latest.id))
    return status("waiting", f"{why}: the scheduler starts it on its next tick")


def _scope_owner(ticket: Ticket, repo: Path, mine: list[LaneFact], lanes: Sequence[LaneFact],
                 todo: _Pass) -> str | None:
    """Why the ticket must wait for its files, or None when no active lane owns any of them."""
    if not ticket.scope:
        return None
    own = {lane.id for lane in mine}
    for lane in lanes:
        if lane.repo != repo or lane.id in own or not lane.active or not lane.scope:
            continue
        if pair := overlap(ticket.scope, lane.scope):
            whose = f" (plan {lane.plan}, ticket {lane.ticket})" if lane.plan and lane.ticket else ""
            return f"waits for its files: lane {lane.id}{whose} is {lane.state} and owns {pair[1]}"
    for other_repo, other, scope in todo.reserved:
        if other_repo == repo and (pair := overlap(ticket.scope, scope)):
            return f"waits for its files: ticket {other} starts now and owns {pair[1]}"
    return None
