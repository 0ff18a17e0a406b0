"""The `Engine` the dashboard talks to: async commands and one stream of typed events.

The engine watches each lane's files (record, samples, output, events) with one cheap stat pass per
tick for all lanes together, and turns changes into events. Subscribers get their own queue; the
app never reads lane files itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.settings import Config, load_config
from lanes_tui.engine.core.atomic import read_jsonl
from lanes_tui.engine.core.clock import Clock, RealClock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.utf8 import Utf8Stream, decode_span
from lanes_tui.engine.decisions.commands import DecisionCommands
from lanes_tui.engine.decisions.queue import QueueCommands
from lanes_tui.engine.decisions.ranking import GroupRanks, with_ranks
from lanes_tui.engine.decisions.reconcile import reconcile
from lanes_tui.engine.git.views import lane_commits, lane_diff, worktree_row
from lanes_tui.engine.inbox.store import InboxStore
from lanes_tui.engine.lanes.inotify import TreeWatcher
from lanes_tui.engine.lanes.launcher import LaunchRequest
from lanes_tui.engine.lanes.runner import LocalRunner, Runner, read_output
from lanes_tui.engine.live.machine import machine_meters
from lanes_tui.engine.plans.ticker import PlanTicker
from lanes_tui.engine.state.events import (
    EngineEvent,
    EngineNotice,
    LaneChanged,
    LaneRemoved,
    MetersSampled,
    OutputAppended,
    QuestionsChanged,
    StallDetected,
)
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.status import LaneStatus, clean_sample, corrupt_status, lane_status
from lanes_tui.engine.state.store import LaneStore

log = logging.getLogger(__name__)


@dataclass
class _Watched:
    """What the engine last saw of one lane's files (sizes and mtimes)."""

    record_sig: tuple[int, int] = (0, 0)
    samples_size: int = 0
    output_offset: int = 0
    text: Utf8Stream = field(default_factory=Utf8Stream)  # kept across reads: no character cut in two
    events_size: int = 0
    state: str | None = None
    status: LaneStatus | None = None


