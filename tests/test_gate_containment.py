"""Gates contained and finished; records forged behind lanes-tui's back; a stopped or killed supervisor.

Hostile agents, each a real process in a real lane (issue 28, items 5 and 6):

* an agent writes a gate script (`gate_check.py`, as it would write a `conftest.py`) that double-forks
  a `setsid` daemon meant to rewrite `packet.json` once the check is over: when the supervisor's
  gates and the lead's `check` return, no such process exists (asserted by its pid), on every
  containment path this machine has (cgroup v2, cgroup v1's freezer, and the fallback without a
  cgroup: process group + the check's `LANES_GATE` marker);
* the same daemon clearing its environment with `env -i` under the fallback survives (the honest
  limit) and forges `packet.json` and `lane.json`: `accept` refuses, naming the file (the seals);
* an agent that `kill -STOP`s its supervisor (its parent): `status` says `unreachable` at once, and
  past the lane's wall-clock limit (a clock moved forward, not a wait) reconcile ends the lane;
* a supervisor killed with SIGKILL while its agent runs: `lost`, and `check` stops the orphaned
  agent before it runs a gate.

Under the kernel's confinement (Landlock) the daemon could not write the records and the agent could
not signal its supervisor at all: `tests/test_landlock.py` shows the kernel refusing both. These tests
hold the second line, so they run their lanes uncontained (`LANES_TUI_LANDLOCK=off` and
`allow_uncontained`), as on a machine without Landlock.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lanes_tui.engine.core.clock import FakeClock
from lanes_tui.engine.decisions.reconcile import reconcile
from lanes_tui.engine.lanes.launcher import LaunchRequest
from lanes_tui.engine.live.engine import Engine
from lanes_tui.engine.procs import cgroup
from lanes_tui.engine.state.events import LaneChanged
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.seals import seal_problem, write_sealed
from lanes_tui.engine.state.status import LaneStatus
from tests import helpers
from tests.conftest import git
from tests.helpers import cli, status, wait_for, wait_state


def write_config(repo: Path, **kwargs: object) -> Path:
    """The suite's config, for a lane the lead allowed to run uncontained (see the module's docstring)."""
    return helpers.write_config(repo, lanes_extra="allow_uncontained = true", **kwargs)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def uncontained(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANES_TUI_LANDLOCK", "off")

#: The gate script the agent writes into its worktree: `gate_check.py MODE PIDFILE PACKET RECORD`.
#: It starts a daemon (double fork, setsid, its std streams on /dev/null) that writes its pid to
#: PIDFILE and waits for the lane's packet to say `failed`, then rewrites packet and record to say
#: `passed` / `ready` and touches PIDFILE.forged. MODE `env-i` re-executes the daemon through
#: `env -i` first (no marker of any kind left). The gate itself then fails, once the daemon is up.
GATE_SCRIPT = r'''
import json, os, sys, time
mode, pidfile, packet, record = sys.argv[1:5]

def forge():
    for _ in range(3000):
        time.sleep(0.1)
        try:
            data = json.load(open(packet))
            lane = json.load(open(record))
        except (OSError, ValueError):
            continue
        if data.get("gates_status") != "failed" or lane.get("state") != "rejected":
            continue
        data["gates_status"], data["next"] = "passed", "review"
        for gate in data.get("gates", []):
            gate.update(status="passed", passed=True, exit_code=0)
        lane["state"], lane["state_reason"] = "ready", "gates passed"
        for path, value in ((packet, data), (record, lane)):
            with open(path + ".forge", "w") as handle:
                json.dump(value, handle, indent=2, sort_keys=True)
            os.replace(path + ".forge", path)
        open(pidfile + ".forged", "w").close()
        return

if mode == "forge":
    forge()
    sys.exit(0)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        with open(pidfile + ".tmp", "w") as handle:
            handle.write(str(os.getpid()))
        os.replace(pidfile + ".tmp", pidfile)
        if mode == "env-i":
            os.execve("/usr/bin/env", ["env", "-i", sys.executable, os.path.abspath(sys.argv[0]), "forge",
                                       pidfile, packet, record], {})
        forge()
        os._exit(0)
    os._exit(0)
os.wait()
while not os.path.exists(pidfile):
    time.sleep(0.01)
print("1 failed: the daemon is up", flush=True)
sys.exit(1)
'''

#: An agent that writes its prompt (run with --raw) into the worktree as the gate script, and ends OK.
WRITER = "import sys; open('gate_check.py', 'w').write(sys.argv[-1]); print('wrote gate_check.py')"

#: An agent that stops its supervisor (its parent), then notes its own pid, then works on.
STOPPER = ("import os, signal, sys, time\n"
           "os.kill(os.getppid(), signal.SIGSTOP)\n"
           "open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid()))\n"
           "os.replace(sys.argv[1] + '.tmp', sys.argv[1])\n"
           "time.sleep(300)\n")

#: An agent that notes its pid and works for five minutes.
SLEEPER = ("import os, sys, time\n"
           "open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid()))\n"
           "os.replace(sys.argv[1] + '.tmp', sys.argv[1])\n"
           "time.sleep(300)\n")

MECHANISMS = {"cgroup-v2": "v2", "cgroup-v1": "v1", "none": "off"}


@pytest.fixture(params=list(MECHANISMS))
def mechanism(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each containment path this machine offers (`LANES_TUI_CGROUP`), for every process the test starts."""
    name = str(request.param)
    if name != "none":
        support = cgroup.detect(MECHANISMS[name])
        if support.mechanism != name:
            pytest.skip(f"{name} is not available here: {support.reason}")
    monkeypatch.setenv(cgroup.ENV, MECHANISMS[name])
    return name


