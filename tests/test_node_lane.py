"""A lane as a cluster node runs it (`remote.node_lane`), without Ray: real git repositories (the lead's,
a bare one as the shared remote), the `simpty` sim agent, the real supervisor under the reaper shim.

The lead's config (with SIMPTY) is written into the lead's repository and its text handed to the node
in the spec, as the Ray runner does; the node works in its own folder under tmp_path.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import psutil
import pytest

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.lanes.launcher import SUPERVISOR_STOP_GRACE_S
from lanes_tui.engine.remote.node_lane import NodeLane
from lanes_tui.engine.remote.spec import BASE_REF, WIP_REF, NodeLaneSpec
from lanes_tui.engine.state.model import LIVE_STATES
from lanes_tui.engine.state.paths import StatePaths, repo_key
from tests.helpers import wait_for
from tests.runner_contract import ECHO_SCRIPT, write_contract_config

LANE = "contract-a1"


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


@dataclass
class World:
    repo: Path
    remote: Path
    work_root: Path
    base: str

    def spec(self, lane_id: str = LANE, *, push: bool = True, **changes: Any) -> NodeLaneSpec:
        """The spec the lead's machine would send, after pushing the lane's base to the remote."""
        if push:
            git(self.repo, "push", "-q", str(self.remote), f"{self.base}:{BASE_REF.format(lane_id=lane_id)}")
        slug = lane_id.rsplit("-a", 1)[0]
        spec = NodeLaneSpec(
            lane_id=lane_id, repo_key=repo_key(self.repo), remote=str(self.remote), start_commit=self.base,
            base_sha=self.base, target_branch="main", config_text=(self.repo / ".lanes" / "config.toml").read_text(),
            request={"prompt": ECHO_SCRIPT, "slug": slug, "raw": True}, work_root=str(self.work_root))
        return replace(spec, **changes)


@pytest.fixture()
def world(repo: Path, tmp_path: Path) -> World:
    write_contract_config(repo)
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(remote))
    return World(repo, remote, tmp_path / "node", git(repo, "rev-parse", "HEAD"))


def read_all(lane: NodeLane) -> bytes:
    chunks: list[bytes] = []
    seq = 0
    while True:
        data, seq = lane.output(seq, 64 * 1024)
        if not data:
            return b"".join(chunks)
        chunks.append(data)


def lane_processes(lane_id: str) -> list[psutil.Process]:
    """Every living process of this test that carries the lane's environment (its supervisor's children do).

    This test's own marker (`LANESTEST_MARKER`, tests/conftest.py) as well: the module's other tests use
    the same lane id and may run at the same time on the other xdist worker."""
    marker = os.environ.get("LANESTEST_MARKER")
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            env = proc.environ()
            if (env.get("LANES_LANE") == lane_id and env.get("LANESTEST_MARKER") == marker
                    and proc.status() != psutil.STATUS_ZOMBIE):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def test_a_node_lane_runs_publishes_checkpoints_and_goes_away(world: World) -> None:
    lane = NodeLane(world.spec())
    try:
        prepared = lane.prepare()
        clone = Path(prepared["clone"])
        assert clone.is_dir() and prepared["hostname"] and prepared["worktree_root"].startswith(str(world.work_root))
        config = (clone / ".lanes" / "config.toml").read_text()
        assert config.count("worktree_root") == 1 and prepared["worktree_root"] in config
        assert ".lanes/state/" in (clone / ".git" / "info" / "exclude").read_text().split()

        record = lane.start()
        assert record["id"] == LANE and record["base_sha"] == world.base
        status = lane.status()
        assert status["supervisor_alive"] is True and status["shim_alive"] is True
        wait_for(lambda: b"hello from the lane" in read_all(lane) and b"echoing input" in read_all(lane))

        assert lane.send("ping")["ok"] is True
        wait_for(lambda: b"echo: ping" in read_all(lane))
        sample = wait_for(lane.sample)
        assert "rss_bytes" in sample

        worktree = Path(record["worktree"])
        wait_for(lambda: (worktree / "contract.txt").exists())
        head_before = git(worktree, "rev-parse", "HEAD")
        with open(clone / ".git" / "info" / "exclude", "a") as exclude:
            exclude.write("scratch.tmp\n")
        (worktree / "scratch.tmp").write_text("ignored by git: never in a checkpoint")
        checkpoint = lane.checkpoint()
        assert checkpoint is not None and len(checkpoint) == 40
        wip = WIP_REF.format(lane_id=LANE)
        assert git(world.remote, "rev-parse", wip) == checkpoint
        assert "made by the lane" in git(world.remote, "show", f"{wip}:contract.txt")
        assert "scratch.tmp" not in git(world.remote, "ls-tree", "-r", "--name-only", wip)
        assert git(worktree, "rev-parse", "HEAD") == head_before, "a checkpoint leaves HEAD alone"
        assert "contract.txt" in git(worktree, "status", "--porcelain"), "and the index: still uncommitted"
        assert lane.checkpoint() is None, "nothing changed since the last checkpoint"

        lane.stop()
        assert lane.status()["supervisor_alive"] is False and lane.status()["shim_alive"] is False
        assert lane_processes(LANE) == []
        wait_for(lambda: lane.status()["state"] not in LIVE_STATES)

        packet = lane.run_gates()
        assert packet["changed_files"] == ["contract.txt"], packet

        published = lane.publish()
        ref = f"refs/heads/lane/{LANE}"
        assert published["ref"] == ref and git(world.remote, "rev-parse", ref) == published["commit"]
        assert "made by the lane" in git(world.remote, "show", f"{published['commit']}:contract.txt")
        assert git(world.remote, "rev-parse", f"{published['commit']}^") == world.base

        removed = lane.discard()
        assert str(world.work_root.resolve() / repo_key(world.repo) / "lanes" / LANE) in removed
        assert not clone.exists() and not worktree.exists()
        assert (world.work_root / repo_key(world.repo) / "mirror.git").is_dir(), "the mirror stays for other lanes"
    finally:
        lane.close()
        lane.close()  # idempotent


def test_a_second_lane_on_the_node_reuses_the_mirror(world: World) -> None:
    with_runner = (world.repo / ".lanes" / "config.toml").read_text() + '\n[runner]\nkind = "ray"\nremote = "x"\n'
    first, second = NodeLane(world.spec()), NodeLane(world.spec("other-a1", config_text=with_runner))
    first.prepare()
    mirror = world.work_root / repo_key(world.repo) / "mirror.git"
    marker = mirror / "lanes-test-marker"
    marker.write_text("the first lane's mirror")
    git(world.repo, "commit", "-q", "--allow-empty", "-m", "later work")
    git(world.repo, "push", "-q", str(world.remote), "main")
    prepared = second.prepare()
    assert marker.exists(), "not cloned again"
    assert git(mirror, "rev-parse", "main") == git(world.repo, "rev-parse", "HEAD"), "fetched instead"
    alternates = (Path(prepared["clone"]) / ".git" / "objects" / "info" / "alternates").read_text()
    assert str(mirror / "objects") in alternates
    assert git(Path(prepared["clone"]), "rev-parse", "main") == git(world.repo, "rev-parse", "HEAD")
    assert "[runner]" not in (Path(prepared["clone"]) / ".lanes" / "config.toml").read_text(), "the node runs it here"
    first.prepare()  # a retried prepare keeps the clone it made
    assert first.discard() and second.discard()
    assert not (world.work_root / repo_key(world.repo) / "lanes" / LANE).exists()


def test_a_relaunch_starts_from_the_checkpoint_and_keeps_the_base(world: World) -> None:
    """The next attempt starts at the last checkpoint (pushed by the node that was lost) and still
    compares with the lane's base, so its gates see the earlier attempt's work too."""
    git(world.repo, "checkout", "-q", "-b", "earlier")
    (world.repo / "earlier.txt").write_text("work of attempt 1\n")
    git(world.repo, "add", "earlier.txt")
    git(world.repo, "commit", "-q", "-m", "checkpoint of attempt 1")
    checkpoint = git(world.repo, "rev-parse", "HEAD")
    git(world.repo, "checkout", "-q", "main")
    git(world.repo, "push", "-q", str(world.remote), f"{checkpoint}:{WIP_REF.format(lane_id=LANE)}")
    lane = NodeLane(world.spec("contract-a2", start_commit=checkpoint,
                               request={"prompt": "say resumed", "slug": "contract", "attempt": 2, "raw": True}))
    try:
        lane.prepare()
        record = lane.start()
        assert record["base_sha"] == world.base
        assert (Path(record["worktree"]) / "earlier.txt").read_text() == "work of attempt 1\n"
        wait_for(lambda: not lane.status()["supervisor_alive"] and lane.status()["state"] not in LIVE_STATES)
        assert b"resumed" in read_all(lane)
        changed = lane.run_gates()["changed_files"]
        assert isinstance(changed, list) and "earlier.txt" in changed
    finally:
        lane.close()
        lane.discard()


def test_bad_specs_are_refused_in_one_line(world: World) -> None:
    bad: list[dict[str, Any]] = [{"lane_id": "../escape"}, {"repo_key": "a/b"}, {"repo_key": ".."},
                                 {"remote": "--upload-pack=x"}, {"target_branch": "-x"}]
    for changes in bad:
        with pytest.raises(LanesError):
            NodeLane(replace(world.spec(push=False), **changes))
    missing = NodeLane(world.spec(start_commit="0" * 40, base_sha="0" * 40))
    with pytest.raises(LanesError, match="not on the shared remote"):
        missing.prepare()
    broken = NodeLane(world.spec("broken-a1", config_text="[lanes\n"))
    with pytest.raises(LanesError, match="malformed TOML"):
        broken.prepare()
    wrong = NodeLane(world.spec("wrong-a1", request={"prompt": "say hi", "slug": "someone-else"}))
    wrong.prepare()
    with pytest.raises(LanesError, match="not wrong-a1"):
        wrong.start()
    with pytest.raises(LanesError):
        wrong.status()  # nothing was launched
    unknown = NodeLane(world.spec("unknown-a1", request={"prompt": "say hi", "colour": "blue"}))
    unknown.prepare()
    with pytest.raises(LanesError, match="unknown fields: colour"):
        unknown.start()
    for lane in (missing, broken, wrong, unknown):
        lane.discard()
    a_file = world.work_root.parent / "not-a-folder"
    a_file.write_text("")
    with pytest.raises(LanesError, match="cannot create"):
        NodeLane(world.spec("nowhere-a1", work_root=str(a_file))).prepare()


def test_killing_the_process_that_holds_the_lane_takes_the_lane_down(world: World, tmp_path: Path) -> None:
    """As ray.kill or a lost node does to the actor's worker: SIGKILL, and nothing of the lane survives."""
    spec = world.spec()
    spec_file, ready = tmp_path / "spec.json", tmp_path / "ready.json"
    spec_file.write_text(json.dumps(spec.to_json()))
    holder_script = tmp_path / "holder.py"
    holder_script.write_text(textwrap.dedent(f"""
        import json, os, time
        from lanes_tui.engine.remote.node_lane import NodeLane
        from lanes_tui.engine.remote.spec import NodeLaneSpec
        lane = NodeLane(NodeLaneSpec.from_json(json.load(open({str(spec_file)!r}))))
        lane.prepare()
        lane.start()
        tmp = {str(ready)!r} + ".tmp"
        with open(tmp, "w") as handle:
            json.dump({{"shim": lane._shim.pid}}, handle)
        os.replace(tmp, {str(ready)!r})
        while True:
            time.sleep(1)
    """))
    holder = subprocess.Popen([sys.executable, str(holder_script)], start_new_session=True)
    try:
        wait_for(ready.exists, timeout=60)
        shim_pid = json.loads(ready.read_text())["shim"]
        lane_state = StatePaths(world.work_root / repo_key(world.repo) / "lanes" / LANE / "repo").lane(LANE)
        wait_for(lambda: b"echoing input" in lane_state.output.read_bytes() if lane_state.output.exists() else False)
        tree = psutil.Process(holder.pid).children(recursive=True)
        pids = {p.pid for p in tree}
        supervisor = json.loads(lane_state.supervisor.read_text())["pid"]
        assert shim_pid in pids and supervisor in pids and len(pids) >= 3, tree  # shim, supervisor, agent
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(10)

        wait_for(lambda: all(_gone(p) for p in tree), timeout=SUPERVISOR_STOP_GRACE_S + 20)
        assert lane_processes(LANE) == []
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        NodeLane(spec).stop(grace_s=1.0)  # sweeps whatever a failed assertion left


def _gone(proc: psutil.Process) -> bool:
    try:
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True
