"""`lanes-tui lock` in a lane's events: the wait, the run and the count, without touching lane.json.

The supervisor is the only writer of a lane's `lane.json` while it lives (two writers would lose each
other's updates), yet the lead should see that a lane is held back by a heavy slot and not stuck. So
`lock`, running in the agent's shell, appends JSON lines to the lane's `events.jsonl` — appends of
one `write` each, which never interleave with the supervisor's — and `state.status` reads them back:

* `lock-wait` — no slot was free (`holders`: who held them and since when), or the machine's load
  held back a run that had its slot (`for: "load"`, with `load` and `limit`);
* `lock-acquired` — the run starts (`slot`, `waited_s`);
* `lock-released` — the run ended (`slot`, `held_s`, `exit`);
* `lock-gave-up` — no slot came free within `--wait`, or `lock` was stopped while it waited.

Each line carries the `lock` process's `pid`: a wait is open until a later line of the same pid
closes it, and only while that process lives (a `lock` killed with SIGKILL writes nothing more).

The same pass reads the lane's gates' own waits (`gate-wait`, written by the check: `decisions.gates.waits`),
so the Meters pane can show a check held back by the load or a slot at no extra read.

Only the tail of the events file is read (`EVENTS_WINDOW`): a lane that ran its suite thousands of
times must not make every refresh parse megabytes, so `locks` counts the runs within that tail.
This module runs in agents' shells (through `lanes.heavy`): standard library and `core` only.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.atomic import append_jsonl
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.limits import read_tail
from lanes_tui.engine.core.slots import describe_holder
from lanes_tui.engine.core.waits import load_text
from lanes_tui.engine.state.paths import StatePaths, inside

__all__ = ["EVENTS_WINDOW", "GATE_WAIT", "LOCK_ACQUIRED", "LOCK_EVENTS", "LOCK_GAVE_UP", "LOCK_RELEASED", "LOCK_WAIT",
           "LockJournal", "LockView", "lane_events_path", "read_lock_view"]

LOCK_WAIT = "lock-wait"
LOCK_ACQUIRED = "lock-acquired"
LOCK_RELEASED = "lock-released"
LOCK_GAVE_UP = "lock-gave-up"
LOCK_EVENTS = (LOCK_WAIT, LOCK_ACQUIRED, LOCK_RELEASED, LOCK_GAVE_UP)
#: A lane's gates waiting for a slot or the load (`decisions.gates.waits` writes it; named here, below it).
GATE_WAIT = "gate-wait"
#: The events that end a wait of the same pid.
_CLOSING = frozenset({LOCK_ACQUIRED, LOCK_RELEASED, LOCK_GAVE_UP})
#: How much of the end of `events.jsonl` a status reads: a lock run writes ~0.5-1 KiB, so this holds
#: the last few hundred runs — an exact count for any ordinary lane, a bounded cost for any lane.
EVENTS_WINDOW = 256 * 1024
#: Holder fields kept in a `lock-wait` line (not `cwd`: a path the status never shows).
_HOLDER_KEYS = ("lane", "kind", "pid", "since", "command")


def lane_events_path(environ: Mapping[str, str]) -> Path | None:
    """The events file of the lane this `lock` runs in, or None outside a lane.

    Inside a lane means: `LANES_LANE` is a valid lane id, `LANES_HOME` is a `.lanes/state` folder,
    and the lane's `lane.json` exists there. A lane folder without its record is a leftover: writing
    into it would make the id look taken (`LaneStore.taken`). The path is checked to stay inside the
    state folder after symlinks, so an odd environment can never make `lock` write elsewhere.
    """
    lane_id = environ.get("LANES_LANE", "").strip()
    home = environ.get("LANES_HOME", "").strip()
    if not lane_id or not home:
        return None
    state = Path(home)
    if state.name != "state" or state.parent.name != ".lanes":
        return None
    paths = StatePaths(state.parent.parent)
    try:
        lane = paths.lane(lane_id)
    except LanesError:
        return None
    if not lane.record.is_file() or not inside(lane.events, paths.lanes):
        return None
    return lane.events


@dataclass
class LockJournal:
    """The lines one `lock` run appends to its lane's events (nothing at all when `path` is None).

    A line that cannot be written (a full disk, a removed lane) is dropped: the lock is for the
    agent's command, and a missing status line must never fail the command.
    """

    path: Path | None
    pid: int = 0
    #: For a lane the kernel confines (`lanes.confine`): the line goes to its supervisor instead
    #: (`core.relay`), which appends it; `path` is then None.
    relay: Callable[[dict[str, Any]], object] | None = None

    def __post_init__(self) -> None:
        self.pid = self.pid or os.getpid()

    def wait_for_slot(self, holders: Iterable[Mapping[str, Any]]) -> None:
        kept = [{k: h[k] for k in _HOLDER_KEYS if k in h} for h in holders]
        self._append(LOCK_WAIT, **{"for": "slot"}, holders=kept)

    def wait_for_load(self, load: float, limit: float) -> None:
        self._append(LOCK_WAIT, **{"for": "load"}, load=round(load, 2), limit=limit)

    def acquired(self, slot: int, waited_s: float) -> None:
        self._append(LOCK_ACQUIRED, slot=slot, waited_s=round(waited_s, 3))

    def released(self, slot: int, held_s: float, code: int | None) -> None:
        self._append(LOCK_RELEASED, slot=slot, held_s=round(held_s, 3), exit=code)

    def gave_up(self, waited_s: float, why: str) -> None:
        self._append(LOCK_GAVE_UP, waited_s=round(waited_s, 3), why=why)

    def _append(self, kind: str, **data: Any) -> None:
        line = {"t": time.time(), "type": kind, "pid": self.pid, **data}
        if self.relay is not None:
            with contextlib.suppress(Exception):  # a lost status line never fails the command
                self.relay(line)
            return
        if self.path is None:
            return
        with contextlib.suppress(OSError):
            append_jsonl(self.path, line)


@dataclass(frozen=True)
class LockView:
    """What a lane's lock events say now: the open wait (as the lead reads it) and the runs counted."""

    wait: str | None = None
    locks: int = 0
    #: The lane's gates' open wait: the last `gate-wait` start event (for, load, limit, held_by,
    #: budget_s, t) when no end followed it (`decisions.gates.waits`); the status keeps it only while
    #: the lane is `checking` and the event is not older than the record.
    gate_wait: Mapping[str, Any] | None = None


