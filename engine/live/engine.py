"""The `Engine` the dashboard talks to: async commands and one stream of typed events.

The engine watches each lane's files (record, samples, output, events) and turns changes into
events; subscribers get their own queue, and the app never reads lane files itself. A tick costs
what is new, not what exists: inotify names the lanes whose files changed (`lane_inotify`), only
those are scanned (`watch`), and only the followed lane's output is read. Reconcile, which reads
every record, runs when a supervisor can have died: its pidfd fired (`liveness`), a lane in a
supervised state has no live supervisor, or a slow timer. Without inotify every tick scans every
lane and reconcile runs every `reconcile_every_s`, as before; a slow full scan backs inotify up.
The runner is the one `[runner] kind` names (`decisions.runners.make_runner`); a remote one (Ray) keeps a
mirror of its lanes that the tick refreshes in the background (`remote_tick`). The lane whose output
is followed holds a watch lease, so its supervisor reads it at the live pace (`watch_lease`).

The Engine is composed of parts, each built here with what it needs and nothing else: the scan
(`watch.LaneScanner`), the conflict radar (`radar_watch`), the plans' ticks (`plans.ticker`), the
remote mirror (`remote_tick`), the watch leases (`watch_lease`), the git watch (`git_watch_tick`) and
the inbox's questions (`inbox_watch`);
`emit` is how a part's event reaches the subscribers. The decisions are `decisions.api.Decisions`,
the same methods the command line calls, each offloaded to a worker thread's loop
(`decisions.commands.offloaded`) and followed by a rescan.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.settings import Config, load_config
from lanes_tui.engine.core.clock import Clock, RealClock
from lanes_tui.engine.core.debug import fail_point
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.limits import read_tail
from lanes_tui.engine.core.utf8 import decode_span
from lanes_tui.engine.decisions.api import Decisions
from lanes_tui.engine.decisions.commands import offloaded
from lanes_tui.engine.decisions.comment import Broadcast, CommentOutcome, comment_on_lane, kept_comments, send_to_lanes
from lanes_tui.engine.decisions.ranking import GroupRanks
from lanes_tui.engine.decisions.reconcile import reconcile
from lanes_tui.engine.decisions.results import Packet
from lanes_tui.engine.decisions.runners import shared_runner
from lanes_tui.engine.git.views import lane_commits, lane_diff, worktree_row
from lanes_tui.engine.inbox.store import InboxStore
from lanes_tui.engine.inbox.view import QuestionView
from lanes_tui.engine.lanes.launcher import LaunchRequest
from lanes_tui.engine.lanes.runner import Runner
from lanes_tui.engine.live.git_watch_tick import GitWatchTick
from lanes_tui.engine.live.inbox_watch import InboxWatch
from lanes_tui.engine.live.machine import machine_meters
from lanes_tui.engine.live.radar_watch import RadarWatch
from lanes_tui.engine.live.remote_tick import RemoteTick
from lanes_tui.engine.live.schedule import WatchSchedule
from lanes_tui.engine.live.switch_interval import ShortSwitch
from lanes_tui.engine.live.watch import LaneScanner
from lanes_tui.engine.live.watch_lease import WatchLeases
from lanes_tui.engine.plans.model import TicketStatus
from lanes_tui.engine.plans.ticker import PlanTicker
from lanes_tui.engine.state.comments import HunkComment
from lanes_tui.engine.state.events import EngineEvent, EngineNotice
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.record_cache import RecordCache
from lanes_tui.engine.state.status import LaneStatus
from lanes_tui.engine.state.store import LaneStore

log = logging.getLogger(__name__)


class Engine:
    """`poll_s`: the tick; `reconcile_every_s`: reconcile's timer when polling; `idle_reconcile_s`:
    its timer when inotify and pidfds say when it is needed; `full_scan_s`: how often every lane is
    scanned anyway with inotify on (a writer that keeps a file open and rewrites it is seen then);
    `use_inotify` / `use_pidfd`: False forces the polling paths (tests, odd filesystems)."""

    def __init__(self, repo: Path, *, config: Config | None = None, clock: Clock | None = None,
                 runner: Runner | None = None, poll_s: float = 0.25, reconcile_every_s: float = 2.0,
                 idle_reconcile_s: float = 15.0, full_scan_s: float = 5.0, use_inotify: bool = True,
                 use_pidfd: bool = True, output_chunk: int = 64 * 1024) -> None:
        self.repo = repo
        self.config = config or load_config(repo)
        self.clock = clock or RealClock()
        self.paths = StatePaths(repo)
        self.store = LaneStore(self.paths, self.clock)
        self.inbox = InboxStore(self.paths.inbox, self.clock)
        # One per process for a remote runner (it holds the cluster connection); Ray is imported only
        # when the config names it.
        self.runner: Runner = runner or shared_runner(repo, self.config)
        self.poll_s = poll_s
        # the parts: each gets what it uses (best-of ranks are kept while their records stay the same)
        self.radar = RadarWatch(repo, self.store, self.clock)
        self.scanner = LaneScanner(self.paths, self.store, self.radar, GroupRanks(repo), output_chunk)
        self.plans = PlanTicker(repo, self.config, self._emit)
        self.remote_tick = RemoteTick(repo, self.config, self.store, self.runner, self._emit)
        self.leases = WatchLeases(self.remote_tick.runner_of, lambda: self.scanner.output_lanes)
        self.git_watch = GitWatchTick(repo, self._emit)
        self.inbox_watch = InboxWatch(self.paths, self.inbox, self._emit)
        self.schedule = WatchSchedule(self.paths, self.store, reconcile_every_s=reconcile_every_s,
                                      idle_reconcile_s=idle_reconcile_s, full_scan_s=full_scan_s,
                                      use_inotify=use_inotify, use_pidfd=use_pidfd)
        self._decisions = Decisions(repo, self.config, clock=self.clock, radar=self.radar.radar)
        self._records = RecordCache(self.store)  # reconcile's: a hundred records are not re-read each time
        self._switch = ShortSwitch()
        self._scan_lock = asyncio.Lock()
        self._subscribers: list[asyncio.Queue[EngineEvent | None]] = []
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        #: Watch ticks done; tests wait on it instead of on wall-clock time.
        self.ticks = 0

    # lifecycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        """Reconcile from disk and begin watching; lanes already running are re-attached."""
        fail_point("engine:start")  # tests: how the dashboard ends when it fails (test_dashboard_exit)
        self.paths.ensure()
        self._switch.take()  # its worker threads hold the loop up for 0.5 ms at a time, not 5
        await self._reconcile()
        self.schedule.start(self.clock.monotonic())
        await self._scan_and_emit(initial=True)
        await self.inbox_watch.scan()
        self.inbox_watch.watch()
        self._task = asyncio.create_task(self._watch(), name="lanes-engine-watch")

    async def aclose(self) -> None:
        """Stop watching. Lanes keep running: they belong to their supervisors, not to us."""
        self._closed = True
        for part in (self.plans, self.remote_tick, self.leases, self.git_watch):
            await part.stop()
        await self.inbox_watch.stop()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self.schedule.close()
        self._switch.give_back()
        for queue in self._subscribers:
            queue.put_nowait(None)

    async def __aenter__(self) -> Engine:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # events ----------------------------------------------------------------------------------
    async def events(self) -> AsyncIterator[EngineEvent]:
        """Every event from now on, until `aclose()`; start with `lanes()` for the current picture."""
        queue: asyncio.Queue[EngineEvent | None] = asyncio.Queue()
        self._subscribers.append(queue)
        try:
            while True:
                event = await queue.get()
                if event is None:
                    return
                yield event
        finally:
            self._subscribers.remove(queue)

    def _emit(self, event: EngineEvent) -> None:
        for queue in self._subscribers:
            queue.put_nowait(event)

    # queries ---------------------------------------------------------------------------------
    def lanes(self) -> list[LaneStatus]:
        """The newest status of every lane the engine knows, oldest first."""
        known = [w.status for w in self.scanner.watched.values() if w.status is not None]
        return sorted(known, key=lambda s: (s.created, s.id))

    def questions(self) -> list[QuestionView]:
        """The inbox, every question's view, oldest first (open, answered, orphaned, …)."""
        return self.inbox_watch.questions()

    async def output_tail(self, lane_id: str, max_bytes: int = 64 * 1024) -> str:
        return (await self.output_tail_at(lane_id, max_bytes))[0]

    async def output_tail_at(self, lane_id: str, max_bytes: int = 64 * 1024) -> tuple[str, int]:
        """The last `max_bytes` of a lane's output and the byte offset where they end."""
        path = self.paths.lane(lane_id).output
        # The lane's output on this machine: a local lane's own log, or a remote lane's mirror of it
        # (kept by `sync`); either way no record is needed to show it. One thread hop: on a key press.
        data, end = await asyncio.to_thread(read_tail, path, max_bytes)
        text, _head, tail = decode_span(data)  # `end` stops before a character still being written
        return text, end - tail

    @property
    def output_lanes(self) -> set[str] | None:
        """Lanes whose new output is streamed (`watch.LaneScanner.output_lanes`); None: every lane's."""
        return self.scanner.output_lanes

    @output_lanes.setter
    def output_lanes(self, lanes: set[str] | None) -> None:
        self.scanner.output_lanes = lanes

    def follow_output(self, lane_id: str | None, from_offset: int | None = None) -> bool:
        """Stream this lane's output only (`watch.LaneScanner.follow_output`), before loading its tail."""
        return self.scanner.follow_output(lane_id, from_offset)

    def plan_statuses(self) -> list[TicketStatus]:
        """Every open plan's tickets, as of the last tick (the Plan pane)."""
        return self.plans.statuses()

    async def advance_plans(self) -> list[str]:
        """Tick every open plan now (the Plan pane's key); the lanes started."""
        return await self.plans.advance()

    # commands --------------------------------------------------------------------------------
    async def run_lane(self, request: LaunchRequest) -> LaneRecord:
        record = await self.runner.start(request)
        await self._scan_and_emit()
        return record

    async def kill(self, lane_id: str) -> list[int]:
        """Stop a lane's agent and supervisor (escalating); the lane ends `exited` / LANE-FAILED."""
        record = await asyncio.to_thread(self.store.read, lane_id)
        if record.state in ("accepted", "abandoned"):
            raise LanesError(f"lane {lane_id} is {record.state}; nothing runs there")
        stopped = await (await self.remote_tick.runner_of(lane_id)).stop(lane_id)
        if record.runner != "local":
            await self.remote_tick.sync_now()  # the node's end of the lane reaches the mirror now, not at the next tick
        await self._reconcile()
        await self._scan_and_emit()
        return stopped

    async def send(self, lane_id: str, text: str) -> dict[str, Any]:
        """A message for the lane's agent, wherever it runs (`lanes-tui send` from the dashboard)."""
        return await self.remote_tick.send(lane_id, text)

    async def broadcast(self, lane_ids: list[str], text: str) -> Broadcast:
        """One message to several lanes (the marked ones): each that cannot take it is skipped with why."""
        return await send_to_lanes(lane_ids, text, self.send)

    async def comment(self, lane_id: str, comment: HunkComment) -> CommentOutcome:
        """A hunk comment: to the running agent, or kept for the lane's next attempt (`decisions.comment`)."""
        return await comment_on_lane(self.repo, lane_id, comment, self.send, clock=self.clock)

    async def kept_comments(self, lane_id: str) -> list[HunkComment]:
        return await asyncio.to_thread(kept_comments, self.repo, lane_id)

    # decisions: `decisions.api.Decisions`, offloaded; those that change something rescan after
    @property
    def decisions(self) -> Decisions:
        return self._decisions

    plan_accept = offloaded(Decisions.plan_accept, refresh=False)
    accept = offloaded(Decisions.accept)
    plan_queue = offloaded(Decisions.plan_queue, refresh=False)
    accept_queue = offloaded(Decisions.accept_queue)
    plan_abandon = offloaded(Decisions.plan_abandon, refresh=False)
    abandon = offloaded(Decisions.abandon)
    gate_report = offloaded(Decisions.gate_report, refresh=False)
    review = offloaded(Decisions.review)
    verify = offloaded(Decisions.verify)
    wake = offloaded(Decisions.wake, refresh=False)
    inspect = offloaded(Decisions.inspect)
    recheck = offloaded(Decisions.recheck)
    relaunch = offloaded(Decisions.relaunch)
    finish = offloaded(Decisions.finish)
    answer = offloaded(Decisions.answer)
    allow_always = offloaded(Decisions.allow_always)
    _check_here = offloaded(Decisions.check)

    async def check(self, lane_id: str) -> Packet:
        """`Decisions.check`; a cluster lane's gates run on its node through the engine's own runner,
        on this loop (its connection lives here), and the mirror is synced before the rescan."""
        remote = await self.remote_tick.gates_remote(lane_id)
        if remote is None:
            return await self._check_here(lane_id)
        await self.after_decision("check")
        return Packet.from_json(remote, lane=lane_id)

    async def after_decision(self, name: str) -> None:
        """After a decision: what it changed is read now, not at the next tick."""
        if name == "accept_queue":
            self.radar.stale = True
        await self._after_command()

    async def _after_command(self) -> None:
        await self._reconcile()
        await self._scan_and_emit()
        await self.inbox_watch.scan()

    # views -------------------------------------------------------------------------------------
    async def machine(self) -> dict[str, Any]:
        """Machine meters: one psutil sweep for the whole machine, not one per lane."""
        return await asyncio.to_thread(machine_meters, self.config, self.lanes())

    async def diff(self, lane_id: str) -> str:
        record = await asyncio.to_thread(self.store.read, lane_id)
        return await asyncio.to_thread(lane_diff, record)

    async def worktree_rows(self) -> list[dict[str, Any]]:
        """The Worktrees pane: one row per unsettled lane (changed files, +/- lines, ahead/behind).

        A lane git cannot read keeps its row with the unknown numbers as None: one broken worktree
        never blanks the pane (`git.views` says what each number means).
        """
        def rows() -> list[dict[str, Any]]:
            return [worktree_row(self.repo, r) for r in self.store.all() if r.state not in ("accepted", "abandoned")]

        return await asyncio.to_thread(rows)

    async def lane_commits(self, lane_id: str, limit: int = 20) -> list[dict[str, Any]]:
        """The lane's own commits since its base, newest first: {sha, summary, author, timestamp}.

        Read in a worker thread (GitPython blocks) and [] when the branch cannot be read; an unknown
        lane id raises LanesError, as `diff` does.
        """
        record = await asyncio.to_thread(self.store.read, lane_id)
        return await asyncio.to_thread(lane_commits, record, limit)

    async def _reconcile(self) -> None:
        """Reconcile in a worker thread, reading only the records that changed since the last time."""
        await asyncio.to_thread(reconcile, self.repo, self.clock, records=self._records.all)

    # watching --------------------------------------------------------------------------------
    async def _watch(self) -> None:
        while not self._closed:
            try:
                await self._tick()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # keep watching; tell the lead once per failure
                log.exception("engine watch tick failed")
                self._emit(EngineNotice(f"engine: {exc}", "error"))
            self.ticks += 1
            await self.clock.sleep(self.poll_s)

    async def _tick(self) -> None:
        """One tick: reconcile if a supervisor can have died, then scan what changed (or all)."""
        now = self.clock.monotonic()
        synced = self.remote_tick.synced_lanes()  # a remote mirror's sync (`remote_tick`)
        only, recheck = self.schedule.changed_lanes(now, synced, self.scanner.followed(), self.scanner.output_grew)
        if self.schedule.reconcile_due(now):
            await self._reconcile()
        self.plans.soon(now)  # open plans advance while the dashboard is open (`plans.ticker`)
        self.remote_tick.sync_soon(now)  # a remote runner's mirror, refreshed in the background
        self.leases.soon(now)  # the lane on screen is read at the live pace (`watch_lease`)
        self.git_watch.soon(now)  # targets and remotes (`git_watch_tick`)
        if only is None or only or self.radar.due(now):
            await self._scan_and_emit(only=only, recheck=recheck)
        if self.inbox_watch.polling:
            await self.inbox_watch.scan()

    async def _scan_and_emit(self, initial: bool = False, only: set[str] | None = None,
                             recheck: set[str] | None = None) -> None:
        """Stat and read in a worker thread; queue the events on the loop thread (queues are not thread-safe)."""
        async with self._scan_lock:  # the watch loop and a command may both ask; one scan at a time
            events = await asyncio.to_thread(self.scanner.scan, initial, only)
            for event in events:
                self._emit(event)
            self.schedule.follow_supervisors(events, recheck or set(), self.scanner.watched)
