"""What the watchdog writes, read once into types (`state.samples`): meter samples and stall reports.

The parsers take any JSON value (the files are in the lane's folder, where an agent can write) and
never raise: a bad figure is dropped and named in `problems`. Then the real thing: a lane's
`samples.jsonl` with a garbage line, and a lane the watchdog stops, read by the Engine the dashboard
uses.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine import LaneStatus, MeterSample, SampledProc, StallReport
from lanes_tui.engine.lanes.launcher import LaunchRequest
from lanes_tui.engine.live.engine import Engine
from lanes_tui.engine.state.events import LaneChanged, MetersSampled, StallDetected
from lanes_tui.engine.state.samples import parse_sample, parse_stall, parse_tree
from tests.helpers import cli, write_config

#: A process as `procs.sampler.ProcInfo.to_json` writes it.
PROC = {"pid": 4242, "ppid": 1, "name": "python", "cmdline": "python -m agent", "cpu_s": 1.25, "rss": 30_000_000}
#: A line as `lanes.agent_run` writes it once the lane has been quiet past `warn_after_s`.
SAMPLE = {"t": 1_700_000_000.5, "idle_s": 61.2, "cpu_percent": 0.4, "rss_bytes": 31_000_000, "procs": 1,
          "output_bytes": 2048, "active": ["cpu"], "waiting": False, "tree": [PROC]}
#: A report as `lanes.agent_run` writes it when the watchdog fires.
STALL = {"idle_s": 900.1, "at": 1_700_000_900.0, "tree": [PROC], "idle_timeout_s": 900}


def test_a_sample_the_supervisor_wrote_is_read_whole() -> None:
    sample = parse_sample(SAMPLE)
    assert sample == MeterSample(t=1_700_000_000.5, idle_s=61.2, cpu_percent=0.4, rss_bytes=31_000_000, procs=1,
                                 output_bytes=2048, active=("cpu",), waiting=False,
                                 tree=(SampledProc(4242, 1, "python", "python -m agent", 1.25, 30_000_000),))
    assert sample.problems == ()
    assert parse_sample({}) == MeterSample()  # a line without figures: nothing known, nothing wrong


@pytest.mark.parametrize(("key", "bad", "problem"), [
    ("idle_s", "soon", "'idle_s' is 'soon', not a number of 0 or more"),
    ("idle_s", -1, "'idle_s' is -1, not a number of 0 or more"),
    ("cpu_percent", float("nan"), "'cpu_percent' is nan, not a number of 0 or more"),
    ("cpu_percent", True, "'cpu_percent' is True, not a number of 0 or more"),
    ("rss_bytes", 10**40, "'rss_bytes' is " + "1" + "0" * 38 + "…, not a whole number of 0 or more"),
    ("procs", 1.5, "'procs' is 1.5, not a whole number of 0 or more"),
    ("output_bytes", "12", "'output_bytes' is '12', not a whole number of 0 or more"),
    ("t", "noon", "'t' is 'noon', not a number"),
    ("active", "files", "'active' is 'files', not a list of strings"),
    ("active", ["files", 3], "'active' is ['files', 3], not a list of strings"),
    ("waiting", "yes", "'waiting' is 'yes', not true or false"),  # read as not waiting
    ("tree", {"pid": 1}, "'tree' is {'pid': 1}, not a list of processes"),
    ("tree", [PROC, "init"], "'tree'[1] is 'init', not a process object"),
    ("tree", [{**PROC, "pid": "4242"}], "'tree'[0]: 'pid' is '4242', not a whole number of 0 or more"),
    ("tree", [{**PROC, "cmdline": ["python"]}], "'tree'[0]: 'cmdline' is ['python'], not a string"),
    ("tree", [{**PROC, "cpu_s": "1s"}], "'tree'[0]: 'cpu_s' is '1s', not a number of 0 or more"),
])
def test_each_bad_field_of_a_sample_is_dropped_and_named(key: str, bad: Any, problem: str) -> None:
    sample = parse_sample({**SAMPLE, key: bad})
    assert sample.problems == (problem,)
    good = parse_sample(SAMPLE)
    if key == "tree" and isinstance(bad, list):  # the good processes stay, the bad field of one is None
        assert len(sample.tree or ()) == sum(isinstance(p, dict) for p in bad)
    else:
        cleared = {"active": (), "waiting": False}.get(key)
        assert getattr(sample, key) == cleared and (key == "waiting" or getattr(good, key) != cleared)
    others = [f for f in ("t", "idle_s", "cpu_percent", "rss_bytes", "procs", "output_bytes") if f != key]
    assert [getattr(sample, f) for f in others] == [getattr(good, f) for f in others]


@pytest.mark.parametrize("line", [None, [], "idle", 3, [1.5]])
def test_a_sample_that_is_no_object_is_an_empty_sample_with_its_problem(line: Any) -> None:
    sample = parse_sample(line)
    assert sample.problems == (f"the sample is {line!r}, not a JSON object",)
    assert (sample.idle_s, sample.cpu_percent, sample.tree) == (None, None, None)


def test_a_bad_value_is_quoted_on_one_short_line() -> None:
    (problem,) = parse_sample({"idle_s": "x" * 500 + "\n\x1b[31m"}).problems
    assert len(problem) < 100 and "\n" not in problem and "\x1b" not in problem


def test_a_stall_report_reads_whole_and_prints_back_as_written() -> None:
    report = parse_stall(STALL)
    assert (report.idle_s, report.at, report.idle_timeout_s, report.problems) == (900.1, 1_700_000_900.0, 900, ())
    assert report.tree == (SampledProc(4242, 1, "python", "python -m agent", 1.25, 30_000_000),)
    assert report.to_json() == STALL
    assert json.dumps(report.to_json()) == json.dumps(STALL)  # 900 stays 900: `status --json` prints it back
    assert parse_stall({"idle_s": 5}).to_json() == {"idle_s": 5}  # no key that was not there


@pytest.mark.parametrize(("key", "bad", "problem"), [
    ("idle_s", "long", "'idle_s' is 'long', not a number of 0 or more"),
    ("at", float("inf"), "'at' is inf, not a number"),
    ("idle_timeout_s", -5, "'idle_timeout_s' is -5, not a number of 0 or more"),
    ("tree", "python", "'tree' is 'python', not a list of processes"),
    ("tree", [7], "'tree'[0] is 7, not a process object"),
    ("tree", [{**PROC, "rss": -1}], "'tree'[0]: 'rss' is -1, not a whole number of 0 or more"),
    ("tree", [{**PROC, "name": None, "ppid": False}], "'tree'[0]: 'ppid' is False, not a whole number of 0 or more"),
])
def test_each_bad_field_of_a_stall_report_is_dropped_and_named(key: str, bad: Any, problem: str) -> None:
    report = parse_stall({**STALL, key: bad})
    assert report.problems == (problem,)
    assert json.dumps(report.to_json())  # what `status --json` prints is JSON again, whatever was written
    kept = {k: v for k, v in STALL.items() if k not in (key, "tree")}
    assert {k: v for k, v in report.to_json().items() if k in kept} == kept


@pytest.mark.parametrize("raw", [[1], "stalled", 900, True])
def test_a_stall_report_that_is_no_object_is_named(raw: Any) -> None:
    report = parse_stall(raw)
    assert report == StallReport(problems=(f"the stall report is {raw!r}, not a JSON object",))
    assert report.to_json() == {}


def test_a_tree_alone_is_read_the_same_way() -> None:
    problems: list[str] = []
    assert parse_tree([PROC, None], problems) == (parse_sample(SAMPLE).tree or ())
    assert problems == ["'tree'[1] is None, not a process object"]


def test_a_status_carries_the_typed_report_and_prints_it_back() -> None:
    """`status --json` and `LaneStatus.from_json` agree: the report crosses typed, prints as written."""
    status = LaneStatus.from_json({"id": "quiet-a1", "state": "stalled", "stall": STALL,
                                   "tree": [PROC, "not a process"]})
    assert isinstance(status.stall, StallReport) and status.stall.idle_timeout_s == 900
    assert status.tree == (parse_stall(STALL).tree[0],)
    assert status.to_json()["stall"] == STALL
    assert LaneStatus.from_json(status.to_json()) == status


async def test_a_garbage_sample_line_reaches_the_engine_as_a_named_problem(
        repo: Path, caplog: pytest.LogCaptureFixture) -> None:
    """An agent appends to its own samples.jsonl: the Engine streams a typed sample, logs what it
    dropped, and the lane's status keeps the good figures."""
    write_config(repo, sample_s=0.1)
    engine = Engine(repo, poll_s=0.05)
    await engine.start()
    try:
        ready = await _collector(engine, lambda e: isinstance(e, LaneChanged) and e.status.state == "ready")
        record = await engine.run_lane(LaunchRequest(prompt="write hello.txt hi\nsay bye\n", slug="garbled"))
        await asyncio.wait_for(ready, 60)  # ended: no supervisor writes a sample after this one
        with caplog.at_level(logging.WARNING, logger="lanes_tui.engine.live.watch"):
            garbled = await _collector(engine, lambda e: isinstance(e, MetersSampled) and bool(e.sample.problems))
            with open(engine.paths.lane(record.id).samples, "a") as handle:
                handle.write(json.dumps({"t": 1.0, "idle_s": "forever", "rss_bytes": 2048, "tree": "none"}) + "\n")
            event = await asyncio.wait_for(garbled, 60)
    finally:
        await engine.aclose()
    assert isinstance(event, MetersSampled) and event.lane_id == record.id
    assert (event.sample.idle_s, event.sample.rss_bytes, event.sample.tree) == (None, 2048, None)
    assert event.sample.problems == ("'idle_s' is 'forever', not a number of 0 or more",
                                     "'tree' is 'none', not a list of processes")
    assert any(record.id in r.getMessage() and "'idle_s' is 'forever'" in r.getMessage() for r in caplog.records)
    assert [s.state for s in engine.lanes()] == ["ready"]  # the lane's row is still there, not broken


