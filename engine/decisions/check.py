"""`check`: run a lane's gates on its worktree and rewrite its packet; the supervisor's last step.

Used three ways: by the supervisor right after the agent chain (no lead involved), by `lanes-tui
check ID`, and by `recover --recheck` and accept (after a rebase) on a lane nobody is running.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.clock import Clock, RealClock
from lanes_tui.engine.core.debug import crash_point
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.gates.fence import gates_fence
from lanes_tui.engine.decisions.gates.log import GateReport, append_output, gate_report
from lanes_tui.engine.decisions.gates.plan import plan_gates, project_venv
from lanes_tui.engine.decisions.gates.run import RUNNING_FILE, run_gates, stop_leftover_gates, summarise
from lanes_tui.engine.decisions.gates.waits import lane_wait_listener, not_run_why
from lanes_tui.engine.decisions.packet import build_packet, read_packet, state_after_gates, write_packet
from lanes_tui.engine.decisions.scope import describe_outside
from lanes_tui.engine.git import git_snapshot, lead_checkout
from lanes_tui.engine.git.frozen_work import freeze
from lanes_tui.engine.git.head_repair import head_note
from lanes_tui.engine.git.lane_paths import locate_lane, working_tree
from lanes_tui.engine.lanes.launcher import stop_leftovers_now, supervisor_alive
from lanes_tui.engine.lanes.no_changes import agent_files
from lanes_tui.engine.procs.gate_scope import GateScope
from lanes_tui.engine.state.model import LIVE_STATES, LaneRecord
from lanes_tui.engine.state.paths import StatePaths, repo_key
from lanes_tui.engine.state.seals import seal_problem
from lanes_tui.engine.state.store import LaneStore, lane_operation

#: States whose worktree the lead may check again.
CHECKABLE = frozenset({"exited", "stalled", "ready", "rejected", "conflict", "lost"})


async def gate_lane(repo: Path, config: Config, store: LaneStore, record: LaneRecord, *, by_lead: bool,
                    clock: Clock | None = None, review_next: bool = False) -> dict[str, object]:
    """Gates → packet → ready / rejected (or exited when no slot was free). Returns the packet.

    `review_next`: the supervisor reviews the lane right after, so passed gates leave it `reviewing`,
    not `ready`: a lead who saw `ready` would press accept and be refused a moment later.
    """
    paths = StatePaths(repo)
    lane = paths.lane(record.id)
    try:  # gates run only in the folder derived from the lane's id and root, and listed by git as its own
        location = locate_lane(repo, record.id, record, default_root=config.lanes.worktree_root)
        worktree = working_tree(location)
        git_snapshot.refuse_if_changed(repo, record.id)  # the shared config, hooks, attributes: as at its start
        # The agent's work, frozen before any gate writes into its tree: what scope, review, radar and
        # accept judge (`git.frozen_work`); a later check (after more work, a rebase) freezes anew.
        frozen = freeze(repo, worktree, record.id, record.attempt, record.base_sha)
    except LanesError as exc:
        if by_lead:
            raise
        return _not_gated(store, record, exc, clock)
    gates = []
    warnings: list[str] = []
    contained: dict[str, str] | None = None
    changed = seal_problem(lane.record)
    if changed:  # this check writes the record again, sealed: the lead is told what it carried over
        warnings.append(f"{changed}; this check kept its fields: look at `lanes-tui status {record.id} --json`")
    # A lane that did nothing, judged on its frozen work (what the gates write is not): nothing to accept.
    unchanged_before = record.result == "NO-CHANGES" and not agent_files(frozen.files)
    if record.result == "OK" or by_lead:
        store.transition(record, "checking", "running the gates")
        crash_point("check:checking")  # tests kill -9 `check` at each step (LANES_TUI_CRASH_AT)
        steps, planned = plan_gates(repo, worktree, config.gates)  # the project's venv, detected commands
        warnings += planned
        try:  # the gates' environment, under the lane's kernel fence with a TMPDIR of their own (`gates.fence`)
            env, fence = gates_fence(repo, config, record, worktree, kind="gates")
        except LanesError as exc:
            if by_lead:
                raise
            return _not_gated(store, record, exc, clock)
        store.event(record.id, "confinement", of="gates", **fence.record())

        def progress(line: str, fields: dict[str, object]) -> None:  # the Output tab and events show it live
            append_output(lane.output, line)
            store.event(record.id, "gate", line=line, **fields)

        # The gates' own cgroup (or the fallback's marker): when run_gates returns, nothing they started runs.
        scope = GateScope.create(repo_key(repo), record.id)
        contained = scope.describe()
        restrict = fence.preexec()  # the kernel's fence, after the cgroup join
        try:
            gates = await run_gates(worktree, config.gates, env=env,
                                    holder={"lane": record.id, "repo": str(repo)}, clock=clock or RealClock(),
                                    running_file=lane.dir / RUNNING_FILE,  # found again if this check dies
                                    steps=steps, venv=project_venv(repo, config.gates, worktree),
                                    log_dir=lane.dir, progress=progress, scope=scope,
                                    preexec=(restrict,) if restrict else (),
                                    on_wait=lane_wait_listener(store, record, lane.output))  # waits: why, event, log
        finally:
            fence.close()
        crash_point("check:gates")
    packet = build_packet(record, gates, clock=clock, previous=read_packet(lane), worktree=worktree, frozen=frozen)
    if contained is not None and gates:
        packet["gate_containment"] = contained
    packet["warnings"] = warnings + frozen.warnings() + lead_checkout.changed_since(repo, record.id,
                                                                location.origin and location.origin.lead_checkout)
    packet["warnings"] += [note] if (note := head_note(lane.dir, record.attempt)) else []  # `git.head_repair`
    if packet["outside_scope"]:  # `check` prints the warnings: the lead learns it before trying to accept
        packet["warnings"].append("accept will refuse: " + describe_outside(record.id, packet["outside_scope"],
                                                                             record.scope))
    write_packet(lane, packet)
    crash_point("check:packet")
    status = summarise(gates)
    state, reason = state_after_gates(record, status, by_lead=by_lead)
    failed = [g.label + (" timed out" if g.status == "timeout" else "") for g in gates
              if g.status == "failed" or g.status == "timeout"]
    if failed:
        reason = f"gate failed: {', '.join(failed)}"
    if status == "not-run" and state == "exited":  # what kept them from running: a busy slot, the load
        reason = not_run_why(record.id, gates, reason)
    if state == "ready" and unchanged_before:  # the lead's check of a lane that did nothing: nothing to accept
        state, reason = "exited", "NO-CHANGES: the worktree still has no changes; nothing to accept"
    if review_next and state == "ready":
        state, reason = "reviewing", f"{reason}; the review runs next"
    store.transition(record, state, reason, gates=status)
    return packet


def _not_gated(store: LaneStore, record: LaneRecord, error: LanesError, clock: Clock | None) -> dict[str, object]:
    """The supervisor's check of a lane whose record disagrees with its derived paths: no gate runs,
    nothing is read from the folder the record names, and the lead sees why."""
    lane = store.lane_paths(record.id)
    packet = build_packet(record, [], clock=clock, previous=read_packet(lane), look=False)
    write_packet(lane, packet)
    store.transition(record, "stalled" if record.result == "LANE-STALLED" else "exited", f"gates not run: {error}")
    return packet


async def check_lane(repo: Path, config: Config, lane_id: str, *, clock: Clock | None = None) -> dict[str, object]:
    """The lead's `check ID`: refuses a lane that is still running or already decided."""
    with lane_operation(StatePaths(repo), lane_id, "check"):
        crash_point("check:locked")
        return await _check_lane(repo, config, lane_id, clock)


