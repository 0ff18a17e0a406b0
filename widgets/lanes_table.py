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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from textual.content import Content
from textual.message import Message

from lanes_tui.widgets import _format as fmt
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
                 or order.matches(lane, self.filter_text, _shown_state(lane), _provider_model(lane))]
        if self.sort_mode != order.SORT_MODES[0]:
            lanes = order.ordered(lanes, self.sort_mode)
        present = {lane.id for lane in self._lanes}
        self.marked = {lane_id: None for lane_id in self.marked if lane_id in present}
        flagged = bool(self.marked) or any(self._is_unseen(lane) for lane in lanes)
        rows: list[Row] = []
        self._states = {}
        built: dict[str, tuple[LaneStatus, str, int, tuple[Cell, ...], tuple[str, str]]] = {}
        for lane, mark, size in _grouped(lanes):
            known = self._built.get(lane.id)
            if known is not None and known[0] is lane and known[1] == mark and known[2] == size:
                cells, state = known[3], known[4]  # the same status object: only elapsed can differ
                cells = (*cells[:ELAPSED], _elapsed(lane, self._now), *cells[ELAPSED + 1:])
            else:
                cells = self._row(lane, self._now, mark)
                state = (_shown_state(lane), _why(lane) + _context_note(lane) + _radar_note(lane)
                         + _review_note(lane) + _group_note(lane, size) + _node_note(lane))
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
        state = _shown_state(lane)
        live = lane.live
        rss = lane.rss_bytes
        return (
            Cell(f"{mark} {_short_id(lane.id)}" + (f" #{lane.rank}" if lane.rank else "") if mark
                 else _short_id(lane.id), bold=lane.rank == 1),
            Cell(fmt.truncate(lane.task, 18)),
            Cell(fmt.truncate(_provider_model(lane), 22)),
            Cell(state, "error" if lane.problem else fmt.STATE_TONE.get(state, "")),
            Cell(*REVIEW_MARKS.get(lane.review or "", ("", ""))),
            Cell(str(lane.attempt or ""), right=True),
            _elapsed(lane, now),
            Cell(fmt.duration(lane.idle_s) if live else "", right=True),
            Cell(fmt.percent(lane.cpu_percent) if live else "", right=True),
            Cell(fmt.size(rss) if live and rss else "", right=True),
            Cell(fmt.tokens(lane.tokens), right=True),
            Cell(fmt.cost(lane.cost_usd, lane.cost_estimated), right=True),
            _context(lane),
            _radar(lane),
            Cell(fmt.truncate(_where(lane) + _why(lane), 48),
                 "warning" if _lock_waiting(lane) or lane.state == "unreachable" else ""),
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
        named = f"{key}\n" if len(key) > MAX_ID_WIDTH else ""  # the id cut in its column, in full
        self.tooltip = Content(f"{named}{state}: {reason}") if state else None


#: The widest lane id the `lane` column shows whole: one long id does not widen it for every row. A longer
#: one is cut with `…`; the tooltip and the Output tab name it in full.
MAX_ID_WIDTH = 28


def _short_id(lane_id: str) -> str:
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


#: Where the elapsed cell is in a row (`COLUMNS`): the one cell that changes with the clock alone.
ELAPSED = [key for key, _ in LanesTable.COLUMNS].index("elapsed")


def _elapsed(lane: LaneStatus, now: float) -> Cell:
    """Time since the lane was created: up to now while it is live, up to its last update after."""
    if not lane.created:
        return Cell("", right=True)
    end = now if lane.live else (lane.updated or now)
    return Cell(fmt.elapsed(end - lane.created), right=True)


#: The review column: a verdict's mark and its theme tone (the tooltip spells the verdict out).
REVIEW_MARKS: Mapping[str, tuple[str, str]] = {
    "CLEAN": ("✓", "success"), "BLOCKING": ("✗", "error"), "MISSING": ("?", "warning"),
}


def _grouped(lanes: Sequence[LaneStatus]) -> list[tuple[LaneStatus, str, int]]:
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


def _shown_state(lane: LaneStatus) -> str:
    """`corrupt` for a lane whose record cannot be read (its status keeps a contract state); the
    "why" column and the tooltip then carry the problem and its fix."""
    return "corrupt" if lane.problem else (lane.state or "?")


def _lock_waiting(lane: LaneStatus) -> bool:
    """A running lane held back by a heavy slot: the state says `running`, the why says it is not."""
    return lane.state == "running" and bool(lane.lock_wait) and not lane.problem


def _why(lane: LaneStatus) -> str:
    """The problem of an unreadable record, else an open lock wait of a running lane, else the reason."""
    if lane.problem:
        return lane.problem
    if _lock_waiting(lane) and lane.lock_wait:
        return lane.lock_wait
    return lane.state_reason


def _node(lane: LaneStatus) -> str | None:
    """The cluster node of a lane that runs elsewhere (`hostname (node id)`), None for a local lane.
    Read by name: a status without the runner fields (an older engine) is a local lane."""
    node = getattr(lane, "node", None)
    if getattr(lane, "runner", "local") == "local" or not isinstance(node, str) or not node:
        return None
    return node


def _where(lane: LaneStatus) -> str:
    """`@host: ` before the why of a lane on a cluster node (its hostname: the node id is in the tooltip)."""
    node = _node(lane)
    return f"@{node.split(' (', 1)[0]}: " if node else ""


def _node_note(lane: LaneStatus) -> str:
    """The lane's cluster node for the tooltip, in full."""
    node = _node(lane)
    return f"; on node {node}" if node else ""


def _radar(lane: LaneStatus) -> Cell:
    """`✗N`: a trial merge conflicts (with N lanes, the target counting as one); else `~N`: N lanes share files."""
    blocking = {str(c.get("lane") or "") for c in lane.conflicts if c.get("kind") in ("target", "merge")}
    if blocking:
        return Cell(f"✗{len(blocking)}", "error")
    sharing = {str(c.get("lane")) for c in lane.conflicts if c.get("kind") == "overlap"}
    return Cell(f"~{len(sharing)}", "warning") if sharing else Cell("")


def _context(lane: LaneStatus) -> Cell:
    """`63%` full; a warning once a live lane is near its limit (an ended one needs nothing); `–`
    where the provider reports no context. Read by name: an older engine's status has no meter."""
    meter = getattr(lane, "context", None)
    if meter is None:
        return Cell("–", "dim", right=True)
    return Cell(f"{meter.fraction:.0%}", "warning" if meter.near and lane.live else "", right=True)


def _context_note(lane: LaneStatus) -> str:
    """The context meter for the tooltip: used and window in tokens, and the threshold once reached."""
    meter = getattr(lane, "context", None)
    if meter is None:
        return ""
    near = f", at or past the {meter.warn:.0%} warning" if meter.near else ""
    return (f"\ncontext: {fmt.tokens(meter.used)} of {fmt.tokens(meter.window)} tokens "
            f"({meter.fraction:.0%}){near}")


def _radar_note(lane: LaneStatus) -> str:
    """The radar's findings for the tooltip, one clause each: what, with whom, in which files."""
    what = {"target": "merge into {target} conflicts", "merge": "merge with {lane} conflicts",
            "overlap": "same files as {lane}"}
    notes = [what[str(c.get("kind"))].format(lane=c.get("lane"), target=c.get("target") or "the target")
             + ": " + ", ".join(str(f) for f in c.get("files") or ()) for c in lane.conflicts if c.get("kind") in what]
    return "\nradar: " + "; ".join(notes) if notes else ""


def _review_note(lane: LaneStatus) -> str:
    """The review verdict for the tooltip (the column shows only its mark)."""
    return f"\nreview: {lane.review}" if lane.review else ""


def _group_note(lane: LaneStatus, size: int) -> str:
    """The best-of group for the tooltip: its id, and the lane's rank once every lane of it has ended."""
    if not lane.group:
        return ""
    place = f"rank {lane.rank} of {size}" if lane.rank else "not ranked until every lane of it has ended"
    return f"\nbest-of group {lane.group}: {place}"


def _provider_model(lane: LaneStatus) -> str:
    provider = lane.provider or "-"
    return f"{provider}:{lane.model}" if lane.model else provider
