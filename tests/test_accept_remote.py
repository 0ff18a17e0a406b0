"""Accept of a lane that ran on a cluster node: a real fetch from a real bare remote, then a fast-forward.

The node's side is played by a clone of the shared bare remote that commits the lane's work and
pushes `lane/<id>`, as a node publishes it; the lead's side is the real accept (`Accept.run`, and
`lanes-tui accept`): the plan from the mirrored packet, the runner's `fetch_branch` (a real `git
fetch` in the stand-in runner), the checks against git, one fast-forward, the journal, the discard.
A target that moved since the lane's base is refused before anything is fetched.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lanes_tui.app.cli.main import main
from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.core.atomic import write_json_atomic
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.accept import Accept
from lanes_tui.engine.decisions.accept_plan import plan_accept
from lanes_tui.engine.decisions.packet import read_packet, write_packet
from lanes_tui.engine.decisions.reconcile import reconcile
from lanes_tui.engine.decisions.runners import shared_runner
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from tests.conftest import git
from tests.fake_remote import FakeRemote, fake_ray, make_record, ray_config

__all__ = ["fake_ray"]  # the fixture, re-exported for pytest


def node_pushes_lane(repo: Path, remote: Path, lane_id: str, files: dict[str, str]) -> str:
    """What a node does: clone the shared remote at the lane's base, commit the work, push `lane/<id>`."""
    node = repo.parent / f"node-{lane_id}"
    git(repo.parent, "clone", "-q", "-b", "programme", str(remote), str(node))
    git(node, "switch", "-q", "-c", f"lane/{lane_id}")
    for name, text in files.items():
        (node / name).write_text(text)
    git(node, "add", "-A")
    git(node, "commit", "-q", "-m", f"work of {lane_id}")
    git(node, "push", "-q", "origin", f"lane/{lane_id}")
    return git(node, "rev-parse", "HEAD")


def ready_remote_lane(repo: Path, lane_id: str = "feat-a1", files: dict[str, str] | None = None,
                      packet_files: list[str] | None = None) -> tuple[Path, str]:
    """A Ray config, the base on the shared remote, the lane pushed by its node, its mirror `ready`.
    The lead works on a programme branch (main is protected by default)."""
    remote = ray_config(repo)
    git(repo, "checkout", "-q", "-b", "programme")
    git(repo, "push", "-q", str(remote), "programme")
    files = files or {"feature.py": "def feature():\n    return 1\n"}
    commit = node_pushes_lane(repo, remote, lane_id, files)
    make_record(repo, lane_id, state="ready", target="programme")
    write_packet(StatePaths(repo).lane(lane_id), {
        "lane": lane_id, "gates_status": "passed", "changed_files": packet_files or sorted(files),
        "gates": [{"command": "pytest -q", "status": "passed", "exit_code": 0, "duration_s": 1.0}],
        "review": "MISSING"})
    return remote, commit


def _runner(repo: Path) -> FakeRemote:
    runner = shared_runner(repo, load_config(repo))
    assert isinstance(runner, FakeRemote)
    return runner


async def test_accept_fetches_the_lane_and_fast_forwards_the_target(repo: Path, fake_ray: type[FakeRemote]) -> None:
    _, commit = ready_remote_lane(repo)
    base = git(repo, "rev-parse", "programme")
    plan = plan_accept(repo, load_config(repo), "feat-a1")
    assert plan.ok, plan.refusals
    assert plan.files == ["feature.py"] and plan.gates_status == "passed" and not plan.needs_rebase
    outcome = await Accept(repo, load_config(repo), "feat-a1").run(message=None, override=None)
    assert (outcome.state, outcome.merged_sha) == ("accepted", commit), outcome.message
    assert git(repo, "rev-parse", "programme") == commit and git(repo, "rev-parse", f"{commit}~1") == base
    assert (repo / "feature.py").read_text() == "def feature():\n    return 1\n"  # the lead's checkout moved too
    assert _runner(repo).calls == [("fetch_branch", "feat-a1"), ("discard", "feat-a1")]
    store = LaneStore(StatePaths(repo))
    assert store.read("feat-a1").state == "accepted"
    lane = StatePaths(repo).lane("feat-a1")
    assert (read_packet(lane) or {})["accepted_sha"] == commit
    assert not lane.accept_journal.exists()
    steps = [json.loads(line).get("step") for line in lane.events.read_text().splitlines()
             if json.loads(line).get("type") == "accept-step"]
    assert steps == ["fetch", "merge", "cleanup"]  # journalled like a local accept
    # The fetched lane branch is merged: dropped (git confirmed it named the merged commit).
    assert git(repo, "branch", "--list", "lane/feat-a1") == ""


