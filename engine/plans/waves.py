"""The waves a plan's blocker DAG gives, its cycles, and the report `plan check` prints.

Wave 1 holds the tickets with no blockers; wave n the tickets whose blockers all sit in earlier waves.
The scheduler does not wait for a whole wave (a ticket starts as soon as its own blockers are
accepted): waves are how the lead reads the plan's shape before launching it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.plans.model import Plan

__all__ = ["check_report", "find_cycle", "waves"]


def find_cycle(blockers: Mapping[str, Sequence[str]]) -> list[str] | None:
    """One cycle of the blocker graph as `[a, b, c, a]` (a waits for b, …), or None.

    Searched in the mapping's order (file order), and the cycle starts at its earliest ticket, so the
    same plan always names the same cycle. Blockers that name no ticket are ignored here.
    """
    order = {ticket: index for index, ticket in enumerate(blockers)}
    state: dict[str, int] = {}  # 1: on the path, 2: done
    for start in blockers:
        if start in state:
            continue
        path: list[str] = [start]
        todo = [iter(blockers[start])]
        state[start] = 1
        while todo:
            nxt = next(todo[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                todo.pop()
            elif nxt not in order or state.get(nxt) == 2:
                continue
            elif state.get(nxt) == 1:
                cycle = path[path.index(nxt):]
                first = min(range(len(cycle)), key=lambda i: order[cycle[i]])
                cycle = cycle[first:] + cycle[:first]
                return [*cycle, cycle[0]]
            else:
                state[nxt] = 1
                path.append(nxt)
                todo.append(iter(blockers[nxt]))
    return None


def waves(plan: Plan) -> list[list[str]]:
    """Ticket ids grouped by depth in the blocker DAG, in file order within each wave."""
    blockers = {t.id: t.blockers for t in plan.tickets}
    if cycle := find_cycle(blockers):
        raise LanesError(f"plan {plan.name!r} has a dependency cycle: {' → '.join(cycle)}",
                         "remove one of these blockers")
    depth: dict[str, int] = {}
    for start in blockers:  # each ticket's depth once, blockers first (no cycle: checked above)
        todo = [start]
        while todo:
            tid = todo[-1]
            if tid in depth:
                todo.pop()
                continue
            waiting = [b for b in blockers[tid] if b in blockers and b not in depth]
            if waiting:
                todo.extend(waiting)
                continue
            depth[tid] = 1 + max((depth[b] for b in blockers[tid] if b in blockers), default=0)
            todo.pop()
    result: list[list[str]] = [[] for _ in range(max(depth.values(), default=0))]
    for ticket in plan.tickets:
        result[depth[ticket.id] - 1].append(ticket.id)
    return result


def _runs_on(ticket_type: str | None, provider: str | None, tier: str | None) -> str:
    if tier:
        return f"tier {tier}"
    if provider:
        return f"provider {provider}"
    return f"type {ticket_type or 'backend'}"


def check_report(plan: Plan) -> list[str]:
    """The lines `plan check` prints: the plan, its ticket count, and each wave's tickets with their scopes."""
    grouped = waves(plan)
    count = len(plan.tickets)
    head = f"plan {plan.name}: {count} ticket{'s' * (count != 1)} in {len(grouped)} wave{'s' * (len(grouped) != 1)}"
    lines = [head + (f", target branch {plan.target}" if plan.target else "")]
    width = max((len(t.id) for t in plan.tickets), default=0)
    by_id = {t.id: t for t in plan.tickets}
    for number, ids in enumerate(grouped, start=1):
        lines.append(f"wave {number}: {', '.join(ids)}")
        for tid in ids:
            ticket = by_id[tid]
            extra = [_runs_on(ticket.type, ticket.provider, ticket.tier),
                     f"{ticket.attempts} attempt{'s' * (ticket.attempts != 1)}"]
            if ticket.blockers:
                extra.append("after " + ", ".join(ticket.blockers))
            if ticket.repo:
                extra.append(f"repo {ticket.repo}")
            lines.append(f"  {tid:<{width}}  {ticket.title} ({'; '.join(extra)})")
            lines.append(f"  {'':<{width}}  scope: {' '.join(ticket.scope) if ticket.scope else '(no files)'}")
    return lines
