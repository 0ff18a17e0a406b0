"""A plan read back from `plan.json`, trusting nothing: every name, path and number is checked again.

`plan.json` sits in the state folder within reach of an agent (which runs as the lead's user), so a
plan read from it goes through the same shape checks as one read from a plan file: ids in the lane id
alphabet, scopes in plain relative form and not protected, known blockers, no cycle, tiers and
attempts in range, `repo` relative. (What needs the config — providers, tiers configured — was
checked at launch and is checked again when a lane starts.)
"""

from __future__ import annotations

import re
from typing import Any

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import ID_RULE, validate_slug
from lanes_tui.engine.plans.model import TIERS, Plan, Ticket
from lanes_tui.engine.plans.scope import scope_problem
from lanes_tui.engine.plans.waves import find_cycle

__all__ = ["MAX_ATTEMPTS", "PLAN_NAME_RE", "plan_from_json", "validate_plan_name"]

PLAN_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}\Z")
MAX_ATTEMPTS = 99


def validate_plan_name(name: str) -> str:
    """A plan name is a folder name under `.lanes/state/plans/`: the lane id alphabet, 1-64 characters."""
    if not isinstance(name, str) or not PLAN_NAME_RE.match(name):
        raise LanesError(f"invalid plan name {name!r}", f"use 1-64 {ID_RULE}")
    return name


def plan_from_json(data: Any) -> Plan:
    """A `Plan` from `plan.json`, checked again: ids, scopes, blockers, tiers, attempts, no cycle."""
    if not isinstance(data, dict):
        raise LanesError("the plan is not a JSON object")
    name = data.get("name")
    if not isinstance(name, str):
        raise LanesError("the plan has no name")
    validate_plan_name(name)
    target = data.get("target")
    if target is not None and (not isinstance(target, str) or not target.strip() or target.startswith("-")):
        raise LanesError(f"target {target!r} is not a branch name")
    raw = data.get("tickets")
    if not isinstance(raw, list) or not raw:
        raise LanesError("the plan has no tickets")
    tickets = tuple(_ticket(item, i) for i, item in enumerate(raw))
    ids = [t.id for t in tickets]
    if len(set(ids)) != len(ids):
        raise LanesError("two tickets have the same id")
    for ticket in tickets:
        unknown = [b for b in ticket.blockers if b not in ids]
        if unknown:
            raise LanesError(f"ticket {ticket.id} is blocked by unknown ticket(s) {', '.join(unknown)}")
    if cycle := find_cycle({t.id: t.blockers for t in tickets}):
        raise LanesError(f"dependency cycle {' → '.join(cycle)}")
    return Plan(name=name, tickets=tickets, target=target)


def _ticket(raw: Any, index: int) -> Ticket:
    if not isinstance(raw, dict):
        raise LanesError(f"ticket {index + 1} is not an object")
    tid = raw.get("id")
    try:
        if not isinstance(tid, str):
            raise LanesError("not a string")
        validate_slug(tid)
    except LanesError:
        raise LanesError(f"ticket {index + 1} has an invalid id {tid!r}") from None

    def text(key: str, *, optional: bool = False) -> str | None:
        value = raw.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, str) or "\x00" in value:
            raise LanesError(f"ticket {tid}: {key} must be a string")
        return value

    def strings(key: str) -> tuple[str, ...]:
        value = raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise LanesError(f"ticket {tid}: {key} must be a list of strings")
        return tuple(value)

    scope = strings("scope")
    for entry in scope:
        if problem := scope_problem(entry):
            raise LanesError(f"ticket {tid}: {problem[0]}")
    attempts = raw.get("attempts", 2)
    if not isinstance(attempts, int) or isinstance(attempts, bool) or not 1 <= attempts <= MAX_ATTEMPTS:
        raise LanesError(f"ticket {tid}: attempts must be a whole number from 1 to {MAX_ATTEMPTS}")
    tier = text("tier", optional=True)
    if tier is not None and tier not in TIERS:
        raise LanesError(f"ticket {tid}: unknown tier {tier!r}")
    repo = text("repo", optional=True)
    if repo is not None and (not repo.strip() or repo.startswith(("/", "~"))):
        raise LanesError(f"ticket {tid}: repo {repo!r} must be a path relative to the plan's repository")
    return Ticket(id=tid, title=text("title") or "", prompt=text("prompt") or "", scope=scope,
                  blockers=strings("blockers"), type=text("type", optional=True),
                  provider=text("provider", optional=True), tier=tier, attempts=attempts, repo=repo)