async def test_a_stalled_lane_reaches_the_engine_as_a_typed_report(repo: Path) -> None:
    """The watchdog's own report, from a real lane it stopped: typed, no problems, printed back as written."""
    write_config(repo, idle_timeout_s=1.0, sample_s=0.2)
    engine = Engine(repo, poll_s=0.05)
    await engine.start()
    seen: list[object] = []
    try:
        stalled = await _collector(engine, lambda e: isinstance(e, LaneChanged) and e.status.state == "stalled"
                                   and any(isinstance(s, StallDetected) for s in seen), seen)
        record = await engine.run_lane(LaunchRequest(prompt="say going quiet\nsleep 600\n", slug="quiet"))
        lane = await asyncio.wait_for(stalled, 60)
    finally:
        await engine.aclose()
    event = next(e for e in seen if isinstance(e, StallDetected))
    assert event.lane_id == record.id and isinstance(event.report, StallReport)
    report = event.report
    assert report.problems == () and report.idle_s is not None and report.idle_s >= 1.0
    assert report.idle_timeout_s == 1.0 and any("lanes_tui.engine.sim" in (p.cmdline or "") for p in report.tree)
    assert isinstance(lane, LaneChanged) and lane.status.stall == report
    row = json.loads(cli(repo, "status", record.id, "--json").stdout)[0]
    assert row["stall"] == report.to_json()


async def _collector(engine: Engine, done: Any, seen: list[object] | None = None) -> asyncio.Task[object]:
    """A task following the engine's events, subscribed before this returns; its result is the first
    event `done` accepts (every event seen is appended to `seen`)."""
    events = seen if seen is not None else []

    async def follow() -> object:
        async for event in engine.events():
            events.append(event)
            if done(event):
                return event
        raise AssertionError("the engine closed its stream")

    task = asyncio.create_task(follow())
    await asyncio.sleep(0)  # the task subscribes now, before the caller acts
    return task
