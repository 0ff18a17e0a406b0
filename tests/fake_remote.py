"""An in-process stand-in for the Ray runner: the RayRunner API over hand-made mirror records.

Registered where `make_runner` looks first (`RUNNER_FACTORIES["ray"]`), it lets the engine, the
command line and the decisions be driven on a `[runner] kind = "ray"` config without a cluster.
What it stands in for is only the cluster: the records are real `lane.json` files written through
`LaneStore` (as the mirror writes them, `runner = "ray"`, the node named), `fetch_branch` is a real
`git fetch` of `refs/heads/lane/<id>` from the real bare remote of `[runner] remote`, into which a
test pushes the lane's branch as a node would (`push_lane_branch`).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.packet import write_packet
from lanes_tui.engine.decisions.runners import RUNNER_FACTORIES, forget_runners
from lanes_tui.engine.lanes.launcher import LaunchRequest
from lanes_tui.engine.lanes.runner import Published
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from tests.conftest import git
from tests.helpers import write_config

NODE = "node-b (3f9a0c)"
NODE_2 = "node-c (77d1e2)"


class FakeRemote:
    """One object per process and repository (as `shared_runner` keeps the real one); `calls` says what
    was asked of it, `pending` holds the states the next `sync` brings from the "nodes"."""

    kind = "ray"
    instances: list[FakeRemote] = []

    def __init__(self, repo: Path, config: Config) -> None:
        self.repo = repo
        self.config = config
        self.store = LaneStore(StatePaths(repo))
        self.calls: list[tuple[str, str]] = []
        self.pending: dict[str, tuple[str, str]] = {}
        self.syncs = 0
        self.sent: list[tuple[str, str]] = []
        self.closed = False
        FakeRemote.instances.append(self)

    # the Runner protocol --------------------------------------------------------------------------
    async def start(self, request: LaunchRequest) -> LaneRecord:
        self.calls.append(("start", request.slug or ""))
        return make_record(self.repo, f"{request.slug or 'task'}-a{request.attempt or 1}", prompt=request.prompt)

    async def attach(self, lane_id: str) -> bool:
        return self.store.read(lane_id).state in ("queued", "launching", "running", "waiting")

    async def status(self, lane_id: str) -> LaneRecord:
        return self.store.read(lane_id)

    async def output(self, lane_id: str, from_seq: int, max_bytes: int) -> tuple[bytes, int]:
        from lanes_tui.engine.lanes.runner import read_output

        return read_output(self.store.lane_paths(lane_id).output, from_seq, max_bytes)

    async def send(self, lane_id: str, text: str) -> dict[str, Any]:
        self.calls.append(("send", lane_id))
        self.sent.append((lane_id, text))
        return {"ack": True, "via": "ray"}

    async def watch(self, lane_id: str, seconds: float) -> float:
        self.calls.append(("watch", lane_id))
        return seconds

    async def sample(self, lane_id: str) -> dict[str, Any] | None:
        return self.store.last_sample(lane_id)

    async def run_gates(self, lane_id: str) -> dict[str, object]:
        self.calls.append(("run_gates", lane_id))
        packet: dict[str, object] = {"lane": lane_id, "gates_status": "passed", "gates": [], "changed_files": []}
        write_packet(self.store.lane_paths(lane_id), packet)
        self.pending[lane_id] = ("ready", "gates passed on " + NODE)
        return packet

    async def publish(self, lane_id: str) -> Published:
        return Published(ref=f"refs/heads/lane/{lane_id}", commit="", where=self.config.runner.remote)

    async def stop(self, lane_id: str) -> list[int]:
        self.calls.append(("stop", lane_id))
        self.pending[lane_id] = ("exited", "stopped by the lead")
        return []

    async def discard(self, lane_id: str) -> list[str]:
        self.calls.append(("discard", lane_id))
        return [f"actor of {lane_id}"]

    # the RemoteRunner extras ------------------------------------------------------------------------
    async def sync(self) -> list[str]:
        self.syncs += 1
        changed = []
        for lane_id, (state, reason) in list(self.pending.items()):
            record = self.store.read(lane_id)
            if record.state != state:
                self.store.transition(record, state, reason, runner="ray", node=record.node)
                changed.append(lane_id)
            del self.pending[lane_id]
        return changed

    async def relaunch(self, lane_id: str) -> LaneRecord:
        self.calls.append(("relaunch", lane_id))
        old = self.store.read(lane_id)
        return make_record(self.repo, f"{old.slug}-a{old.attempt + 1}", node=NODE_2, base_sha=old.base_sha)

    async def fetch_branch(self, lane_id: str) -> str:
        """A real fetch of the lane's branch from the shared remote, as the lead does after a node pushed."""
        self.calls.append(("fetch_branch", lane_id))
        ref = f"refs/heads/lane/{lane_id}"
        done = subprocess.run(["git", "fetch", "-q", self.config.runner.remote, f"+{ref}:{ref}"], cwd=self.repo,
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise LanesError(f"cannot fetch {ref}: {done.stderr.strip()}", "push it from the node first")
        return git(self.repo, "rev-parse", ref)

    def doctor(self) -> list[tuple[str, bool, str]]:
        return [("cluster", True, "fake")]

    async def close(self) -> None:
        self.closed = True


def make_record(repo: Path, lane_id: str, *, state: str = "running", node: str = NODE, prompt: str = "task",
                base_sha: str | None = None, target: str = "main") -> LaneRecord:
    """A Ray lane's mirror record, as the runner writes it: no pid, no local worktree, the node named."""
    slug, _, attempt = lane_id.rpartition("-a")
    record = LaneRecord(id=lane_id, slug=slug, attempt=int(attempt), task_type="backend", prompt=prompt,
                        chain=["sim"], repo=str(repo), worktree=f"/var/lanes-node/{lane_id}", branch=f"lane/{lane_id}",
                        base_sha=base_sha or git(repo, "rev-parse", target), target_branch=target, state=state,
                        state_reason=f"{state} on {node}", runner="ray", node=node)
    store = LaneStore(StatePaths(repo))
    StatePaths(repo).ensure()
    store.create(record)
    return store.read(lane_id)


def ray_config(repo: Path, extra: str = "") -> Path:
    """A `[runner] kind = "ray"` config over a real bare shared remote next to the repository."""
    remote = repo.parent / "shared.git"
    if not remote.exists():
        git(repo.parent, "init", "-q", "--bare", str(remote))
    write_config(repo, extra=f'[runner]\nkind = "ray"\nremote = "{remote}"\n{extra}')
    return remote


@pytest.fixture()
def fake_ray(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[FakeRemote]]:
    """Register the stand-in for `kind = "ray"`; every runner kept for the process is forgotten after."""
    import asyncio

    FakeRemote.instances = []
    monkeypatch.setitem(RUNNER_FACTORIES, "ray", FakeRemote)
    yield FakeRemote
    asyncio.run(forget_runners())