@pytest.fixture()
def daemons() -> Iterator[list[int]]:
    """Pids of daemons a test made that the suite's marker check cannot see (`env -i`); killed at the end."""
    found: list[int] = []
    yield found
    for pid in cgroup.pids_alive(found):
        os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    return bool(cgroup.pids_alive([pid]))


def _lane_dir(repo: Path, lane: str) -> Path:
    return StatePaths(repo).lane(lane).dir


def _events(repo: Path, lane: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in (_lane_dir(repo, lane) / "events.jsonl").read_text().splitlines()]


def _supervisor_pid(repo: Path, lane: str) -> int:
    return int(json.loads((_lane_dir(repo, lane) / "supervisor.json").read_text())["pid"])


def _gate_lane(repo: Path, tmp_path: Path, mode: str, lane_id: str) -> tuple[str, Path]:
    """A lane whose agent writes the daemon-starting gate script; its gates run it."""
    pidfile = tmp_path / "daemon.pid"
    lane = f"{lane_id}-a1"
    lane_state = _lane_dir(repo, lane)
    command = shlex.join(["{python}", "gate_check.py", mode, str(pidfile), str(lane_state / "packet.json"),
                          str(lane_state / "lane.json")])
    write_config(repo, chains='backend = ["writer"]',
                 gates=f"commands = [{json.dumps(command)}]",
                 extra=f'[providers.writer]\nargv = {json.dumps(["{python}", "-c", WRITER])}\nprompt = "arg"\n')
    proc = cli(repo, "run", "--raw", "--prompt", GATE_SCRIPT, "--id", lane_id)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[-1] == lane
    return lane, pidfile


def _packet(repo: Path, lane: str) -> dict[str, object]:
    return dict(json.loads((_lane_dir(repo, lane) / "packet.json").read_text()))


# --- gates contained and finished -------------------------------------------------------------------

@pytest.mark.slow
def test_gate_daemon_is_gone_when_the_gates_and_check_return(repo: Path, tmp_path: Path, mechanism: str) -> None:
    lane, pidfile = _gate_lane(repo, tmp_path, "keep-env", "gated")
    wait_state(repo, lane)  # the supervisor's own gates: agent, gates, packet, rejected
    assert status(repo, lane)["state"] == "rejected"
    first = int(pidfile.read_text())
    assert not _alive(first), f"the daemon {first} of the supervisor's gate outlived its gates"
    packet = _packet(repo, lane)
    assert packet["gates_status"] == "failed"
    assert packet["gate_containment"]["mechanism"] == mechanism  # type: ignore[index]
    gate = packet["gates"][0]  # type: ignore[index]
    assert gate["containment"] == mechanism and first in gate["left_behind"], gate

    pidfile.unlink()
    checked = cli(repo, "check", lane)  # the lead's check runs the gates outside any supervisor
    assert checked.returncode != 0 or "failed" in checked.stdout + checked.stderr
    second = int(pidfile.read_text())
    assert second != first and not _alive(second), f"the daemon {second} outlived `check`"
    after = _packet(repo, lane)
    assert after["gates_status"] == "failed" and not Path(f"{pidfile}.forged").exists()
    assert seal_problem(_lane_dir(repo, lane) / "packet.json") is None
    log = Path(str(after["gates"][0]["log"])).read_text()  # type: ignore[index]
    assert f"contained by {mechanism if mechanism != 'none' else 'the process group'}" in log, log
    assert f"stopped 1 process(es) it left behind (pids {second})" in log, log


