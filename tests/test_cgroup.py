"""Containment: a lane's processes live in its own cgroup, so none survives a stop, however it escaped.

The escapee in these tests double-forks, calls setsid and execs through `env -i`: it leaves the
agent's process group, loses the `LANES_LANE` marker (so the suite's own leak check cannot see it
either: each test tracks its pid itself) and, once the supervisor is gone, is adopted by init.

Which mechanisms run depends on the machine: cgroup v2 (a writable cgroup2 mount with cgroup.kill)
and cgroup v1 (a writable freezer hierarchy) are each tested where they exist and skipped with the
reason where they do not; the fallback (`LANES_TUI_CGROUP=off`) runs everywhere.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lanes_tui.engine.procs import cgroup
from lanes_tui.engine.procs.cgroup import LaneCgroup
from lanes_tui.engine.procs.process import ProcessHandle, ProcessRequest
from tests.helpers import cli, wait_for, wait_state, write_config

ESCAPE = (
    "import os, sys, time\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        os.execve('/usr/bin/env', ['env', '-i', '/bin/sh', '-c',\n"
    "                  'echo $$ > ' + sys.argv[1] + '.tmp && mv ' + sys.argv[1] + '.tmp ' + sys.argv[1]\n"
    "                  + ' && exec sleep 300'], {})\n"
    "    os._exit(0)\n"
    "print('spawned an escapee', flush=True)\n"
    "time.sleep(300)\n"
)


def _support(mechanism: str) -> cgroup.Support:
    support = cgroup.detect("v2" if mechanism == "cgroup-v2" else "v1")
    if support.mechanism != mechanism:
        pytest.skip(f"{mechanism} is not available here: {support.reason}")
    return support


def _alive(pid: int) -> bool:
    return bool(cgroup.pids_alive([pid]))


@pytest.fixture()
def escapees() -> Iterator[list[int]]:
    """Pids of escaped processes a test made; any still alive at the end is killed (and fails it)."""
    found: list[int] = []
    yield found
    left = cgroup.pids_alive(found)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"escaped processes survived: {left}"


def test_detect_names_a_mechanism_and_off_is_honoured() -> None:
    auto = cgroup.detect("auto")
    assert auto.mechanism in cgroup.MECHANISMS
    assert auto.describe()
    off = cgroup.detect("off")
    assert off.mechanism == "none" and "turned off" in off.describe() and "subreaper" in off.describe()
    assert cgroup.detect("v3").mechanism == "none"


@pytest.mark.parametrize("mechanism", ["cgroup-v2", "cgroup-v1"])
async def test_kill_reaches_an_escaped_grandchild(mechanism: str, tmp_path: Path, escapees: list[int]) -> None:
    support = _support(mechanism)
    lane = LaneCgroup.create(support, f"test-{uuid.uuid4().hex[:8]}", "esc-a1")
    assert lane is not None and lane.mechanism == mechanism
    pidfile = tmp_path / "escapee.pid"
    handle = await ProcessHandle.start(ProcessRequest([sys.executable, "-c", ESCAPE, str(pidfile)], tmp_path,
                                                      dict(os.environ), stdin_pipe=False, preexec=lane.joiner()))
    try:
        wait_for(pidfile.exists, timeout=10)
        escapee = int(pidfile.read_text())
        escapees.append(escapee)
        assert os.getsid(escapee) != os.getsid(handle.pid)  # outside the agent's session and group
        assert {handle.pid, escapee} <= set(lane.pids())
        killed = lane.kill()
        assert {handle.pid, escapee} <= set(killed)
        assert await handle.wait(5) == -signal.SIGKILL
        wait_for(lambda: not _alive(escapee), timeout=5)
        assert lane.pids() == [] and lane.remove() and not lane.path.exists()
    finally:
        await handle.stop()
        lane.kill()
        lane.remove()


def test_a_record_is_trusted_only_in_the_lane_cgroup_shape(tmp_path: Path) -> None:
    support = cgroup.detect("auto")
    if support.mechanism == "none":
        pytest.skip(f"no cgroup here: {support.reason}")
    lane = LaneCgroup.create(support, "repo-12345678", "rec-a1")
    assert lane is not None
    try:
        cgroup.write_record(tmp_path, lane)
        assert cgroup.read_record(tmp_path, "repo-12345678", "rec-a1") == lane
        # The same record read for another lane, or edited to aim elsewhere, is refused.
        assert cgroup.read_record(tmp_path, "repo-12345678", "other-a1") is None
        for path in ("/sys/fs/cgroup/freezer", str(lane.path.parent), "/tmp/lanes-tui/repo-12345678/rec-a1",
                     str(lane.path / ".." / "rec-a1")):
            (tmp_path / cgroup.RECORD).write_text(json.dumps({"mechanism": lane.mechanism, "path": path}))
            assert cgroup.read_record(tmp_path, "repo-12345678", "rec-a1") is None, path
        (tmp_path / cgroup.RECORD).write_text(json.dumps({"mechanism": "none", "path": str(lane.path)}))
        assert cgroup.read_record(tmp_path, "repo-12345678", "rec-a1") is None
    finally:
        lane.remove()


def _escaper_config(repo: Path, pidfile: Path) -> None:
    argv = json.dumps(["{python}", "-c", ESCAPE, str(pidfile)])
    write_config(repo, chains='backend = ["escaper"]', idle_timeout_s=600,
                 extra=f'[providers.escaper]\nargv = {argv}\nprompt = "arg"\nwritable = ["{pidfile.parent}/"]\n')


def _containment(repo: Path, lane: str) -> str:
    """The mechanism the lane's supervisor reported in its events."""
    lines = (repo / ".lanes/state/lanes" / lane / "events.jsonl").read_text().splitlines()
    found = [e for e in map(json.loads, lines) if e.get("type") == "containment"]
    assert len(found) == 1, found
    return str(found[0]["mechanism"])


