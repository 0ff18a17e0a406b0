"""The `[runner]` table: where lanes run. `local` (the default) or `ray` (the optional `[ray]` extra).

`kind = "ray"` places each lane in a detached Ray actor on a cluster (`engine.remote`): `address`
is the cluster (`auto`, `ray://host:10001`, or `host:6379`), `remote` the git remote every node can
reach (the lanes' base goes there, their branches and checkpoints come back through it),
`lane_slots` how many lanes a node takes (the `lane_slot` custom resource each node is started
with), `labels` node labels a lane must match (a pool: `{pool = "gpu"}`), `checkpoint_s` how often
a node pushes a lane's work in progress.

Parsed like `[notify]`, through the parser's own checks, so a mistake names its key and line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from lanes_tui.engine.config.key_lines import did_you_mean
from lanes_tui.engine.config.review import ReviewChecks

__all__ = ["RUNNER_KINDS", "RunnerSettings", "parse_runner"]

RUNNER_KINDS = ("local", "ray")
_RUNNER_KEYS = ("kind", "address", "remote", "lane_slots", "labels", "checkpoint_s")


@dataclass(frozen=True)
class RunnerSettings:
    """The `[runner]` table as validated: the defaults run every lane on this machine."""

    kind: str = "local"
    #: The Ray cluster to join: `auto` finds a running local head (`ray start --head`).
    address: str = "auto"
    #: The shared git remote (URL or path) every node can fetch from and push to; "" for local.
    remote: str = ""
    #: Lanes one node runs at once: the `lane_slot` resource a node is started with (`ray start
    #: --resources '{"lane_slot": N}'`); each lane takes one.
    lane_slots: int = 2
    #: Node labels a lane's node must carry (Ray's label selector), e.g. a pool of big machines.
    labels: MappingProxyType[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: How often a node pushes the lane's work in progress to `refs/lanes-wip/<id>` on the remote:
    #: what `recover --relaunch` continues from when the node is lost.
    checkpoint_s: float = 300.0


def parse_runner(checks: ReviewChecks, raw: dict[str, Any]) -> RunnerSettings:
    """`[runner] kind = "ray"`, `remote = "git@host:repo.git"`, … → RunnerSettings; ConfigError at the
    first mistake. A Ray runner without a remote is refused: its lanes would have no way home."""
    checks.unknown_keys("runner", raw, _RUNNER_KEYS)
    kind = checks.string("runner.kind", raw.get("kind", "local"))
    if kind not in RUNNER_KINDS:
        checks.fail("runner.kind", f"{kind!r} is not a runner", did_you_mean(kind, RUNNER_KINDS))
    address = checks.string("runner.address", raw.get("address", "auto"))
    remote = checks.string("runner.remote", raw.get("remote", ""), empty=True).strip()
    if kind == "ray" and not remote:
        checks.fail("runner.remote", "a Ray runner needs the shared git remote its nodes clone and push to",
                    'set remote = "URL or path every node can reach" (a bare repository)')
    lane_slots = checks.integer("runner.lane_slots", raw.get("lane_slots", 2), minimum=1)
    labels_raw = raw.get("labels", {})
    if not isinstance(labels_raw, dict):
        checks.fail("runner.labels", "labels must be a table of strings", 'write labels = { pool = "big" }')
    labels = {str(key): checks.string(f"runner.labels.{key}", value) for key, value in labels_raw.items()}
    checkpoint_s = checks.number("runner.checkpoint_s", raw.get("checkpoint_s", 300.0), positive=True)
    return RunnerSettings(kind=kind, address=address, remote=remote, lane_slots=lane_slots,
                          labels=MappingProxyType(labels), checkpoint_s=checkpoint_s)
