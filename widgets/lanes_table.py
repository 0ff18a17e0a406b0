"""The Lanes pane: one row per lane, built from the status dicts of `engine.status.lane_status`.

Rows are keyed by lane id and diff-updated (see `_keyed_table`), so a refresh every tick costs only
the cells that changed; meter ticks (`update_meters`) touch three cells of one row. The state cell
is coloured from the theme, and the "why" column is the state's reason (`state_reason`): the lead
sees not only that a lane is `rejected` but where that came from. A lane whose record cannot be read
(`LaneStatus.problem`) shows as `corrupt`, with the problem and its fix as the why; a running lane
whose `lanes-tui lock` waits for a heavy slot (`LaneStatus.lock_wait`) shows that wait as its why.
The "radar" column marks lanes the conflict radar flagged (`LaneStatus.conflicts`): `✗N` when a trial
merge conflicts (N: with how many lanes or the target), else `~N` when it shares files with N lanes. It
is kept narrow so the "why" stays in view; the row's tooltip and the Conflicts dialog (`c`) name them.
The "rev" column is the lane's review verdict (`LaneStatus.review`) as one mark for the same reason:
`✓` CLEAN, `✗` BLOCKING, `?` MISSING, blank before any review; the tooltip spells it out.
The "ctx" column is how full the agent's context window is (`LaneStatus.context`: `63%`), in the
warning tone while a live lane is at or past its threshold (`[lanes] context_warn`, 85 % by default);
`–` where the provider reports no such figure. The tooltip gives the tokens and the window.
The lanes of a best-of-N group (`LaneStatus.group`) are shown together, best rank first, where the
group's first lane would be, tied by a bracket in the id cell (`┬ ├ └`) and suffixed `#rank` once the
group is ranked; the tooltip names the group. That reordering is display only: the lanes keep their keys.
A lane on a cluster node (`runner` "ray") has the node's host before its why (`@host: …`) and the
full node (`host (node id)`) in the tooltip: the lead sees where an `unreachable` or `lost` lane ran
(the state is coloured as a warning, as `_format.STATE_TONE` says).

For many lanes (`widgets._lane_order`): `cycle_sort` orders them oldest first (the default), by
attention (waiting and stalled first, then rejected / conflict / lost, then ready, then running, then
the rest), newest first or by id, a best-of group moving as one block; `set_filter` keeps the lanes
whose id, task, state or provider hold every word typed; and a lane whose state changed since the
lead last selected it, into one that may need them (not back to running), has a `•` before its id
until it is selected again. What was seen is kept in memory for this dashboard session: at its start
every lane counts as seen.

Marks (`toggle_mark`, space in the dashboard) pick lanes for one message to several (`T`): a marked
lane has a `✓` before its id and the title counts them; a lane that is gone loses its mark.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from textual.content import Content
from textual.message import Message

from lanes_tui.widgets import _format as fmt
from lanes_tui.widgets import _lane_cells as lane_cells
from lanes_tui.widgets import _lane_order as order
from lanes_tui.widgets._keyed_table import Cell, KeyedTable, Row

if TYPE_CHECKING:  # widgets are given statuses; they never load the engine to get them
    from lanes_tui.engine import LaneStatus, MeterSample


class LanesTable(KeyedTable):
    """The lanes, keyed by lane id; `sync` with every status list, `update_meters` with each sample."""

    COLUMNS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("id", "lane"), ("task", "task"), ("provider", "provider:model"), ("state", "state"), ("review", "rev"),
        ("attempt", "att"), ("elapsed", "elapsed"), ("idle", "idle"), ("cpu", "CPU %"), ("rss", "RSS"),
        ("tokens", "tokens"), ("cost", "cost"), ("context", "ctx"), ("radar", "radar"), ("why", "why"),
    )
    """"why" (the state's reason) comes last: it is the longest, and the one to cut on a narrow screen."""
    TITLE: ClassVar[str] = "Lanes"
    #: The columns a narrow terminal keeps (`show_columns`): which lane, its state, and why. Below
    #: 100 columns only these fit; up to 120 the clocks fit too (`app/dashboard/compact.py` decides).
    NARROW_COLUMNS: ClassVar[tuple[str, ...]] = ("id", "state", "why")
    MEDIUM_COLUMNS: ClassVar[tuple[str, ...]] = ("id", "state", "elapsed", "idle", "why")

    @dataclass
    class LaneSelected(Message):
        """The highlighted lane changed; `lane_id` is None when the table became empty."""

        lane_id: str | None

        def can_replace(self, message: Message) -> bool:
            """Holding an arrow key: only the lane the cursor stops on needs its output loaded."""
            return isinstance(message, LanesTable.LaneSelected)

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._states: dict[str, tuple[str, str]] = {}
        """Lane id → (state, state_reason), for the tooltip."""
        self.sort_mode = order.SORT_MODES[0]
        self.filter_text = ""
        self._seen: dict[str, str] = {}
        """Lane id → its state when the lead last selected it (or first saw it: `_lane_order.seen_state`)."""
        self._lanes: list[LaneStatus] = []
        self.marked: dict[str, None] = {}
        """The marked lanes, in the order they were marked (a dict: ordered, one entry each)."""
        self._now = 0.0
        self._shown_title = ""
        """The border title last set: setting one repaints the whole table, even to the same text."""
        self._built: dict[str, tuple[LaneStatus, str, int, tuple[Cell, ...], tuple[str, str]]] = {}
        """Lane id → (status, mark, group size, cells, tooltip state) of the last sync: a status object
        seen again is not formatted again (a sync of 100 unchanged lanes cost 5 ms, every engine tick)."""

    @property
    def selected_lane(self) -> str | None:
        """The lane id under the cursor, or None when there are no lanes."""
        return self.selected_key

    @property
    def unseen(self) -> list[str]:
        """The lanes marked `•`: their state changed since the lead last selected them."""
        return [lane.id for lane in self._lanes if self._is_unseen(lane)]

    def sync(self, lanes: Sequence[LaneStatus], now: float) -> None:
        """Show these lanes, filtered and in the sort order (oldest first, as given, by default; a
        best-of group's lanes moved together); `now` is wall-clock seconds (for elapsed)."""
        self._lanes, self._now = list(lanes), now
        for lane in self._lanes:
            self._seen.setdefault(lane.id, order.seen_state(lane))  # first sight is the baseline
        self._show_rows()

    def forget_seen(self) -> None:
        """The next `sync` is first sight again: the dashboard's first look from disk is replaced by
        the engine's reconciled picture, which is the baseline a lane's change is measured from."""
        self._seen = {}

    @property
    def marked_lanes(self) -> list[str]:
        """The marked lanes that still exist, in the order they were marked."""
        known = {lane.id for lane in self._lanes}
        return [lane_id for lane_id in self.marked if lane_id in known]

    def toggle_mark(self, lane_id: str) -> bool:
        """Mark the lane, or unmark it; returns whether it is marked now."""
        if lane_id in self.marked:
            del self.marked[lane_id]
        else:
            self.marked[lane_id] = None
        self._show_rows()
        return lane_id in self.marked

    def clear_marks(self) -> None:
        if self.marked:
            self.marked = {}
            self._show_rows()

    def cycle_sort(self) -> str:
        """The next sort order (`_lane_order.SORT_MODES`); returns its name."""
        modes = order.SORT_MODES
        self.sort_mode = modes[(modes.index(self.sort_mode) + 1) % len(modes)]
        self._show_rows()
        return self.sort_mode

    def set_filter(self, text: str) -> None:
        """Keep only the lanes whose id, task, state or provider hold every word of `text` ("": all)."""
        self.filter_text = text.strip()
        self._show_rows()

    def _show_rows(self) -> None:
        if self.selected_key is not None and (lane := self._lane(self.selected_key)) is not None:
            self._seen[lane.id] = order.seen_state(lane)  # under the cursor: the lead is looking at it
        lanes = [lane for lane in self._lanes if not self.filter_text
                 or order.matches(lane, self.filter_text, lane_cells.shown_state(lane),
                                  lane_cells.provider_model(lane))]
        if self.sort_mode != order.SORT_MODES[0]:
            lanes = order.ordered(lanes, self.sort_mode)
        present = {lane.id for lane in self._lanes}
        self.marked = {lane_id: None for lane_id in self.marked if lane_id in present}
        flagged = bool(self.marked) or any(self._is_unseen(lane) for lane in lanes)
        rows: list[Row] = []
        self._states = {}
        built: dict[str, tuple[LaneStatus, str, int, tuple[Cell, ...], tuple[str, str]]] = {}
        for lane, mark, size in lane_cells.grouped(lanes):
            known = self._built.get(lane.id)
            if known is not None and known[0] is lane and known[1] == mark and known[2] == size:
                cells, state = known[3], known[4]  # the same status object: only elapsed can differ
                cells = (*cells[:ELAPSED], lane_cells.elapsed(lane, self._now), *cells[ELAPSED + 1:])
            else:
                cells = self._row(lane, self._now, mark)
                state = (lane_cells.shown_state(lane),
                         lane_cells.why(lane) + lane_cells.context_note(lane) + lane_cells.radar_note(lane)
                         + lane_cells.review_note(lane) + lane_cells.group_note(lane, size)
                         + lane_cells.node_note(lane))
            built[lane.id] = (lane, mark, size, cells, state)
            self._states[lane.id] = state
            if flagged:
                flag = "✓ " if lane.id in self.marked else "• " if self._is_unseen(lane) else "  "
                cells = (Cell(flag + cells[0].text, cells[0].tone, bold=cells[0].bold), *cells[1:])
            rows.append((lane.id, cells))
        self._built = built
        self._apply(rows)
        self._set_tooltip()
        title = self._title(len(lanes))
        if title != self._shown_title:
            self._shown_title = self.border_title = title

    def _title(self, shown: int) -> str:
        """`Lanes`, plus the sort order and the filter when they are not the defaults."""
        parts = [self.TITLE]
        if self.sort_mode != order.SORT_MODES[0]:
            parts.append(f"by {self.sort_mode}")
        if self.filter_text:
            parts.append(f"/{self.filter_text} {shown} of {len(self._lanes)}")
        if self.marked:
            parts.append(f"{len(self.marked)} marked: T sends to them")
        return " · ".join(parts)

    def _lane(self, lane_id: str) -> LaneStatus | None:
        return next((lane for lane in self._lanes if lane.id == lane_id), None)

    def _is_unseen(self, lane: LaneStatus) -> bool:
        return order.changed_since(lane, self._seen.get(lane.id))

    def update_meters(self, lane_id: str, sample: MeterSample) -> None:
        """A watchdog sample for one lane: only its idle, CPU % and RSS cells change."""
        if lane_id not in self._cells:
            return
        rss = sample.rss_bytes
        self._update_cells(lane_id, {
            "idle": Cell(fmt.duration(sample.idle_s), right=True),
            "cpu": Cell(fmt.percent(sample.cpu_percent), right=True),
            "rss": Cell(fmt.size(rss) if rss else "", right=True),
        })

    def _row(self, lane: LaneStatus, now: float, mark: str = "") -> tuple[Cell, ...]:
        """The cells of one lane; `mark` is its place in a best-of group's bracket ("" for none)."""
        state = lane_cells.shown_state(lane)
        live = lane.live
        rss = lane.rss_bytes
        return (
            Cell(f"{mark} {lane_cells.short_id(lane.id)}" + (f" #{lane.rank}" if lane.rank else "") if mark
                 else lane_cells.short_id(lane.id), bold=lane.rank == 1),
            Cell(fmt.truncate(lane.task, 18)),
            Cell(fmt.truncate(lane_cells.provider_model(lane), 22)),
            Cell(state, "error" if lane.problem else fmt.STATE_TONE.get(state, "")),
            Cell(*lane_cells.REVIEW_MARKS.get(lane.review or "", ("", ""))),
            Cell(str(lane.attempt or ""), right=True),
            lane_cells.elapsed(lane, now),
            Cell(fmt.duration(lane.idle_s) if live else "", right=True),
            Cell(fmt.percent(lane.cpu_percent) if live else "", right=True),
            Cell(fmt.size(rss) if live and rss else "", right=True),
            Cell(fmt.tokens(lane.tokens), right=True),
            Cell(fmt.cost(lane.cost_usd, lane.cost_estimated), right=True),
            lane_cells.context(lane),
            lane_cells.radar(lane),
            Cell(fmt.truncate(lane_cells.where(lane) + lane_cells.why(lane), 48),
                 "warning" if lane_cells.lock_waiting(lane) or lane.state == "unreachable" else ""),
        )

    def _selection_changed(self, key: str | None) -> None:
        self._set_tooltip()
        self.post_message(self.LaneSelected(key))
        lane = self._lane(key) if key is not None else None
        if lane is not None and self._is_unseen(lane):
            self._show_rows()  # selected: seen now, its mark goes

    def _set_tooltip(self) -> None:
        """The full reason of the highlighted lane, since the "why" column is cut short."""
        state, reason = self._states.get(self.selected_key or "", ("", ""))
        # Content, not str: a str tooltip is parsed as markup, and reasons quote commands.
        key = self.selected_key or ""
        named = f"{key}\n" if len(key) > lane_cells.MAX_ID_WIDTH else ""  # the id cut in its column, in full
        self.tooltip = Content(f"{named}{state}: {reason}") if state else None


#: Where the elapsed cell is in a row (`COLUMNS`): the one cell that changes with the clock alone.
ELAPSED = [key for key, _ in LanesTable.COLUMNS].index("elapsed")
