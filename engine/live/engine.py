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
from lanes_tui.engine.decisions.commands import DecisionCommands
from lanes_tui.engine.decisions.queue import QueueCommands
from lanes_tui.engine.decisions.ranking import GroupRanks
from lanes_tui.engine.decisions.reconcile import SUPERVISED_STATES, reconcile
from lanes_tui.engine.decisions.runners import shared_runner
from lanes_tui.engine.git.views import lane_commits, lane_diff, worktree_row
from lanes_tui.engine.inbox.store import InboxStore
from lanes_tui.engine.inbox.view import QuestionView
from lanes_tui.engine.lanes.inotify import TreeWatcher
from lanes_tui.engine.lanes.launcher import LaunchRequest
from lanes_tui.engine.lanes.runner import Runner
from lanes_tui.engine.live.git_watch_tick import GitWatchTick
from lanes_tui.engine.live.lane_inotify import LaneWatch
from lanes_tui.engine.live.liveness import SupervisorLiveness
from lanes_tui.engine.live.machine import machine_meters
from lanes_tui.engine.live.remote_tick import RemoteTick
from lanes_tui.engine.live.watch import LaneScanner, Watched
from lanes_tui.engine.live.watch_lease import WatchLeases
from lanes_tui.engine.plans.ticker import PlanTicker
from lanes_tui.engine.state.events import (
    EngineEvent,
    EngineNotice,
    LaneChanged,
    LaneRemoved,
    QuestionsChanged,
)
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.status import LaneStatus
from lanes_tui.engine.state.store import LaneStore

log = logging.getLogger(__name__)


#: The old name of `watch.Watched`: tests build one to drive `_scan_output` directly.
_Watched = Watched

#: Seconds between two liveness checks of the supervisors followed without a pidfd (one /proc read each).
LIVENESS_POLL_S = 1.0

#: Files whose change can mean a supervisor started, ended or was replaced.
_LIVENESS_FILES = frozenset({"lane.json", "supervisor.json", "receipt.json"})