@pytest.mark.slow
def test_forged_packet_from_an_escaped_daemon_is_refused_by_accept(repo: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   daemons: list[int]) -> None:
    """Without a cgroup, a daemon that clears its environment escapes the fallback's sweep (its
    documented limit) and rewrites the packet and the record: accept refuses, naming the file."""
    monkeypatch.setenv(cgroup.ENV, "off")
    git(repo, "checkout", "-q", "-b", "programme")  # main is protected: accept into a programme branch
    lane, pidfile = _gate_lane(repo, tmp_path, "env-i", "forged")
    wait_state(repo, lane)
    daemons.append(int(pidfile.read_text()))
    wait_for(Path(f"{pidfile}.forged").exists, timeout=30)
    assert _packet(repo, lane)["gates_status"] == "passed"  # the forgery is in place
    assert status(repo, lane)["state"] == "ready"
    before = git(repo, "rev-parse", "programme")
    refused = cli(repo, "accept", lane)
    assert refused.returncode != 0
    line = refused.stderr.strip().splitlines()[-1]
    assert "packet.json was changed outside lanes-tui" in line and f"lanes-tui check {lane}" in line, line
    assert "Traceback" not in refused.stderr
    assert git(repo, "rev-parse", "programme") == before
    queued = cli(repo, "accept", "--queue")
    assert git(repo, "rev-parse", "programme") == before, queued.stdout + queued.stderr


def test_a_hand_edited_record_is_kept_from_finish_and_accept_until_a_check(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "programme")
    git(repo, "branch", "other")
    write_config(repo)
    proc = cli(repo, "run", "--prompt", "say nothing to merge\n", "--id", "edited", check=True)
    lane = proc.stdout.split()[-1]
    wait_state(repo, lane)
    record_path = _lane_dir(repo, lane) / "lane.json"
    record = json.loads(record_path.read_text())
    record["scope"] = ["docs/"]  # e.g. a scope changed by hand or by a leftover process
    record["target_branch"] = "other"  # retargeted: finish judges "merged" against it
    record_path.write_text(json.dumps(record))
    finish = json.loads(cli(repo, "finish", "--json", "--no-push").stdout)
    changed = [left for left in finish["leftovers"] if left["kind"] == "CHANGED"]
    assert changed and "lane.json was changed outside lanes-tui" in changed[0]["fix"], finish
    assert Path(str(changed[0]["path"])).is_dir() and status(repo, lane)["state"] == "exited"  # nothing removed
    assert status(repo, lane)["result"] == "NO-CHANGES"  # finish would remove it as merged, but for the edit
    refused = cli(repo, "accept", lane, "--override", "past its state, to the seal")
    assert refused.returncode != 0 and "lane.json was changed outside lanes-tui" in refused.stderr
    checked = cli(repo, "check", lane)
    assert checked.returncode == 0, checked.stderr
    assert "WARNING: " in checked.stdout and "lane.json was changed outside lanes-tui" in checked.stdout
    assert seal_problem(record_path) is None


def test_seals_catch_an_edit_a_missing_seal_and_a_torn_write(tmp_path: Path) -> None:
    lane_dir = tmp_path / "state" / "lanes" / "seal-a1"
    path = lane_dir / "packet.json"
    seal = tmp_path / "state" / "seals" / "seal-a1" / "packet.json.sha256"
    assert seal_problem(path) is None  # nothing written yet: nothing to check
    write_sealed(path, {"gates_status": "failed", "next": "redo"})
    assert seal_problem(path) is None and seal.exists()
    path.write_text(path.read_text().replace("failed", "passed"))
    assert "changed outside lanes-tui" in str(seal_problem(path))
    path.write_text(json.dumps({"next": "redo", "gates_status": "failed"}))  # put back: the same content
    assert seal_problem(path) is None
    path.write_text("{ torn")
    assert "changed outside lanes-tui" in str(seal_problem(path))
    seal.unlink()
    assert "has no seal" in str(seal_problem(path))
    seal.parent.rmdir()  # a lane no lanes-tui with seals wrote: nothing to compare with
    assert seal_problem(path) is None


# --- a stopped or killed supervisor is seen --------------------------------------------------------

