"""The Ray runner on a real local cluster (a head and two workers): the runner contract, placement,
node loss, and re-attaching after the driver restarts. Real sim lanes, real git, a real bare remote.

`pytest -s tests/test_ray_runner.py` shows the node-loss timeline. Skipped when Ray is not installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the [ray] extra is not installed")

from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # noqa: E402

from lanes_tui.engine.config.settings import load_config  # noqa: E402
from lanes_tui.engine.core.errors import LanesError  # noqa: E402
from lanes_tui.engine.inbox.store import InboxStore  # noqa: E402
from lanes_tui.engine.inbox.view import QuestionView  # noqa: E402
from lanes_tui.engine.lanes.launcher import LaunchRequest  # noqa: E402
from lanes_tui.engine.remote.mirror import LaneMirror  # noqa: E402
from lanes_tui.engine.remote.ray_runner import RayRunner  # noqa: E402
from lanes_tui.engine.remote.spec import NAMESPACE, actor_name  # noqa: E402
from lanes_tui.engine.state.model import LIVE_STATES, LaneRecord  # noqa: E402
from lanes_tui.engine.state.paths import StatePaths  # noqa: E402
from tests.ray_cluster import (  # noqa: E402
    LocalCluster,
    bare_remote,
    lane_processes,
    local_cluster,
    ray_config,
    remote_refs,
    wait_free_slots,
)
from tests.runner_contract import (  # noqa: E402
    RunnerWorld,
    contract_lifecycle,
    contract_refuses_ids_that_are_not_lanes,
    until,
    write_contract_config,
)

pytestmark = [pytest.mark.ray, pytest.mark.xdist_group("ray-cluster")]  # one cluster, one worker

#: A lane that stays up until stopped (the sim listens for the lead's messages meanwhile).
LONG = "say up\necho-input 90"


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with local_cluster() as world:
        yield world


def a_record(repo: Path, lane_id: str) -> LaneRecord:
    return LaneRecord(id=lane_id, slug=lane_id.rsplit("-a", 1)[0], attempt=1, task_type="backend", prompt="p",
                      chain=["simpty"], repo=str(repo), worktree="", branch=f"lane/{lane_id}", base_sha="0" * 40,
                      target_branch="main", state="launching", state_reason="placing it", runner="ray")


def test_the_mirror_appends_only_where_it_ends(repo: Path) -> None:
    """The mirror's size is its sequence: a batch read for another offset (a second syncer was first)
    is dropped, and a node log that starts again replaces the mirror instead of splicing into it."""
    mirror = LaneMirror(repo)
    mirror.create(a_record(repo, "mirror-a1"))
    assert mirror.append_output("mirror-a1", 0, b"one\n", 4) == 4
    assert mirror.append_output("mirror-a1", 0, b"one\n", 4) == 4, "the same batch twice is written once"
    assert mirror.append_output("mirror-a1", 4, b"two\n", 8) == 8
    assert mirror.paths.lane("mirror-a1").output.read_bytes() == b"one\ntwo\n"
    assert mirror.append_output("mirror-a1", 8, b"new\n", 4) == 4, "the node's log started again"
    assert mirror.paths.lane("mirror-a1").output.read_bytes() == b"new\n"


def test_the_mirror_takes_the_nodes_record_but_not_its_pids(repo: Path) -> None:
    mirror = LaneMirror(repo)
    mirror.create(a_record(repo, "copy-a1"))
    node_record = {**a_record(repo, "copy-a1").to_json(), "state": "running", "state_reason": "agent started",
                   "supervisor_pid": 4242, "repo": "/node/clone", "worktree": "/node/wt/copy-a1"}
    assert mirror.from_node("copy-a1", node_record, node="vm (abc)") is True
    copy = mirror.read("copy-a1")
    assert (copy.state, copy.node, copy.worktree) == ("running", "vm (abc)", "/node/wt/copy-a1")
    assert copy.supervisor_pid is None and copy.repo == str(repo) and copy.runner == "ray"
    assert mirror.from_node("copy-a1", node_record) is False, "nothing new: no change"
    assert mirror.mark("copy-a1", "unreachable", "node vm (abc) does not answer") is True
    assert mirror.from_node("copy-a1", node_record) is True, "it answers again: back to the node's state"


async def test_an_unreachable_cluster_is_one_clear_error(repo: Path) -> None:
    if ray.is_initialized():
        pytest.skip("this process is already a driver of a cluster")
    remote = bare_remote(repo.parent, repo)
    write_contract_config(repo, ray_config("127.0.0.1:1", remote))
    runner = RayRunner(repo, load_config(repo))
    with pytest.raises(LanesError, match=r"no Ray cluster answers at '127\.0\.0\.1:1'.*ray start --head"):
        await runner.start(LaunchRequest(prompt=LONG, slug="nowhere", raw=True))
    assert not runner.mirror.store.exists("nowhere-a1")
    assert runner.doctor()[0][:2] == ("cluster", False)


def make_world(repo: Path, cluster: LocalCluster, *, checkpoint_s: float = 300.0) -> tuple[RunnerWorld, Path]:
    remote = bare_remote(repo.parent, repo)
    write_contract_config(repo, ray_config(cluster.address, remote, checkpoint_s=checkpoint_s))
    work_root = str(repo.parent / "nodes")

    def make() -> RayRunner:
        return RayRunner(repo, load_config(repo), work_root=work_root, placement_timeout_s=15.0)

    return RunnerWorld(repo=repo, make=make, patience_s=45.0), remote


async def test_ray_runner_keeps_the_lifecycle_contract(repo: Path, cluster: LocalCluster) -> None:
    world, remote = make_world(repo, cluster)
    await contract_lifecycle(world)
    assert not [ref for ref in remote_refs(remote) if "contract" in ref], "discard dropped the lane's refs"


async def test_ray_runner_refuses_ids_that_are_not_lanes(repo: Path, cluster: LocalCluster) -> None:
    world, _ = make_world(repo, cluster)
    await contract_refuses_ids_that_are_not_lanes(world)


async def test_a_remote_nobody_can_reach_is_one_clear_error(repo: Path, cluster: LocalCluster) -> None:
    write_contract_config(repo, ray_config(cluster.address, repo.parent / "no-such-remote.git"))
    runner = RayRunner(repo, load_config(repo))
    with pytest.raises(LanesError, match=r"shared remote .*no-such-remote\.git.* failed.*\[runner\] remote"):
        await runner.start(LaunchRequest(prompt=LONG, slug="homeless", raw=True))
    assert not runner.mirror.store.exists("homeless-a1"), "nothing is left of a refused start"


async def test_a_lane_no_node_can_take_is_refused_and_leaves_nothing(repo: Path, cluster: LocalCluster) -> None:
    """`labels` no node carries: the actor is never placed; after `placement_timeout_s` the start is
    refused, and neither a record, an actor nor the base pushed to the remote is left."""
    remote = bare_remote(repo.parent, repo)
    write_contract_config(repo, ray_config(cluster.address, remote) + 'labels = { pool = "nowhere" }\n')
    runner = RayRunner(repo, load_config(repo), placement_timeout_s=3.0)
    with pytest.raises(LanesError, match=r"no node took lane picky-a1 within 3s.*labels"):
        await runner.start(LaunchRequest(prompt=LONG, slug="picky", raw=True))
    assert not runner.mirror.store.exists("picky-a1") and not remote_refs(remote).keys() - {"refs/heads/main"}
    with pytest.raises(ValueError):
        ray.get_actor(actor_name(runner.key, "picky-a1"), namespace=NAMESPACE)


def test_doctor_checks_the_cluster_versions_slots_and_the_remote(repo: Path, cluster: LocalCluster) -> None:
    _, remote = make_world(repo, cluster)
    checks = {name: (ok, detail) for name, ok, detail in RayRunner(repo, load_config(repo)).doctor()}
    assert list(checks) == ["cluster", "ray and python versions", "lanes-tui version", "lane slots",
                            "remote from a node"]
    assert all(ok for ok, _ in checks.values()), checks
    assert "3 node(s)" in checks["cluster"][1] and "(2)" in checks["lane slots"][1]
    assert str(remote) in checks["remote from a node"][1]


async def test_two_lanes_go_to_two_nodes_and_a_third_is_refused(repo: Path, cluster: LocalCluster) -> None:
    """With one free slot on each worker, two lanes land on different nodes; a third is refused at
    once with the reason (the runner refuses rather than queues: see `ray_runner`)."""
    world, _ = make_world(repo, cluster)

    @ray.remote(num_cpus=0, resources={"lane_slot": 1})
    class Blocker:
        def ready(self) -> bool:
            return True

    blockers = [Blocker.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False)).remote()
                for node in cluster.workers]
    runner = world.make()
    lanes: list[str] = []
    try:
        ray.get([b.ready.remote() for b in blockers], timeout=60)
        wait_free_slots(2)
        for slug in ("left", "right"):
            lanes.append((await runner.start(LaunchRequest(prompt=LONG, slug=slug, raw=True))).id)
        nodes = {runner.mirror.runner_info(lane)["node_id"] for lane in lanes}
        assert len(nodes) == 2, f"both lanes on one node: {nodes}"
        wait_free_slots(0)
        with pytest.raises(LanesError, match="lane slot"):
            await runner.start(LaunchRequest(prompt=LONG, slug="third", raw=True))
        assert not runner.mirror.store.exists("third-a1"), "a refused start leaves no record"
    finally:
        for lane in lanes:
            await runner.discard(lane)
        for blocker in blockers:
            ray.kill(blocker)


async def test_dashboard_restart_reattaches_and_replays_without_gap(repo: Path, cluster: LocalCluster) -> None:
    """A new runner on a new driver connection (it connects by itself, from `[runner] address`) finds
    the live actor by name; the mirror goes on from its own size, so the lead's copy of the output is
    byte for byte the node's. Then the lane's branch comes home: stop, `fetch_branch`."""
    world, _ = make_world(repo, cluster)
    runner = world.make()
    script = "print 300 --rate 30 --text tick\nwrite result.txt printed\nsay done printing\necho-input 60"
    lane = (await runner.start(LaunchRequest(prompt=script, slug="replay", raw=True))).id
    fresh = world.make()
    try:
        async def some_output() -> bool:
            await runner.sync()
            return b"line 40:" in runner.mirror.paths.lane(lane).output.read_bytes()

        await until("some output in the mirror", some_output, 45)
        seen_before = runner.mirror.seq(lane)
        cluster.disconnect()  # the dashboard goes away; the next one connects on its own
        assert await fresh.attach(lane) is True
        assert ray.is_initialized() and fresh.mirror.seq(lane) >= seen_before

        async def all_printed() -> bool:
            await fresh.sync()
            return b"done printing" in fresh.mirror.paths.lane(lane).output.read_bytes()

        await until("the rest of the output", all_printed, 60)
        mirrored = fresh.mirror.paths.lane(lane).output.read_bytes()
        clone = Path(fresh.mirror.runner_info(lane)["clone"])
        on_node = (clone / ".lanes" / "state" / "lanes" / lane / "output.log").read_bytes()
        assert on_node.startswith(mirrored) and len(mirrored) > seen_before
        numbers = [int(line.split(b":")[0].split()[-1]) for line in mirrored.splitlines()
                   if line.startswith(b"line ")]
        assert numbers == list(range(1, 301)), "no line twice, none missing"

        await fresh.stop(lane)
        commit = await fresh.fetch_branch(lane)
        assert subprocess.run(["git", "rev-parse", f"lane/{lane}"], cwd=repo, capture_output=True,
                              text=True).stdout.strip() == commit
        shown = subprocess.run(["git", "show", f"{commit}:result.txt"], cwd=repo, capture_output=True, text=True)
        assert shown.stdout.strip() == "printed"
    finally:
        if ray.is_initialized():
            await fresh.discard(lane)
        await fresh.close()
        cluster.connect()
        if runner.mirror.store.exists(lane):
            await world.make().discard(lane)


async def test_node_loss_unreachable_lost_then_relaunched_elsewhere(repo: Path, cluster: LocalCluster) -> None:
    """Kill the node under a lane: unreachable within seconds, lost (node named) within 30 s, then the
    next attempt on the other node from the pushed checkpoint, with nothing of the lost lane left."""
    world, remote = make_world(repo, cluster, checkpoint_s=0.5)
    runner = world.make()
    script = "write progress.txt work before the node died\nsay wrote it\necho-input 90"
    lane = (await runner.start(LaunchRequest(prompt=script, slug="survivor", raw=True))).id
    relaunched: str | None = None
    try:
        wip = f"refs/lanes-wip/{lane}"

        async def checkpointed() -> bool:
            return wip in remote_refs(remote)

        await until("a pushed checkpoint", checkpointed, 45)
        checkpoint = remote_refs(remote)[wip]
        lost_node = runner.mirror.runner_info(lane)["node_id"]
        label = runner.mirror.read(lane).node
        assert label and lost_node in label
        timeline: list[tuple[float, str]] = []
        t0 = time.monotonic()
        cluster.remove(cluster.worker(lost_node), graceful=False)
        timeline.append((0.0, "node removed (allow_graceful=False)"))
        state = "running"
        while state != "lost":
            await runner.sync()
            record = runner.mirror.read(lane)
            if record.state != state:
                state = record.state
                timeline.append((time.monotonic() - t0, f"{state}: {record.state_reason}"))
            assert time.monotonic() - t0 < 30, f"not lost within 30 s: {timeline}"
            await asyncio.sleep(0.1)
        new = await runner.relaunch(lane)
        relaunched = new.id
        timeline.append((time.monotonic() - t0, f"relaunched as {new.id} on {new.node}"))

        async def nothing_left() -> bool:
            return not lane_processes(lane)

        with contextlib.suppress(AssertionError):
            await until(f"no process of {lane} on the surviving nodes", nothing_left, 10)
        left = lane_processes(lane)
        timeline.append((time.monotonic() - t0, f"processes of {lane} left on this machine: {len(left)}"))
        print("\nnode-loss timeline (s since the node was removed):")
        for at, what in timeline:
            print(f"  {at:6.2f}  {what}")
        assert not left, f"left behind by the lost lane: {left}"
        states = [what.split(":")[0] for _, what in timeline]
        assert "unreachable" in states, timeline
        unreachable_at = next(at for at, what in timeline if what.startswith("unreachable"))
        assert unreachable_at < 10, timeline
        assert label in runner.mirror.read(lane).state_reason, "the lost lane names its node"
        assert new.id == "survivor-a2" and new.resume_from == lane
        assert lost_node not in (new.node or "") and new.node, new.node
        worktree = Path(new.worktree)  # on the surviving node, which is this machine too
        assert (worktree / "progress.txt").read_text().strip() == "work before the node died"
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=worktree, capture_output=True, text=True).stdout
        assert head.strip() == checkpoint, "the next attempt starts from the pushed checkpoint"
        assert runner.mirror.read(lane).superseded_by == new.id
        assert new.state in LIVE_STATES
    finally:
        if relaunched is not None:
            await runner.discard(relaunched)
        await runner.discard(lane)


async def test_a_question_asked_on_a_node_is_answered_from_the_leads_inbox(repo: Path, cluster: LocalCluster) -> None:
    """The lane asks on its node (`lanes-tui ask`, there); `sync` brings the question to the lead's
    Inbox, the lead answers it there as for any lane, the next `sync` takes the answer to the node,
    the agent goes on with it, and the node's `delivered` mark comes back."""
    world, _ = make_world(repo, cluster)
    runner = world.make()
    script = "ask --yes-no Ship the cache?\nif yes say the lead said yes\necho-input 60"
    lane = (await runner.start(LaunchRequest(prompt=script, slug="asker", raw=True))).id
    inbox = InboxStore(StatePaths(repo).inbox)
    try:
        async def asked() -> list[QuestionView]:
            await runner.sync()
            return [view for view in inbox.list(lane) if view.state == "open"]

        views = await until("the node's question in the lead's inbox", asked, 45)
        assert isinstance(views, list) and views[0].question.title == "Ship the cache?"
        qid = views[0].question.id
        inbox.answer(qid, "y")

        async def heard() -> bool:
            await runner.sync()
            return b"the lead said yes" in runner.mirror.paths.lane(lane).output.read_bytes()

        await until("the answer on the node, and the agent going on with it", heard, 45)

        async def delivered() -> bool:
            await runner.sync()
            return inbox.get(qid).state == "delivered"

        await until("the node's delivered mark in the lead's inbox", delivered, 30)
    finally:
        await runner.discard(lane)