class Engine(LaneScanner, DecisionCommands, QueueCommands, PlanTicker, RemoteTick, WatchLeases, GitWatchTick):
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
        self._questions_sig: tuple[tuple[str, str], ...] | None = None
        self._questions: list[QuestionView] = []
        self._inbox_watcher: TreeWatcher | None = None
        self._inbox_wake = asyncio.Event()
        self._inbox_task: asyncio.Task[None] | None = None
        # One per process for a remote runner (it holds the cluster connection); Ray is imported only
        # when the config names it.
        self.runner: Runner = runner or shared_runner(repo, self.config)
        self.poll_s = poll_s
        self.reconcile_every_s = reconcile_every_s
        self.idle_reconcile_s = idle_reconcile_s
        self.full_scan_s = full_scan_s
        self.output_chunk = output_chunk
        self._init_scanner()
        self._init_leases()
        self._ranks = GroupRanks(repo)  # best-of groups' ranks, kept while their records stay the same
        self._scan_lock = asyncio.Lock()
        self._subscribers: list[asyncio.Queue[EngineEvent | None]] = []
        self._task: asyncio.Task[None] | None = None
        self._last_reconcile = 0.0
        self._last_full_scan = 0.0
        self._last_liveness_poll = 0.0
        self._use_inotify = use_inotify
        self._lane_watch: LaneWatch | None = None
        self._liveness = SupervisorLiveness(repo, self._supervisor_ended, use_pidfd=use_pidfd)
        self._reconcile_wanted = False
        self._closed = False
        #: Watch ticks done; tests wait on it instead of on wall-clock time.
        self.ticks = 0

    # lifecycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        """Reconcile from disk and begin watching; lanes already running are re-attached."""
        fail_point("engine:start")  # tests: how the dashboard ends when it fails (test_dashboard_exit)
        self.paths.ensure()
        await asyncio.to_thread(reconcile, self.repo, self.clock)
        self._last_reconcile = self._last_full_scan = self.clock.monotonic()
        watch = LaneWatch(self.paths.lanes, use_inotify=self._use_inotify)
        self._lane_watch = watch if watch.start() else None  # before the first scan: nothing falls between
        await self._scan_and_emit(initial=True)
        await self._scan_inbox()
        self._watch_inbox()
        self._task = asyncio.create_task(self._watch(), name="lanes-engine-watch")

    async def aclose(self) -> None:
        """Stop watching. Lanes keep running: they belong to their supervisors, not to us."""
        self._closed = True
        await self.stop_plan_ticks()
        await self.stop_remote()
        await self.stop_leases()
        await self.stop_git_watch()
        if self._inbox_watcher is not None:
            with contextlib.suppress(ValueError, OSError):
                asyncio.get_running_loop().remove_reader(self._inbox_watcher.fileno())
            self._inbox_watcher.close()
            self._inbox_watcher = None
        if self._inbox_task is not None:
            self._inbox_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._inbox_task
            self._inbox_task = None
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self._liveness.close()
        if self._lane_watch is not None:
            self._lane_watch.close()
            self._lane_watch = None
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
        known = [w.status for w in self._watched.values() if w.status is not None]
        return sorted(known, key=lambda s: (s.created, s.id))

    def questions(self) -> list[QuestionView]:
        """The inbox, every question's view, oldest first (open, answered, orphaned, …)."""
        return list(self._questions)

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
        stopped = await (await self.runner_of(lane_id)).stop(lane_id)
        if record.runner != "local":
            await self.sync_now()  # the node's end of the lane reaches the mirror now, not at the next tick
        await asyncio.to_thread(reconcile, self.repo, self.clock)
        await self._scan_and_emit()
        return stopped

    async def check(self, lane_id: str) -> dict[str, object]:
        """Run the lane's gates where its worktree is: here, or on its cluster node (`runner_of`)."""
        remote = await self.gates_remote(lane_id)
        if remote is None:
            return await super().check(lane_id)
        await self._after_command()
        return remote

    async def _after_command(self) -> None:
        await asyncio.to_thread(reconcile, self.repo, self.clock)
        await self._scan_and_emit()
        await self._scan_inbox()

    # the inbox ---------------------------------------------------------------------------------
    def _watch_inbox(self) -> None:
        """inotify on the inbox folder wakes a rescan at once; without it the tick polls."""
        self.paths.inbox.mkdir(parents=True, exist_ok=True)
        watcher = TreeWatcher(self.paths.inbox, exclude=())
        if watcher.start() and watcher.active:
            self._inbox_watcher = watcher
            asyncio.get_running_loop().add_reader(watcher.fileno(), self._on_inbox_event)
            self._inbox_task = asyncio.create_task(self._inbox_loop(), name="lanes-engine-inbox")
        else:
            watcher.close()

    def _on_inbox_event(self) -> None:
        if self._inbox_watcher is not None:
            self._inbox_watcher.drain()
        self._inbox_wake.set()

    async def _inbox_loop(self) -> None:
        while not self._closed:
            await self._inbox_wake.wait()
            self._inbox_wake.clear()
            try:
                await self._scan_inbox()
            except Exception:
                log.exception("inbox scan failed")

    async def _scan_inbox(self) -> None:
        views = await asyncio.to_thread(self.inbox.list)
        sig = tuple((v.question.id, v.state) for v in views)
        if sig != self._questions_sig:
            self._questions_sig = sig
            self._questions = list(views)
            self._emit(QuestionsChanged(tuple(self._questions)))

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
        only, recheck = self._changed_lanes(now)
        if self._reconcile_due(now):
            self._last_reconcile, self._reconcile_wanted = now, False
            await asyncio.to_thread(reconcile, self.repo, self.clock)
        self.tick_plans_soon(now)  # open plans advance while the dashboard is open (`plans.ticker`)
        self.sync_soon(now)  # a remote runner's mirror, refreshed in the background (`remote_tick`)
        self.lease_soon(now)  # the lane on screen is read at the live pace (`watch_lease`)
        self.git_watch_soon(now)  # targets and remotes (`git_watch_tick`)
        if only is None or only or self._radar_due(now):
            await self._scan_and_emit(only=only, recheck=recheck)
        if self._inbox_watcher is None:
            await self._scan_inbox()

    def _changed_lanes(self, now: float) -> tuple[set[str] | None, set[str]]:
        """The lanes to scan (None: all) and those whose supervisor must be looked up again."""
        if now - self._last_liveness_poll >= LIVENESS_POLL_S:
            self._last_liveness_poll = now
            if self._liveness.poll_dead():  # only where pidfds are unavailable
                self._reconcile_wanted = True
            if self._liveness.poll_stopped():  # a SIGSTOPped supervisor: unreachable, its deadline kept
                self._reconcile_wanted = True
        synced = self.synced_lanes()  # the mirror's files changed too: inotify may not have said so yet
        if self._lane_watch is None:
            return None, synced
        changes = self._lane_watch.drain()
        followed = self._followed()
        only: set[str] = set()
        recheck: set[str] = set()
        for lane_id, names in changes.lanes.items():
            if names & _LIVENESS_FILES:
                recheck.add(lane_id)
            if names - {"output.log"} or lane_id in followed:
                only.add(lane_id)
        only |= self._output_grew()
        only |= synced
        recheck |= synced
        if changes.rescan or now - self._last_full_scan >= self.full_scan_s:
            self._last_full_scan = now
            return None, recheck
        return only, recheck

    def _reconcile_due(self, now: float) -> bool:
        period = self.reconcile_every_s if self._lane_watch is None else self.idle_reconcile_s
        return self._reconcile_wanted or now - self._last_reconcile >= period

    def _radar_due(self, now: float) -> bool:
        radar = self._radar_watch
        return radar.stale or now - radar.at >= self.radar_every_s

    async def _scan_and_emit(self, initial: bool = False, only: set[str] | None = None,
                             recheck: set[str] | None = None) -> None:
        """Stat and read in a worker thread; queue the events on the loop thread (queues are not thread-safe)."""
        async with self._scan_lock:  # the watch loop and a command may both ask; one scan at a time
            events = await asyncio.to_thread(self._scan, initial, only)
            for event in events:
                self._emit(event)
            self._follow_supervisors(events, recheck or set())

    def _follow_supervisors(self, events: list[EngineEvent], recheck: set[str]) -> None:
        """Keep a pidfd on the supervisor of each lane in a supervised state; a lane in such a state
        whose supervisor is not alive now is what reconcile settles, so it is asked for."""
        for event in events:
            if isinstance(event, LaneRemoved):
                self._liveness.untrack(event.lane_id)
            elif isinstance(event, LaneChanged):
                recheck.add(event.lane_id)
        for lane_id in recheck:
            watched = self._watched.get(lane_id)
            status = watched.status if watched is not None else None
            if status is None or status.state not in SUPERVISED_STATES:
                self._liveness.untrack(lane_id)
            elif not self._liveness.track(lane_id) and self._supervised_here(lane_id):
                self._reconcile_wanted = True

    def _supervised_here(self, lane_id: str) -> bool:
        """Is the lane's supervisor on this machine? A remote lane has none here: reconcile leaves it
        alone, so asking for one would only cost a reconcile every time its mirror changes."""
        try:
            return self.store.read(lane_id).runner == "local"
        except LanesError:
            return True  # a record that cannot be read: reconcile looks (and skips it)

    def _supervisor_ended(self, lane_id: str) -> None:
        log.info("the supervisor of %s ended: reconcile", lane_id)
        self._reconcile_wanted = True