def _agent_lane(repo: Path, tmp_path: Path, script: str, lane_id: str, timeout: str = "600") -> tuple[str, Path]:
    pidfile = tmp_path / "agent.pid"
    write_config(repo, chains='backend = ["hostile"]', idle_timeout_s=600,
                 extra=f'[providers.hostile]\nargv = {json.dumps(["{python}", "-c", script, str(pidfile)])}\n'
                       'prompt = "stdin"\n')
    proc = cli(repo, "run", "--prompt", "work", "--id", lane_id, "--timeout", timeout)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()[-1], pidfile


def _state_of(supervisor: int) -> str:
    return (Path(f"/proc/{supervisor}/stat").read_text().rsplit(")", 1)[1].split() or ["?"])[0]


@pytest.mark.slow
def test_agent_that_stops_its_supervisor_is_unreachable_and_ended_past_its_deadline(
        repo: Path, tmp_path: Path, mechanism: str) -> None:
    lane, pidfile = _agent_lane(repo, tmp_path, STOPPER, "stopper", timeout="30")
    wait_for(pidfile.exists, timeout=30)
    agent = int(pidfile.read_text())
    supervisor = _supervisor_pid(repo, lane)
    # SIGSTOP takes hold when the supervisor is next scheduled: on a loaded machine a moment after kill().
    wait_for(lambda: _state_of(supervisor) in ("T", "t"), timeout=10)
    row = status(repo, lane)  # one look: no wait for any timer
    assert row["state"] == "unreachable", row
    assert f"pid {supervisor}" in row["state_reason"] and "kill -CONT" in row["state_reason"]
    started = float(row["providers_tried"][-1]["started"])

    reconcile(repo, FakeClock(wall=started + 10))  # before the deadline: nothing is ended
    assert _alive(supervisor) and _alive(agent) and status(repo, lane)["state"] == "unreachable"

    changes = reconcile(repo, FakeClock(wall=started + 31))  # past `--timeout 30`, the supervisor still stopped
    assert [(c.lane_id, c.after) for c in changes] == [(lane, "exited")]
    assert not _alive(supervisor) and not _alive(agent)
    row = status(repo, lane)
    assert (row["state"], row["result"]) == ("exited", "LANE-FAILED"), row
    assert "wall-clock limit of 30s" in row["state_reason"] and "stopped" in row["state_reason"]
    receipt = _lane_dir(repo, lane) / "receipt.json"
    assert json.loads(receipt.read_text())["ended_by"] == "engine" and seal_problem(receipt) is None


async def test_the_dashboards_watch_sees_a_stopped_supervisor(repo: Path, tmp_path: Path) -> None:
    """No file changes when a supervisor is stopped and no pidfd fires: the watch's own look sees it."""
    pidfile = tmp_path / "agent.pid"
    write_config(repo, chains='backend = ["hostile"]', idle_timeout_s=600,
                 extra=f'[providers.hostile]\nargv = {json.dumps(["{python}", "-c", STOPPER, str(pidfile)])}\n'
                       'prompt = "stdin"\n')
    engine = Engine(repo, poll_s=0.05)
    await engine.start()
    try:
        seen = asyncio.create_task(_until_state(engine, "watched-a1", "unreachable"))
        await asyncio.sleep(0)  # subscribed before the lane starts
        await engine.run_lane(LaunchRequest(prompt="work", slug="watched"))
        status_seen = await asyncio.wait_for(seen, 10)  # the watch reads supervisors' states once a second
    finally:
        await engine.aclose()
    assert "is stopped" in status_seen.state_reason
    assert cli(repo, "abandon", "watched-a1", "--force").returncode == 0


async def _until_state(engine: Engine, lane_id: str, state: str) -> LaneStatus:
    async for event in engine.events():
        if isinstance(event, LaneChanged) and event.lane_id == lane_id and event.status.state == state:
            return event.status
    raise AssertionError("the engine's event stream ended")


@pytest.mark.slow
def test_a_supervisor_let_go_again_takes_its_lane_back(repo: Path, tmp_path: Path) -> None:
    lane, pidfile = _agent_lane(repo, tmp_path, STOPPER, "resumed")
    wait_for(pidfile.exists, timeout=30)
    supervisor = _supervisor_pid(repo, lane)
    assert status(repo, lane)["state"] == "unreachable"
    os.kill(supervisor, signal.SIGCONT)
    wait_for(lambda: _state_of(supervisor) not in ("T", "t"), timeout=10)
    row = status(repo, lane)
    assert row["state"] == "running", row
    assert cli(repo, "abandon", lane, "--force").returncode == 0
    assert not _alive(int(pidfile.read_text()))


