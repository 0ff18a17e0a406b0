"""The engine's decision and inbox commands, for the dashboard: each a thin async wrapper.

Decisions do blocking git work and may wait on locks, so each runs on its own event loop in a
worker thread: the dashboard's loop never stalls behind an accept. Refusals arrive as LanesError,
which the app shows as a notification with its reason.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.clock import Clock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.abandon import AbandonPlan, abandon_lane, plan_abandon
from lanes_tui.engine.decisions.accept import Accept, AcceptOutcome
from lanes_tui.engine.decisions.accept_plan import AcceptPlan, plan_accept
from lanes_tui.engine.decisions.check import check_lane, lane_gate_report
from lanes_tui.engine.decisions.finish import FinishReport, finish
from lanes_tui.engine.decisions.gates.log import GateReport
from lanes_tui.engine.decisions.recover import Findings, inspect_lane, recheck, relaunch, wake_parked
from lanes_tui.engine.decisions.review.run import review_by_lead
from lanes_tui.engine.decisions.review.verify import verify_lane
from lanes_tui.engine.inbox.store import InboxStore
from lanes_tui.engine.state.allow import AllowRule, add_rule
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths

T = TypeVar("T")


async def _offload(factory: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine on a fresh loop in a worker thread."""

    def runner() -> T:
        async def main() -> T:
            return await factory()

        return asyncio.run(main())

    return await asyncio.to_thread(runner)


class DecisionCommands:
    """Mixed into `Engine`: needs `repo`, `config`, `clock`, `inbox` and `_after_command()`."""

    repo: Path
    config: Config
    clock: Clock
    inbox: InboxStore

    async def _after_command(self) -> None:
        raise NotImplementedError

    async def plan_accept(self, lane_id: str, override: str | None = None,
                          override_review: str | None = None) -> AcceptPlan:
        return await asyncio.to_thread(plan_accept, self.repo, self.config, lane_id, override=override,
                                       override_review=override_review)

    async def accept(self, lane_id: str, *, message: str | None = None, override: str | None = None,
                     override_review: str | None = None) -> AcceptOutcome:
        try:
            return await _offload(lambda: Accept(self.repo, self.config, lane_id).run(
                message=message, override=override, override_review=override_review))
        finally:
            await self._after_command()

    async def review(self, lane_id: str) -> dict[str, Any]:
        """Review (again) a lane by hand: `lanes-tui review ID` from the dashboard."""
        try:
            return await _offload(lambda: review_by_lead(self.repo, self.config, lane_id))
        finally:
            await self._after_command()

    async def verify(self, lane_id: str, evidence: str) -> dict[str, Any]:
        """The lead's verification with its evidence (`lanes-tui verify ID --evidence TEXT`)."""
        try:
            return await asyncio.to_thread(verify_lane, self.repo, self.config, lane_id, evidence)
        finally:
            await self._after_command()

    async def plan_abandon(self, lane_id: str, *, force: bool = False) -> AbandonPlan:
        return await asyncio.to_thread(plan_abandon, self.repo, self.config, lane_id, force=force)

    async def abandon(self, lane_id: str, *, force: bool = False) -> list[str]:
        try:
            return await _offload(lambda: abandon_lane(self.repo, self.config, lane_id, force=force))
        finally:
            await self._after_command()

    async def inspect(self, lane_id: str) -> Findings:
        """Look without stopping anything: the lead may still cancel the recover dialog."""
        try:
            return await _offload(lambda: inspect_lane(self.repo, self.config, lane_id, stop_leftovers=False))
        finally:
            await self._after_command()

    async def gate_report(self, lane_id: str) -> GateReport:
        """The Gates tab: the lane's gate steps and the failing step's kept output."""
        return await asyncio.to_thread(lane_gate_report, self.repo, self.config, lane_id)

    async def wake(self, lane_id: str) -> bool:
        """Resume a parked lane now (True), or False when it is not parked."""
        return await asyncio.to_thread(wake_parked, self.repo, lane_id)

    async def recheck(self, lane_id: str) -> dict[str, Any]:
        try:
            return await _offload(lambda: recheck(self.repo, self.config, lane_id))
        finally:
            await self._after_command()

    async def relaunch(self, lane_id: str, *, note: str | None = None) -> LaneRecord:
        """The next attempt; `note` is the recover dialog's (blank: none)."""
        note = note if note and note.strip() else None
        try:
            return await _offload(lambda: relaunch(self.repo, self.config, lane_id, note=note))
        finally:
            await self._after_command()

    async def check(self, lane_id: str) -> dict[str, object]:
        try:
            return await _offload(lambda: check_lane(self.repo, self.config, lane_id))
        finally:
            await self._after_command()

    async def finish(self) -> FinishReport:
        try:
            return await asyncio.to_thread(finish, self.repo, self.config)
        finally:
            await self._after_command()

    async def answer(self, qid: str, value: str) -> str:
        """Write the lead's answer; the asking side (helper or supervisor channel) delivers it."""
        try:
            return await asyncio.to_thread(self.inbox.answer, qid, value, by="lead")
        finally:
            await self._after_command()

    async def allow_always(self, qid: str, pattern: str | None = None) -> AllowRule:
        """Allow a permission prompt and, for the rest of its lane, every request like it: the tool,
        or the tool with its subject matching `pattern` (a glob; `state.allow`)."""
        try:
            return await asyncio.to_thread(allow_always, self.repo, self.inbox, qid, pattern)
        finally:
            await self._after_command()


def allow_always(repo: Path, inbox: InboxStore, qid: str, pattern: str | None) -> AllowRule:
    """Answer `qid` yes and add the rule to its lane. The answer goes first, so the rule can never
    answer this question in the lead's place; a rule that cannot be written leaves the answer standing."""
    question = inbox.get(qid).question
    tool = question.correlation.get("tool_name")
    if question.kind != "permission" or not isinstance(tool, str):
        raise LanesError(f"{qid} is not a tool's permission prompt",
                         "allow rules are for a structured agent's tool requests; answer it with y or n")
    inbox.answer(qid, "yes", by="lead")
    return add_rule(StatePaths(repo).lane(question.lane).dir, tool, pattern, question=qid, clock=inbox.clock)
