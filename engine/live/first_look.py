"""The dashboard's first look: every lane's status and the inbox, read straight from disk.

The dashboard draws its first full frame from this, before the `Engine` module is even imported
(that import — the decisions, reconcile, the runners, git — and the engine's first reconcile and
full scan cost more than the frame itself: docs/benchmarks.md B7). Nothing is reconciled, ranked
or checked by the conflict radar here: the engine's first scan brings all that a moment later and
replaces this picture. Imports only the state and the inbox, never `live.engine`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.inbox.store import InboxStore
from lanes_tui.engine.inbox.view import QuestionView
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.status import LaneStatus, corrupt_status, lane_status
from lanes_tui.engine.state.store import LaneStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FirstLook:
    """Lanes oldest first (as `Engine.lanes()` orders them) and the inbox's questions."""

    lanes: tuple[LaneStatus, ...] = ()
    questions: tuple[QuestionView, ...] = ()


def first_look(repo: Path) -> FirstLook:
    """What is on disk now; a part that cannot be read is left empty (the engine's scan says why)."""
    paths = StatePaths(repo)
    store = LaneStore(paths)
    statuses: list[LaneStatus] = []
    try:
        lane_ids = paths.lane_ids()
    except (LanesError, OSError):
        lane_ids = []
    for lane_id in lane_ids:
        try:
            statuses.append(lane_status(store, store.read(lane_id)))
        except LanesError as exc:
            if store.exists(lane_id):  # a corrupt record is a row with its problem, as in the scan
                statuses.append(corrupt_status(store, lane_id, exc))
        except OSError:
            log.debug("first look: lane %s unreadable", lane_id, exc_info=True)
    try:
        questions = tuple(InboxStore(paths.inbox).list())
    except (LanesError, OSError):
        questions = ()
    return FirstLook(tuple(sorted(statuses, key=lambda s: (s.created, s.id))), questions)
