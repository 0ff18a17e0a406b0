"""The governor's caps on real sim lanes: a cap that fires is a finding, the others keep running.

Which mechanisms run depends on the machine: the kernel paths (a cgroup v1 or v2 memory / pids /
cpu controller this process may write) are tested where `lanes.caps.mechanisms()` finds one and
skipped with the reason where not; the fallback (`LANES_TUI_CGROUP=off`: the sampler enforces memory
and processes) runs everywhere. Timing is never asserted: the CPU figure is the benchmark's
(`python -m tests.bench.cpu_cap`); here the test reads the cap the kernel holds.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.recover import inspect_lane
from lanes_tui.engine.lanes.caps import check_capped, lane_caps, mechanisms
from lanes_tui.engine.lanes.launcher import stop_lane
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from tests.helpers import cli, run_lane, status, wait_for, wait_state, write_config

#: A fork bomb is load wording (`lanes.load_guard`): these tests load the machine on purpose.
LOAD = ("--allow-load",)


def _kernel(cap: str) -> str:
    found = mechanisms()[cap]
    if not found.startswith("cgroup-"):
        pytest.skip(f"no cgroup {cap} controller this process may write here (enforced by: {found or 'nothing'})")
    return found


def _record(repo: Path, lane: str) -> Any:
    return LaneStore(StatePaths(repo)).read(lane)


def _caps_config(repo: Path, lanes_extra: str) -> None:
    write_config(repo, sample_s=0.1, lanes_extra=lanes_extra)


def test_memory_cap_ends_the_lane_failed_resource_while_another_keeps_running(repo: Path) -> None:
    mechanism = _kernel("memory")
    _caps_config(repo, 'memory = "96M"')
    calm = run_lane(repo, "say calm\nsleep 60", lane_id="calm")
    try:
        hog = run_lane(repo, "alloc 600 --step 16 --every 0.02 --hold 30", lane_id="hog")
        wait_state(repo, hog)
        row = status(repo, hog)
        assert row["state"] == "exited" and row["result"] == "FAILED-RESOURCE", row
        assert "memory cap 96 MiB reached" in row["state_reason"] and mechanism in row["state_reason"]
        fired = _record(repo, hog).governor["fired"]
        assert fired["cap"] == "memory" and fired["value"] == "96 MiB" and fired["mechanism"] == mechanism
        assert "the kernel killed" in fired["reason"] and "pid" in fired["killed"]
        assert fired["peak"].endswith("MiB")
        assert status(repo, calm)["state"] == "running"  # the other lane never noticed
    finally:
        asyncio.run(stop_lane(repo, calm))


def test_fork_bomb_stops_at_the_pids_cap(repo: Path) -> None:
    mechanism = _kernel("pids")
    _caps_config(repo, "pids = 40")
    lane = run_lane(repo, "fork-bomb 400 --hold 60\nsleep 60", lane_id="bomb", extra=LOAD)
    wait_state(repo, lane)
    row = status(repo, lane)
    assert row["result"] == "FAILED-RESOURCE", row
    fired = _record(repo, lane).governor["fired"]
    assert fired["cap"] == "pids" and fired["value"] == "40" and fired["mechanism"] == mechanism
    assert "fork(s) refused" in fired["reason"]
    peak = int(fired["peak"].split()[0])
    assert peak <= 40  # the kernel never let the lane past its cap


def test_cpu_cap_is_written_into_the_lanes_cgroup(repo: Path) -> None:
    mechanism = _kernel("cpu")
    _caps_config(repo, 'cpu = "50%"')
    lane = run_lane(repo, "burn 30 --procs 4", lane_id="burner", extra=LOAD)
    wait_state(repo, lane, "running")
    item = next(c for c in _record(repo, lane).governor["caps"] if c["cap"] == "cpu")
    assert item["mechanism"] == mechanism and item["value"] == "50%"
    folder = Path(item["cgroup"])
    if "cfs_quota_us" in mechanism:
        assert (folder / "cpu.cfs_quota_us").read_text().strip() == "50000"
        assert (folder / "cpu.cfs_period_us").read_text().strip() == "100000"
    else:
        assert (folder / "cpu.max").read_text().split() == ["50000", "100000"]
    pids = wait_for(lambda: (folder / "cgroup.procs").read_text().split())
    assert len(pids) >= 1  # the burners are in it
    asyncio.run(stop_lane(repo, lane))
    wait_for(lambda: not folder.exists(), timeout=15)  # removed with the lane


def test_fallback_sampler_enforces_memory_when_no_cgroup_is_used(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANES_TUI_CGROUP", "off")
    _caps_config(repo, 'memory = "96M"')
    lane = run_lane(repo, "alloc 400 --step 8 --every 0.05 --hold 30", lane_id="soft")
    wait_state(repo, lane)
    row = status(repo, lane)
    assert row["result"] == "FAILED-RESOURCE", row
    fired = _record(repo, lane).governor["fired"]
    assert fired["mechanism"] == "the sampler" and fired["cap"] == "memory"
    assert "summed RSS" in fired["reason"] and "lanes-tui stopped" in fired["reason"]
    plan = {c["cap"]: c["mechanism"] for c in _record(repo, lane).governor["caps"]}
    assert plan["memory"].startswith("sampler") and plan["cpu"].startswith("nice only")


def test_fallback_sampler_enforces_pids(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANES_TUI_CGROUP", "off")
    _caps_config(repo, "pids = 20")
    lane = run_lane(repo, "fork-bomb 60 --hold 60\nsleep 60", lane_id="softbomb", extra=LOAD)
    wait_state(repo, lane)
    fired = _record(repo, lane).governor["fired"]
    assert fired["cap"] == "pids" and fired["mechanism"] == "the sampler", fired


def test_relaunch_after_a_cap_tells_the_next_attempt(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANES_TUI_CGROUP", "off")  # the sampler: the same finding on every machine
    _caps_config(repo, 'memory = "96M"')
    lane = run_lane(repo, "alloc 400 --step 8 --every 0.05 --hold 30", lane_id="again")
    wait_state(repo, lane)
    findings = asyncio.run(inspect_lane(repo, load_config(repo), lane))
    block = findings.prompt_block(1)
    assert "You were stopped at the memory cap of 96 MiB" in block and "fewer workers" in block
    assert any(line.startswith("cap: memory cap 96 MiB") for line in findings.describe())


def test_run_refuses_a_lane_without_a_memory_cap_unless_allowed(repo: Path) -> None:
    _caps_config(repo, "memory = 0")
    refused = cli(repo, "run", "--prompt", "say hi", "--id", "nocap")
    assert refused.returncode != 0 and "without a memory cap" in refused.stderr
    assert "--allow-uncapped" in refused.stderr and "Traceback" not in refused.stderr
    assert not StatePaths(repo).lane("nocap-a1").dir.exists()  # nothing made
    lane = run_lane(repo, "say hi\nwrite hi.txt hi", lane_id="nocap", extra=("--allow-uncapped",))
    wait_state(repo, lane)
    assert status(repo, lane)["result"] == "OK"
    assert _record(repo, lane).caps == {"allow_uncapped": True}


def test_no_mechanism_for_memory_is_refused(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANES_TUI_CGROUP", "off")
    _caps_config(repo, "")
    caps = lane_caps(load_config(repo).lanes)
    with pytest.raises(LanesError, match="no mechanism on this machine can enforce the memory cap") as info:
        check_capped(caps, sampler=False)
    assert "--allow-uncapped" in str(info.value)
    check_capped(caps, sampler=True)  # the sampler is a mechanism
    check_capped(lane_caps(load_config(repo).lanes, {"allow_uncapped": True}), sampler=False)


def test_run_flags_override_the_config_and_bad_ones_are_one_line(repo: Path) -> None:
    _caps_config(repo, "")
    bad = cli(repo, "run", "--prompt", "say hi", "--memory", "4X")
    assert bad.returncode != 0 and "--memory '4X' is not a size" in bad.stderr and "Traceback" not in bad.stderr
    bad = cli(repo, "run", "--prompt", "say hi", "--cpu", "fast")
    assert bad.returncode != 0 and "--cpu 'fast'" in bad.stderr
    lane = run_lane(repo, "say hi", lane_id="flags", extra=("--cpu", "150%", "--memory", "512M", "--pids", "99"))
    wait_state(repo, lane)
    plan = {c["cap"]: c["value"] for c in _record(repo, lane).governor["caps"]}
    assert plan["cpu"] == "150%" and plan["memory"] == "512 MiB" and plan["pids"] == "99"


def test_an_edited_record_cap_fails_the_lane_with_one_line(repo: Path) -> None:
    _caps_config(repo, "")
    with pytest.raises(LanesError, match="--memory 'lots' is not a size"):
        lane_caps(load_config(repo).lanes, {"memory": "lots"})
    with pytest.raises(LanesError, match="cpu"):
        lane_caps(load_config(repo).lanes, {"cpu": [1]})


def test_doctor_says_which_mechanism_enforces_each_cap(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _caps_config(repo, 'memory = "2G"\ncpu = "150%"')
    out = cli(repo, "doctor").stdout
    lines = {line.split()[1]: line for line in out.splitlines() if line.startswith("cap ")}
    assert set(lines) >= {"cpu", "memory", "pids", "nice", "spend"}
    assert "150%" in lines["cpu"] and "2.0 GiB" in lines["memory"]
    off = cli(repo, "doctor", env={**os.environ, "LANES_TUI_CGROUP": "off"}).stdout
    assert any(line.startswith("cap memory") and "sampler" in line for line in off.splitlines())
    _caps_config(repo, "memory = 0")
    assert "PROBLEM: caps: the lane would run without a memory cap" in cli(repo, "doctor").stdout


def test_cap_files_in_both_cgroup_versions(tmp_path: Path) -> None:
    """The file formats of each version (the v2 controllers are not offered on every machine this runs
    on: the kernel paths above are skipped there, so the formats are held here on plain files)."""
    from lanes_tui.engine.procs.caps_cgroup import CapCgroup

    v2, v1 = tmp_path / "v2", tmp_path / "v1"
    v2.mkdir()
    v1.mkdir()
    (v1 / "memory.memsw.limit_in_bytes").write_text("max")
    CapCgroup("cpu", 2, v2).apply(150)
    CapCgroup("memory", 2, v2).apply(256 << 20)
    CapCgroup("pids", 2, v2).apply(64)
    assert (v2 / "cpu.max").read_text() == "150000 100000"
    assert (v2 / "memory.max").read_text() == str(256 << 20) and (v2 / "memory.swap.max").read_text() == "0"
    assert (v2 / "pids.max").read_text() == "64"
    CapCgroup("cpu", 1, v1).apply(50)
    CapCgroup("memory", 1, v1).apply(256 << 20)
    assert (v1 / "cpu.cfs_quota_us").read_text() == "50000" and (v1 / "cpu.cfs_period_us").read_text() == "100000"
    assert (v1 / "memory.memsw.limit_in_bytes").read_text() == str(256 << 20)  # no escape into swap
    (v2 / "memory.events").write_text("low 0\nhigh 0\nmax 7\noom 2\noom_kill 2\n")
    (v2 / "pids.events").write_text("max 5\n")
    (v2 / "memory.peak").write_text("268435456\n")
    (v1 / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
    (v1 / "memory.max_usage_in_bytes").write_text("1000\n")
    assert CapCgroup("memory", 2, v2).fired() == 2 and CapCgroup("pids", 2, v2).fired() == 5
    assert CapCgroup("memory", 2, v2).peak() == 268435456
    assert CapCgroup("memory", 1, v1).fired() == 1 and CapCgroup("memory", 1, v1).peak() == 1000
    assert CapCgroup("cpu", 2, v2).fired() == 0


def test_v2_controllers_are_enabled_from_the_lanes_cgroup_down(tmp_path: Path) -> None:
    from lanes_tui.engine.procs.caps_cgroup import _enable_v2

    own = tmp_path / "own"
    lane = own / "lanes-tui" / "repo-1234" / "lane-a1"
    lane.mkdir(parents=True)
    (own / "cgroup.controllers").write_text("cpu memory pids\n")
    for level in (own, own / "lanes-tui", own / "lanes-tui" / "repo-1234"):
        (level / "cgroup.subtree_control").write_text("")
    (lane / "memory.max").write_text("max")  # the kernel adds it once the parent enables memory
    assert _enable_v2("memory", lane)
    for level in (own, own / "lanes-tui", own / "lanes-tui" / "repo-1234"):
        assert (level / "cgroup.subtree_control").read_text() == "+memory"
    (own / "cgroup.controllers").write_text("cpu pids\n")
    assert not _enable_v2("memory", lane)  # not offered: the v1 hierarchy or the fallback takes it
