"""The environment and kernel fence a lane's gates run in, for `check` and for accept's commit hooks.

Both run code the lane could have influenced (its tests, a hook reading its files) as the lead's user,
so both get the same thing: the gates' environment (`lanes.env`: the base set, `[gates] env` and the
lane's `LANES_*`, never a provider's keys) and the lane's Landlock fence with a TMPDIR of their own
(`lanes.confine`). Kept in one place so a hook can never run with more than a gate may.
"""

from __future__ import annotations

import os
from pathlib import Path

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.lanes.caps import lane_caps
from lanes_tui.engine.lanes.confine import Confinement, confine, provider_writable
from lanes_tui.engine.lanes.env import ensure_cli_shim, lane_environment
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths

__all__ = ["gates_fence"]


def gates_fence(repo: Path, config: Config, record: LaneRecord, worktree: Path, *,
                kind: str = "gates") -> tuple[dict[str, str], Confinement]:
    """(the environment, the fence) for one run of gate-like steps of `record` in `worktree`.

    The environment already holds the fence's TMPDIR (and a contained run's private object store);
    the caller closes the fence. `kind` names the TMPDIR (`<lane>.gates`, `<lane>.hooks`), so a hook
    run never shares one with a check. Raises LanesError when the kernel cannot confine the lane and
    the lead did not allow it uncontained.
    """
    paths = StatePaths(repo)
    env = lane_environment(os.environ, lane_id=record.id, attempt=record.attempt, state_dir=paths.state,
                           worktree=worktree, bin_dir=ensure_cli_shim(paths.bin).parent,
                           allow=config.gates.env)  # the base set and [gates] env: no provider's keys
    fence = confine(repo, record.id, worktree, kind=kind, allowed_uncontained=lane_caps(
        config.lanes, record.caps).allow_uncontained, writable=provider_writable(config.gates.writable, env))
    env.update(fence.env())
    return env, fence
