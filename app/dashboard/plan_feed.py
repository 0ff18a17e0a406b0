"""The Plan pane's feed: the engine's ticket statuses, and its "launch what can launch now".

`Engine.plan_statuses()` and `Engine.advance_plans()` arrive with the plan scheduler (issue 11).
This module is the one place that asks whether the engine offers them (`hasattr`): an engine
without them shows no plan and says so when the lead presses the key, instead of failing. Either
may be a coroutine or a plain (blocking) method; a plain one runs in a worker thread so reading the
plan state never stalls the dashboard.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lanes_tui.engine import TicketStatus


def offers(engine: object, name: str) -> bool:
    """Whether the engine has the plan command `name` yet (the one guard, see the docstring)."""
    return callable(getattr(engine, name, None))


async def _call(method: Callable[[], Any]) -> Any:
    if inspect.iscoroutinefunction(method):
        return await method()
    result = await asyncio.to_thread(method)
    return await result if inspect.isawaitable(result) else result


async def plan_statuses(engine: object) -> list[TicketStatus]:
    """Every open plan's tickets; an empty list when no plan is open or the engine has no plans yet."""
    if not offers(engine, "plan_statuses"):
        return []
    return list(await _call(engine.plan_statuses))  # type: ignore[attr-defined]


async def advance_plans(engine: object) -> tuple[bool, Any]:
    """Launch what can launch now: (whether the engine can, what it returned — e.g. the lanes started)."""
    if not offers(engine, "advance_plans"):
        return False, None
    return True, await _call(engine.advance_plans)  # type: ignore[attr-defined]


def describe_advance(result: Any) -> str:
    """The notification after `P`: the lanes started, or that nothing could start yet."""
    if isinstance(result, (list, tuple, set)):
        names = [str(getattr(item, "id", item)) for item in result]
        if not names:
            return "nothing can start now: every ticket waits for a blocker, a file's owner or a free slot"
        return f"started {len(names)}: " + ", ".join(names[:6]) + (" …" if len(names) > 6 else "")
    return "the plans were advanced"
