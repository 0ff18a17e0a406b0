"""The "Stalls & caps" pane: lanes going quiet before the watchdog fires, lanes it stopped, and
lanes a governor cap stopped.

A live lane (`running`/`launching`) whose idle time passed the warning threshold is listed as
"quiet" so the lead can look before an hour is wasted; a `stalled` lane carries the watchdog's
report (`status.stall`, a `StallReport`: idle seconds and the process tree it killed; what a hand-edited
report got wrong is in its tooltip). A lane a cap stopped
(`FAILED-RESOURCE`, `status.fired`) is a finding too — which cap, its value, the peak and what was
killed — listed until the lead settles or relaunches it, so "it died" is never a mystery. A
`waiting` lane is never listed: it waits for the lead, not the other way round, and neither is a lane
relaunched as a newer attempt (`superseded_by`): the new attempt is the one to watch.

The idle column ticks (`tick`, once a second from the screen): a quiet lane's idle counts on from the
sample that reported it, a stopped lane's from its report's idle at the time its record was written, so
the lead sees how long each has waited without a repaint of the rows that did not change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

from textual.content import Content

from lanes_tui.widgets import _format as fmt
from lanes_tui.widgets._keyed_table import Cell, KeyedTable, Row

if TYPE_CHECKING:  # widgets are given statuses; they never load the engine to get them
    from lanes_tui.engine import LaneStatus, SampledProc

WATCHED_STATES = frozenset({"running", "launching"})
#: A fired cap stops being a finding to show once the lead has settled the lane.
SETTLED_STATES = frozenset({"accepted", "abandoned"})


class StallsPane(KeyedTable):
    """Quiet, stalled and cap-stopped lanes keyed by lane id, stopped ones first, then the longest idle."""

    COLUMNS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("lane", "lane"), ("status", "status"), ("idle", "idle"), ("procs", "processes / cap"),
    )
    TITLE: ClassVar[str] = "Stalls & caps"

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._trees: dict[str, str] = {}
        self._idle: dict[str, tuple[float, float]] = {}
        """Lane id → (idle seconds, the wall-clock time they were true at): what `tick` counts on from."""

    @property
    def selected_lane(self) -> str | None:
        return self.selected_key

    @property
    def count(self) -> int:
        """How many lanes are listed, for the attention bar."""
        return len(self._cells)

    def sync(self, lanes: Sequence[LaneStatus], warn_after_s: float | None, now: float | None = None) -> None:
        """Pick the quiet, stalled and cap-stopped lanes out of all lane statuses.

        `warn_after_s` None (or 0) lists only the stopped ones, e.g. when the watchdog is off. With `now`
        (wall-clock seconds) the idle times count on from when they were true (`tick`); without, they
        are shown as given.
        """
        found: list[tuple[bool, float, LaneStatus]] = []
        for lane in lanes:
            if lane.superseded_by:
                continue
            if lane.state == "stalled":
                idle = lane.stall.idle_s if lane.stall is not None and lane.stall.idle_s is not None else lane.idle_s
                found.append((True, float(idle or 0.0), lane))
            elif _cap_fired(lane):
                found.append((True, 0.0, lane))
            elif lane.state in WATCHED_STATES and warn_after_s and (lane.idle_s or 0.0) >= warn_after_s:
                found.append((False, float(lane.idle_s or 0.0), lane))
        found.sort(key=lambda item: (not item[0], -item[1], item[2].id))
        rows: list[Row] = []
        self._trees = {}
        anchors = self._idle
        self._idle = {}
        for stopped, idle, lane in found:
            lane_id = lane.id
            if lane.state != "stalled" and lane.fired:
                self._trees[lane_id] = _fired_details(lane.fired)
                rows.append((lane_id, _fired_row(lane_id, lane.fired)))
                continue
            if now is not None:
                known = anchors.get(lane_id)
                if stopped and lane.updated:  # the report's idle was true when the record was written
                    self._idle[lane_id] = (idle, lane.updated)
                elif known is not None and known[0] == idle:  # the same sample again: count on
                    self._idle[lane_id] = known
                else:  # a new sample's idle is true from when it is first seen
                    self._idle[lane_id] = (idle, now)
                base, since = self._idle[lane_id]
                idle = base + max(0.0, now - since)
            tree = _tree(lane)
            lines = [_proc_line(p, full=True) for p in tree] or ["no process tree recorded"]
            if lane.stall is not None and lane.stall.problems:  # a hand edit: say what was left out
                lines += ["stall report: " + fmt.clean_text(problem) for problem in lane.stall.problems]
            self._trees[lane_id] = "\n".join(lines)
            rows.append((lane_id, self._row(lane_id, stopped, idle, lane, tree)))
        self._apply(rows)
        self._set_tooltip()

    def tick(self, now: float) -> None:
        """The clock moved to `now`: rewrite only the idle cells whose text changed (one row each)."""
        for lane_id, (base, since) in self._idle.items():
            self._update_cells(lane_id, {"idle": _idle_cell(base + max(0.0, now - since))})

    def _row(self, lane_id: str, stopped: bool, idle: float, lane: LaneStatus,
             tree: Sequence[SampledProc]) -> tuple[Cell, ...]:
        if stopped:
            limit = lane.stall.idle_timeout_s if lane.stall is not None else None
            label = "stopped by watchdog" + (f" ({fmt.duration(limit)} limit)" if limit else "")
            status = Cell(label, "error", bold=True)
        else:
            status = Cell("quiet", "warning")
        if tree:
            procs = fmt.truncate(" · ".join(_proc_line(p) for p in tree), 80)
        else:
            count = lane.procs
            procs = f"{count} process{'es' if count != 1 else ''}" if count else "tree unknown"
        return (Cell(lane_id), status, _idle_cell(idle), Cell(procs))

    def _selection_changed(self, key: str | None) -> None:
        self._set_tooltip()

    def _set_tooltip(self) -> None:
        """The full process tree (with command lines) of the highlighted lane, or its cap's finding."""
        tree = self._trees.get(self.selected_key or "")
        # Content, not str: a str tooltip is parsed as markup, and command lines contain brackets.
        self.tooltip = Content(tree) if tree else None


