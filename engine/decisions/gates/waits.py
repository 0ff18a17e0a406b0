"""What the lead sees while a lane's gates wait for a heavy slot or for the machine's load.

The waiting loops report through `core.waits` (a `Wait` when a wait starts and ends); this turns
each report into what the lead reads: the lane's why while it is `checking` ("waiting for the
machine: load 5.1 > 4.0 (up to 10m)", back to "running the gates" when the wait ends), a
`gate-wait` event (which `state.status` reads back for the Meters pane), and a line in the lane's
`output.log` next to the gates' own progress lines. And when the wait ran out, the lane's why says
what kept the gates from running and how to try again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

from lanes_tui.engine.core.waits import START, OnWait, Wait
from lanes_tui.engine.decisions.gates.log import append_output
from lanes_tui.engine.decisions.gates.run import GateResult
from lanes_tui.engine.state.lock_events import GATE_WAIT
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.store import LaneStore

__all__ = ["GATE_WAIT", "RUNNING_REASON", "lane_wait_listener", "not_run_why"]

#: The why of a `checking` lane whose gates are not waiting (check.py sets it first).
RUNNING_REASON = "running the gates"


def lane_wait_listener(store: LaneStore, record: LaneRecord, output: Path) -> OnWait:
    """The listener `run_gates` is given for `record`'s check: why, event, output line, in that order.

    The record is written before the event, so a `gate-wait` start event is never older than the record
    it explains: `state.status` shows a wait only then, and a wait an interrupted check left open in the
    events is never shown for a later check.
    """
    def heard(wait: Wait) -> None:
        if wait.phase == START:
            store.transition(record, "checking", wait.reason)
        elif wait.ok:
            store.transition(record, "checking", RUNNING_REASON)
        store.event(record.id, GATE_WAIT, **wait.fields())
        with contextlib.suppress(OSError):  # a full disk loses the line, never the why or the event
            append_output(output, f"[gate] {wait.line}")

    return heard


def not_run_why(lane_id: str, gates: Sequence[GateResult], fallback: str) -> str:
    """`gates not run: the machine stayed busy for 10m (load 5.3 > 4.0): `lanes-tui check ID` to try
    again`: the why of a lane whose gates did not run, from the not-run gate's reason (`fallback` when
    there is none, an older or hand-made result)."""
    reason = next((g.output_tail for g in gates if g.status == "not-run" and g.output_tail.startswith("not run: ")), "")
    if not reason:
        return fallback
    return f"gates {reason.split('; ', 1)[0]}: `lanes-tui check {lane_id}` to try again"