def _supervisor_pid(repo: Path, lane: str) -> int:
    return int(json.loads((repo / ".lanes/state/lanes" / lane / "supervisor.json").read_text())["pid"])


def _run_escaper(repo: Path, tmp_path: Path, escapees: list[int], env: dict[str, str] | None = None) -> tuple[str, int]:
    pidfile = tmp_path / "escapee.pid"
    _escaper_config(repo, pidfile)
    proc = cli(repo, "run", "--prompt", "escape", "--id", "esc", env=env)
    assert proc.returncode == 0, proc.stderr
    lane = proc.stdout.split()[-1]
    wait_for(pidfile.exists, timeout=30)
    escapee = int(pidfile.read_text())
    escapees.append(escapee)
    return lane, escapee


@pytest.mark.slow
def test_recover_after_supervisor_kill_stops_the_escapee(repo: Path, tmp_path: Path, escapees: list[int]) -> None:
    if cgroup.detect().mechanism == "none":
        pytest.skip(f"no cgroup here: {cgroup.detect().reason}")
    lane, escapee = _run_escaper(repo, tmp_path, escapees)
    assert _containment(repo, lane).startswith("cgroup-v")
    os.kill(_supervisor_pid(repo, lane), signal.SIGKILL)
    wait_state(repo, lane, "lost")
    assert _alive(escapee)  # init adopted it: no group, no marker, no supervisor
    proc = cli(repo, "recover", lane)
    assert proc.returncode == 0, proc.stderr
    wait_for(lambda: not _alive(escapee), timeout=10)
    # Abandoning the lost lane records how it ended instead of leaving its result empty.
    assert cli(repo, "abandon", lane, "--force").returncode == 0
    row = json.loads(cli(repo, "status", lane, "--json").stdout)[0]
    assert (row["state"], row["result"]) == ("abandoned", "LANE-FAILED"), row


@pytest.mark.slow
def test_without_a_cgroup_the_escapee_outlives_recover(repo: Path, tmp_path: Path, escapees: list[int]) -> None:
    """The fallback's honest limit (what `doctor` warns about): shown here so the test above means something."""
    lane, escapee = _run_escaper(repo, tmp_path, escapees, env={**os.environ, cgroup.ENV: "off"})
    assert _containment(repo, lane) == "none"
    os.kill(_supervisor_pid(repo, lane), signal.SIGKILL)
    wait_state(repo, lane, "lost")
    assert cli(repo, "recover", lane).returncode == 0
    assert _alive(escapee)
    os.kill(escapee, signal.SIGKILL)
    wait_for(lambda: not _alive(escapee), timeout=5)


@pytest.mark.slow
def test_abandon_force_of_a_running_lane_leaves_no_process(repo: Path, tmp_path: Path, escapees: list[int]) -> None:
    if cgroup.detect().mechanism == "none":
        pytest.skip(f"no cgroup here: {cgroup.detect().reason}")
    lane, escapee = _run_escaper(repo, tmp_path, escapees)
    supervisor = _supervisor_pid(repo, lane)
    proc = cli(repo, "abandon", lane, "--force")
    assert proc.returncode == 0, proc.stderr
    assert not _alive(escapee) and not _alive(supervisor)
    row = json.loads(cli(repo, "status", lane, "--json").stdout)[0]
    assert row["state"] == "abandoned"
    # The supervisor finished its own stop sequence and recorded how the lane ended.
    assert row["result"] == "LANE-FAILED", row
    assert row["providers_tried"][-1]["reason"] == "stopped by the lead", row



def test_doctor_says_which_mechanism_contains_lanes(repo: Path) -> None:
    write_config(repo)
    here = cgroup.detect()
    report = cli(repo, "doctor").stdout
    assert f"containment: {here.mechanism}" in report
    off = cli(repo, "doctor", env={**os.environ, cgroup.ENV: "off"}).stdout
    assert "containment: none (turned off by LANES_TUI_CGROUP=off); fallback: process group" in off
