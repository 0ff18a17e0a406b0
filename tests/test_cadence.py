"""The output cadence: a lane nobody watches is read less often; a watch lease or the agent's end cuts a rest short.

Rests here are an hour long where a test needs a rest that only a lease or a wake can end: a test
that passes finishes at once, and one that fails hits its `wait_for` bound instead of passing late.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from lanes_tui.engine.core.clock import RealClock
from lanes_tui.engine.lanes.agent_run import AgentRun, RunSettings
from lanes_tui.engine.lanes.cadence import MAX_LEASE_S, UNWATCHED_REST_S, OutputCadence
from lanes_tui.engine.lanes.classify import PatternScanner
from lanes_tui.engine.lanes.output_pump import REST_S, pump_fd
from lanes_tui.engine.procs.process import ProcessRequest, StopDeadlines

HOUR = 3600.0


def test_a_lane_nobody_watches_rests_longer_until_a_lease_holds_and_after_it_lapses() -> None:
    now = [1000.0]
    cadence = OutputCadence(clock=lambda: now[0])
    assert not cadence.watched
    assert cadence.delay(REST_S) == UNWATCHED_REST_S > REST_S
    assert cadence.delay(REST_S, live=True) == REST_S, "a lane that can ask is always read at the live pace"
    assert cadence.delay(3.0) == 3.0, "a rest asked longer than the unwatched one is not shortened"
    # Within a quarter of a 2 s idle timeout (never below the live rest): no output waits out a stall.
    assert cadence.delay(REST_S, most=0.5) == REST_S and cadence.delay(0.25, most=1.0) == 1.0
    assert cadence.watch(15) == 15.0
    assert cadence.watched and cadence.delay(REST_S) == REST_S
    now[0] += 10
    assert cadence.watch(1) == 1.0 and cadence.watched_until == 1015.0, "a short lease never cuts a longer one"
    now[0] += 5
    assert not cadence.watched and cadence.delay(REST_S) == UNWATCHED_REST_S, "a lease nobody renews lapses"
    assert cadence.watch(10 * MAX_LEASE_S) == MAX_LEASE_S
    assert cadence.watch(-5) == 0.0


async def test_a_lease_or_a_wake_ends_every_rest_under_way() -> None:
    cadence = OutputCadence(unwatched_rest_s=HOUR)
    rests = [asyncio.create_task(cadence.rest(REST_S)) for _ in range(2)]  # stdout and stderr
    await asyncio.sleep(0)
    assert not any(task.done() for task in rests)
    cadence.watch(15)
    await asyncio.wait_for(asyncio.gather(*rests), 10)
    waking = asyncio.create_task(OutputCadence(unwatched_rest_s=HOUR).rest(REST_S))
    other = OutputCadence(unwatched_rest_s=HOUR)
    resting = asyncio.create_task(other.rest(REST_S))
    await asyncio.sleep(0)
    other.wake()
    await asyncio.wait_for(resting, 10)
    assert not waking.done(), "a wake ends only its own cadence's rests"
    waking.cancel()


async def test_the_pump_reads_an_unwatched_trickle_again_only_when_a_lease_arrives() -> None:
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    cadence = OutputCadence(unwatched_rest_s=HOUR)
    chunks: list[bytes] = []
    got = asyncio.Event()

    def on_chunk(chunk: bytes) -> None:
        chunks.append(chunk)
        got.set()

    os.write(write_end, b"first line\n")
    pump = asyncio.create_task(pump_fd(read_end, on_chunk=on_chunk, on_block=lambda block: None,
                                       rest_s=REST_S, sleep=cadence.rest))
    try:
        await asyncio.wait_for(got.wait(), 10)
        got.clear()
        os.write(write_end, b"second line\n")
        for _ in range(20):  # the loop turns; the pump, resting for an hour, reads nothing
            await asyncio.sleep(0)
        assert chunks == [b"first line\n"]
        cadence.watch(15)  # the dashboard shows the lane: the rest ends, what is there is read
        await asyncio.wait_for(got.wait(), 10)
        assert chunks == [b"first line\n", b"second line\n"]
    finally:
        os.close(write_end)
        await asyncio.wait_for(pump, 10)


async def test_a_run_nobody_watches_still_ends_as_soon_as_its_agent_does(tmp_path: Path) -> None:
    """The agent prints and exits mid-rest: its last lines are read at once, not after the rest."""
    worktree = tmp_path / "wt"
    worktree.mkdir()
    script = "say one\nsleep 0.3\nsay two\nexit 0\n"  # the exit comes while the pump rests after `one`
    request = ProcessRequest([sys.executable, "-m", "lanes_tui.engine.sim", "--prompt", script], worktree,
                             dict(os.environ), stdin_pipe=False, name="cadence:sim")
    settings = RunSettings(timeout_s=60, idle_timeout_s=0, sample_s=0.05,  # 0: no cap on the rest (`most`)
                           deadlines=StopDeadlines(eof=0.5, sigint=1.0, sigterm=1.0, sigkill=2.0))
    cadence = OutputCadence(unwatched_rest_s=HOUR)
    output = tmp_path / "output.log"
    with open(output, "wb") as out:
        def make(cadence: OutputCadence | None) -> AgentRun:
            return AgentRun(request, stdin_data=None, keep_stdin_open=False, output=out,
                            samples_path=tmp_path / "samples.jsonl", scanner=PatternScanner.from_patterns([], []),
                            settings=settings, clock=RealClock(), files_changed=lambda: False,
                            is_waiting=lambda: False, on_waiting=lambda waiting: None, cadence=cadence)

        assert make(None)._live, "a run without a supervisor's cadence (a review run) rests only the live rest"
        run = make(cadence)
        assert not run._live
        outcome = await asyncio.wait_for(run.run(), 60)
    assert outcome.returncode == 0
    # Without the wake the pump would still rest when the run gives up on it (after 5 s): `two` lost.
    assert "one" in output.read_text() and "two" in output.read_text()
