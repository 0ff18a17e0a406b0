"""`doctor`'s checks of a Ray cluster, and the connection helpers the runner shares with them.

Split from `ray_runner` (it imports Ray too): what `lanes-tui doctor` asks a connected cluster —
the nodes alive, ray / python / lanes-tui versions on each, `lane_slot` resources, the shared remote
reachable from a node where lanes run — each as a (check, ok, detail) line.
"""

from __future__ import annotations

import socket

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from lanes_tui.engine.config.runner import RunnerSettings
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.remote.actor import ls_remote, node_facts, version_checks

__all__ = ["CLUSTER_FIX", "CONNECT_TIMEOUT_S", "check_reachable", "cluster_checks", "first_line"]

CLUSTER_FIX = ("start one (`ray start --head --resources '{\"lane_slot\": 2}'`, docs/ray.md) or set "
               "[runner] address in .lanes/config.toml")
#: How long the cluster's address may take to accept a connection before it counts as down.
CONNECT_TIMEOUT_S = 5.0


def cluster_checks(settings: RunnerSettings) -> list[tuple[str, bool, str]]:
    """(check, ok, detail) for a cluster this process is connected to (`RayRunner.doctor`)."""
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    checks: list[tuple[str, bool, str]] = [("cluster", True, f"{len(nodes)} node(s) alive at {settings.address}")]
    facts: list[dict[str, str]] = []
    failed: list[str] = []
    for node in nodes:
        try:
            pinned = NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
            facts.append(ray.get(_facts_task.options(scheduling_strategy=pinned).remote(), timeout=60))
        except Exception as exc:  # a node that cannot run a task is itself the finding
            failed.append(f"{node.get('NodeManagerHostname')}: {first_line(exc)}")
    checks += version_checks(node_facts(), facts, failed)
    slots = [(n.get("NodeManagerHostname", "?"), n.get("Resources", {}).get("lane_slot", 0)) for n in nodes]
    with_slots = [f"{host} ({count:g})" for host, count in slots if count >= 1]
    checks.append(("lane slots", bool(with_slots), ", ".join(with_slots) or
                   "no node has a lane_slot resource: `ray start --resources '{\"lane_slot\": 2}'`"))
    slot_nodes = [n["NodeID"] for n in nodes if n.get("Resources", {}).get("lane_slot", 0) >= 1]
    try:  # on a node lanes run on (it needs no free slot: a full cluster is still checked)
        strategy = NodeAffinitySchedulingStrategy(slot_nodes[0], soft=True) if slot_nodes else None
        ok, detail = ray.get(_ls_remote_task.options(scheduling_strategy=strategy).remote(settings.remote),
                             timeout=120)
    except Exception as exc:  # the task could not run, or did not answer
        ok, detail = False, first_line(exc)
    checks.append(("remote from a node", bool(ok), str(detail)))
    return checks


_facts_task = ray.remote(num_cpus=0)(node_facts)
_ls_remote_task = ray.remote(num_cpus=0)(ls_remote)


def check_reachable(address: str) -> None:
    """A `host:port` (or `ray://host:port`) nobody listens on is refused in seconds, not minutes."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():  # `auto`, `local`: Ray finds (or fails to find) it at once
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise LanesError(f"no Ray cluster answers at {address!r}: {exc.strerror or exc}", CLUSTER_FIX) from None


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
