"""Rebuild lane states from disk: receipts, supervisor pids, their start times and their state letters.

Run on every engine start and by `status`: a lane whose supervisor is gone is either finished (its
receipt says how) or `lost`; a `checking` lane whose checker is gone had its check interrupted (its
gates are stopped and it goes back to `exited`). A corrupt record is skipped, never fatal for all.
A pid alone proves nothing, since pids are recycled; the supervisor's recorded create time must
match too. A supervisor that lives but is stopped (state T) makes its lane `unreachable`, and a lane
whose supervisor is stopped or gone is ended here once its wall-clock limit has passed
(`decisions.deadlines`). A receipt is believed only with its seal (`state.seals`). Only a local
lane (`record.runner == "local"`) is judged here: a Ray lane has no supervisor on this machine by
design, and its runner (`RemoteRunner.sync`) says whether it is alive, unreachable or lost.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lanes_tui.engine.core.atomic import read_json
from lanes_tui.engine.core.clock import Clock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.schema import NewerSchema, check_schema
from lanes_tui.engine.decisions.accept import recover_interrupted_accepts
from lanes_tui.engine.decisions.deadlines import (
    UNREACHABLE,
    end_overdue,
    mark_unreachable,
    overdue,
    restore,
    state_before,
)
from lanes_tui.engine.decisions.gates.run import GateResult, stop_leftover_gates
from lanes_tui.engine.decisions.packet import build_packet, read_packet, write_packet
from lanes_tui.engine.git.lane_paths import locate_lane
from lanes_tui.engine.git.review_tree import remove_review_tree
from lanes_tui.engine.lanes.launcher import leftover_processes, supervisor_condition, supervisor_key
from lanes_tui.engine.lanes.notify import announce_lanes
from lanes_tui.engine.procs.process import kill_processes_now
from lanes_tui.engine.state.model import LIVE_STATES, LaneRecord
from lanes_tui.engine.state.paths import StatePaths, repo_key
from lanes_tui.engine.state.seals import seal_problem
from lanes_tui.engine.state.store import LaneStore, lane_busy, lane_operation

log = logging.getLogger(__name__)

#: States a supervisor owns: it must be alive for the lane to be in one of them (`unreachable`: alive
#: but stopped, `decisions.deadlines`).
SUPERVISED_STATES = LIVE_STATES | {"checking", "reviewing", UNREACHABLE}


@dataclass(frozen=True)
class Reconciled:
    lane_id: str
    before: str
    after: str
    reason: str


def reconcile(repo: Path, clock: Clock | None = None, *,
              records: Callable[[], list[LaneRecord]] | None = None) -> list[Reconciled]:
    """Settle every lane whose supervisor is gone or stopped; the changes made.

    `records`: where the lanes' records come from when not read afresh (the dashboard's engine passes
    a `state.record_cache.RecordCache`, which re-reads only the records whose file changed: reading
    and checking a hundred records every 15 s held the interpreter lock for 60 ms beside the screen).
    Such a source skips a corrupt record silently; the engine's scan shows it as the lane's row.
    """
    paths = StatePaths(repo)
    try:  # a journal that cannot be finished is marked stuck; even a broken config must not stop status
        for line in recover_interrupted_accepts(repo):
            log.warning("interrupted accept: %s", line)
    except Exception as exc:
        log.warning("interrupted accepts not resolved: %s", exc)
    store = LaneStore(paths, clock)
    changes: list[Reconciled] = []
    if records is None:
        found, problems = store.scan()
        for lane_id, problem in problems.items():  # shown by `status` and the dashboard; never fatal here
            log.info("skipped lane %s: %s", lane_id, problem)
    else:
        found = records()
    for record in found:
        try:
            change = reconcile_lane(repo, store, record)
        except LanesError as exc:  # e.g. its record turned corrupt since the scan: the others go on
            log.info("could not reconcile %s: %s", record.id, exc)
            continue
        except OSError as exc:  # its folder unwritable (`status` shows it as the lane's problem): the others go on
            log.info("could not reconcile %s: %s", record.id, exc)
            continue
        if change is not None:
            changes.append(change)
    announce_lanes(store, [c.lane_id for c in changes])  # `lost` is seen here first (`lanes.notify`)
    return changes


def reconcile_lane(repo: Path, store: LaneStore, record: LaneRecord, *,
                   lock_held: bool = False) -> Reconciled | None:
    """Settle one lane whose supervisor is gone or stopped (`unreachable`, and back when it runs
    again), or whose wall-clock limit passed with nobody to keep it (`decisions.deadlines`). The
    lane's lock is taken for the repair, so no check or accept starts half-way through it; a lane
    someone holds (a check or an accept runs its gates outside the supervisor) is left alone.
    `lock_held`: the caller (recover) holds it — it used to be taken for a busy lane, so recover
    never settled the lane it was inspecting.
    """
    if not judged_locally(record):
        return None
    if record.state == "lost":  # gone already; an agent it left may still run past its limit
        if overdue(repo, record, store.clock.time()) is None:
            return None
    elif record.state not in SUPERVISED_STATES or _quiet(repo, record):
        return None
    if lock_held:
        return _settle(repo, store, record)
    if lane_busy(store.paths, record.id):
        return None
    try:
        with lane_operation(store.paths, record.id, "reconcile"):
            return _settle(repo, store, record)
    except LanesError as exc:  # taken in the meantime (or gone): the next reconcile looks again
        log.info("reconcile of %s skipped: %s", record.id, exc)
        return None


def _quiet(repo: Path, record: LaneRecord) -> bool:
    """Nothing for reconcile to do: the supervisor runs, and the lane does not say otherwise."""
    return supervisor_condition(repo, record.id) == "running" and record.state != UNREACHABLE


def _settle(repo: Path, store: LaneStore, record: LaneRecord) -> Reconciled | None:
    # The supervisor may still be writing its last lines: re-read before judging.
    record = store.read(record.id)
    if not judged_locally(record):
        return None
    before = record.state
    if before == "lost":
        return _overdue(repo, store, record, "gone")
    condition = supervisor_condition(repo, record.id)
    if record.state not in SUPERVISED_STATES or (condition == "running" and before != UNREACHABLE):
        return None
    if condition != "gone":
        return _unreachable(repo, store, record, condition)
    lane = store.lane_paths(record.id)
    if record.providers_tried and (change := _overdue(repo, store, record, "gone")) is not None:
        return change  # its agent may still run: the limit the supervisor kept ends it now
    judged = state_before(store, record.id) if before == UNREACHABLE else before  # stopped, then killed
    if judged == "checking":
        return _interrupted_check(repo, store, record)
    if judged == "reviewing":
        return _interrupted_review(repo, store, record)
    try:
        receipt = read_json(lane.receipt)
    except (FileNotFoundError, ValueError):
        receipt = None
    try:
        check_schema(receipt, "receipt.json", f"receipt.json of {record.id}")
    except NewerSchema:
        raise  # this lane is left for the newer lanes-tui that wrote it
    except LanesError:
        receipt = None  # a damaged version: as good as no receipt
    forged = receipt is not None and seal_problem(lane.receipt)
    if forged:  # a receipt lanes-tui did not write says nothing about how the lane ended
        log.warning("ignored the receipt of %s: %s", record.id, forged)
        receipt = None
    if isinstance(receipt, dict) and receipt.get("result"):
        result = str(receipt["result"])
        record.result = result
        after = "stalled" if result == "LANE-STALLED" else "exited"
        reason = f"reconciled from the receipt: {receipt.get('reason', result)}"
    else:
        after = "lost"
        reason = ("its supervisor is gone and left no receipt" if not forged else
                  "its supervisor is gone; its receipt was changed outside lanes-tui and is not trusted")
    store.transition(record, after, reason)
    _orphan_questions(store.paths, record.id, reason)
    log.info("reconciled %s: %s -> %s (%s)", record.id, before, after, reason)
    return Reconciled(record.id, before, after, reason)


def _unreachable(repo: Path, store: LaneStore, record: LaneRecord, condition: str) -> Reconciled | None:
    """The supervisor lives: stopped, the lane shows `unreachable` and its deadline is kept here;
    running again, the lane goes back to what it was."""
    before = record.state
    if condition == "running":
        after, reason = restore(store, record)
        return Reconciled(record.id, before, after, reason)
    change = _overdue(repo, store, record, "stopped")
    if change is not None or before == UNREACHABLE:
        return change
    key = supervisor_key(repo, record.id)
    reason = mark_unreachable(store, record, key.pid if key is not None else 0)
    log.warning("lane %s: %s", record.id, reason)
    return Reconciled(record.id, before, UNREACHABLE, reason)


def _overdue(repo: Path, store: LaneStore, record: LaneRecord, why: str) -> Reconciled | None:
    """Past its wall-clock limit with nobody to enforce it: the engine ends the lane."""
    limit = overdue(repo, record, store.clock.time())
    if limit is None:
        return None
    before = record.state
    reason, _ = end_overdue(repo, store, record, limit, why)
    _orphan_questions(store.paths, record.id, reason)
    return Reconciled(record.id, before, "exited", reason)


def judged_locally(record: LaneRecord) -> bool:
    """Does a local supervisor own this lane? Only then can its absence make the lane `lost`."""
    return record.runner == "local"


def _interrupted_check(repo: Path, store: LaneStore, record: LaneRecord) -> Reconciled:
    """A `checking` lane nobody runs (no supervisor, no lock holder): its check was killed.

    Its gates run in their own process group, so they outlive the check: stop them (by the running
    file the check keeps, and by the lane's environment marker), then put the lane back to `exited`
    with the gates `not-run` in its packet, so nothing reads an old `passed` as current.
    """
    lane = store.lane_paths(record.id)
    commands, stopped = stop_leftover_gates(lane.dir, repo_key(repo))
    stopped += kill_processes_now(leftover_processes(repo, record.id))
    previous = read_packet(lane)
    if not commands and previous:
        commands = [str(g.get("command")) for g in previous.get("gates", []) if isinstance(g, dict)]
    what = f"stopped its gate process(es) {' '.join(map(str, sorted(set(stopped))))}" if stopped else \
        "no gate process was left"
    reason = (f"its check was interrupted (the process running the gates is gone; {what}); gates not run: "
              f"`lanes-tui check {record.id}` runs them again")
    now = store.clock.time()
    gates = [GateResult(command, "not-run", None, reason, 0.0, now) for command in commands]
    packet = build_packet(record, gates, clock=store.clock, previous=previous)
    packet["gates_status"] = "not-run"  # also when no command is known: never `none` (= nothing to run)
    write_packet(lane, packet)
    store.transition(record, "exited", reason, gates="not-run", stopped=sorted(set(stopped)))
    log.info("reconciled %s: checking -> exited (%s)", record.id, reason)
    return Reconciled(record.id, "checking", "exited", reason)


def _interrupted_review(repo: Path, store: LaneStore, record: LaneRecord) -> Reconciled:
    """A `reviewing` lane nobody runs: its reviewer is stopped (found by the lane's environment marker),
    its review worktree removed, and the lane goes back to `ready` (its gates had passed) with the
    review MISSING, saying how to run it again. Never CLEAN: nobody read the verdict."""
    stopped = kill_processes_now(leftover_processes(repo, record.id))
    with contextlib.suppress(LanesError, OSError):
        location = locate_lane(repo, record.id, record)
        remove_review_tree(repo, location.root, record.id)
    lane = store.lane_paths(record.id)
    packet = read_packet(lane) or build_packet(record, [], clock=store.clock, look=False)
    reason = (f"its review was interrupted (the process running it is gone); review MISSING: "
              f"`lanes-tui review {record.id}` runs it again")
    packet["review"] = "MISSING"
    packet["review_detail"] = {"verdict": "MISSING", "reviewer": None, "family": None, "reason": reason,
                               "findings": [], "tail": "", "diff_digest": "", "started": None, "ended": None}
    write_packet(lane, packet)
    record.review = "MISSING"
    after = "ready" if packet.get("gates_status") in ("passed", "none") else "exited"
    store.transition(record, after, reason, review="MISSING", stopped=sorted(set(stopped)))
    log.info("reconciled %s: reviewing -> %s (%s)", record.id, after, reason)
    return Reconciled(record.id, "reviewing", after, reason)


def _orphan_questions(paths: StatePaths, lane_id: str, reason: str) -> None:
    from lanes_tui.engine.inbox.store import InboxStore

    InboxStore(paths.inbox).orphan_lane(lane_id, reason)
