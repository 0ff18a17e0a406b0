"""The engine's watch tick costs what is new: inotify names the lanes, only the followed lane's output is
read, and a supervisor that dies without a word (SIGKILL) still turns its lane `lost`.

The tick is driven by a clock whose `sleep` waits for the test, so every assertion is about one tick
and nothing here waits on wall-clock time except for real processes (with a timeout).
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import io
import json
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
import pytest

from lanes_tui.engine.core.clock import FakeClock
from lanes_tui.engine.lanes.launcher import LaunchRequest
from lanes_tui.engine.live.engine import Engine
from lanes_tui.engine.state.events import EngineEvent, LaneChanged, LaneRemoved, OutputAppended
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from tests.helpers import wait_for, write_config

QUIET = 1e9  # seconds: a timer that never comes due in a test


class StepClock(FakeClock):
    """`sleep` waits until the test lets one tick go (`step`), then advances the clock by its seconds."""

    def __init__(self) -> None:
        super().__init__()
        self._permits = asyncio.Semaphore(0)

    async def sleep(self, seconds: float) -> None:
        await self._permits.acquire()
        self.advance(seconds)

    def step(self) -> None:
        self._permits.release()


def _record(store: LaneStore, lane: str, state: str = "ready") -> LaneRecord:
    record = LaneRecord(id=lane, slug=lane.rsplit("-", 1)[0], attempt=1, task_type="backend", prompt="p",
                        chain=["sim"], repo=str(store.paths.repo), worktree="/nowhere", branch=f"lane/{lane}",
                        base_sha="0" * 40, target_branch="main", state=state, state_reason=f"it is {state}")
    store.create(record)
    return record


def _quiet_engine(repo: Path, clock: StepClock, **kwargs: Any) -> Engine:
    """No timer of the engine's comes due: what a tick does is only what the files ask for."""
    engine = Engine(repo, clock=clock, full_scan_s=QUIET, idle_reconcile_s=QUIET, reconcile_every_s=QUIET,
                    **kwargs)
    engine.radar.every_s = QUIET
    engine.plans.tick_s = QUIET
    return engine


