"""The Lanes pane's cells: how one lane's fields are cut, marked and toned, and its tooltip's notes.

Kept apart from `lanes_table` (the widget: rows, keys, marks, sort and filter) so the look of each
column is plain functions of one `LaneStatus`, read without a screen, as `_lane_order` keeps the
order and the filter. The column list itself stays on `LanesTable.COLUMNS`, next to `_row`, which
builds the cells in that order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from lanes_tui.widgets import _format as fmt
from lanes_tui.widgets._keyed_table import Cell

if TYPE_CHECKING:  # widgets are given statuses; they never load the engine to get them
    from lanes_tui.engine import LaneStatus


#: The widest lane id the `lane` column shows whole: one long id does not widen it for every row. A longer
#: one is cut with `…`; the tooltip and the Output tab name it in full.
MAX_ID_WIDTH = 28


def short_id(lane_id: str) -> str:
    """The lane id as the column shows it: its attempt (`-a2`) kept, since relaunches differ only there,
    and the slug cut after a whole word where one ends in the second half (`add-a-subtract…-a1`)."""
    if len(lane_id) <= MAX_ID_WIDTH:
        return lane_id
    attempt = lane_id[lane_id.rfind("-a"):]
    if not attempt[2:].isdigit():
        attempt = ""
    room = MAX_ID_WIDTH - 1 - len(attempt)
    end = lane_id.rfind("-", 0, room + 1)
    return lane_id[:end if end >= room // 2 else room] + "…" + attempt


def elapsed(lane: LaneStatus, now: float) -> Cell:
    """Time since the lane was created: up to now while it is live, up to its last update after."""
    if not lane.created:
        return Cell("", right=True)
    end = now if lane.live else (lane.updated or now)
    return Cell(fmt.elapsed(end - lane.created), right=True)


#: The review column: a verdict's mark and its theme tone (the tooltip spells the verdict out).
REVIEW_MARKS: Mapping[str, tuple[str, str]] = {
    "CLEAN": ("✓", "success"), "BLOCKING": ("✗", "error"), "MISSING": ("?", "warning"),
}


def grouped(lanes: Sequence[LaneStatus]) -> list[tuple[LaneStatus, str, int]]:
    """(lane, bracket mark, group size) in display order: each best-of group's lanes together where its
    first lane is, best rank first (unranked after, in their given order). Lone lanes get a blank mark
    of the same width when any group is shown, so every lane id starts in the same column."""
    members: dict[str, list[LaneStatus]] = {}
    for lane in lanes:
        if lane.group:
            members.setdefault(lane.group, []).append(lane)
    if not members:
        return [(lane, "", 0) for lane in lanes]
    out: list[tuple[LaneStatus, str, int]] = []
    for lane in lanes:
        if not lane.group:
            out.append((lane, " ", 0))
        elif lane.group in members:
            group = sorted(members.pop(lane.group), key=lambda s: (s.rank is None, s.rank or 0))
            marks = ["─"] if len(group) == 1 else ["┬", *["├"] * (len(group) - 2), "└"]
            out.extend((member, mark, len(group)) for member, mark in zip(group, marks, strict=True))
    return out


def shown_state(lane: LaneStatus) -> str:
    """`corrupt` for a lane whose record cannot be read (its status keeps a contract state); the
    "why" column and the tooltip then carry the problem and its fix."""
    return "corrupt" if lane.problem else (lane.state or "?")


def lock_waiting(lane: LaneStatus) -> bool:
    """A running lane held back by a heavy slot: the state says `running`, the why says it is not."""
    return lane.state == "running" and bool(lane.lock_wait) and not lane.problem


def why(lane: LaneStatus) -> str:
    """The problem of an unreadable record, else an open lock wait of a running lane, else the reason."""
    if lane.problem:
        return lane.problem
    if lock_waiting(lane) and lane.lock_wait:
        return lane.lock_wait
    return lane.state_reason


def _node(lane: LaneStatus) -> str | None:
    """The cluster node of a lane that runs elsewhere (`hostname (node id)`), None for a local lane.
    Read by name: a status without the runner fields (an older engine) is a local lane."""
    node = getattr(lane, "node", None)
    if getattr(lane, "runner", "local") == "local" or not isinstance(node, str) or not node:
        return None
    return node


def where(lane: LaneStatus) -> str:
    """`@host: ` before the why of a lane on a cluster node (its hostname: the node id is in the tooltip)."""
    node = _node(lane)
    return f"@{node.split(' (', 1)[0]}: " if node else ""


def node_note(lane: LaneStatus) -> str:
    """The lane's cluster node for the tooltip, in full."""
    node = _node(lane)
    return f"; on node {node}" if node else ""


def radar(lane: LaneStatus) -> Cell:
    """`✗N`: a trial merge conflicts (with N lanes, the target counting as one); else `~N`: N lanes share files."""
    blocking = {str(c.get("lane") or "") for c in lane.conflicts if c.get("kind") in ("target", "merge")}
    if blocking:
        return Cell(f"✗{len(blocking)}", "error")
    sharing = {str(c.get("lane")) for c in lane.conflicts if c.get("kind") == "overlap"}
    return Cell(f"~{len(sharing)}", "warning") if sharing else Cell("")


def context(lane: LaneStatus) -> Cell:
    """`63%` full; a warning once a live lane is near its limit (an ended one needs nothing); `–`
    where the provider reports no context. Read by name: an older engine's status has no meter."""
    meter = getattr(lane, "context", None)
    if meter is None:
        return Cell("–", "dim", right=True)
    return Cell(f"{meter.fraction:.0%}", "warning" if meter.near and lane.live else "", right=True)


def context_note(lane: LaneStatus) -> str:
    """The context meter for the tooltip: used and window in tokens, and the threshold once reached."""
    meter = getattr(lane, "context", None)
    if meter is None:
        return ""
    near = f", at or past the {meter.warn:.0%} warning" if meter.near else ""
    return (f"\ncontext: {fmt.tokens(meter.used)} of {fmt.tokens(meter.window)} tokens "
            f"({meter.fraction:.0%}){near}")


def radar_note(lane: LaneStatus) -> str:
    """The radar's findings for the tooltip, one clause each: what, with whom, in which files."""
    what = {"target": "merge into {target} conflicts", "merge": "merge with {lane} conflicts",
            "overlap": "same files as {lane}"}
    notes = [what[str(c.get("kind"))].format(lane=c.get("lane"), target=c.get("target") or "the target")
             + ": " + ", ".join(str(f) for f in c.get("files") or ()) for c in lane.conflicts if c.get("kind") in what]
    return "\nradar: " + "; ".join(notes) if notes else ""


def review_note(lane: LaneStatus) -> str:
    """The review verdict for the tooltip (the column shows only its mark)."""
    return f"\nreview: {lane.review}" if lane.review else ""


def group_note(lane: LaneStatus, size: int) -> str:
    """The best-of group for the tooltip: its id, and the lane's rank once every lane of it has ended."""
    if not lane.group:
        return ""
    place = f"rank {lane.rank} of {size}" if lane.rank else "not ranked until every lane of it has ended"
    return f"\nbest-of group {lane.group}: {place}"


def provider_model(lane: LaneStatus) -> str:
    provider = lane.provider or "-"
    return f"{provider}:{lane.model}" if lane.model else provider
