"""The async Engine the dashboard uses: commands, one event stream, re-attach, explicit close."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from pathlib import Path

import psutil

from lanes_tui.engine.lanes.launcher import LaunchRequest
from lanes_tui.engine.live.engine import Engine
from lanes_tui.engine.state.events import LaneChanged, MetersSampled, OutputAppended
from tests.helpers import text_of, wait_for, write_config


async def _collect_until_state(engine: Engine, lane_id: str, states: set[str], timeout: float = 60) -> list[object]:
    seen: list[object] = []

    async def follow() -> None:
        async for event in engine.events():
            seen.append(event)
            if isinstance(event, LaneChanged) and event.lane_id == lane_id and event.status.state in states:
                return

    await asyncio.wait_for(follow(), timeout)
    return seen


async def test_engine_runs_a_lane_and_streams_events(repo: Path) -> None:
    write_config(repo, sample_s=0.1)
    engine = Engine(repo, poll_s=0.05)
    await engine.start()
    try:
        collector = asyncio.create_task(_collect_until_state(engine, "streamed-a1", {"ready"}))
        await asyncio.sleep(0)  # let the collector subscribe before the lane starts
        script = "print 5 --rate 10 --text hello\nwrite hello.txt hi\nsay bye\n"
        record = await engine.run_lane(LaunchRequest(prompt=script, slug="streamed"))
        assert record.id == "streamed-a1"
        events = await collector
    finally:
        await engine.aclose()
    states = [e.status.state for e in events if isinstance(e, LaneChanged)]
    assert states[-1] == "ready" and "running" in states  # intermediate states may coalesce
    text = "".join(e.text for e in events if isinstance(e, OutputAppended) and e.lane_id == "streamed-a1")
    assert "line 5: hello" in text and "bye" in text
    assert any(isinstance(e, MetersSampled) for e in events)
    assert engine.lanes()[0].result == "OK"
    assert "bye" in await Engine(repo).output_tail("streamed-a1")


async def test_a_new_engine_reattaches_to_running_lanes(repo: Path) -> None:
    write_config(repo, sample_s=0.1)
    first = Engine(repo, poll_s=0.05)
    await first.start()
    await first.run_lane(LaunchRequest(prompt="say up\nsleep 2\nwrite here.txt x\nsay still here\n", slug="survivor"))
    await first.aclose()  # the dashboard closes: the lane must go on
    second = Engine(repo, poll_s=0.05)
    await second.start()
    try:
        assert [lane.id for lane in second.lanes()] == ["survivor-a1"]
        assert second.lanes()[0].state in {"queued", "launching", "running"}
        events = await _collect_until_state(second, "survivor-a1", {"ready"})
    finally:
        await second.aclose()
    assert any(isinstance(e, OutputAppended) and "still here" in e.text for e in events)


async def test_engine_start_marks_a_lane_lost_when_its_supervisor_died(repo: Path) -> None:
    write_config(repo, sample_s=0.1)
    engine = Engine(repo, poll_s=0.05)
    await engine.start()
    running = asyncio.create_task(_collect_until_state(engine, "orphan-a1", {"running"}))
    await asyncio.sleep(0)
    await engine.run_lane(LaunchRequest(prompt="sleep 600\n", slug="orphan"))
    await running
    await engine.aclose()
    lane_dir = repo / ".lanes/state/lanes/orphan-a1"
    # Past its first line, so the agent is not writing when its supervisor (and pipe reader) dies.
    wait_for(lambda: "reading prompt" in text_of(lane_dir / "output.log"))
    sup = json.loads((lane_dir / "supervisor.json").read_text())
    agent = json.loads((lane_dir / "lane.json").read_text())["agent_pid"]
    os.kill(sup["pid"], signal.SIGKILL)
    with contextlib.suppress(psutil.NoSuchProcess):  # gone already (reaped before psutil looked) is the aim too
        await asyncio.to_thread(psutil.Process(sup["pid"]).wait, 10)
    try:
        restarted = Engine(repo)
        await restarted.start()
        await restarted.aclose()
        assert restarted.lanes()[0].state == "lost"
    finally:
        os.killpg(agent, signal.SIGKILL)


async def test_kill_stops_the_lane_and_its_tree(repo: Path) -> None:
    write_config(repo, sample_s=0.1)
    engine = Engine(repo, poll_s=0.05)
    await engine.start()
    try:
        running = asyncio.create_task(_collect_until_state(engine, "killme-a1", {"running"}))
        await asyncio.sleep(0)
        await engine.run_lane(LaunchRequest(prompt="spawn-setsid 600\nsleep 600\n", slug="killme"))
        await running
        leftovers = await engine.kill("killme-a1")
        lane = next(lane for lane in engine.lanes() if lane.id == "killme-a1")
    finally:
        await engine.aclose()
    assert leftovers == []  # the supervisor stopped everything itself
    assert lane.state == "exited" and lane.result == "LANE-FAILED"
    assert lane.providers_tried[0]["reason"] == "stopped by the lead"


async def test_inbox_changes_are_events_and_answers_are_written(repo: Path) -> None:
    from lanes_tui.engine.inbox.store import InboxStore
    from lanes_tui.engine.state.events import QuestionsChanged

    write_config(repo)
    engine = Engine(repo, poll_s=60)  # a tick far away: only the inotify wake-up can deliver in time
    await engine.start()
    try:
        assert engine.inbox_watch.watcher is not None and engine.inbox_watch.watcher.active
        seen: list[QuestionsChanged] = []

        async def follow(until_state: str) -> None:
            async for event in engine.events():
                if isinstance(event, QuestionsChanged):
                    seen.append(event)
                    if event.questions and event.questions[-1].state == until_state:
                        return

        waiter = asyncio.create_task(follow("open"))
        await asyncio.sleep(0)
        asker = InboxStore(repo / ".lanes/state/inbox")
        question = await asyncio.to_thread(asker.ask, "some-lane-a1", kind="yesno", title="Proceed?")
        await asyncio.wait_for(waiter, 5)
        assert seen[-1].questions[0].question == question and question.lane == "some-lane-a1"
        assert engine.questions()[0].state == "open"
        waiter = asyncio.create_task(follow("answered"))
        await asyncio.sleep(0)
        assert await engine.answer(question.id, "y") == "yes"
        await asyncio.wait_for(waiter, 5)
        assert asker.get(question.id).answer == "yes"
    finally:
        await engine.aclose()


async def test_engine_decision_commands(repo: Path) -> None:
    from lanes_tui.engine.core.errors import LanesError

    git_checkout = __import__("subprocess").run
    git_checkout(["git", "checkout", "-q", "-b", "programme"], cwd=repo, check=True)
    write_config(repo)
    engine = Engine(repo, poll_s=0.05)
    await engine.start()
    try:
        ready = asyncio.create_task(_collect_until_state(engine, "cmd-a1", {"ready"}))
        await asyncio.sleep(0)
        await engine.run_lane(LaunchRequest(prompt="write cmd.txt via the engine\n", slug="cmd"))
        await ready
        plan = await engine.plan_accept("cmd-a1")
        assert plan.ok and plan.files == ["cmd.txt"] and plan.target == "programme"
        assert any("fast-forward" in line for line in plan.describe())
        outcome = await engine.accept("cmd-a1")
        assert outcome.state == "accepted"
        assert next(lane for lane in engine.lanes() if lane.id == "cmd-a1").state == "accepted"
        try:
            await engine.accept("cmd-a1")
        except LanesError as exc:
            assert "already accepted" in str(exc)
        else:
            raise AssertionError("a second accept must be refused")
    finally:
        await engine.aclose()
    assert (repo / "cmd.txt").read_text() == "via the engine\n"