class Ticker:
    """Runs an engine tick by tick and collects its events."""

    def __init__(self, engine: Engine, clock: StepClock) -> None:
        self.engine, self.clock = engine, clock
        self.events: list[EngineEvent] = []
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Ticker:
        await self.engine.start()
        self._task = asyncio.create_task(self._follow())
        await asyncio.sleep(0)
        await self._ticked(0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.engine.aclose()
        if self._task is not None:
            await asyncio.wait_for(self._task, 10)

    async def _follow(self) -> None:
        async for event in self.engine.events():
            self.events.append(event)

    async def _ticked(self, before: int) -> None:
        async def done() -> None:
            while self.engine.ticks <= before:
                await asyncio.sleep(0.001)
        await asyncio.wait_for(done(), 10)
        for _ in range(5):  # let the events reach the follower's queue
            await asyncio.sleep(0)

    async def tick(self) -> list[EngineEvent]:
        """One more tick; the events it emitted."""
        seen, before = len(self.events), self.engine.ticks
        self.clock.step()
        await self._ticked(before)
        return self.events[seen:]


@contextmanager
def file_access(under: Path) -> Iterator[list[str]]:
    """Every stat, open, listing of a path below `under`, from any thread, while the block runs."""
    seen: list[str] = []
    prefix = str(under)

    def spy(real: Callable[..., Any], kind: str) -> Callable[..., Any]:
        def wrapper(path: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(path, (str, os.PathLike)) and os.fspath(path).startswith(prefix):
                seen.append(f"{kind} {os.fspath(path)}")
            return real(path, *args, **kwargs)
        return wrapper

    patch = pytest.MonkeyPatch()
    for module, name in ((os, "stat"), (os, "lstat"), (os, "open"), (os, "scandir"), (os, "listdir"),
                         (builtins, "open"), (io, "open")):
        patch.setattr(module, name, spy(getattr(module, name), name))
    try:
        yield seen
    finally:
        patch.undo()


async def test_an_idle_tick_touches_no_lane_file(repo: Path) -> None:
    store = LaneStore(StatePaths(repo))
    for i in range(30):
        _record(store, f"idle-{i:02d}-a1")
    clock = StepClock()
    engine = _quiet_engine(repo, clock)
    engine.output_lanes = {"idle-07-a1"}  # the dashboard follows one lane: its output is stat-checked
    async with Ticker(engine, clock) as ticker:
        assert len(engine.lanes()) == 30
        await ticker.tick()  # the conflict radar's first look (it is stale until it has looked once)
        # The followed lane's first watch lease is asked for in the background; it reads the lane's
        # record and control file (and is refused: no supervisor). It is renewed only every RENEW_S.
        await engine.leases.stop()
        assert engine.leases.asked == 1
        scans = engine.scanner.lane_scans
        with file_access(store.paths.lanes) as seen:
            for _ in range(5):
                assert await ticker.tick() == []
        assert engine.scanner.lane_scans == scans  # no lane scanned
        assert engine.leases.asked == 1  # and no lease asked for again within RENEW_S
        assert seen == [f"stat {store.paths.lanes / 'idle-07-a1' / 'output.log'}"] * 5  # one stat a tick


async def test_a_record_change_is_seen_at_the_next_tick_and_only_that_lane_is_scanned(repo: Path) -> None:
    store = LaneStore(StatePaths(repo))
    records = [_record(store, f"rec-{i}-a1") for i in range(10)]
    clock = StepClock()
    engine = _quiet_engine(repo, clock)
    async with Ticker(engine, clock) as ticker:
        assert engine.schedule.lane_watch is not None and engine.schedule.lane_watch.active
        await ticker.tick()
        scans = engine.scanner.lane_scans
        store.transition(records[3], "rejected", "the lead said no")
        changed = [e for e in await ticker.tick() if isinstance(e, LaneChanged)]
        assert [(e.lane_id, e.status.state, e.previous_state) for e in changed] == [("rec-3-a1", "rejected", "ready")]
        assert engine.scanner.lane_scans == scans + 1
        # A lane that appears after start gets its folder watched, and is seen again when it changes.
        late = _record(store, "late-a1")
        assert [e.lane_id for e in await ticker.tick() if isinstance(e, LaneChanged)] == ["late-a1"]
        store.transition(late, "exited", "done")
        assert [e.status.state for e in await ticker.tick() if isinstance(e, LaneChanged)] == ["exited"]
        # A removed lane goes.
        for path in store.lane_paths("rec-5-a1").dir.iterdir():
            path.unlink()
        store.lane_paths("rec-5-a1").dir.rmdir()
        assert [e for e in await ticker.tick() if isinstance(e, LaneRemoved)] == [LaneRemoved("rec-5-a1")]
        assert "rec-5-a1" not in {s.id for s in engine.lanes()}


async def test_without_inotify_every_tick_polls_every_lane_and_still_sees_changes(repo: Path) -> None:
    store = LaneStore(StatePaths(repo))
    records = [_record(store, f"poll-{i}-a1") for i in range(4)]
    clock = StepClock()
    engine = _quiet_engine(repo, clock, use_inotify=False)
    async with Ticker(engine, clock) as ticker:
        assert engine.schedule.lane_watch is None
        scans = engine.scanner.lane_scans
        store.transition(records[1], "rejected", "no")
        changed = [e for e in await ticker.tick() if isinstance(e, LaneChanged)]
        assert [(e.lane_id, e.status.state) for e in changed] == [("poll-1-a1", "rejected")]
        assert engine.scanner.lane_scans == scans + 4


async def test_the_slow_full_scan_catches_a_change_no_event_announced(repo: Path) -> None:
    store = LaneStore(StatePaths(repo))
    _record(store, "sneaky-a1")
    clock = StepClock()
    engine = _quiet_engine(repo, clock)
    async with Ticker(engine, clock) as ticker:
        await ticker.tick()
        assert engine.schedule.lane_watch is not None
        record = store.lane_paths("sneaky-a1").record
        data = json.loads(record.read_text())
        data["state"] = "rejected"
        engine.schedule.lane_watch.close()  # as if the event were lost (the engine still trusts the watch)
        record.write_text(json.dumps(data))
        engine.schedule.full_scan_s = 1.0
        changed = []
        for _ in range(8):  # 0.25 s a tick: the full scan is due within four
            changed += [e for e in await ticker.tick() if isinstance(e, LaneChanged)]
        assert [e.status.state for e in changed] == ["rejected"]


async def test_output_is_read_only_for_the_followed_lane(repo: Path) -> None:
    store = LaneStore(StatePaths(repo))
    for lane in ("out-a-a1", "out-b-a1", "out-c-a1"):
        _record(store, lane, "running")
        store.lane_paths(lane).output.write_bytes(b"old\n")
    clock = StepClock()
    engine = _quiet_engine(repo, clock)
    engine.follow_output("out-b-a1")
    async with Ticker(engine, clock) as ticker:
        await ticker.tick()
        with file_access(store.paths.lanes) as seen:
            for lane in ("out-a-a1", "out-b-a1", "out-c-a1"):
                with open(store.lane_paths(lane).output, "ab") as handle:
                    handle.write(f"new in {lane}\n".encode())
            seen.clear()
            events = await ticker.tick()
        appended = [(e.lane_id, e.text) for e in events if isinstance(e, OutputAppended)]
        assert appended == [("out-b-a1", "new in out-b-a1\n")]
        assert not [line for line in seen if "out-a-a1" in line or "out-c-a1" in line]
        # Following another lane starts at its end now: what it printed before is the tail's, not the stream's.
        engine.follow_output("out-c-a1")
        with open(store.lane_paths("out-c-a1").output, "ab") as handle:
            handle.write(b"after follow\n")
        events = await ticker.tick()
        appended = [(e.lane_id, e.text) for e in events if isinstance(e, OutputAppended)]
        assert appended == [("out-c-a1", "after follow\n")]
        engine.follow_output(None)
        with open(store.lane_paths("out-c-a1").output, "ab") as handle:
            handle.write(b"nobody reads this\n")
        assert [e for e in await ticker.tick() if isinstance(e, OutputAppended)] == []


async def test_following_from_a_tail_in_hand_streams_what_came_after_it(repo: Path) -> None:
    """The dashboard reads the tails of the rows beside the cursor ahead; when the cursor lands on one,
    the stream starts where that tail ended, so lines written since are neither lost nor shown twice.
    A tail more than one read behind, or past the end of a file that shrank, is refused (False) and
    the stream starts at the end as usual."""
    store = LaneStore(StatePaths(repo))
    for lane in ("near-a-a1", "near-b-a1", "near-c-a1", "near-d-a1"):
        _record(store, lane, "running")
        store.lane_paths(lane).output.write_bytes(b"read ahead\n")
    clock = StepClock()
    engine = _quiet_engine(repo, clock, output_chunk=64)
    engine.follow_output("near-a-a1")
    async with Ticker(engine, clock) as ticker:
        await ticker.tick()
        ahead = await engine.output_tail_at("near-b-a1")
        assert ahead == ("read ahead\n", 11)
        with open(store.lane_paths("near-b-a1").output, "ab") as handle:
            handle.write(b"since the tail\n")
        assert engine.follow_output("near-b-a1", from_offset=ahead[1]) is True
        with open(store.lane_paths("near-b-a1").output, "ab") as handle:
            handle.write(b"after the move\n")
        appended = [(e.lane_id, e.offset, e.text) for e in await ticker.tick() if isinstance(e, OutputAppended)]
        assert appended == [("near-b-a1", 11, "since the tail\nafter the move\n")]
        # More than one read (64 bytes here) behind: refused, streamed from the end.
        with open(store.lane_paths("near-c-a1").output, "ab") as handle:
            handle.write(b"x" * 100 + b"\n")
        assert engine.follow_output("near-c-a1", from_offset=11) is False
        with open(store.lane_paths("near-c-a1").output, "ab") as handle:
            handle.write(b"new\n")
        appended = [(e.lane_id, e.text) for e in await ticker.tick() if isinstance(e, OutputAppended)]
        assert appended == [("near-c-a1", "new\n")]
        # The file shrank under the tail (rewritten): refused too.
        store.lane_paths("near-d-a1").output.write_bytes(b"short")
        assert engine.follow_output("near-d-a1", from_offset=11) is False
        assert engine.follow_output(None, from_offset=0) is False


async def _lane_goes_lost_when_its_supervisor_is_killed(repo: Path, *, use_pidfd: bool) -> None:
    """A real lane; its supervisor gets SIGKILL (it writes nothing); no timer may reconcile, so only
    the pidfd (or, without one, the per-tick liveness check) can turn the lane `lost`."""
    write_config(repo, sample_s=0.2)
    engine = Engine(repo, poll_s=0.05, reconcile_every_s=QUIET, idle_reconcile_s=QUIET, full_scan_s=QUIET,
                    use_pidfd=use_pidfd)
    await engine.start()
    lane_dir = repo / ".lanes/state/lanes/victim-a1"
    try:
        states: list[str] = []
        lost = asyncio.Event()

        async def follow() -> None:
            async for event in engine.events():
                if isinstance(event, LaneChanged) and event.lane_id == "victim-a1":
                    states.append(event.status.state)
                    if event.status.state == "lost":
                        lost.set()

        follower = asyncio.create_task(follow())
        await asyncio.sleep(0)
        await engine.run_lane(LaunchRequest(prompt="say up\nsleep 600\n", slug="victim"))
        output = lane_dir / "output.log"
        await asyncio.to_thread(wait_for, lambda: output.exists() and "up" in output.read_text())
        await asyncio.to_thread(wait_for, lambda: "victim-a1" in engine.schedule.liveness.tracked)
        supervisor = json.loads((lane_dir / "supervisor.json").read_text())["pid"]
        os.kill(supervisor, signal.SIGKILL)
        await asyncio.wait_for(lost.wait(), 30)
        assert states[-1] == "lost"
        follower.cancel()
    finally:
        await engine.aclose()
        await asyncio.to_thread(_kill_lane, lane_dir)


def _kill_lane(lane_dir: Path) -> None:
    """Whatever of the lane still runs: its supervisor, and its agent's process group."""
    with contextlib.suppress(OSError, ValueError, KeyError):
        pid = json.loads((lane_dir / "supervisor.json").read_text())["pid"]
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        agent = json.loads((lane_dir / "lane.json").read_text())["agent_pid"]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(agent, signal.SIGKILL)
        with contextlib.suppress(psutil.NoSuchProcess):
            psutil.Process(agent).wait(10)


async def test_a_supervisor_killed_hard_turns_its_lane_lost_through_its_pidfd(repo: Path) -> None:
    await _lane_goes_lost_when_its_supervisor_is_killed(repo, use_pidfd=True)


async def test_without_pidfds_the_tick_checks_the_supervisors_it_follows(repo: Path) -> None:
    await _lane_goes_lost_when_its_supervisor_is_killed(repo, use_pidfd=False)


async def test_a_lanes_first_sight_does_not_touch_the_radar_but_its_record_moving_does(repo: Path) -> None:
    """The radar's look that ran before the first scan saw every lane: touching them all made the next
    look ask git about every lane again (a hundred `git status` runs 5 s after the dashboard opened)."""
    store = LaneStore(StatePaths(repo))
    records = [_record(store, f"seen-{i}-a1", state="running") for i in range(3)]
    clock = StepClock()
    engine = _quiet_engine(repo, clock)
    async with Ticker(engine, clock) as ticker:
        await ticker.tick()
        assert engine.radar.touched == set()
        store.write(records[1])  # the record file rewritten: its worktree may have moved too
        await ticker.tick()
        assert engine.radar.touched == {"seen-1-a1"}


async def test_the_switch_interval_is_short_while_an_engine_runs(repo: Path) -> None:
    import sys

    from lanes_tui.engine.live.switch_interval import ENGINE_SWITCH_S

    before = sys.getswitchinterval()
    clock = StepClock()
    engine = _quiet_engine(repo, clock)
    async with Ticker(engine, clock):
        assert sys.getswitchinterval() == pytest.approx(min(before, ENGINE_SWITCH_S))
    assert sys.getswitchinterval() == pytest.approx(before)