def test_the_command_line_accepts_a_remote_lane(repo: Path, fake_ray: type[FakeRemote],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    _, commit = ready_remote_lane(repo)
    assert main(["--repo", str(repo), "accept", "feat-a1"]) == 0
    assert f"accepted feat-a1 into programme at {commit[:10]}" in capsys.readouterr().out
    assert git(repo, "rev-parse", "programme") == commit


async def test_a_target_that_moved_is_refused_before_anything_is_fetched(repo: Path,
                                                                         fake_ray: type[FakeRemote]) -> None:
    ready_remote_lane(repo)
    (repo / "other.py").write_text("x = 1\n")
    git(repo, "add", "other.py")
    git(repo, "commit", "-q", "-m", "the lead moved on")
    moved = git(repo, "rev-parse", "programme")
    with pytest.raises(LanesError, match="target moved") as refused:
        await Accept(repo, load_config(repo), "feat-a1").run(message=None, override=None)
    assert "relaunch the lane" in str(refused.value)
    assert git(repo, "rev-parse", "programme") == moved
    assert _runner(repo).calls == []
    assert LaneStore(StatePaths(repo)).read("feat-a1").state == "ready"
    assert not StatePaths(repo).lane("feat-a1").accept_journal.exists()


async def test_a_published_branch_that_is_not_what_was_checked_is_refused(repo: Path,
                                                                          fake_ray: type[FakeRemote]) -> None:
    # The node pushed a file its gates never saw: nothing is merged, the lane stays ready, the journal goes.
    ready_remote_lane(repo, files={"feature.py": "ok\n", "sneaky.py": "import os\n"}, packet_files=["feature.py"])
    base = git(repo, "rev-parse", "programme")
    with pytest.raises(LanesError, match=r"does not hold what its gates checked.*sneaky\.py"):
        await Accept(repo, load_config(repo), "feat-a1").run(message=None, override=None)
    assert git(repo, "rev-parse", "programme") == base
    assert LaneStore(StatePaths(repo)).read("feat-a1").state == "ready"
    assert not StatePaths(repo).lane("feat-a1").accept_journal.exists()
    assert ("discard", "feat-a1") not in _runner(repo).calls


def test_a_lane_that_is_not_ready_is_refused_like_a_local_one(repo: Path, fake_ray: type[FakeRemote]) -> None:
    ray_config(repo)
    git(repo, "checkout", "-q", "-b", "programme")
    make_record(repo, "busy-a1", state="running", target="programme")
    plan = plan_accept(repo, load_config(repo), "busy-a1")
    assert plan.refusals == ["the lane is still running; wait for it to finish"]
    make_record(repo, "far-a1", state="unreachable", target="programme")
    make_record(repo, "main-a1", state="ready", target="main")
    assert any("is protected" in r for r in plan_accept(repo, load_config(repo), "main-a1").refusals)
    plan = plan_accept(repo, load_config(repo), "far-a1")
    assert plan.refusals and "unreachable" in plan.refusals[0]


def test_an_interrupted_remote_accept_is_finished_or_rolled_back(repo: Path, fake_ray: type[FakeRemote]) -> None:
    _, commit = ready_remote_lane(repo)
    base = git(repo, "rev-parse", "programme")
    lane = StatePaths(repo).lane("feat-a1")
    # Killed after the fetch, before the merge: rolled back, the target untouched.
    git(repo, "fetch", "-q", str(repo.parent / "shared.git"), "+refs/heads/lane/feat-a1:refs/heads/lane/feat-a1")
    journal = {"lane": "feat-a1", "target": "programme", "target_sha": base, "state_before": "ready", "t": 0.0}
    write_json_atomic(lane.accept_journal, {**journal, "step": "fetch"})
    reconcile(repo)
    assert not lane.accept_journal.exists() and git(repo, "rev-parse", "programme") == base
    assert LaneStore(StatePaths(repo)).read("feat-a1").state == "ready"
    # Killed after the fast-forward: finished from git alone (no worktree here to look at).
    git(repo, "merge", "-q", "--ff-only", commit)
    write_json_atomic(lane.accept_journal, {**journal, "step": "merge", "lane_head": commit})
    reconcile(repo)
    assert not lane.accept_journal.exists()
    record = LaneStore(StatePaths(repo)).read("feat-a1")
    assert record.state == "accepted" and (read_packet(lane) or {})["accepted_sha"] == commit
