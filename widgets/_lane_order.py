"""The Lanes pane's order, filter and seen marks, as pure functions of the statuses it is given.

With a few lanes the creation order is enough; with dozens the lead needs the ones that need them on
top, a way to find one, and a mark on those that changed since they last looked. Kept apart from
`lanes_table` so the rules are plain data, tested without a screen.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # widgets are given statuses; they never load the engine to get them
    from lanes_tui.engine import LaneStatus

#: The sort orders `o`… the sort key cycles through, first the default.
SORT_MODES = ("oldest", "attention", "newest", "id")

#: Attention ranks, most urgent first: a question or a stall blocks the lane until the lead acts; a
#: rejected, conflicting or lost lane (or a failed or capped exit, or a corrupt record) needs a decision;
#: a ready lane waits for an accept; running lanes need nobody; the rest (accepted, abandoned) is history.
_ATTENTION = {"waiting": 0, "stalled": 0, "rejected": 1, "conflict": 1, "lost": 1, "ready": 2,
              "queued": 3, "launching": 3, "running": 3, "checking": 3, "reviewing": 3}
_REST = 4
#: A lane relaunched as a newer attempt (`superseded_by`) needs nobody whatever its state says (a
#: stalled attempt stays `stalled`): the new attempt carries the work, so the old one sorts last
#: (`wait --any` skips it too: `engine/live/queries.py`).
_SUPERSEDED = 5

#: States that are one thing to the lead's eye: a lane going from queued to running has not changed
#: in a way worth a mark.
_SAME_TO_THE_EYE = {"queued": "running", "launching": "running"}
#: A lane that went (back) to working needs nobody: a change into one of these is never marked.
_QUIET = frozenset({"running", "checking", "reviewing"})


def attention(lane: LaneStatus) -> int:
    """0 (needs the lead now) … 4 (history), 5 for a lane relaunched as a newer attempt; see `_ATTENTION`."""
    if lane.superseded_by:
        return _SUPERSEDED
    if lane.problem:
        return 1
    if lane.state == "exited":
        return 1 if lane.fired or (lane.result not in (None, "OK")) else 3
    return _ATTENTION.get(lane.state, _REST)


def sort_key(lane: LaneStatus, mode: str) -> tuple[Any, ...]:
    if mode == "attention":
        return (attention(lane), lane.created, lane.id)
    if mode == "newest":
        return (-lane.created, lane.id)
    if mode == "id":
        return (lane.id,)
    return (lane.created, lane.id)


def ordered(lanes: Sequence[LaneStatus], mode: str) -> list[LaneStatus]:
    """The lanes in `mode`'s order; a best-of group's lanes take the place of its best-placed member,
    so the group moves as one block (the table then ranks the members inside it)."""
    keys = {lane.id: sort_key(lane, mode) for lane in lanes}
    best: dict[str, tuple[Any, ...]] = {}
    for lane in lanes:
        if lane.group:
            best[lane.group] = min(best.get(lane.group, keys[lane.id]), keys[lane.id])
    return sorted(lanes, key=lambda lane: (best[lane.group] if lane.group else keys[lane.id], keys[lane.id]))


def matches(lane: LaneStatus, text: str, shown_state: str, provider: str) -> bool:
    """Does every word of the filter occur (any case) in the lane's id, task, state or provider?"""
    fields = " ".join((lane.id, lane.task, shown_state, provider)).casefold()
    return all(word in fields for word in text.casefold().split())


def seen_state(lane: LaneStatus) -> str:
    """The state as the seen mark compares it (queued and launching count as running)."""
    state = "corrupt" if lane.problem else lane.state
    return _SAME_TO_THE_EYE.get(state, state)


def changed_since(lane: LaneStatus, seen: str | None) -> bool:
    """Is the lane's state news since the lead saw it in state `seen` (None: never seen)? Only a change
    into a state that may need the lead counts: a lane back at work after an answer is not news."""
    now = seen_state(lane)
    return seen is not None and now != seen and now not in _QUIET
