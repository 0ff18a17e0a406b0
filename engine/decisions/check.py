"""`check`: run a lane's gates on its worktree and rewrite its packet; the supervisor's last step.

Used three ways: by the supervisor right after the agent chain (no lead involved), by `lanes-tui
check ID`, and by `recover --recheck` and accept (after a rebase) on a lane nobody is running.
"""

from __future__ import annotations

import os
from pathlib import Path

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.clock import Clock, RealClock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.gates import run_gates, summarise
from lanes_tui.engine.decisions.packet import build_packet, read_packet, state_after_gates, write_packet
from lanes_tui.engine.lanes.env import ensure_cli_shim, lane_environment
from lanes_tui.engine.lanes.launcher import supervisor_alive
from lanes_tui.engine.state.model import LIVE_STATES, LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore, lane_operation

#: States whose worktree the lead may check again.
CHECKABLE = frozenset({"exited", "stalled", "ready", "rejected", "conflict", "lost"})


async def gate_lane(repo: Path, config: Config, store: LaneStore, record: LaneRecord, *, by_lead: bool,
                    clock: Clock | None = None) -> dict[str, object]:
    """Gates → packet → ready / rejected (or exited when no slot was free). Returns the packet."""
    paths = StatePaths(repo)
    lane = paths.lane(record.id)
    gates = []
    if record.result == "OK" or by_lead:
        store.transition(record, "checking", "running the gates")
        env = lane_environment(os.environ, lane_id=record.id, attempt=record.attempt, state_dir=paths.state,
                               worktree=Path(record.worktree), bin_dir=ensure_cli_shim(paths.bin).parent)
        gates = await run_gates(Path(record.worktree), config.gates, env=env,
                                holder={"lane": record.id, "repo": str(repo)}, clock=clock or RealClock())
    packet = build_packet(record, gates, clock=clock, previous=read_packet(lane))
    write_packet(lane, packet)
    status = summarise(gates)
    state, reason = state_after_gates(record, status, by_lead=by_lead)
    failed = [g.command for g in gates if g.status == "failed" or g.status == "timeout"]
    if failed:
        reason = f"gate failed: {', '.join(failed)}"
    store.transition(record, state, reason, gates=status)
    return packet


async def check_lane(repo: Path, config: Config, lane_id: str, *, clock: Clock | None = None) -> dict[str, object]:
    """The lead's `check ID`: refuses a lane that is still running or already decided."""
    with lane_operation(StatePaths(repo), lane_id, "check"):
        return await _check_lane(repo, config, lane_id, clock)


async def _check_lane(repo: Path, config: Config, lane_id: str, clock: Clock | None) -> dict[str, object]:
    store = LaneStore(StatePaths(repo), clock)
    record = store.read(lane_id)
    if record.state in LIVE_STATES or record.state == "checking":
        if supervisor_alive(repo, lane_id):
            raise LanesError(f"lane {lane_id} is still {record.state}",
                             f"wait for it (`lanes-tui wait {lane_id}`) or stop it first")
    elif record.state not in CHECKABLE:
        raise LanesError(f"lane {lane_id} is {record.state}; there is nothing left to check")
    if not Path(record.worktree).is_dir():
        raise LanesError(f"the worktree of {lane_id} is gone ({record.worktree})",
                         f"`lanes-tui recover {lane_id} --relaunch` starts a new attempt")
    return await gate_lane(repo, config, store, record, by_lead=True, clock=clock)