def read_lock_view(path: Path, *, window: int = EVENTS_WINDOW) -> LockView:
    """The open wait, the `lock-acquired` count and the gates' open wait of the last `window` bytes of `path`.

    Only lines that mention `"lock-` or `"gate-wait"` are parsed, so a tail full of other events costs a
    byte search.
    """
    try:
        tail, end = read_tail(path, window)
    except OSError:
        return LockView()
    start = end - len(tail)
    lines = tail.splitlines()
    if start > 0 and lines:
        lines = lines[1:]  # the window began inside a line
    open_waits: dict[int, Mapping[str, Any]] = {}
    count = 0
    gate_wait: Mapping[str, Any] | None = None
    for raw in lines:
        if b'"lock-' not in raw and b'"gate-wait"' not in raw:
            continue
        try:
            event = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if not isinstance(event, dict):
            continue
        kind, pid = event.get("type"), event.get("pid")
        if kind == GATE_WAIT:
            gate_wait = event if event.get("phase") == "start" else None
            continue
        if kind == LOCK_ACQUIRED:
            count += 1
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
            continue
        if kind == LOCK_WAIT:
            open_waits.pop(pid, None)
            open_waits[pid] = event  # re-inserted: the dict keeps the latest wait last
        elif kind in _CLOSING:
            open_waits.pop(pid, None)
    for pid, event in reversed(open_waits.items()):
        if _alive(pid):
            return LockView(describe_wait(event), count, gate_wait)
    return LockView(None, count, gate_wait)


def describe_wait(event: Mapping[str, Any]) -> str:
    """`waiting for a heavy slot, held by lane X since 12:03 (pytest -q)`, or the load wait."""
    if event.get("for") == "load":
        load, limit = event.get("load"), event.get("limit")
        if _number(load) and _number(limit):
            return f"waiting for the machine: {load_text(load, limit)}"  # the gates' words (`core.waits`)
        return "waiting for the machine: load too high"
    holders = event.get("holders")
    held = [describe_holder(dict(h)) for h in holders if isinstance(h, Mapping)] if isinstance(holders, list) else []
    return "waiting for a heavy slot" + (f", held by {', '.join(held)}" if held else "")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _alive(pid: int) -> bool:
    """Is the `lock` process that wrote a wait still there? (A signal 0 checks without sending.)"""
    try:
        os.kill(pid, 0)
    except PermissionError:  # another user's process: alive
        return True
    except (OSError, OverflowError):  # gone, or an absurd pid from a hand edit
        return False
    return True
