"""The dashboard's side of the plans: the `Engine` ticks every open plan and keeps their statuses.

A part of `live.engine.Engine`. Every `tick_s` its watch loop calls `soon`, which
starts one tick in the background (never two at once, and never in the way of the watch loop: a
tick may be starting lanes). A plan whose plan supervisor runs is only looked at — the supervisor
ticks it — unless the lead asks (`advance`, the Plan pane's key). `statuses()` is what
the Plan pane reads: the newest statuses, kept in memory, so reading them costs nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
from collections.abc import Callable
from pathlib import Path

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.plans.model import TicketStatus
from lanes_tui.engine.plans.scheduler import advance, open_plan_names, plan_decision
from lanes_tui.engine.plans.supervisor import plan_supervisor_alive
from lanes_tui.engine.state.events import EngineEvent, EngineNotice

__all__ = ["PlanTicker"]

log = logging.getLogger(__name__)


class PlanTicker:
    """`emit`: how a plan's failed tick reaches the engine's subscribers (once per new problem)."""

    def __init__(self, repo: Path, config: Config, emit: Callable[[EngineEvent], None]) -> None:
        self.repo = repo
        self.config = config
        self.emit = emit
        #: Seconds between two plan ticks of the dashboard's engine.
        self.tick_s = 2.0
        self._plan_statuses: tuple[TicketStatus, ...] = ()
        self._plan_task: asyncio.Task[list[str]] | None = None
        self._last_plan_tick = -math.inf
        self._plan_problem: str | None = None

    def statuses(self) -> list[TicketStatus]:
        """Every open plan's tickets, as of the last tick (the Plan pane)."""
        return list(self._plan_statuses)

    async def advance(self) -> list[str]:
        """Tick every open plan now, also those a plan supervisor runs; the lanes started."""
        if self._plan_task is not None and not self._plan_task.done():
            with contextlib.suppress(Exception):
                await self._plan_task
        return await self._tick_plans(force=True)

    def soon(self, now: float) -> None:
        """Start a plan tick in the background when one is due and none runs."""
        if now - self._last_plan_tick < self.tick_s:
            return
        if self._plan_task is not None and not self._plan_task.done():
            return
        self._last_plan_tick = now
        self._plan_task = asyncio.create_task(self._tick_plans(), name="lanes-engine-plans")

    async def stop(self) -> None:
        """Cancel a tick in progress (`aclose`); a lane it was starting still starts, in its thread."""
        task, self._plan_task = self._plan_task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _tick_plans(self, *, force: bool = False) -> list[str]:
        names = await asyncio.to_thread(open_plan_names, self.repo)
        statuses: list[TicketStatus] = []
        started: list[str] = []
        problem = None
        for name in names:
            try:
                if not force and await asyncio.to_thread(plan_supervisor_alive, self.repo, name):
                    decision = await asyncio.to_thread(plan_decision, self.repo, name, config=self.config)
                else:
                    decision = await advance(self.repo, self.config, name,
                                             who=f"scheduler (dashboard, pid {os.getpid()})")
                    started.extend(decision.started)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # one broken plan must not hide the others
                log.exception("plan %s: tick failed", name)
                problem = f"plan {name}: {exc}"
                continue
            statuses.extend(decision.statuses)
        self._plan_statuses = tuple(statuses)
        if problem is not None and problem != self._plan_problem:
            self.emit(EngineNotice(problem, "error"))  # once per new problem, not every tick
        self._plan_problem = problem
        return started
