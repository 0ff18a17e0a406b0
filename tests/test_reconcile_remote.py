"""Lanes on cluster nodes in the lead's decisions and dashboard: reconcile, recover, abandon, the Lanes row.

A Ray lane has no supervisor on the lead's machine by design, so the local reconcile never judges it
(`lost` is its runner's word); a lost one is recovered by its runner (`relaunch` on another node,
`recheck` on the node), an `unreachable` one is not; abandon discards it through the runner and keeps
its record; the dashboard's row names its node and shows `unreachable` in the warning tone. The
runner is the in-process stand-in of `tests.fake_remote`: real records, no cluster.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from textual.color import Color

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.abandon import abandon_lane, plan_abandon
from lanes_tui.engine.decisions.reconcile import reconcile
from lanes_tui.engine.decisions.recover import recheck, relaunch
from lanes_tui.engine.decisions.runners import shared_runner
from lanes_tui.engine.live.queries import NEEDS_LEAD_STATES, lane_statuses, lanes_needing_lead
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.status import LaneStatus
from lanes_tui.engine.state.store import LaneStore
from lanes_tui.widgets import LanesTable
from tests.fake_remote import NODE, NODE_2, FakeRemote, fake_ray, make_record, ray_config
from tests.snapshot_apps.widget_apps import NOW, WidgetHost, lane

__all__ = ["fake_ray"]  # the fixture, re-exported for pytest


def _local_record(repo: Path, lane_id: str) -> None:
    """A local lane in `running` whose supervisor never existed: what a crash leaves behind."""
    record = LaneRecord(id=lane_id, slug=lane_id.rsplit("-a", 1)[0], attempt=1, task_type="backend", prompt="p",
                        chain=["sim"], repo=str(repo), worktree=str(repo.parent / "worktrees" / lane_id),
                        branch=f"lane/{lane_id}", base_sha="0" * 40, target_branch="main", state="running",
                        state_reason="running")
    StatePaths(repo).ensure()
    LaneStore(StatePaths(repo)).create(record)


def _runner(repo: Path) -> FakeRemote:
    runner = shared_runner(repo, load_config(repo))
    assert isinstance(runner, FakeRemote)
    return runner


def test_reconcile_never_turns_a_ray_lane_lost_but_still_a_local_one(repo: Path, fake_ray: type[FakeRemote]) -> None:
    ray_config(repo)
    make_record(repo, "cloud-a1")
    make_record(repo, "limbo-a1", state="unreachable")
    _local_record(repo, "here-a1")
    changes = reconcile(repo)
    assert [(c.lane_id, c.after) for c in changes] == [("here-a1", "lost")]
    store = LaneStore(StatePaths(repo))
    assert store.read("cloud-a1").state == "running"
    assert store.read("limbo-a1").state == "unreachable"
    assert store.read("here-a1").state == "lost"
    # The queries agree, and an unreachable lane does not wake `wait --any` (it is limbo, not the lead's).
    states = {s.id: s.state for s in lane_statuses(repo)}
    assert states == {"cloud-a1": "running", "limbo-a1": "unreachable", "here-a1": "lost"}
    assert [r.id for r in lanes_needing_lead(repo, set(NEEDS_LEAD_STATES))] == ["here-a1"]


async def test_relaunch_of_a_lost_ray_lane_goes_to_its_runner(repo: Path, fake_ray: type[FakeRemote]) -> None:
    ray_config(repo)
    make_record(repo, "gone-a1", state="lost")
    new = await relaunch(repo, load_config(repo), "gone-a1")
    assert (new.id, new.node, new.runner) == ("gone-a2", NODE_2, "ray")
    assert ("relaunch", "gone-a1") in _runner(repo).calls
    old = LaneStore(StatePaths(repo)).read("gone-a1")
    assert old.superseded_by == "gone-a2"


async def test_an_unreachable_lane_is_not_recovered(repo: Path, fake_ray: type[FakeRemote]) -> None:
    ray_config(repo)
    make_record(repo, "quiet-a1", state="unreachable")
    with pytest.raises(LanesError, match="unreachable") as refused:
        await relaunch(repo, load_config(repo), "quiet-a1")
    assert refused.value.fix and "lost" in refused.value.fix
    assert _runner(repo).calls == []


async def test_recheck_of_a_ray_lane_runs_its_gates_on_the_node(repo: Path, fake_ray: type[FakeRemote]) -> None:
    ray_config(repo)
    make_record(repo, "retry-a1", state="lost")
    packet = await recheck(repo, load_config(repo), "retry-a1")
    assert packet.gates_status == "passed"
    assert ("run_gates", "retry-a1") in _runner(repo).calls
    assert LaneStore(StatePaths(repo)).read("retry-a1").state == "ready"  # synced from the node


async def test_a_ray_lane_needs_a_ray_config_to_be_acted_on(repo: Path, fake_ray: type[FakeRemote]) -> None:
    ray_config(repo)
    make_record(repo, "orphan-a1", state="lost")
    from tests.helpers import write_config

    write_config(repo)  # the lead went back to the local runner
    with pytest.raises(LanesError, match="runs on a ray runner") as refused:
        await relaunch(repo, load_config(repo), "orphan-a1")
    assert refused.value.fix and 'kind = "ray"' in refused.value.fix


async def test_abandon_discards_through_the_runner_and_keeps_the_record(repo: Path,
                                                                        fake_ray: type[FakeRemote]) -> None:
    ray_config(repo)
    make_record(repo, "drop-a1", state="exited")
    config = load_config(repo)
    plan = plan_abandon(repo, config, "drop-a1")
    assert plan.refusals == [] and str(plan.worktree).startswith(NODE)
    runner = _runner(repo)
    real_discard = runner.discard

    async def discard_and_drop_the_mirror(lane_id: str) -> list[str]:
        shutil.rmtree(StatePaths(repo).lane(lane_id).dir)  # a runner that removes its mirror folder too
        return await real_discard(lane_id)

    runner.discard = discard_and_drop_the_mirror  # type: ignore[method-assign]
    removed = await abandon_lane(repo, config, "drop-a1")
    assert "actor of drop-a1" in removed
    record = LaneStore(StatePaths(repo)).read("drop-a1")
    assert (record.state, record.result, record.node) == ("abandoned", "LANE-FAILED", NODE)
    with pytest.raises(LanesError, match="already abandoned"):
        await abandon_lane(repo, config, "drop-a1")


# --- the dashboard's row ------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _WithNode(LaneStatus):
    """A status carrying the runner fields, for an engine whose `LaneStatus` does not have them yet."""

    runner: str = "local"
    node: str | None = None


def _remote_status(lane_id: str, state: str, reason: str) -> LaneStatus:
    base = lane(lane_id, state, state_reason=reason)
    if "node" in {f.name for f in dataclasses.fields(LaneStatus)}:
        return dataclasses.replace(base, runner="ray", node=NODE)  # type: ignore[call-arg]
    values = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    return _WithNode(**values, runner="ray", node=NODE)


async def test_an_unreachable_lane_shows_its_node_in_the_warning_tone() -> None:
    lanes = [lane("here-a1", "running"), _remote_status("far-a1", "unreachable", "its node does not answer")]
    table = LanesTable()
    app = WidgetHost(table, lambda t: t.sync(lanes, NOW))
    async with app.run_test(size=(160, 36)) as pilot:
        await pilot.pause()
        cell = table.get_cell("far-a1", "why")
        assert cell.plain == "@node-b: its node does not answer"
        assert table.get_cell("here-a1", "why").plain == "running for a test"  # a local lane: no node
        warning = Color.parse(app.theme_variables["warning"]).rich_color
        assert table.get_cell("far-a1", "state").plain == "unreachable"
        assert table.get_cell("far-a1", "state").spans[0].style.color == warning
        table.focus()
        await pilot.press("down")
        await pilot.pause()
        assert str(table.tooltip) == f"unreachable: its node does not answer; on node {NODE}"


def test_a_ray_lane_is_settled_once_its_runner_let_its_actor_go(repo: Path, fake_ray: type[FakeRemote]) -> None:
    """`exited` on its way to a packet: `wait` goes on while the runner still polls the lane's actor."""
    from lanes_tui.engine.live.queries import lane_settled
    from lanes_tui.engine.remote.mirror import LaneMirror

    ray_config(repo)
    record = make_record(repo, "moving-a1", state="exited")
    mirror = LaneMirror(repo)
    mirror.set_runner_info("moving-a1", actor="live", node_id="3f9a0c")
    assert not lane_settled(repo, record)
    mirror.set_runner_info("moving-a1", actor="retired")
    assert lane_settled(repo, record)
