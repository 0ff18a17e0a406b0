"""The governor in the lead's views (issue 10): lock waits and counts, caps, and caps that fired.

The status side reads real files (a lane record and its events under `tmp_path`); the panes are
mounted alone and fed by hand, as the other widget tests do; the dashboard runs with the fake
engine, so the Meters pane is shown to get its caps once and its lock counts from the statuses.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.widgets import Static

from lanes_tui.app.dashboard import meters_feed
from lanes_tui.app.dashboard.app import LanesApp
from lanes_tui.app.dashboard.meters_feed import GovernorCaps, lock_counts, meters_mapping
from lanes_tui.engine import Config, LanesError, LaneStatus
from lanes_tui.engine.state.lock_events import LockJournal, describe_wait, read_lock_view
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.status import fired_finding, lane_status
from lanes_tui.engine.state.store import LaneStore
from lanes_tui.widgets import LanesTable, MetersPane, StallsPane
from tests.fake_engine import FakeEngine
from tests.snapshot_apps.widget_apps import LANES, MACHINE, NOW, WidgetHost, lane

CAPS = [
    {"cap": "cpu", "value": "100%", "mechanism": "cgroup-v1 cpu.cfs_quota_us"},
    {"cap": "memory", "value": "2.0 GiB", "mechanism": "cgroup-v1 memory.limit_in_bytes"},
    {"cap": "pids", "value": "512", "mechanism": "cgroup-v1 pids.max"},
    {"cap": "nice", "value": "10", "mechanism": "setpriority + ionice"},
    {"cap": "spend", "value": "off", "mechanism": "off"},
]
FIRED = {"cap": "memory", "value": "256 MiB", "peak": "255 MiB", "mechanism": "cgroup-v1 memory.limit_in_bytes",
         "killed": "python3 (pid 123, 250 MiB)", "reason": "the kernel's OOM killer stopped python3 at the cap"}


def plain(table: Any, row: str, column: str) -> str:
    cell = table.get_cell(row, column)
    return cell.plain if isinstance(cell, Text) else str(cell)


def keys(table: Any) -> list[str]:
    return list(table.row_keys)


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# --- the status: fired caps, lock events ----------------------------------------------------------


@pytest.mark.parametrize(("governor", "fired"), [
    (None, None), ([], None), ({"fired": None}, None), ({"fired": "memory"}, None), ({"fired": {"cap": 5}}, None),
    ({"fired": {"cap": "", "value": "1"}}, None), ({"caps": [], "fired": FIRED}, FIRED),
    ({"fired": {"cap": "pids", "value": 512, "peak": ["x"], "killed": "fork (pid 9)", "extra": "dropped"}},
     {"cap": "pids", "killed": "fork (pid 9)"}),
])
def test_a_fired_cap_keeps_only_string_values_of_known_keys(governor: Any, fired: Any) -> None:
    assert fired_finding(governor) == fired


def test_lane_status_carries_the_fired_cap_and_the_lock_runs(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path)
    paths.ensure()
    store = LaneStore(paths)
    record = LaneRecord(id="hungry-a1", slug="hungry", attempt=1, task_type="backend", prompt="p", chain=["sim"],
                        repo=str(tmp_path), worktree="/wt", branch="lane/hungry-a1", base_sha="0" * 40,
                        target_branch="main", state="exited", result="FAILED-RESOURCE",
                        governor={"caps": CAPS, "fired": dict(FIRED, peak=255)})
    store.create(record)
    journal = LockJournal(paths.lane("hungry-a1").events)
    for slot in (0, 1):
        journal.acquired(slot, 0.5)
        journal.released(slot, 2.0, 0)
    status = lane_status(store, store.read("hungry-a1"))
    assert status.fired == {k: v for k, v in FIRED.items() if k != "peak"}  # a number where a string belongs
    assert (status.locks, status.lock_wait) == (2, None)
    row = status.to_json()
    assert (row["fired"], row["locks"], row["lock_wait"]) == (status.fired, 2, None)
    assert LaneStatus.from_json(json.loads(json.dumps(row))) == status
    old = {k: v for k, v in row.items() if k not in ("fired", "locks", "lock_wait")}  # an older lanes-tui's row
    assert LaneStatus.from_json(old) == dataclasses.replace(status, fired=None, locks=0)


def test_lock_view_reads_only_the_tail_and_the_open_wait_of_a_living_lock(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    early = LockJournal(path, pid=os.getpid())
    for _ in range(5):
        early.acquired(0, 0.0)  # far back: beyond the window
    with path.open("a") as handle:
        for i in range(200):
            handle.write(json.dumps({"t": i, "type": "state", "state": "running", "reason": "x" * 40}) + "\n")
        handle.write("{torn line\n[[[[[\n")
    me, gone = LockJournal(path, pid=os.getpid()), LockJournal(path, pid=dead_pid())
    me.acquired(0, 0.0)
    me.released(0, 1.0, 0)
    me.wait_for_slot([{"lane": "other-a1", "since": NOW, "command": "pytest -q", "cwd": "/secret"}])
    gone.wait_for_slot([])  # newer, but its lock is dead: not a wait any more
    view = read_lock_view(path, window=4096)
    assert view.locks == 1
    assert view.wait is not None and view.wait.startswith("waiting for a heavy slot, held by lane other-a1 since ")
    assert "cwd" not in path.read_text().splitlines()[-2]  # the holder's folder is not copied
    assert read_lock_view(path).locks == 6  # the whole of this small file is inside the default window
    me.acquired(0, 3.0)
    assert read_lock_view(path, window=4096).wait is None
    me.wait_for_load(7.14, 4.0)
    assert read_lock_view(path, window=4096).wait == "waiting for the machine: load 7.1 > 4.0"
    assert read_lock_view(tmp_path / "missing.jsonl") == read_lock_view(tmp_path)  # no file, or a folder: nothing


def test_describe_wait_tolerates_hand_edited_events() -> None:
    assert describe_wait({"holders": "x"}) == "waiting for a heavy slot"
    assert describe_wait({"holders": [1, {"lane": "a\x1b[2Jb"}]}) == "waiting for a heavy slot, held by lane a?[2Jb"
    assert describe_wait({"for": "load", "load": "high"}) == "waiting for the machine: load too high"


# --- the Lanes pane: the wait as the why ----------------------------------------------------------


async def test_a_running_lanes_lock_wait_is_its_why() -> None:
    wait = "waiting for a heavy slot, held by lane other-a1 since 12:03 (pytest -q)"
    table = LanesTable()
    lanes = [lane("busy-a1", "running", lock_wait=wait), lane("asks-a1", "waiting", lock_wait=wait,
                                                               state_reason="a question is open"),
             lane("odd-a1", "running", lock_wait=wait, problem="lane.json is not valid JSON")]
    app = WidgetHost(table, lambda w: w.sync(lanes, NOW))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert plain(table, "busy-a1", "why") == wait[:47] + "…"  # cut like any why
        assert plain(table, "asks-a1", "why") == "a question is open"
        assert plain(table, "odd-a1", "why") == "lane.json is not valid JSON"
        assert str(table.tooltip) == f"running: {wait}"
        assert table.get_cell("busy-a1", "why").spans[0].style.color is not None  # in the warning colour
        table.sync([dataclasses.replace(lanes[0], lock_wait=None)], NOW)
        assert plain(table, "busy-a1", "why") == "running for a test"


# --- the Meters pane: caps and lock counts --------------------------------------------------------


async def test_meters_show_the_caps_with_their_mechanisms_and_the_lock_counts() -> None:
    pane = MetersPane()
    app = WidgetHost(pane)
    async with app.run_test(size=(120, 36)) as pilot:
        pane.update_machine(dict(MACHINE, caps=CAPS, locks={"lane-b": 1, "lane-a": 3, "idle-a1": 0}))
        await pilot.pause()
        text = str(pane.query_one("#meters-text", Static).content)
        caps = pane.query_one("#meters-caps", Static)
        assert "tidy-tests-a2 (pid 777)   locks: lane-a 3, lane-b 1" in text
        assert str(caps.content) == ("caps/lane  cpu 100% (cgroup-v1)  mem 2.0 GiB (cgroup-v1)  pids 512 (cgroup-v1)"
                                     "  nice 10  spend off")
        assert caps.display and caps.region.height == 1  # one row, however narrow the pane
        tooltip = str(caps.tooltip)
        assert "memory 2.0 GiB: cgroup-v1 memory.limit_in_bytes" in tooltip
        assert "nice 10: setpriority + ionice" in tooltip
        shown = pane.readings
        pane.update_machine(dict(MACHINE, caps=[dict(c) for c in CAPS], locks={"lane-a": 3, "lane-b": 1}))
        assert pane.readings is shown  # the same figures: no new readings, no repaint
        uncapped = [{"cap": "memory", "value": "off", "mechanism": "off"},
                    {"cap": "uncapped", "value": "allowed", "mechanism": "allow_uncapped"}, "junk", {"value": "x"}]
        pane.update_machine(dict(MACHINE, caps=uncapped, locks=["not", "a", "mapping"]))
        await pilot.pause()
        assert str(caps.content) == "caps/lane  mem off  uncapped allowed"
        assert "locks:" not in str(pane.query_one("#meters-text", Static).content)
        pane.update_machine(MACHINE)
        await pilot.pause()
        assert not caps.display and caps.tooltip is None


# --- the Stalls & caps pane ----------------------------------------------------------------------


async def test_stalls_and_caps_lists_lanes_a_cap_stopped() -> None:
    pane = StallsPane()
    hungry = lane("hungry-a1", "exited", result="FAILED-RESOURCE", fired=FIRED, idle_s=None)
    settled = lane("fixed-a1", "abandoned", fired=FIRED)
    relaunched = lane("again-a1", "exited", fired=FIRED, superseded_by="again-a2")
    bare = lane("bare-a1", "exited", fired={"cap": "pids"})
    app = WidgetHost(pane, lambda w: w.sync([*LANES, hungry, settled, relaunched, bare], 300))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert pane.border_title == "Stalls & caps"
        assert keys(pane) == ["slow-docs-a1", "bare-a1", "hungry-a1", "quiet-one-a1"]  # stopped first
        assert plain(pane, "slow-docs-a1", "status").startswith("stopped by watchdog")  # stalls as before
        assert plain(pane, "hungry-a1", "status") == "memory cap 256 MiB"
        assert plain(pane, "hungry-a1", "idle") == ""
        assert plain(pane, "hungry-a1", "procs") == "peak 255 MiB · killed python3 (pid 123, 250 MiB)"
        assert (plain(pane, "bare-a1", "status"), plain(pane, "bare-a1", "procs")) == ("pids cap", "stopped by its cap")
        pane.focus()
        pane.move_cursor(row=pane.get_row_index("hungry-a1"))
        await pilot.pause()
        assert str(pane.tooltip).splitlines() == [
            "cap: memory", "value: 256 MiB", "peak: 255 MiB", "enforced by: cgroup-v1 memory.limit_in_bytes",
            "killed: python3 (pid 123, 250 MiB)", "why: the kernel's OOM killer stopped python3 at the cap"]
        assert pane.count == 4


# --- the app: what the Meters pane is fed --------------------------------------------------------


async def test_governor_caps_are_computed_once_per_config(tmp_path: Path) -> None:
    calls: list[Config] = []

    def summary(config: Config) -> list[dict[str, str]]:
        calls.append(config)
        return CAPS

    engine = FakeEngine(tmp_path)
    caps = GovernorCaps(summary)
    assert await caps.for_config(engine.config) == CAPS
    assert await caps.for_config(engine.config) == CAPS
    assert len(calls) == 1
    reloaded = dataclasses.replace(engine.config)
    await caps.for_config(reloaded)
    assert calls == [engine.config, reloaded]

    def broken(config: Config) -> list[dict[str, str]]:
        raise LanesError("the lane's cap cpu='x' is not valid")

    assert await GovernorCaps(broken).for_config(engine.config) == []


def test_the_meters_mapping_adds_caps_and_lock_counts() -> None:
    lanes = [lane("a-a1", "running", locks=3), lane("b-a1", "ready", locks=0), lane("c-a1", "exited", locks=1)]
    assert lock_counts(lanes) == {"a-a1": 3, "c-a1": 1}
    assert meters_mapping({"cpu_percent": 5.0}, CAPS, lanes) == {"cpu_percent": 5.0, "caps": CAPS,
                                                                 "locks": {"a-a1": 3, "c-a1": 1}, "gate_waits": {},
                                                                 "contexts": {}}


async def test_the_dashboard_feeds_the_meters_caps_and_locks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Config] = []

    def summary(config: Config) -> list[dict[str, str]]:
        calls.append(config)
        return CAPS

    monkeypatch.setattr(meters_feed, "governor_summary", summary)
    engine = FakeEngine(tmp_path, [lane("busy-a1", "running", locks=2), lane("done-a1", "ready", locks=0)])
    app = LanesApp(engine.repo, engine=engine, flush_s=0.01)  # type: ignore[arg-type]
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.1)
        screen: Any = app.screen
        screen._poll_machine()  # a second tick, at once
        await pilot.pause(0.1)
        text = str(app.screen.query_one("#meters-text", Static).content)
        caps = app.screen.query_one("#meters-caps", Static)
        assert "locks: busy-a1 2" in text and str(caps.content).startswith("caps/lane  cpu 100% (cgroup-v1)")
        assert caps.region.height == 1  # cut in the narrow side column, not wrapped
        assert calls == [engine.config]
        assert app.screen.query_one(StallsPane).border_title == "Stalls & caps"