def _idle_cell(idle: float) -> Cell:
    return Cell(fmt.duration(idle), right=True)


def _cap_fired(lane: LaneStatus) -> bool:
    """A cap stopped this lane and the lead has not settled or relaunched it yet."""
    return bool(lane.fired) and lane.state not in SETTLED_STATES and not lane.superseded_by


def _fired_row(lane_id: str, fired: Mapping[str, str]) -> tuple[Cell, ...]:
    """`memory cap 256 MiB` · `peak 255 MiB · killed python3 (pid 123, 250 MiB)`."""
    cap = fired.get("cap") or "?"
    status = Cell(f"{cap} cap" + (f" {fired['value']}" if fired.get("value") else ""), "error", bold=True)
    details = [f"peak {fired['peak']}" if fired.get("peak") else "",
               f"killed {fired['killed']}" if fired.get("killed") else ""]
    shown = " · ".join(d for d in details if d) or fired.get("reason") or "stopped by its cap"
    return (Cell(lane_id), status, Cell(""), Cell(fmt.truncate(fmt.clean_text(shown), 80)))


def _fired_details(fired: Mapping[str, str]) -> str:
    """The tooltip: every part of the finding, one a line (a hand-edited record may hold controls)."""
    names = (("cap", "cap"), ("value", "value"), ("peak", "peak"), ("mechanism", "enforced by"),
             ("killed", "killed"), ("reason", "why"))
    return "\n".join(f"{label}: {fmt.clean_text(fired[key])}" for key, label in names if fired.get(key))


def _tree(lane: LaneStatus) -> Sequence[SampledProc]:
    """The stall report's tree, else a tree the status carries for a live lane, else nothing."""
    tree = lane.stall.tree if lane.stall is not None else ()
    return tree or lane.tree or ()


def _proc_line(proc: SampledProc, *, full: bool = False) -> str:
    """`1234 python 3.2s 41M` (and its command line in the tooltip)."""
    text = f"{proc.pid} {proc.name or '?'}"
    if proc.cpu_s is not None:
        text += f" {float(proc.cpu_s):.1f}s"
    if proc.rss:
        text += f" {fmt.size(proc.rss)}"
    if full and proc.cmdline:
        text += f"  {fmt.truncate(fmt.clean_text(proc.cmdline), 200)}"
    return text
