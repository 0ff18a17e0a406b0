"""`[runner] kind` picks the runner everywhere: the engine, `run`, `status`, `wait`, `stop`, `send`, `peek`.

The default (`local`) is the supervisors on this machine and never imports Ray; `ray` is the Ray
runner, imported by name in `make_runner` only, refused in one line with its `pip install` when Ray
is missing. The Ray runner itself is stood in for by `tests.fake_remote.FakeRemote` (registered in
`RUNNER_FACTORIES`): real records, a real bare remote, no cluster.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lanes_tui.app.cli.main import main
from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.runners import LocalRunner, make_runner, shared_runner
from lanes_tui.engine.lanes.runner import as_remote
from lanes_tui.engine.live.engine import Engine
from lanes_tui.engine.state.events import LaneChanged
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from tests.fake_remote import NODE, FakeRemote, fake_ray, make_record, ray_config
from tests.helpers import write_config

__all__ = ["fake_ray"]  # the fixture, re-exported for pytest

FIX = "pip install -e '.[ray]' in lanes-tui's checkout"


def test_the_default_config_runs_lanes_here(repo: Path) -> None:
    write_config(repo)
    config = load_config(repo)
    assert config.runner.kind == "local"
    assert isinstance(make_runner(repo, config), LocalRunner)
    engine = Engine(repo)
    assert isinstance(engine.runner, LocalRunner) and engine.remote_tick.remote is None


def test_a_ray_config_uses_the_registered_runner_once_per_process(repo: Path, fake_ray: type[FakeRemote]) -> None:
    ray_config(repo)
    config = load_config(repo)
    assert isinstance(make_runner(repo, config), FakeRemote)
    kept = shared_runner(repo, config)
    assert shared_runner(repo, load_config(repo)) is kept  # one cluster connection for the process
    assert Engine(repo).runner is kept and as_remote(kept) is kept


#: A process where Ray cannot be imported, as on a machine without the extra. If the Ray runner's
#: module is not there yet, a stand-in with its first line (`import ray`) takes its place.
_WITHOUT_RAY = """
import importlib.abc, importlib.util, sys
class NoRay(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "ray" or name.startswith("ray."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, NoRay())
NAME = "lanes_tui.engine.remote.ray_runner"
if importlib.util.find_spec(NAME) is None:
    class StandIn(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path=None, target=None):
            return importlib.util.spec_from_loader(name, self) if name == NAME else None
        def create_module(self, spec):
            return None
        def exec_module(self, module):
            exec("import ray", module.__dict__)
    sys.meta_path.append(StandIn())
"""


def test_ray_without_ray_installed_is_one_clear_error(repo: Path) -> None:
    ray_config(repo)
    program = _WITHOUT_RAY + """
from pathlib import Path
from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.runners import make_runner
try:
    make_runner(Path.cwd(), load_config(Path.cwd()))
except LanesError as exc:
    print("REFUSED:", exc)
"""
    done = subprocess.run([sys.executable, "-c", program], cwd=repo, capture_output=True, text=True, timeout=60,
                          check=False)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stdout.startswith("REFUSED: ") and FIX in done.stdout and "not installed" in done.stdout

    run = subprocess.run([sys.executable, "-c", _WITHOUT_RAY + "from lanes_tui.app.cli.main import main\n"
                          "raise SystemExit(main(sys.argv[1:]))", "run", "--prompt", "x", "--id", "noray"],
                         cwd=repo, capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.count("\n") == 1 and FIX in run.stderr
    assert not (StatePaths(repo).lane("noray-a1").dir).exists()  # refused before anything was made


def test_an_unknown_kind_from_code_is_refused(repo: Path) -> None:
    write_config(repo)
    config = load_config(repo)
    odd = type(config.runner)(kind="k8s")
    with pytest.raises(LanesError, match="not a runner"):
        make_runner(repo, type(config)(**{**vars(config), "runner": odd}))


def test_status_on_a_ray_config_syncs_once_and_shows_fresh_states(repo: Path, fake_ray: type[FakeRemote],
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    ray_config(repo)
    make_record(repo, "far-a1")
    make_record(repo, "near-a1")
    runner = shared_runner(repo, load_config(repo))
    assert isinstance(runner, FakeRemote)
    runner.pending["far-a1"] = ("unreachable", f"node {NODE} does not answer")
    assert main(["--repo", str(repo), "status", "--json"]) == 0
    rows = {row["id"]: row for row in json.loads(capsys.readouterr().out)}
    assert runner.syncs == 1
    assert rows["far-a1"]["state"] == "unreachable"
    assert rows["near-a1"]["state"] == "running"  # no local supervisor, and still not lost


def test_wait_syncs_while_it_waits(repo: Path, fake_ray: type[FakeRemote],
                                   capsys: pytest.CaptureFixture[str]) -> None:
    ray_config(repo)
    make_record(repo, "slow-a1")
    runner = shared_runner(repo, load_config(repo))
    assert isinstance(runner, FakeRemote)
    runner.pending["slow-a1"] = ("unreachable", "node gone quiet")
    started = time.monotonic()
    # `unreachable` is limbo: `wait` keeps waiting through it, and times out (124) here.
    assert main(["--repo", str(repo), "wait", "slow-a1", "--timeout", "1.5"]) == 124
    assert runner.syncs >= 1 and time.monotonic() - started < 10
    runner.pending["slow-a1"] = ("lost", f"node {NODE} is gone")
    assert main(["--repo", str(repo), "wait", "slow-a1", "--timeout", "5"]) == 0
    assert capsys.readouterr().out.strip().endswith("slow-a1 lost")


def test_run_stop_send_peek_of_a_ray_lane_go_through_the_runner(repo: Path, fake_ray: type[FakeRemote],
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    ray_config(repo)
    assert main(["--repo", str(repo), "run", "--prompt", "fix it", "--id", "remote"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "remote-a1" and NODE in out
    runner = shared_runner(repo, load_config(repo))
    assert isinstance(runner, FakeRemote)
    assert ("start", "remote") in runner.calls

    output = StatePaths(repo).lane("remote-a1").output
    output.write_bytes(b"".join(b"line %d\n" % i for i in range(1, 1001)))
    assert main(["--repo", str(repo), "peek", "remote-a1", "--lines", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["lines"] == ["line 999", "line 1000"]
    assert main(["--repo", str(repo), "peek", "remote-a1", "--screen"]) == 2
    assert "not mirrored here" in capsys.readouterr().err

    assert main(["--repo", str(repo), "send", "remote-a1", "also the docs"]) == 0
    assert runner.sent == [("remote-a1", "also the docs")]
    assert "sent to remote-a1 (ray)" in capsys.readouterr().out

    assert main(["--repo", str(repo), "stop", "remote-a1", "--json"]) == 0
    [report] = json.loads(capsys.readouterr().out)
    assert ("stop", "remote-a1") in runner.calls
    assert report["state"] == "exited" and report["worktree"].startswith(NODE)
    assert main(["--repo", str(repo), "stop", "remote-a1"]) == 2  # not running any more: refused
    assert "is not running" in capsys.readouterr().err


async def test_the_engine_syncs_in_the_background_and_emits_the_changes(repo: Path,
                                                                        fake_ray: type[FakeRemote]) -> None:
    ray_config(repo)
    make_record(repo, "cloud-a1")
    engine = Engine(repo, poll_s=0.02, reconcile_every_s=0.05, use_inotify=False)
    engine.remote_tick.sync_s = 0.05
    runner = engine.runner
    assert isinstance(runner, FakeRemote)
    gate = asyncio.Event()
    real_sync = runner.sync

    async def slow_sync() -> list[str]:
        await gate.wait()  # a cluster that takes its time: the watch loop must not wait for it
        return await real_sync()

    runner.sync = slow_sync  # type: ignore[method-assign]
    await engine.start()
    try:
        seen: list[str] = []

        async def follow() -> None:
            async for event in engine.events():
                if isinstance(event, LaneChanged) and event.lane_id == "cloud-a1":
                    seen.append(event.status.state)
                    if event.status.state == "unreachable":
                        return

        collector = asyncio.create_task(follow())
        ticks = engine.ticks
        await asyncio.sleep(0.5)
        assert engine.ticks >= ticks + 5  # ticking (and reconciling) while the sync hangs
        assert LaneStore(StatePaths(repo)).read("cloud-a1").state == "running"  # never judged lost here
        runner.pending["cloud-a1"] = ("unreachable", f"node {NODE} does not answer")
        gate.set()
        await asyncio.wait_for(collector, 10)
        for _ in range(500):  # the scan may see the mirror's change before the tick counts the sync
            if engine.remote_tick.syncs >= 1:
                break
            await asyncio.sleep(0.01)
        assert engine.remote_tick.syncs >= 1
    finally:
        await engine.aclose()
    assert seen[-1] == "unreachable"
    assert engine.lanes()[0].state == "unreachable"


async def test_a_failing_sync_is_said_once_and_the_engine_goes_on(repo: Path, fake_ray: type[FakeRemote]) -> None:
    from lanes_tui.engine.state.events import EngineNotice

    ray_config(repo)
    engine = Engine(repo, poll_s=0.02, use_inotify=False)
    engine.remote_tick.sync_s = 0.02

    async def broken() -> list[str]:
        raise LanesError("the cluster at auto does not answer")

    engine.runner.sync = broken  # type: ignore[attr-defined]
    notices: list[str] = []
    await engine.start()
    try:
        async def follow() -> None:
            async for event in engine.events():
                if isinstance(event, EngineNotice):
                    notices.append(event.message)

        task = asyncio.create_task(follow())
        end = time.monotonic() + 5
        while engine.remote_tick.syncs < 4 and time.monotonic() < end:
            await asyncio.sleep(0.02)
        task.cancel()
    finally:
        await engine.aclose()
    assert engine.remote_tick.syncs >= 4
    assert notices == ["the remote lanes were not synced: the cluster at auto does not answer"]


async def test_the_dashboards_commands_reach_a_ray_lane_through_its_runner(repo: Path,
                                                                          fake_ray: type[FakeRemote]) -> None:
    from lanes_tui.engine.decisions.runners import LocalRunner as Local

    ray_config(repo)
    make_record(repo, "dash-a1", state="exited")
    engine = Engine(repo, use_inotify=False)
    runner = engine.runner
    assert isinstance(runner, FakeRemote)
    assert await engine.send("dash-a1", "hello node") == {"ack": True, "via": "ray"}
    packet = await engine.check("dash-a1")  # the gates run on the node; the mirror is synced after
    assert packet.gates_status == "passed" and ("run_gates", "dash-a1") in runner.calls
    assert LaneStore(StatePaths(repo)).read("dash-a1").state == "ready"
    make_record(repo, "old-a1")
    record = LaneStore(StatePaths(repo)).read("old-a1")
    record.runner, record.node = "local", None  # started here before the lead switched to the cluster
    LaneStore(StatePaths(repo)).write(record)
    assert isinstance(await engine.remote_tick.runner_of("old-a1"), Local)
    assert await engine.remote_tick.runner_of("dash-a1") is runner


async def test_a_plan_ticket_under_a_ray_config_starts_through_the_runner(repo: Path,
                                                                          fake_ray: type[FakeRemote]) -> None:
    """The plan scheduler launches a ticket's lane where the lead's lanes run: through the cluster's
    runner for `kind = "ray"`, nothing started on this machine."""
    from lanes_tui.engine.plans.decide import Launch
    from lanes_tui.engine.plans.model import Plan, Ticket
    from lanes_tui.engine.plans.scheduler import launch_ticket
    from lanes_tui.engine.plans.state import FrozenPlan

    ray_config(repo)
    ticket = Ticket(id="cache", title="a cache", prompt="add a cache", scope=("cache.py",), blockers=(), attempts=2)
    plan = FrozenPlan(Plan(name="p", tickets=(ticket,)), repo, 1000.0)
    record = await launch_ticket(plan, Launch(ticket="cache", repo=repo, why="ready"), config=load_config(repo))
    assert record is not None and record.runner == "ray" and record.node == NODE
    assert fake_ray.instances[-1].calls == [("start", "cache")]
    assert not (repo.parent / "worktrees").exists(), "no worktree, no supervisor on the lead's machine"