async def _check_lane(repo: Path, config: Config, lane_id: str, clock: Clock | None) -> dict[str, object]:
    store = LaneStore(StatePaths(repo), clock)
    record = store.read(lane_id)
    if record.state == "unreachable" and record.runner == "local":
        raise LanesError(f"lane {lane_id} is unreachable: {record.state_reason}",
                         f"end it first (`lanes-tui abandon {lane_id} --force`), or let its supervisor go on")
    if record.state in LIVE_STATES or record.state == "checking" or record.state == "lost":
        if supervisor_alive(repo, lane_id):
            raise LanesError(f"lane {lane_id} is still {record.state}",
                             f"wait for it (`lanes-tui wait {lane_id}`) or stop it first")
        # What the lane left running is stopped before anything is judged: an interrupted check's
        # gates, and a lost lane's agent (its cgroup, its marked processes), which would otherwise
        # go on writing in the worktree the gates are about to judge.
        await asyncio.to_thread(stop_leftover_gates, store.lane_paths(lane_id).dir, repo_key(repo))
        stopped = await asyncio.to_thread(stop_leftovers_now, repo, lane_id)
        if stopped:
            store.event(lane_id, "leftovers-stopped", pids=stopped, by="check")
    elif record.state not in CHECKABLE:
        raise LanesError(f"lane {lane_id} is {record.state}; there is nothing left to check")
    # gate_lane refuses a worktree that is gone, or that lane.json names wrongly.
    return await gate_lane(repo, config, store, record, by_lead=True, clock=clock)


def lane_gate_report(repo: Path, config: Config, lane_id: str) -> GateReport:
    """The Gates tab's and `check --log`'s data: the packet's steps and the failing one's output, or
    the steps a check would run when none has yet."""
    paths = StatePaths(repo)
    packet = read_packet(paths.lane(lane_id))
    planned = None
    if not (packet or {}).get("gates"):
        worktree = Path(LaneStore(paths).read(lane_id).worktree)
        steps, _ = plan_gates(repo, worktree if worktree.is_dir() else repo, config.gates)
        planned = [(s.name, s.shown, s.timeout_s) for s in steps]
    return gate_report(packet, planned)
