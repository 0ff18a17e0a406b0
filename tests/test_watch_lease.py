"""The dashboard's engine holds a watch lease on the lane it follows, so that lane's supervisor reads
its output at the live pace (`engine.live.watch_lease`, `engine.lanes.cadence`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lanes_tui.engine.core.clock import FakeClock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.lanes.control_client import request
from lanes_tui.engine.lanes.launcher import stop_lane
from lanes_tui.engine.live.engine import Engine
from lanes_tui.engine.live.watch_lease import LEASE_S, RENEW_S
from tests.helpers import run_lane, wait_for, wait_state, write_config


async def test_the_followed_lane_is_leased_every_renewal_and_others_are_not(repo: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, float]] = []

    class LeasingRunner:
        kind = "local"

        async def watch(self, lane_id: str, seconds: float) -> float:
            asked.append((lane_id, seconds))
            if lane_id == "gone-a1":
                raise LanesError("lane gone-a1 is not running", "peek it")
            return seconds

    async def runner_of(lane_id: str) -> LeasingRunner:
        if lane_id == "broken-a1":
            raise RuntimeError("a record nobody expected")
        return LeasingRunner()

    engine = Engine(repo, clock=FakeClock(), use_inotify=False, use_pidfd=False)
    monkeypatch.setattr(engine.leases, "runner_of", runner_of)

    async def tick(now: float) -> None:
        engine.leases.soon(now)
        await engine.leases.stop()  # the batch under way, to its end

    await tick(0.0)
    assert asked == [], "the engine streams every lane (no dashboard): nobody is watched, no lease"
    engine.follow_output("one-a1")
    await tick(100.0)
    assert asked == [("one-a1", LEASE_S)]
    await tick(100.0 + RENEW_S / 2)
    assert len(asked) == 1, "not renewed before RENEW_S"
    await tick(100.0 + RENEW_S)
    assert asked[1:] == [("one-a1", LEASE_S)]
    engine.follow_output("gone-a1")  # a lane without a supervisor refuses: said in the log, asked again later
    await tick(106.0)
    assert asked[2:] == [("gone-a1", LEASE_S)]
    await tick(106.0 + RENEW_S)
    assert asked[3:] == [("gone-a1", LEASE_S)]
    engine.follow_output(None)
    await tick(200.0)
    assert len(asked) == 4 and engine.leases.leased == {}
    engine.output_lanes = {"broken-a1", "one-a1"}  # a failure of one lane's request is logged, not raised
    await tick(300.0)
    assert asked[4:] == [("one-a1", LEASE_S)] and engine.leases.asked == 6
    engine.follow_output(None)
    await tick(301.0)
    engine.follow_output("one-a1")  # back on screen: leased again at once, not after a renewal period
    await tick(301.1)
    assert asked[5:] == [("one-a1", LEASE_S)]
    assert engine.leases.asked == 7


async def test_a_lane_on_the_dashboard_is_watched_by_its_supervisor(repo: Path) -> None:
    """End to end: a real supervisor running the sim agent hears the engine's lease on its control socket."""
    write_config(repo)
    lane = run_lane(repo, "sleep 120\n", lane_id="leased")
    try:
        await asyncio.to_thread(wait_state, repo, lane, "running")

        def hello() -> dict[str, object]:
            return request(repo, lane, {"op": "hello"}, timeout=5.0)

        assert (await asyncio.to_thread(hello))["watched"] is False, "nobody shows it yet"
        async with Engine(repo) as engine:
            engine.follow_output(lane)
            await asyncio.to_thread(wait_for, lambda: hello()["watched"] is True, 30)
            assert engine.leases.asked >= 1
    finally:
        await stop_lane(repo, lane)
