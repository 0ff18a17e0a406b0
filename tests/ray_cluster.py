"""A real local Ray cluster for the Ray runner's tests: a head and two worker nodes, and a shared remote.

`local_mode` is gone from Ray, so the runner's tests need real nodes: `ray.cluster_utils.Cluster`
starts each as its own raylet on this machine. The head takes no lanes (no `lane_slot`); each
worker offers `{"lane_slot": 2}`, as `ray start --resources` would. Token auth (on by default since
Ray 2.60) is off for the cluster and the driver (`RAY_AUTH_MODE=disabled`).

The leak check of `tests/conftest.py` goes by `LANESTEST_MARKER` in a process's environment, and a
node's processes inherit the environment of whoever started them: the cluster is therefore started
without any test's marker (it outlives each test on purpose), while every lane's actor gets the
running test's marker from the runner (`ray_actors.ACTOR_ENV`), so a lane process left behind on a
node still fails the test that left it. `local_cluster` tears every node down explicitly.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import ray
from ray.cluster_utils import Cluster

from lanes_tui.engine.remote.spec import NAMESPACE
from tests.conftest import MARKER

#: What a worker node offers: two lanes at once.
WORKER_RESOURCES = {"lane_slot": 2}


@dataclass
class LocalCluster:
    cluster: Any
    workers: list[Any] = field(default_factory=list)

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    def worker(self, node_id: str) -> Any:
        """The worker node (a `ray._private.node.Node`) with Ray node id `node_id`."""
        for node in self.workers:
            if node.node_id == node_id:
                return node
        raise AssertionError(f"no worker node {node_id} (workers: {[n.node_id for n in self.workers]})")

    def add_worker(self) -> Any:
        with _no_marker():
            node = self.cluster.add_node(num_cpus=1, resources=dict(WORKER_RESOURCES))
        self.workers.append(node)
        return node

    def remove(self, node: Any, *, graceful: bool) -> None:
        self.cluster.remove_node(node, allow_graceful=graceful)
        self.workers.remove(node)

    def connect(self) -> None:
        """The test process as the driver (what a dashboard's `ray.init` is)."""
        if not ray.is_initialized():
            ray.init(address=self.address, namespace=NAMESPACE, log_to_driver=False)

    @staticmethod
    def disconnect() -> None:
        if ray.is_initialized():
            ray.shutdown()


@contextlib.contextmanager
def _no_marker() -> Iterator[None]:
    """Start nodes without the current test's leak marker: they belong to the whole module."""
    saved = os.environ.pop(MARKER, None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ[MARKER] = saved


@contextlib.contextmanager
def local_cluster(workers: int = 2) -> Iterator[LocalCluster]:
    """A head (no lane slots) and `workers` workers (`lane_slot` 2 each), this process connected as
    the driver; everything stopped on the way out, however the tests ended."""
    with pytest_env(RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0"), _no_marker():
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
        world = LocalCluster(cluster)
        try:
            for _ in range(workers):
                world.add_worker()
            cluster.wait_for_nodes()
            world.connect()
            yield world
        finally:
            world.disconnect()
            cluster.shutdown()


@contextlib.contextmanager
def pytest_env(**values: str) -> Iterator[None]:
    """Set environment variables for a block (the module's cluster lives longer than one test)."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def bare_remote(parent: Path, repo: Path) -> Path:
    """A bare repository as the shared remote, holding the lead's `main`."""
    remote = parent / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    subprocess.run(["git", "push", "-q", str(remote), "main"], cwd=repo, check=True)
    return remote


def ray_config(address: str, remote: Path, *, checkpoint_s: float = 300.0) -> str:
    return (f'[runner]\nkind = "ray"\naddress = "{address}"\nremote = "{remote}"\n'
            f"checkpoint_s = {checkpoint_s}\n")


def remote_refs(remote: Path) -> dict[str, str]:
    out = subprocess.run(["git", "ls-remote", str(remote)], capture_output=True, text=True, check=True).stdout
    return {ref: sha for sha, ref in (line.split("\t", 1) for line in out.splitlines() if "\t" in line)}


def lane_processes(lane_id: str) -> list[str]:
    """Processes of a lane anywhere on this machine (every node of a local cluster is on it)."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            env = proc.environ()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        if env.get("LANES_LANE") == lane_id or lane_id in " ".join(proc.info["cmdline"] or []):
            with contextlib.suppress(psutil.Error):
                if proc.status() != psutil.STATUS_ZOMBIE:
                    found.append(f"{proc.pid} {' '.join(proc.info['cmdline'] or [])[:100]}")
    return found


def wait_free_slots(count: float, timeout: float = 20.0) -> None:
    """Until the cluster's view shows `count` free lane slots (it lags a placement by a moment)."""
    end = time.monotonic() + timeout
    while ray.available_resources().get("lane_slot", 0) != count:
        if time.monotonic() > end:
            raise AssertionError(f"lane slots free: {ray.available_resources().get('lane_slot', 0)}, not {count}")
        time.sleep(0.1)
