"""The Stalls pane: lanes going quiet before the watchdog fires, and lanes it stopped.

A live lane (`running`/`launching`) whose idle time passed the warning threshold is listed as
"quiet" so the lead can look before an hour is wasted; a `stalled` lane carries the watchdog's
report (`status["stall"]`: idle seconds and the process tree it killed). A `waiting` lane is never
listed: it waits for the lead, not the other way round.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from textual.content import Content

from lanes_tui.widgets import _format as fmt
from lanes_tui.widgets._keyed_table import Cell, KeyedTable, Row

if TYPE_CHECKING:  # widgets are given statuses; they never load the engine to get them
    from lanes_tui.engine import LaneStatus

WATCHED_STATES = frozenset({"running", "launching"})


class StallsPane(KeyedTable):
    """Quiet and stalled lanes keyed by lane id, stopped ones first, then the longest idle."""

    COLUMNS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("lane", "lane"), ("status", "status"), ("idle", "idle"), ("procs", "processes"),
    )
    TITLE: ClassVar[str] = "Stalls"

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._trees: dict[str, str] = {}

    @property
    def selected_lane(self) -> str | None:
        return self.selected_key

    @property
    def count(self) -> int:
        """How many lanes are listed, for the attention bar."""
        return len(self._cells)

    def sync(self, lanes: Sequence[LaneStatus], warn_after_s: float | None) -> None:
        """Pick the quiet and stalled lanes out of all lane statuses.

        `warn_after_s` None (or 0) lists only the stalled ones, e.g. when the watchdog is off.
        """
        found: list[tuple[bool, float, LaneStatus]] = []
        for lane in lanes:
            if lane.state == "stalled":
                idle = (lane.stall or {}).get("idle_s", lane.idle_s)
                found.append((True, float(idle or 0.0), lane))
            elif lane.state in WATCHED_STATES and warn_after_s and (lane.idle_s or 0.0) >= warn_after_s:
                found.append((False, float(lane.idle_s or 0.0), lane))
        found.sort(key=lambda item: (not item[0], -item[1], item[2].id))
        rows: list[Row] = []
        self._trees = {}
        for stopped, idle, lane in found:
            lane_id = lane.id
            tree = _tree(lane)
            self._trees[lane_id] = "\n".join(_proc_line(p, full=True) for p in tree) or "no process tree recorded"
            rows.append((lane_id, self._row(lane_id, stopped, idle, lane, tree)))
        self._apply(rows)
        self._set_tooltip()

    def _row(self, lane_id: str, stopped: bool, idle: float, lane: LaneStatus,
             tree: Sequence[Mapping[str, Any]]) -> tuple[Cell, ...]:
        if stopped:
            limit = (lane.stall or {}).get("idle_timeout_s")
            label = "stopped by watchdog" + (f" ({fmt.duration(limit)} limit)" if limit else "")
            status = Cell(label, "error", bold=True)
        else:
            status = Cell("quiet", "warning")
        if tree:
            procs = fmt.truncate(" · ".join(_proc_line(p) for p in tree), 80)
        else:
            count = lane.procs
            procs = f"{count} process{'es' if count != 1 else ''}" if count else "tree unknown"
        return (Cell(lane_id), status, Cell(fmt.duration(idle), right=True), Cell(procs))

    def _selection_changed(self, key: str | None) -> None:
        self._set_tooltip()

    def _set_tooltip(self) -> None:
        """The full process tree (with command lines) of the highlighted lane."""
        tree = self._trees.get(self.selected_key or "")
        # Content, not str: a str tooltip is parsed as markup, and command lines contain brackets.
        self.tooltip = Content(tree) if tree else None


def _tree(lane: LaneStatus) -> list[Mapping[str, Any]]:
    """The stall report's tree, else a tree the status carries for a live lane, else nothing."""
    tree = lane.stall.get("tree") if isinstance(lane.stall, Mapping) else None
    if not tree:
        tree = lane.tree
    return [p for p in tree or () if isinstance(p, Mapping)]


def _proc_line(proc: Mapping[str, Any], *, full: bool = False) -> str:
    """`1234 python 3.2s 41M` (and its command line in the tooltip)."""
    cpu = proc.get("cpu_s")
    text = f"{proc.get('pid')} {proc.get('name') or '?'}"
    if cpu is not None:
        text += f" {float(cpu):.1f}s"
    if proc.get("rss"):
        text += f" {fmt.size(proc.get('rss'))}"
    if full and proc.get("cmdline"):
        text += f"  {fmt.truncate(fmt.clean_text(str(proc['cmdline'])), 200)}"
    return text
