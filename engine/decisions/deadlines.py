"""A lane whose supervisor cannot act: seen as such, and its wall-clock limit kept by the engine.

The supervisor enforces a lane's limits (the wall-clock `timeout_s`, the idle watchdog) from its own
loop. An agent runs as the lead's user and its parent's pid is one `getppid` away, so a plain
`kill -STOP $PPID` used to switch both off while `status` kept saying `running`; a `kill -9` left
the lane `lost` with its agent still working and no limit at all.

What reconcile (run by `status`, `wait`, the dashboard's watch) does about it here:

* **stopped** (state T or t in `/proc`): the lane turns `unreachable`, with the supervisor's pid and
  what to do in the reason; when the supervisor runs again, the lane goes back to the state it had
  (`restore`), and the supervisor's next write of its record agrees.
* **past its deadline** (`started + timeout_s` of the running provider attempt, the lane's own
  `--timeout` over `[lanes] timeout_s`) while its supervisor is stopped or gone: the engine ends the
  lane itself (`end_overdue`): the supervisor is killed if it is still there (a stopped process
  takes SIGKILL), then the lane's cgroup and every process with its environment marker; a sealed
  receipt records LANE-FAILED with the timeout, and the lane is `exited`.

Times come from the store's clock, so tests move time instead of waiting for it. The engine's
deadline counts from the attempt's start; the supervisor's own leaves out the time spent waiting
for the lead's answer, so a stopped lane that waited may be ended that much earlier than a running
one would be (never later).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path

from lanes_tui.engine.config.settings import LanesSettings, load_config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.lanes.caps import lane_timeouts
from lanes_tui.engine.lanes.launcher import stop_leftovers_now, supervisor_key
from lanes_tui.engine.procs.process import kill_processes_now
from lanes_tui.engine.state.model import LIVE_STATES, LaneRecord
from lanes_tui.engine.state.seals import write_sealed
from lanes_tui.engine.state.store import LaneStore

log = logging.getLogger(__name__)

#: What the lane shows while its supervisor is stopped.
UNREACHABLE = "unreachable"
_EVENTS_TAIL = 256 * 1024


def mark_unreachable(store: LaneStore, record: LaneRecord, pid: int) -> str:
    """The lane shows `unreachable`, saying why and what to do; the reason."""
    reason = (f"its supervisor (pid {pid}) is stopped (SIGSTOP): its time limit and watchdog cannot act; "
              f"`kill -CONT {pid}` lets it go on, `lanes-tui abandon {record.id} --force` ends it")
    store.transition(record, UNREACHABLE, reason, was=record.state, supervisor_pid=pid)
    return reason


def restore(store: LaneStore, record: LaneRecord) -> tuple[str, str]:
    """The supervisor runs again: the lane goes back to the state it had when it was marked."""
    before = state_before(store, record.id)
    reason = "its supervisor runs again"
    store.transition(record, before, reason)
    return before, reason


def state_before(store: LaneStore, lane_id: str) -> str:
    """The `was` of the last `unreachable` state event (from the end of events.jsonl); `running` if
    none is found (a torn or trimmed log)."""
    path = store.lane_paths(lane_id).events
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - _EVENTS_TAIL))
            lines = handle.read().splitlines()
    except OSError:
        return "running"
    for raw in reversed(lines):
        with contextlib.suppress(ValueError, RecursionError):
            event = json.loads(raw)
            if isinstance(event, dict) and event.get("type") == "state" and event.get("state") == UNREACHABLE:
                was = event.get("was")
                return was if isinstance(was, str) and was in LIVE_STATES | {"checking", "reviewing"} else "running"
    return "running"


def overdue(repo: Path, record: LaneRecord, now: float) -> float | None:
    """The wall-clock limit the running provider attempt is past at `now`, or None (not past it,
    no attempt running, or a limit that cannot be read)."""
    attempt = record.providers_tried[-1] if record.providers_tried else None
    if attempt is None or attempt.ended is not None or attempt.started is None:
        return None
    limit = _timeout_s(repo, record)
    if limit is None or limit <= 0:
        return None
    return limit if now >= attempt.started + limit else None


def _timeout_s(repo: Path, record: LaneRecord) -> float | None:
    """The lane's own `--timeout` over `[lanes] timeout_s`; a config that cannot be read gives the
    default (the limit must hold even then), a record whose own value is wrong gives None."""
    try:
        settings = load_config(repo).lanes
    except LanesError as exc:
        log.info("config unreadable for %s's deadline, default used: %s", record.id, exc)
        settings = LanesSettings(worktree_root=Path(record.worktree_root or record.worktree))
    try:
        return lane_timeouts(settings, record.caps).timeout_s
    except LanesError:
        return None


def end_overdue(repo: Path, store: LaneStore, record: LaneRecord, limit: float, why: str) -> tuple[str, list[int]]:
    """End a lane past its wall-clock limit whose supervisor cannot: the supervisor (if it is still
    there), then its cgroup and marked processes; a sealed receipt and `exited` with LANE-FAILED.
    Returns the reason and the pids stopped."""
    key = supervisor_key(repo, record.id)
    stopped: list[int] = []
    if key is not None and key.alive():
        # A stopped process takes SIGKILL without running, but it dies only when the kernel next
        # schedules it: wait (with a deadline) until it is gone, so "ended" means ended.
        stopped += kill_processes_now([key], term_s=0.0, kill_s=5.0)
    stopped += stop_leftovers_now(repo, record.id)
    pids = sorted(set(stopped))
    reason = (f"timed out: the wall-clock limit of {limit:g}s passed while its supervisor was {why}; "
              f"the engine stopped the lane ({len(pids)} process(es): {' '.join(map(str, pids)) or 'none left'})")
    now = store.clock.time()
    attempt = record.providers_tried[-1] if record.providers_tried else None
    if attempt is not None and attempt.ended is None:
        attempt.result, attempt.reason, attempt.ended = "LANE-FAILED", reason, now
    record.result = "LANE-FAILED"
    record.agent_pid = None
    write_sealed(store.lane_paths(record.id).receipt, {
        "lane": record.id, "result": "LANE-FAILED", "reason": reason, "returncode": None,
        "started": attempt.started if attempt else None, "ended": now,
        "providers_tried": [a.__dict__ for a in record.providers_tried], "supervisor_pid": None,
        "ended_by": "engine"})
    store.transition(record, "exited", reason, result="LANE-FAILED", stopped=pids, timeout_s=limit)
    log.info("ended %s past its deadline: %s", record.id, reason)
    return reason, pids