def test_a_stopped_supervisor_killed_afterwards_leaves_its_lane_lost(repo: Path, tmp_path: Path) -> None:
    lane, pidfile = _agent_lane(repo, tmp_path, STOPPER, "stopkill")
    wait_for(pidfile.exists, timeout=30)
    agent = int(pidfile.read_text())
    assert status(repo, lane)["state"] == "unreachable"
    os.kill(_supervisor_pid(repo, lane), signal.SIGKILL)
    row = wait_for(lambda: (r := status(repo, lane))["state"] != "unreachable" and r, timeout=10)
    assert row["state"] == "lost" and "left no receipt" in row["state_reason"], row
    assert cli(repo, "check", lane).returncode == 0  # stops the orphaned agent first
    assert not _alive(agent)


@pytest.mark.slow
def test_a_stopped_supervisor_is_ended_by_abandon_without_its_grace(repo: Path, tmp_path: Path) -> None:
    lane, pidfile = _agent_lane(repo, tmp_path, STOPPER, "halted")
    wait_for(pidfile.exists, timeout=30)
    began = time.monotonic()
    assert cli(repo, "abandon", lane, "--force").returncode == 0
    assert time.monotonic() - began < 20  # its own stop sequence ran: it was let go, not waited out
    assert not _alive(int(pidfile.read_text())) and not _alive(_supervisor_pid(repo, lane))
    assert status(repo, lane)["state"] == "abandoned"


@pytest.mark.slow
def test_killed_supervisor_is_lost_and_check_stops_its_orphaned_agent_first(repo: Path, tmp_path: Path,
                                                                            mechanism: str) -> None:
    lane, pidfile = _agent_lane(repo, tmp_path, SLEEPER, "orphan")
    wait_for(pidfile.exists, timeout=30)
    agent = int(pidfile.read_text())
    os.kill(_supervisor_pid(repo, lane), signal.SIGKILL)
    wait_for(lambda: status(repo, lane)["state"] == "lost", timeout=10)
    assert _alive(agent)  # the supervisor is gone, its agent works on
    checked = cli(repo, "check", lane)
    assert checked.returncode == 0, checked.stderr
    assert not _alive(agent)
    events = _events(repo, lane)
    kinds = [(e.get("type"), e.get("state")) for e in events]
    stopped = kinds.index(("leftovers-stopped", None))
    assert stopped < kinds.index(("state", "checking")), kinds  # stopped before anything was judged
    assert agent in events[stopped]["pids"]  # type: ignore[operator]


def test_killed_supervisor_with_an_agent_past_its_deadline_is_ended(repo: Path, tmp_path: Path) -> None:
    lane, pidfile = _agent_lane(repo, tmp_path, SLEEPER, "overdue", timeout="30")
    wait_for(pidfile.exists, timeout=30)
    agent = int(pidfile.read_text())
    os.kill(_supervisor_pid(repo, lane), signal.SIGKILL)
    wait_for(lambda: status(repo, lane)["state"] == "lost", timeout=10)
    started = float(status(repo, lane)["providers_tried"][-1]["started"])
    changes = reconcile(repo, FakeClock(wall=started + 31))
    assert [(c.lane_id, c.before, c.after) for c in changes] == [(lane, "lost", "exited")]
    assert not _alive(agent)
    row = status(repo, lane)
    assert row["result"] == "LANE-FAILED" and "was gone" in row["state_reason"], row


def test_forged_receipt_is_not_trusted_by_reconcile(repo: Path, tmp_path: Path) -> None:
    lane, pidfile = _agent_lane(repo, tmp_path, SLEEPER, "receipt")
    wait_for(pidfile.exists, timeout=30)
    agent = int(pidfile.read_text())
    receipt = _lane_dir(repo, lane) / "receipt.json"
    receipt.write_text(json.dumps({"lane": lane, "result": "OK", "reason": "all done"}))  # as the agent could
    os.kill(_supervisor_pid(repo, lane), signal.SIGKILL)
    row = wait_for(lambda: (r := status(repo, lane))["state"] in ("lost", "exited") and r, timeout=10)
    assert (row["state"], row["result"]) == ("lost", None), row
    assert "receipt was changed outside lanes-tui" in row["state_reason"]
    assert cli(repo, "abandon", lane, "--force").returncode == 0
    assert not _alive(agent)

