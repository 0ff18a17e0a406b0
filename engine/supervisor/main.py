"""The detached supervisor: one per lane, outlives the dashboard, owns the agent and the lane's state.

Started by `lanes.launcher.spawn_supervisor` as `python -m lanes_tui.engine.supervisor --repo R --lane ID
--detach`. It forks once so the launcher can return at once, becomes a child subreaper so no
descendant of the agent can escape it, waits for a parallel slot (`queued`), runs the chain of
providers in the lane's worktree, and writes the receipt that tells a restarted engine how it ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from lanes_tui.engine.channels import Channel, ChannelContext, make_channel
from lanes_tui.engine.config.cli_facts import argv_under_fence
from lanes_tui.engine.config.settings import Config, ProviderConfig, load_config
from lanes_tui.engine.core import slots
from lanes_tui.engine.core.atomic import private_opener
from lanes_tui.engine.core.clock import Clock, RealClock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.schema import stamped
from lanes_tui.engine.git.lane_paths import locate_lane, working_tree
from lanes_tui.engine.lanes.agent_run import AgentRun, RunOutcome, RunSettings
from lanes_tui.engine.lanes.cadence import OutputCadence
from lanes_tui.engine.lanes.caps import lane_timeouts
from lanes_tui.engine.lanes.classify import Classification, PatternScanner
from lanes_tui.engine.lanes.env import ensure_cli_shim, lane_environment
from lanes_tui.engine.lanes.guard import RunGuard
from lanes_tui.engine.lanes.notify import announce
from lanes_tui.engine.lanes.spend import SpendGuard, meter_spend
from lanes_tui.engine.lanes.watch_skip import lane_tree_watcher
from lanes_tui.engine.procs.process import ProcessRequest, process_create_time
from lanes_tui.engine.state.meters import METERS_FILE, RunMeter
from lanes_tui.engine.state.model import ProviderAttempt
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.seals import write_sealed
from lanes_tui.engine.state.store import LaneStore
from lanes_tui.engine.supervisor import after_run, budget, containment, retry, setup, state_faults
from lanes_tui.engine.supervisor.containment import Hold
from lanes_tui.engine.supervisor.prompt import lane_prompt
from lanes_tui.engine.supervisor.resume import Resumer
from lanes_tui.engine.supervisor.state_faults import NO_SPACE, NOT_WRITABLE, SPACE_RESERVE, SPACE_RESERVE_BYTES

log = logging.getLogger("lanes_tui.supervisor")

__all__ = [  # the state-fault constants live in `state_faults`; re-exported: `entry` reads them here
    "NOT_WRITABLE", "NO_SPACE", "SPACE_RESERVE", "SPACE_RESERVE_BYTES", "Supervisor"]


class Supervisor:
    """Runs one lane from `queued` to `exited`; the only writer of its lane.json while it lives."""

    def __init__(self, repo: Path, lane_id: str, *, config: Config | None = None,
                 clock: Clock | None = None) -> None:
        self.repo = repo
        self.paths = StatePaths(repo)
        self.clock = clock or RealClock()
        self.store = LaneStore(self.paths, self.clock)
        self.record = self.store.read(lane_id)
        self.lane = self.paths.lane(lane_id)
        self.config = config or load_config(repo)
        self.stop_requested = asyncio.Event()
        self.current: AgentRun | None = None
        #: How often the agent's output is read: faster while a watch lease holds (`lanes.cadence`),
        #: one for the lane so a lease taken between two runs still holds for the next.
        self.cadence = OutputCadence()
        #: The lane's cgroup and caps while its agents run (`supervisor.containment`).
        self.hold: Hold | None = None
        #: The spend cap's guard (`supervisor.budget`), made at the first run; raised caps carry over.
        self.spend: SpendGuard | None = None
        self.meter: RunMeter | None = None
        #: The lane's worktree as derived from its id and root and listed by git (set by `run`).
        self.worktree = Path(self.record.worktree)
        #: What the agent receives: the record's prompt in the preamble, with the rules (set by `run`).
        self.prompt = self.record.prompt
        #: A relaunched lane resuming its provider's session: the decision, the message (`resume`).
        self.resume = Resumer(repo, self.config, self.store, self.record, self.lane.output)

    def request_stop(self) -> None:
        self.stop_requested.set()
        if self.current is not None:
            self.current.stop_requested.set()

    async def run(self) -> int:
        record = self.record
        record.supervisor_pid = os.getpid()
        record.supervisor_start = process_create_time(os.getpid())
        self.store.write(record)
        holder = {"lane": record.id, "repo": str(self.repo)}
        parallel = await self._wait_slot(self.paths.locks / "parallel", self.config.lanes.max_parallel,
                                         holder, "waiting for one of max_parallel="
                                         f"{self.config.lanes.max_parallel} slots")
        if parallel is None:
            return self._finish(None, "LANE-FAILED", "stopped by the lead while queued")
        try:  # the worktree the agent works in is derived and witnessed by git, never read from lane.json
            self.worktree = working_tree(locate_lane(self.repo, record.id, record,
                                                     default_root=self.config.lanes.worktree_root))
            # The record keeps the lead's prompt (status, recover read it); the agent gets it wrapped.
            self.prompt = lane_prompt(self.repo, self.config.lanes, record, record.prompt)
        except LanesError as exc:
            parallel.release()
            return self._finish(None, "LANE-FAILED", f"not started: {exc}")
        containment.ensure_heavy_slots(self.config)  # the slots a confined `lanes-tui lock` takes
        with parallel:
            try:
                self.hold = containment.enter(self.repo, self.config, self.store, record, self.lane.dir)
            except LanesError as exc:
                return self._finish(None, "LANE-FAILED", f"not started: {exc}")
            try:  # `[lanes] setup` first, under the caps; a failed step and the agent never starts
                failed = await setup.run_setup(self.config, self.store, record, self.paths, self.worktree,
                                               self.hold, self.stop_requested)
                outcome = None if failed else await self._run_chain(holder)
            finally:
                containment.leave(self.store, record, self.hold)
        if failed:
            return self._finish(None, *failed)
        if outcome is None:
            return self._finish(None, "LANE-FAILED", "stopped by the lead while queued")
        self._finish(outcome, outcome.classification.result, outcome.classification.reason)
        try:  # after the agent: gates, packet and review (`supervisor.after_run`)
            await after_run.decide(self.repo, self.config, self.store, record, clock=self.clock,
                                   stop=self.stop_requested)
        except LanesError as exc:  # e.g. its origin.json torn meanwhile: said, instead of a dead supervisor
            log.error("gates not run: %s", exc)
            return self._finish(outcome, "FAILED-RESOURCE", f"its gates could not run: {exc}")
        announce(self.store, self.config.notify, self.record)  # ready or rejected, after gates and review
        return 0

    async def _run_chain(self, holder: dict[str, Any]) -> RunOutcome | None:
        """The chain, and again after each parking while the provider's quota resets (`budget`)."""
        outcome = await self._run_providers(holder, first=0)
        for _ in range(budget.MAX_PARKS):
            if outcome is None or self.stop_requested.is_set() or not budget.quota_out(outcome):
                break
            until = budget.reset_time(outcome, self.lane.output, datetime.now().astimezone())
            if until is None:
                break
            reason = outcome.classification.reason
            if not await budget.park(self.store, self.record, until, stop=self.stop_requested,
                                     lane_dir=self.lane.dir, clock=self.clock, reason=reason):
                break
            self.prompt = lane_prompt(self.repo, self.config.lanes, self.record,
                                     self.record.prompt + budget.parked_block(reason, until))
            outcome = await self._run_providers(holder, first=len(self.record.providers_tried))
        return outcome

    async def _run_providers(self, holder: dict[str, Any], *, first: int) -> RunOutcome | None:
        """Each provider of the chain not yet tried since attempt `first`, until one does not run out."""
        record = self.record
        tried = {a.provider for a in record.providers_tried[first:]}
        outcome: RunOutcome | None = None
        for name in [p for p in record.chain if p not in tried]:
            provider = self.config.provider(name)
            if record.model and record.chain and name == record.chain[0]:  # a plan tier's model
                provider = dataclasses.replace(provider, model=record.model)
            slot = await self._wait_slot(self.paths.locks / f"provider-{name}", provider.max, holder,
                                         f"waiting for a {name} slot (max={provider.max})")
            if slot is None:
                return outcome
            with slot:  # a rate limit or an overload: the same provider again after a back-off (`retry`)
                again = functools.partial(self._run_once, provider)
                outcome = await retry.in_lane(await again(), provider, again, store=self.store, record=record,
                                              resumer=self.resume, stop=self.stop_requested, clock=self.clock,
                                              lane_dir=self.lane.dir)
            if not (budget.quota_out(outcome) or outcome.classification.retry) or self.stop_requested.is_set():
                break  # done, failed, or the lead said stop at a spend cap: no fallback
            self.store.event(record.id, "fallback", provider=name, reason=outcome.classification.reason)
        return outcome

    async def _run_once(self, provider: ProviderConfig) -> RunOutcome:
        outcome = await self._run_provider(provider)
        if self.resume.retry_fresh() and not self.stop_requested.is_set():  # no such session: once, fresh
            outcome = await self._run_provider(provider)
        return outcome

    async def _wait_slot(self, folder: Path, count: int, holder: dict[str, Any],
                         reason: str) -> slots.Slot | None:
        slot = slots.try_acquire(folder, count, holder)
        if slot is not None:
            return slot
        if self.record.state != "queued" or self.record.state_reason != reason:
            self.store.transition(self.record, "queued", reason)
        return await slots.acquire_unless(folder, count, holder, self.stop_requested)

    async def _run_provider(self, provider: ProviderConfig) -> RunOutcome:
        record = self.record
        worktree = self.worktree
        provider = setup.ready_for(worktree, provider)  # aider: the model it reads itself
        attempt = ProviderAttempt(provider=provider.name, model=provider.model, started=self.clock.time())
        record.providers_tried.append(attempt)
        self.store.transition(record, "launching", f"starting {provider.name}", provider=provider.name)
        bin_dir = ensure_cli_shim(self.paths.bin).parent
        env = lane_environment(os.environ, lane_id=record.id, attempt=record.attempt,
                               state_dir=self.paths.state, worktree=worktree, bin_dir=bin_dir,
                               allow=provider.env)
        inbox = _inbox(self.paths)
        channel = self._channel(provider, attempt, inbox)
        guards: list[RunGuard] = [self.hold.governor] if self.hold else []
        if self.spend is None and self.hold is not None:
            self.spend = budget.spend_guard(self.store, record, self.hold.governor.caps, self.hold.cgroup, inbox,
                                            lambda: meter_spend(self.meter)() if self.meter else (0, None))
        if self.spend is not None:
            guards.append(self.spend)
        turn = self.resume.turn(provider, self.prompt, worktree)  # resumed, or fresh with the full prompt
        try:  # the kernel's fence round what the agent may write (`lanes.confine`)
            fence = containment.fence(self.repo, self.store, record, worktree, provider, env, self.hold)
        except LanesError as exc:
            outcome = self._refused(provider, f"not started: {exc}")
        else:
            env.update(fence.env())
            argv = argv_under_fence(provider.channel, turn.argv(channel.render_argv(turn.prompt, worktree)),
                                    contained=fence.ruleset is not None)
            request = ProcessRequest(argv, worktree, env,
                                     stdin_pipe=channel.stdin_pipe, name=f"{record.id}:{provider.name}",
                                     preexec=fence.preexec(self.hold.governor.preexec() if self.hold else None))
            try:
                outcome = await self._run_agent(provider, turn, channel, request, inbox, guards)
            finally:
                fence.close()
        self.resume.ended(turn, outcome, lambda session_id: self._on_session(attempt, session_id))
        outcome = after_run.head_back(self.repo, self.store, record, worktree, self.lane.dir, outcome)
        outcome = retry.settle(outcome, worktree, record.base_sha, provider)  # exit 0, nothing changed
        found = outcome.classification
        attempt.result, attempt.error, attempt.reason = found.result, found.error, found.reason
        attempt.returncode, attempt.ended = outcome.returncode, self.clock.time()
        attempt.duration_s = round(outcome.ended - outcome.started, 3)
        record.agent_pid = None
        if outcome.stall_report is not None:
            record.stall = outcome.stall_report
        if self.hold is not None:
            record.governor = self.hold.governor.record()
        if outcome.finding is not None:
            self.store.event(record.id, "cap-fired" if outcome.finding.result == "FAILED-RESOURCE" else "guard",
                             **outcome.finding.detail)
        self.store.write(record)
        self.store.event(record.id, "provider-exit", provider=provider.name, result=attempt.result,
                         returncode=attempt.returncode, reason=attempt.reason, duration_s=attempt.duration_s)
        return outcome

    async def _run_agent(self, provider: ProviderConfig, turn: Any, channel: Channel, request: ProcessRequest,
                         inbox: Any, guards: list[RunGuard]) -> RunOutcome:
        """One provider run of the agent: its limits, file watcher and output file around `AgentRun`."""
        record, worktree = self.record, self.worktree
        lanes = lane_timeouts(self.config.lanes, record.caps)  # run --timeout / --idle-timeout over [lanes]
        settings = RunSettings(lanes.timeout_s, lanes.idle_timeout_s, lanes.sample_s, warn_after_s=lanes.warn_after_s)
        watcher = lane_tree_watcher(worktree, self.config.lanes.watch_skip,
                                    functools.partial(self.store.event, record.id))  # ENOSPC said once
        with open(self.lane.output, "ab", opener=private_opener) as output:  # 0600: what the agent printed
            output.write(f"\n=== lanes-tui: {provider.name} ({provider.model}) starting{turn.header} ===\n".encode())
            output.flush()  # seen now (peek, the Output pane), not with the agent's first chunk of output
            run = AgentRun(
                request, stdin_data=channel.stdin_payload(turn.prompt),
                keep_stdin_open=channel.keep_stdin_open, output=output, samples_path=self.lane.samples,
                scanner=PatternScanner.from_patterns(provider.budget_patterns, provider.config_patterns,
                                                     provider.retry_patterns),
                settings=settings, clock=self.clock,
                files_changed=watcher.changed_since_last,
                is_waiting=(lambda: inbox.lane_is_waiting(record.id)) if inbox else (lambda: False),
                on_waiting=self._on_waiting, on_stall=self._on_stall, on_started=self._on_started,
                channel=channel, guards=guards, cadence=self.cadence,
            )
            if self.hold is not None:
                self.hold.governor.begin_run()
            self.current = run
            if self.stop_requested.is_set():
                run.stop_requested.set()
            try:
                outcome = await run.run()
            finally:
                self.current = None
                watcher.close()
        return outcome

    def _refused(self, provider: ProviderConfig, reason: str) -> RunOutcome:
        """A run that could not start (its confinement was refused): CONFIG-ERROR, said in the output."""
        now = self.clock.time()
        with contextlib.suppress(OSError), open(self.lane.output, "ab", opener=private_opener) as output:
            output.write(f"\n=== lanes-tui: {provider.name} not started: {reason} ===\n".encode())
        return RunOutcome(Classification("CONFIG-ERROR", reason), None, now, now)

    def _channel(self, provider: ProviderConfig, attempt: ProviderAttempt, inbox: Any) -> Channel:
        """The provider's channel, wired to this lane's inbox, meters and session record."""
        meter = RunMeter(self.lane.dir / METERS_FILE, self.clock, provider=provider.name, model=provider.model,
                         context_window=provider.context_window,
                         context_warn=provider.context_warn or self.config.lanes.context_warn)
        self.meter = meter  # the spend guard reads the lane's totals from the current run's meter
        context = ChannelContext(lane=self.record.id, attempt=self.record.attempt, provider=provider,
                                 inbox=inbox, meters=meter, clock=self.clock,
                                 on_session=lambda session_id: self._on_session(attempt, session_id),
                                 lane_dir=self.lane.dir)
        return make_channel(context)

    def _on_session(self, attempt: ProviderAttempt, session_id: str) -> None:
        """The agent's own session / thread id: what `--resume` takes to continue its conversation."""
        attempt.session_id = session_id
        self.record.session_id = session_id
        self.store.write(self.record)
        self.store.event(self.record.id, "session", provider=attempt.provider, session_id=session_id)

    def _on_started(self, handle: Any) -> None:
        name = Path(str(self.current.request.argv[0])).name if self.current is not None else "agent"
        containment.check_joined(self.store, self.record, self.hold, handle.pid, name)
        self.record.agent_pid = handle.pid
        self.store.transition(self.record, "running", f"{self.record.provider} started", pid=handle.pid)

    def _on_waiting(self, waiting: bool) -> None:
        if waiting:
            self.store.transition(self.record, "waiting", "a question is open in the inbox")
            announce(self.store, self.config.notify, self.record, inbox=_inbox(self.paths))
        else:
            self.store.transition(self.record, "running", "the question was answered")

    def _on_stall(self, report: dict[str, Any]) -> None:
        self.record.stall = report
        self.record.result = "LANE-STALLED"
        self.store.transition(self.record, "stalled", f"no activity for {report['idle_s']}s", stall=report)
        announce(self.store, self.config.notify, self.record)

    def reserve_space(self) -> None:
        """Keep a little space for the lane's last words (`out_of_space`); best effort (`state_faults`)."""
        state_faults.reserve_space(self.lane.dir)

    def out_of_space(self, exc: OSError) -> int:
        """The disk holding the state is full: free the reserve and end FAILED-RESOURCE naming where
        (`state_faults.out_of_space_reason`), instead of dying mid-write and leaving the lane `lost`."""
        reason = state_faults.out_of_space_reason(self.lane.dir, self.record.id, exc)
        return self._finish(None, "FAILED-RESOURCE", reason)

    def not_writable(self, exc: OSError) -> int:
        """A state write was refused: end FAILED-RESOURCE naming the file (`state_faults.not_writable_reason`
        makes the lane's own folder writable again first when it can); when even that end cannot be
        recorded, the reason is in the supervisor's log and `status` shows the lane's folder as its problem."""
        reason = state_faults.not_writable_reason(self.lane.dir, self.record.id, exc)
        try:
            return self._finish(None, "FAILED-RESOURCE", reason)
        except OSError as again:
            log.error("cannot record the end either (%s): status shows the lane's folder as its problem", again)
            return 1

    def _finish(self, outcome: RunOutcome | None, result: str, reason: str) -> int:
        record = self.record
        record.result = result
        receipt = {
            "lane": record.id, "result": result, "reason": reason,
            "returncode": outcome.returncode if outcome else None,
            "started": outcome.started if outcome else None, "ended": self.clock.time(),
            "providers_tried": [a.__dict__ for a in record.providers_tried],
            "supervisor_pid": os.getpid(),
        }
        write_sealed(self.lane.receipt, stamped(receipt, "receipt.json"))  # reconcile trusts only a sealed receipt
        state = "stalled" if result == "LANE-STALLED" else "exited"
        self.store.transition(record, state, reason, result=result)
        _orphan_open_questions(self.paths, record.id)
        announce(self.store, self.config.notify, record)  # a cap hit: FAILED-RESOURCE
        return 0


def _inbox(paths: StatePaths) -> Any:
    try:
        from lanes_tui.engine.inbox.store import InboxStore
    except ImportError:
        return None
    return InboxStore(paths.inbox)


def _orphan_open_questions(paths: StatePaths, lane_id: str) -> None:
    inbox = _inbox(paths)
    if inbox is not None:
        inbox.orphan_lane(lane_id, "the lane's agent exited")
