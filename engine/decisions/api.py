"""The lead's decisions, one method each with one signature: what the command line and the dashboard call.

`Decisions(repo, config)` is the only shape a decision is asked for in. The command line runs a
method on its own loop (`Decisions.run(d.accept(...))`); the dashboard's `Engine` runs the very same
method on a fresh loop in a worker thread (`decisions.commands.offloaded`), because decisions do
blocking git work and wait on locks, and its loop must never stall behind an accept. So a method here
may block: it is never awaited on a loop that draws a screen.

The results that were mappings cross as typed values (`decisions.results`): `check` and `recheck` a
`Packet`, `review` a `ReviewVerdict`, `verify` a `Verification`. The refusals are `LanesError`s with
their fix, as before; the command line prints them, the dashboard shows them as notifications.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from lanes_tui.engine.config.settings import Config, load_config
from lanes_tui.engine.core.clock import Clock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.abandon import AbandonPlan, abandon_lane, plan_abandon
from lanes_tui.engine.decisions.accept import Accept, AcceptOutcome
from lanes_tui.engine.decisions.accept_plan import AcceptPlan, plan_accept
from lanes_tui.engine.decisions.check import check_lane, lane_gate_report
from lanes_tui.engine.decisions.finish import FinishReport, finish
from lanes_tui.engine.decisions.gates.log import GateReport
from lanes_tui.engine.decisions.packet import load_packet
from lanes_tui.engine.decisions.queue import QueuePlan, QueueReport, QueueStep, plan_queue, run_queue
from lanes_tui.engine.decisions.recover import Findings, inspect_lane, recheck, relaunch, wake_parked
from lanes_tui.engine.decisions.results import Packet, ReviewVerdict, Verification
from lanes_tui.engine.decisions.review.run import review_by_lead
from lanes_tui.engine.decisions.review.verify import verify_lane
from lanes_tui.engine.decisions.runners import shared_runner
from lanes_tui.engine.git.radar import Radar
from lanes_tui.engine.inbox.store import InboxStore
from lanes_tui.engine.lanes.runner import as_remote
from lanes_tui.engine.state.allow import AllowRule, add_rule
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore

__all__ = ["Decisions", "allow_always"]

T = TypeVar("T")


class Decisions:
    """The decisions on one repository. `radar`: the dashboard's conflict radar, whose caches the
    accept queue reuses (the command line builds a fresh one)."""

    def __init__(self, repo: Path, config: Config | None = None, *, clock: Clock | None = None,
                 radar: Radar | None = None) -> None:
        self.repo = repo
        self.config = config if config is not None else load_config(repo)
        #: None: the real clock, made where each decision needs one (as the functions below default).
        self.clock = clock
        self.radar = radar

    @staticmethod
    def run(call: Coroutine[Any, Any, T]) -> T:
        """The command line's entry: one decision on its own loop."""
        return asyncio.run(call)

    # accept ----------------------------------------------------------------------------------
    async def plan_accept(self, lane_id: str, *, override: str | None = None,
                          override_review: str | None = None) -> AcceptPlan:
        """What an accept would do, changing nothing (`accept --dry-run`, the accept modal)."""
        return plan_accept(self.repo, self.config, lane_id, override=override, override_review=override_review)

    async def accept(self, lane_id: str, *, message: str | None = None, override: str | None = None,
                     override_review: str | None = None, no_verify: str | None = None) -> AcceptOutcome:
        return await Accept(self.repo, self.config, lane_id, self.clock).run(
            message=message, override=override, override_review=override_review, no_verify=no_verify)

    async def plan_queue(self) -> QueuePlan:
        return plan_queue(self.repo, self.config, radar=self.radar)

    async def accept_queue(self, plan: QueuePlan | None = None, *,
                           on_step: Callable[[QueueStep], None] | None = None) -> QueueReport:
        """Accept `plan` (the order the lead confirmed), or the order as it is now."""
        return await run_queue(self.repo, self.config, plan=plan, radar=self.radar, on_step=on_step)

    # abandon ---------------------------------------------------------------------------------
    async def plan_abandon(self, lane_id: str, *, force: bool = False) -> AbandonPlan:
        return plan_abandon(self.repo, self.config, lane_id, force=force)

    async def abandon(self, lane_id: str, *, force: bool = False) -> list[str]:
        return await abandon_lane(self.repo, self.config, lane_id, force=force)

    # gates and review ------------------------------------------------------------------------
    async def check(self, lane_id: str) -> Packet:
        """Run the lane's gates where its worktree is: here, or on its cluster node through the runner
        (then the mirror is synced, so `status` and `accept` read the packet and state the node wrote)."""
        if self.config.runner.kind != "local" and self._store().read(lane_id).runner != "local":
            runner = shared_runner(self.repo, self.config)
            packet = await runner.run_gates(lane_id)
            if (remote := as_remote(runner)) is not None:
                await remote.sync()
            return Packet.from_json(packet, lane=lane_id)
        return Packet.from_json(await check_lane(self.repo, self.config, lane_id, clock=self.clock), lane=lane_id)

    async def packet(self, lane_id: str) -> Packet | None:
        """The lane's packet as the last check left it; None when there is none a reader can use."""
        return load_packet(StatePaths(self.repo).lane(lane_id))

    async def gate_report(self, lane_id: str) -> GateReport:
        """The Gates tab and `check --log`: the gate steps and the failing step's kept output."""
        return lane_gate_report(self.repo, self.config, lane_id)

    async def review(self, lane_id: str) -> ReviewVerdict:
        """Review (again) a lane by hand: `lanes-tui review ID`."""
        return await review_by_lead(self.repo, self.config, lane_id, clock=self.clock)

    async def verify(self, lane_id: str, evidence: str) -> Verification:
        """The lead's verification with its evidence (`lanes-tui verify ID --evidence TEXT`)."""
        return verify_lane(self.repo, self.config, lane_id, evidence, clock=self.clock)

    # recover ---------------------------------------------------------------------------------
    async def wake(self, lane_id: str) -> bool:
        """Resume a parked lane now (True), or False when it is not parked."""
        return wake_parked(self.repo, lane_id)

    async def inspect(self, lane_id: str, *, stop_leftovers: bool = True) -> Findings:
        """The findings; `stop_leftovers=False` looks without stopping anything (the dashboard's
        recover dialog, which the lead may still cancel)."""
        return await inspect_lane(self.repo, self.config, lane_id, clock=self.clock, stop_leftovers=stop_leftovers)

    async def recheck(self, lane_id: str) -> Packet:
        return await recheck(self.repo, self.config, lane_id, clock=self.clock)

    async def relaunch(self, lane_id: str, *, note: str | None = None, note_file: Path | None = None,
                       fresh: bool = False) -> LaneRecord:
        return await relaunch(self.repo, self.config, lane_id, clock=self.clock, fresh=fresh, note=note,
                              note_file=note_file)

    # the end and the inbox -------------------------------------------------------------------
    async def finish(self) -> FinishReport:
        return finish(self.repo, self.config)

    async def answer(self, qid: str, value: str) -> str:
        """Write the lead's answer; the asking side (helper or supervisor channel) delivers it."""
        return self._inbox().answer(qid, value, by="lead")

    async def allow_always(self, qid: str, pattern: str | None = None) -> AllowRule:
        """Allow a permission prompt and, for the rest of its lane, every request like it (`state.allow`)."""
        return allow_always(self.repo, self._inbox(), qid, pattern)

    def _store(self) -> LaneStore:
        return LaneStore(StatePaths(self.repo), self.clock)

    def _inbox(self) -> InboxStore:
        return InboxStore(StatePaths(self.repo).inbox, self.clock)


def allow_always(repo: Path, inbox: InboxStore, qid: str, pattern: str | None) -> AllowRule:
    """Answer `qid` yes and add the rule to its lane: the tool, or the tool with its subject matching
    `pattern` (a glob). The answer goes first, so the rule can never answer this question in the lead's
    place; a rule that cannot be written leaves the answer standing."""
    question = inbox.get(qid).question
    tool = question.correlation.get("tool_name")
    if question.kind != "permission" or not isinstance(tool, str):
        raise LanesError(f"{qid} is not a tool's permission prompt",
                         "allow rules are for a structured agent's tool requests; answer it with y or n")
    inbox.answer(qid, "yes", by="lead")
    return add_rule(StatePaths(repo).lane(question.lane).dir, tool, pattern, question=qid, clock=inbox.clock)