class Engine(DecisionCommands, QueueCommands, PlanTicker):
    def __init__(self, repo: Path, *, config: Config | None = None, clock: Clock | None = None,
                 runner: Runner | None = None, poll_s: float = 0.25, reconcile_every_s: float = 2.0,
                 output_chunk: int = 64 * 1024) -> None:
        self.repo = repo
        self.config = config or load_config(repo)
        self.clock = clock or RealClock()
        self.paths = StatePaths(repo)
        self.store = LaneStore(self.paths, self.clock)
        self.inbox = InboxStore(self.paths.inbox, self.clock)
        self._questions_sig: tuple[tuple[str, str], ...] | None = None
        self._questions: list[dict[str, Any]] = []
        self._inbox_watcher: TreeWatcher | None = None
        self._inbox_wake = asyncio.Event()
        self._inbox_task: asyncio.Task[None] | None = None
        self.runner: Runner = runner or LocalRunner(repo, self.config)
        self.poll_s = poll_s
        self.reconcile_every_s = reconcile_every_s
        self.output_chunk = output_chunk
        self._watched: dict[str, _Watched] = {}
        self._ranks = GroupRanks(repo)  # best-of groups' ranks, kept while their records stay the same
        self._scan_lock = asyncio.Lock()
        #: Lanes whose new output is read and streamed; None streams every lane's. The dashboard
        #: follows only the lane on screen, so a hundred printing lanes cost one read per tick.
        self.output_lanes: set[str] | None = None
        self._subscribers: list[asyncio.Queue[EngineEvent | None]] = []
        self._task: asyncio.Task[None] | None = None
        self._last_reconcile = 0.0
        self._closed = False

    # lifecycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        """Reconcile from disk and begin watching; lanes already running are re-attached."""
        self.paths.ensure()
        await asyncio.to_thread(reconcile, self.repo, self.clock)
        await self._scan_and_emit(initial=True)
        await self._scan_inbox()
        self._watch_inbox()
        self._task = asyncio.create_task(self._watch(), name="lanes-engine-watch")

    async def aclose(self) -> None:
        """Stop watching. Lanes keep running: they belong to their supervisors, not to us."""
        self._closed = True
        await self.stop_plan_ticks()
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

    def questions(self) -> list[dict[str, Any]]:
        """The inbox as `inbox --json` objects, oldest first (open, answered, orphaned, …)."""
        return list(self._questions)

    async def output_tail(self, lane_id: str, max_bytes: int = 64 * 1024) -> str:
        return (await self.output_tail_at(lane_id, max_bytes))[0]

    async def output_tail_at(self, lane_id: str, max_bytes: int = 64 * 1024) -> tuple[str, int]:
        """The last `max_bytes` of a lane's output and the byte offset where they end."""
        path = self.paths.lane(lane_id).output
        size = await asyncio.to_thread(lambda: path.stat().st_size if path.exists() else 0)
        data, end = await self.runner.output(lane_id, max(0, size - max_bytes), max_bytes)
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
        stopped = await self.runner.stop(lane_id)
        await asyncio.to_thread(reconcile, self.repo, self.clock)
        await self._scan_and_emit()
        return stopped

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
            self._questions = [v.to_json() for v in views]
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
                now = self.clock.monotonic()
                if now - self._last_reconcile >= self.reconcile_every_s:
                    self._last_reconcile = now
                    await asyncio.to_thread(reconcile, self.repo, self.clock)
                self.tick_plans_soon(now)  # open plans advance while the dashboard is open (`plans.ticker`)
                await self._scan_and_emit()
                if self._inbox_watcher is None:
                    await self._scan_inbox()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # keep watching; tell the lead once per failure
                log.exception("engine watch tick failed")
                self._emit(EngineNotice(f"engine: {exc}", "error"))
            await self.clock.sleep(self.poll_s)

    async def _scan_and_emit(self, initial: bool = False) -> None:
        """Stat and read in a worker thread; queue the events on the loop thread (queues are not thread-safe)."""
        async with self._scan_lock:  # the watch loop and a command may both ask; one scan at a time
            for event in await asyncio.to_thread(self._scan, initial):
                self._emit(event)

    def _scan(self, initial: bool) -> list[EngineEvent]:
        out: list[EngineEvent] = []
        for moved in self.radar_refresh():  # the conflict radar, when due: lanes whose findings changed are re-read
            if moved in self._watched:
                self._watched[moved].record_sig = (-1, -1)
        seen = set()
        for lane_id in self.paths.lane_ids():
            seen.add(lane_id)
            watched = self._watched.setdefault(lane_id, _Watched())
            self._scan_lane(lane_id, watched, initial, out)
        for gone in set(self._watched) - seen:
            del self._watched[gone]
            out.append(LaneRemoved(gone))
        self._rank_groups(out)
        return out

    def _rank_groups(self, out: list[EngineEvent]) -> None:
        """Best-of groups: a member whose rank changed gets it in the LaneChanged this scan already
        carries, or in a new one (`decisions.ranking`; nothing to do without a group)."""
        current = [w.status for w in self._watched.values() if w.status is not None]
        if not any(s.group for s in current):
            return
        for status in with_ranks(current, self._ranks.ranks(current)):
            watched = self._watched[status.id]
            if status is watched.status:
                continue
            watched.status = status
            old = next((e for e in out if isinstance(e, LaneChanged) and e.lane_id == status.id), None)
            if old is None:
                out.append(LaneChanged(status.id, status, watched.state))
            else:
                out[out.index(old)] = LaneChanged(status.id, status, old.previous_state)

    def _scan_lane(self, lane_id: str, watched: _Watched, initial: bool, out: list[EngineEvent]) -> None:
        lane = self.paths.lane(lane_id)
        # Output first, the record last: a subscriber sees every line before the state that ends it.
        self._scan_output(lane_id, watched, initial, out)
        size = _size(lane.samples)
        if size != watched.samples_size:
            watched.samples_size = size
            sample = self.store.last_sample(lane_id)
            if sample is not None:
                if watched.status is not None:
                    watched.status = watched.status.with_sample(sample)
                out.append(MetersSampled(lane_id, clean_sample(sample)))
        size = _size(lane.events)
        if size != watched.events_size:
            old, watched.events_size = watched.events_size, size
            if not initial:
                for event in _new_events(lane.events, old):
                    stalled = event.get("type") == "state" and event.get("state") == "stalled"
                    if stalled and event.get("stall"):
                        out.append(StallDetected(lane_id, event["stall"]))
                    if str(event.get("type", "")).startswith("lock-"):
                        watched.record_sig = (-1, -1)  # `lock` never writes lane.json: re-read the status
        sig = _sig(lane.record)
        if sig != watched.record_sig:
            watched.record_sig = sig
            try:
                record = self.store.read(lane_id)
            except LanesError as exc:
                if not self.store.exists(lane_id):  # removed under us: the next scan drops it
                    return
                # A corrupt record is a row with its problem and fix, not a lane that silently vanishes.
                watched.status = corrupt_status(self.store, lane_id, exc)
                previous, watched.state = watched.state, None
                out.append(LaneChanged(lane_id, watched.status, previous))
                return
            watched.status = self.with_conflicts(lane_status(self.store, record))
            previous, watched.state = watched.state, record.state
            self._scan_output(lane_id, watched, initial, out)  # lines written before this record
            out.append(LaneChanged(lane_id, watched.status, previous))

    def _scan_output(self, lane_id: str, watched: _Watched, initial: bool, out: list[EngineEvent]) -> None:
        path = self.paths.lane(lane_id).output
        size = _size(path)
        if initial or (self.output_lanes is not None and lane_id not in self.output_lanes):
            watched.output_offset = size  # nobody reads this lane's output now: it stays on disk
            watched.text.reset()
        elif size != watched.output_offset:
            start = watched.output_offset if size > watched.output_offset else 0
            skipped = max(0, size - start - self.output_chunk)
            data, end = read_output(path, start + skipped, self.output_chunk)
            if start + skipped != watched.output_offset:
                watched.text.reset()  # a jump (skipped, truncated): held bytes do not precede these
            held, watched.output_offset = watched.text.pending, end
            if text := watched.text.feed(data):  # offsets cover exactly the bytes of `text`
                out.append(OutputAppended(lane_id, start + skipped - held, text, skipped, end - watched.text.pending))


def _sig(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except FileNotFoundError:
        return (0, 0)
    return (st.st_mtime_ns, st.st_size)


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


def _new_events(path: Path, offset: int) -> list[dict[str, Any]]:
    if offset == 0:
        return [e for e in read_jsonl(path) if isinstance(e, dict)]
    out = []
    with open(path, "rb") as handle:
        handle.seek(offset)
        for raw in handle.read().splitlines():
            with contextlib.suppress(ValueError):
                value = json.loads(raw)
                if isinstance(value, dict):
                    out.append(value)
    return out
