"""The plan as data: tickets with file scopes and blockers, and what the lead sees of each ticket.

A plan file (`.lanes/plans/NAME.toml`, docs/plans.md) is read into a `Plan` (`plans.validate`
checks it, one clear error per problem); `plan launch` freezes it into the state folder
(`plans.state`), and the scheduler (`plans.scheduler`) starts each ticket's lane once its blockers
are accepted and no active lane owns its files. `TicketStatus` is what `plan status --json`, the
Plan pane and the attention bar read.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["TICKET_STATES", "TIERS", "Plan", "Ticket", "TicketStatus"]

TIERS = ("heavy", "standard", "light")

#: A ticket's state as the scheduler derives it:
#: `blocked` (a blocker is not accepted yet), `waiting` (its blockers are done but an active lane
#: owns one of its files, or max_parallel / a provider's max is full), `running` (its lane is live),
#: `ready` (its lane waits for the lead's accept), `accepted`, `takeover` (its attempts are used up:
#: the lead must relaunch with a note, amend the plan or abandon), `cancelled` (`plan cancel`).
TICKET_STATES = ("blocked", "waiting", "running", "ready", "accepted", "takeover", "cancelled")


@dataclass(frozen=True)
class Ticket:
    """One ticket of a plan. `scope` holds exact paths and folders ending in `/`, relative to its repo."""

    id: str
    title: str
    prompt: str
    scope: tuple[str, ...] = ()
    blockers: tuple[str, ...] = ()
    #: The task type (→ chain); None with `provider` or `tier` set, else `backend`.
    type: str | None = None
    provider: str | None = None
    tier: str | None = None
    attempts: int = 2
    #: Another repository (relative to the plan's repository, e.g. `../other`); None: the plan's own.
    repo: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["scope"], data["blockers"] = list(self.scope), list(self.blockers)
        return data


@dataclass(frozen=True)
class Plan:
    """A validated plan: its name, optional target branch and tickets in file order."""

    name: str
    tickets: tuple[Ticket, ...]
    target: str | None = None

    def ticket(self, ticket_id: str) -> Ticket:
        for ticket in self.tickets:
            if ticket.id == ticket_id:
                return ticket
        raise KeyError(ticket_id)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "target": self.target, "tickets": [t.to_json() for t in self.tickets]}


@dataclass(frozen=True)
class TicketStatus:
    """A ticket as the lead sees it (`plan status`, the Plan pane)."""

    plan: str
    id: str
    title: str
    state: str
    lane: str | None = None
    attempts: int = 0
    max_attempts: int = 2
    blocked_by: tuple[str, ...] = ()
    owned_files: int = 0
    repo: str = ""
    #: Why it is in its state, in one line (which lane owns which file, what the lead must do, …).
    reason: str = ""
    scope: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["blocked_by"], data["scope"] = list(self.blocked_by), list(self.scope)
        return data
