"""The accept journal (`accept.json` in the lane's folder) and the journals that cannot be finished.

An accept writes its journal before each step so that a killed accept is finished or rolled back by
the next reconcile (`accept.finish_interrupted_accepts`). When that fails — the lane's record was
edited, its worktree is locked, the target branch was deleted — the failure is written into the
journal (`stuck`) instead of being raised: one lane's stuck journal must never take `status`,
`wait`, `doctor`, other lanes' accepts or the dashboard down with it. `status` and `doctor` list the
stuck journals (`stuck_accepts`) with the fix, and the lane's own accept refuses until it is resolved.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.atomic import read_json, write_json_atomic
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.state.paths import LanePaths, StatePaths


@dataclass(frozen=True)
class StuckAccept:
    """An interrupted accept that reconcile could not finish or roll back, and what to do about it."""

    lane_id: str
    step: str
    what: str
    fix: str
    journal: Path

    def describe(self) -> str:
        return (f"lane {self.lane_id}: an interrupted accept (step {self.step}) cannot be finished: {self.what} — "
                f"{self.fix}; then `lanes-tui status` finishes it")


def read_journal(lane: LanePaths) -> dict[str, Any] | None:
    """The journal, or None when there is none (or it is not a JSON object: see `stuck_accepts`)."""
    try:
        data = read_json(lane.accept_journal)
    except (FileNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def mark_stuck(lane: LanePaths, journal: dict[str, Any], error: Exception) -> None:
    """Record why the journal could not be resolved; written only when the reason changes (the
    dashboard reconciles every 2 s)."""
    if isinstance(error, LanesError):
        stuck = {"what": error.what, "fix": error.fix or "fix what the message names"}
    else:
        stuck = {"what": f"{type(error).__name__}: {error}", "fix": "fix what the message names"}
    if journal.get("stuck") != stuck:
        write_json_atomic(lane.accept_journal, {**journal, "stuck": stuck})


def stuck_accepts(repo: Path) -> list[StuckAccept]:
    """Every journal that reconcile tried and could not resolve, and every unreadable one."""
    paths = StatePaths(repo)
    found = []
    for lane_id in paths.lane_ids():
        lane = paths.lane(lane_id)
        if not lane.accept_journal.exists():
            continue
        journal = read_journal(lane)
        if journal is None:
            found.append(StuckAccept(lane_id, "?", f"{lane.accept_journal} is not a JSON object",
                                     "delete it; `lanes-tui finish` then cleans up the lane if its work was merged",
                                     lane.accept_journal))
            continue
        stuck = journal.get("stuck")
        if isinstance(stuck, dict):
            found.append(StuckAccept(lane_id, str(journal.get("step", "?")), str(stuck.get("what", "")),
                                     str(stuck.get("fix", "")), lane.accept_journal))
    return found
