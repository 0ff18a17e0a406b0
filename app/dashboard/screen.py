"""The dashboard screen: every pane on one screen, fed by the engine bridge.

The screen owns the panes and the keys; decisions (accept, abandon, …) live in `app/dashboard/flows.py`.
Polls (machine meters, worktrees) reschedule themselves after finishing, so they never overlap, and
skip their work while a modal is open.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any, ClassVar, cast

from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.timer import Timer
from textual.widgets import Header, TabbedContent, TabPane

from lanes_tui import widgets  # the later tabs' panes: their modules load after the first frame
from lanes_tui.app.dashboard.ages import AgeClock
from lanes_tui.app.dashboard.comment_flows import CommentFlows
from lanes_tui.app.dashboard.compact import CompactLayout
from lanes_tui.app.dashboard.flows import DecisionFlows
from lanes_tui.app.dashboard.hands import HandsFlows
from lanes_tui.app.dashboard.host import DashboardHost
from lanes_tui.app.dashboard.inbox_flows import InboxFlows
from lanes_tui.app.dashboard.keys import bindings
from lanes_tui.app.dashboard.later_tabs import later_tabs
from lanes_tui.app.dashboard.messages import (
    EngineNoticed,
    GitWatchWarned,
    LanesChanged,
    MetersChanged,
    OutputChanged,
    QuestionsUpdated,
    StallRaised,
)
from lanes_tui.app.dashboard.meters_feed import GovernorCaps, meters_mapping
from lanes_tui.app.dashboard.overview import OverviewFlows
from lanes_tui.app.dashboard.plan_feed import advance_plans, describe_advance, plan_statuses
from lanes_tui.app.dashboard.tail_prefetch import Tail, TailPrefetch
from lanes_tui.engine import LaneStatus, QuestionView
from lanes_tui.fast.screen import FastScreen
from lanes_tui.widgets import (
    AttentionBar,
    InboxPane,
    KeysFooter,
    LanesTable,
    MetersPane,
    OutputPane,
    StallsPane,
)

OPEN_STATES = ("open", "answered")


class DashboardScreen(CompactLayout, AgeClock, InboxFlows, HandsFlows, CommentFlows, DecisionFlows, OverviewFlows,
                      FastScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = bindings()  # type: ignore[assignment]
    read_ahead: ClassVar[bool] = True
    """Read the tails of the lanes beside the selected one ahead of the cursor (`app.tail_prefetch`)."""

    def __init__(self, *, machine_every_s: float = 2.0, worktrees_every_s: float = 5.0) -> None:
        super().__init__()
        self.machine_every_s = machine_every_s
        self.worktrees_every_s = worktrees_every_s
        self.lanes: dict[str, LaneStatus] = {}
        self.questions: list[QuestionView] = []
        self._known_questions: set[str] = set()
        self._known_stalls: set[str] = set()
        self._poll_timers: dict[str, Timer] = {}
        self._caps = GovernorCaps()
        self.plans_every_s = 3.0
        """How often the Plan pane (and the takeover count) is refreshed."""
        self.takeover = 0
        """Plan tickets in `takeover`, for the attention bar."""
        self._tails = TailPrefetch(lambda lane_id: self.lanes_app.engine.output_tail_at(lane_id))

    @property
    def lanes_app(self) -> DashboardHost:
        app = self.app
        # Not `isinstance(app, DashboardHost)`: a runtime protocol check reads every member, and
        # reading `engine` builds the engine, which waits until after the first frame (`app.LanesApp`).
        assert hasattr(app, "first_look"), "the dashboard screen runs inside LanesApp"
        return cast(DashboardHost, app)

    def compose(self) -> ComposeResult:
        yield Header()
        yield AttentionBar(id="attention")
        yield LanesTable(id="lanes")
        with Horizontal(id="bottom"):
            with TabbedContent(id="detail", initial="tab-output"):
                with TabPane("Output", id="tab-output"):
                    yield OutputPane(id="output")
                yield from self.side_tabs()  # Inbox, Stalls, Meters as tabs while compact (`compact`)
                yield from later_tabs(now=self.lanes_app.first_look is None)  # Diff, Gates, Worktrees, Plan
            with Vertical(id="side"):
                yield InboxPane(id="inbox")
                yield StallsPane(id="stalls")
                yield MetersPane(id="meters")
        yield KeysFooter()
        yield self.size_notice_widget()

    def on_mount(self) -> None:
        self.query_one("#lanes").border_title = "Lanes"
        remap = self.lanes_app.config.keys  # the lead's `[keys]`: the border names the keys in use
        self.query_one("#lanes").border_subtitle = (f"{remap.get('conflicts', 'c')} conflicts · "
                                                    f"{remap.get('accept_queue', 'm')} accept queue")
        self.query_one("#inbox").border_title = "Inbox"
        self.query_one("#stalls").border_title = "Stalls & caps"
        self.query_one("#meters").border_title = "Meters"
        self.query_one(LanesTable).focus()
        self._start_layout()
        self._start_clock()
        first = self.lanes_app.first_look
        if first is None:  # the engine is up already (one was given to the app)
            self.engine_started()
        else:  # drawn from disk; `engine_started` follows once the engine's first scan is in
            self._apply_lanes(first.lanes)
            self._apply_questions(first.questions, notify=False)

    def engine_started(self) -> None:
        """The engine's picture replaces the first look (`app.LanesApp`), and the polls begin."""
        engine = self.lanes_app.engine
        self.lanes = {}
        self.query_one(LanesTable).forget_seen()
        self._apply_lanes(engine.lanes())
        self._apply_questions(engine.questions(), notify=False)
        self._known_stalls = {lane_id for lane_id, s in self.lanes.items() if s.state == "stalled"}
        self._poll_machine()
        self._poll_worktrees()
        self._poll_plans()

    # engine messages ---------------------------------------------------------------------------
    @on(LanesChanged)
    def _lanes_changed(self, message: LanesChanged) -> None:
        for lane_id in message.removed:
            self.lanes.pop(lane_id, None)
        self._apply_lanes(message.statuses)
        lane = self.selected_lane  # a check just ended: the Gates tab shows its outcome
        if lane and self.query_one(TabbedContent).active == "tab-gates" and any(
                s.id == lane for s in message.statuses):
            self._load_gates(lane)
        if any(q.answered_by == "rule" for q in self.questions):  # shown only while their lane runs
            self._apply_questions(self.questions, notify=False)

    def _apply_lanes(self, statuses: Iterable[LaneStatus]) -> None:
        for status in statuses:
            self.lanes[status.id] = status
        rows = sorted(self.lanes.values(), key=lambda s: (s.created, s.id))
        now = self._now()
        self.query_one(LanesTable).sync(rows, now)
        self.query_one(StallsPane).sync(rows, self.lanes_app.config.lanes.warn_after_s, now)
        self._update_attention()
        if self.lanes_app.first_look is None and self.selected_lane is None and rows:
            self._select(self.query_one(LanesTable).selected_lane)

    @on(MetersChanged)
    def _meters_changed(self, message: MetersChanged) -> None:
        table = self.query_one(LanesTable)
        with self.app.batch_update():
            for lane_id, sample in message.samples.items():
                if lane_id in self.lanes:
                    self.lanes[lane_id] = self.lanes[lane_id].with_sample(sample)
                    table.update_meters(lane_id, sample)

    @on(OutputChanged)
    def _output_changed(self, message: OutputChanged) -> None:
        self.query_one(OutputPane).append(message.lane_id, message.text)

    @on(QuestionsUpdated)
    def _questions_updated(self, message: QuestionsUpdated) -> None:
        self._apply_questions(message.questions, notify=True)

    def _apply_questions(self, questions: Iterable[QuestionView], *, notify: bool) -> None:
        self.questions = list(questions)
        self.query_one(InboxPane).sync([q for q in self.questions if self._worth_showing(q)], self._now())
        fresh = [q for q in self.questions if q.state == "open" and q.question.id not in self._known_questions]
        self._known_questions |= {q.question.id for q in self.questions}
        if notify and fresh:
            for view in fresh:
                self.app.notify(f"{view.question.lane} asks: {view.question.title}", title="Question",
                                severity="warning", timeout=8)
            self.app.bell()
        self._update_attention()

    def _worth_showing(self, view: QuestionView) -> bool:
        """An orphaned question stays until it is answered or its lane is closed or relaunched; one an
        allow rule answered, while its lane runs."""
        if view.answered_by == "rule" and view.state == "delivered":
            lane = self.lanes.get(view.question.lane)
            return lane is not None and lane.live
        if view.state != "orphaned":
            return True
        lane = self.lanes.get(view.question.lane)
        closed = lane is not None and (lane.state in ("accepted", "abandoned") or bool(lane.superseded_by))
        return view.answer is None and not closed

    @on(StallRaised)
    def _stall_raised(self, message: StallRaised) -> None:
        if message.lane_id in self._known_stalls:
            return
        self._known_stalls.add(message.lane_id)
        idle = message.report.idle_s
        silent = "went silent" + (f" for {idle}s" if idle is not None else "")
        self.app.notify(f"{message.lane_id} {silent} and was stopped",
                        title="Stall", severity="error", timeout=10)
        self.app.bell()

    @on(GitWatchWarned)
    def _git_watch_warned(self, message: GitWatchWarned) -> None:
        """A target moved without an accept, or a remote changed: the bar says so until it is cleared."""
        fresh = [w for w in message.warnings if w not in self.query_one(AttentionBar).warnings]
        self.query_one(AttentionBar).warnings = message.warnings
        if fresh:
            self.app.notify(fresh[0], title="git watch", severity="error", timeout=15)
            self.app.bell()

    @on(EngineNoticed)
    def _engine_noticed(self, message: EngineNoticed) -> None:
        severity = "error" if message.severity == "error" else "information"
        self.app.notify(message.message, severity=severity)  # type: ignore[arg-type]

    def _now(self) -> float:
        """The screen's clock (wall-clock seconds): every age and elapsed time on screen is from it."""
        return time.time()

    def _update_attention(self) -> None:
        # A lane relaunched as a newer attempt (`superseded_by`) needs nobody: `wait --any` skips it too.
        current = [s for s in self.lanes.values() if not s.superseded_by]
        open_q = sum(1 for q in self.questions if q.state in OPEN_STATES and not self._superseded(q.question.lane))
        # A lane a cap stopped needs the lead as much as a stalled one: both are in Stalls & caps.
        stalls = sum(1 for s in current if s.state == "stalled" or (s.fired and s.state == "exited"))
        ready = sum(1 for s in current if s.state == "ready")
        self.query_one(AttentionBar).set_counts(open_q, stalls, ready, self.takeover)
        self._name_oldest(self._now())
        self.app.title = f"lanes-tui  ?{open_q} !{stalls} ✓{ready}" + (f" ⚑{self.takeover}" if self.takeover else "")

    def _superseded(self, lane_id: str) -> bool:
        lane = self.lanes.get(lane_id)
        return lane is not None and bool(lane.superseded_by)

    # selection ---------------------------------------------------------------------------------
    @property
    def selected_lane(self) -> str | None:
        return self.lanes_app.bridge.selected_lane

    @on(LanesTable.LaneSelected)
    def _lane_selected(self, message: LanesTable.LaneSelected) -> None:
        if self.lanes_app.first_look is None:  # else `engine_started` selects the lane under the cursor
            self._select(message.lane_id)

    def _select(self, lane_id: str | None) -> None:
        if lane_id == self.selected_lane:
            return
        tail = self._tails.take(lane_id) if lane_id is not None and self.read_ahead else None
        resumed = self.lanes_app.bridge.select(lane_id, tail.end if tail is not None else None)
        if lane_id is not None:
            # After the frame that shows the cursor move: the key feels instant, the tail follows —
            # read ahead (`app.tail_prefetch`) when the cursor came from the next row, else read now.
            # (Read at once, in a thread while that frame is drawn, the cursor came later: B1, p95
            # 27 → 33 ms in an A/B run on one set of lanes, and the output no sooner.)
            if tail is not None and resumed:
                self.call_after_refresh(self._show_tail, lane_id, tail)
            else:
                self.call_after_refresh(self._load_output, lane_id)
            if self.query_one(TabbedContent).active == "tab-diff":
                self._load_diff(lane_id)
            elif self.query_one(TabbedContent).active == "tab-gates":
                self._load_gates(lane_id)

    @work(group="output", exclusive=True)
    async def _load_output(self, lane_id: str) -> None:
        text, end = await self.lanes_app.engine.output_tail_at(lane_id)
        self._show_tail(lane_id, Tail(text, end))

    def _show_tail(self, lane_id: str, tail: Tail) -> None:
        if lane_id == self.selected_lane:
            self.query_one(OutputPane).show(lane_id, tail.text)
            self.lanes_app.bridge.shown(lane_id, tail.end)
            if self.read_ahead:
                self.call_after_refresh(self._read_around, lane_id)

    @work(group="read-ahead", exclusive=True)
    async def _read_around(self, lane_id: str) -> None:
        """The tails of the rows beside the lane on screen, for the cursor's next move."""
        if lane_id == self.selected_lane:
            await self._tails.fill(self.query_one(LanesTable).keys_around(lane_id))

    @work(group="diff", exclusive=True)
    async def _load_diff(self, lane_id: str) -> None:
        text = await self.lanes_app.engine.diff(lane_id)
        kept = len(await self.lanes_app.engine.kept_comments(lane_id))  # hunk comments for its next attempt
        if lane_id == self.selected_lane:
            self.query_one(widgets.DiffPane).show(lane_id, text, kept=kept)

    @work(group="gates", exclusive=True)
    async def _load_gates(self, lane_id: str) -> None:
        report = await self.lanes_app.engine.gate_report(lane_id)
        if lane_id == self.selected_lane:
            self.query_one(widgets.GatesPane).show(lane_id, report)

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == "tab-diff" and self.selected_lane:
            self._load_diff(self.selected_lane)
        elif event.pane.id == "tab-gates" and self.selected_lane:
            self._load_gates(self.selected_lane)
        elif event.pane.id == "tab-worktrees":
            self._poll_worktrees()

    # polls -------------------------------------------------------------------------------------
    @work(group="machine", exclusive=True)
    async def _poll_machine(self) -> None:
        try:
            if self.app.screen is self:
                engine = self.lanes_app.engine
                machine, caps = await engine.machine(), await self._caps.for_config(engine.config)
                self.query_one(MetersPane).update_machine(meters_mapping(machine, caps, self.lanes.values()))
                self._apply_lanes(())  # elapsed and idle keep counting between engine events
        except NoMatches:  # the app closed while the poll awaited: its panes are gone
            return
        finally:
            self._reschedule("machine", self.machine_every_s, self._poll_machine)

    @work(group="worktrees", exclusive=True)
    async def _poll_worktrees(self) -> None:
        try:
            visible = self.app.screen is self and self.query_one(TabbedContent).active == "tab-worktrees"
            if visible:
                self.query_one(widgets.WorktreesPane).sync(await self.lanes_app.engine.worktree_rows())
        except NoMatches:  # the app closed while the poll awaited
            return
        finally:
            self._reschedule("worktrees", self.worktrees_every_s, self._poll_worktrees)

    @work(group="plans", exclusive=True)
    async def _poll_plans(self) -> None:
        """Always, not only while the tab shows: takeover tickets count in the attention bar."""
        try:
            if self.app.screen is self:
                tickets = await plan_statuses(self.lanes_app.engine)
                self.query_one(widgets.PlanPane).sync(tickets)
                self.takeover = sum(1 for t in tickets if t.state == "takeover")
                self._update_attention()
        except NoMatches:  # the app closed while the poll awaited (seen in B1 at 100 lanes)
            return
        finally:
            self._reschedule("plans", self.plans_every_s, self._poll_plans)

    @work(group="decision", exclusive=True)
    async def action_advance_plans(self) -> None:
        """Launch the open plans' tickets that can start now, then show their new states."""
        answer = await self._guard(lambda: advance_plans(self.lanes_app.engine))
        if answer is None:  # refused: the notification says why
            return
        can, result = answer
        if not can:
            self.app.notify("this engine has no plan scheduler yet", severity="warning")
            return
        self.app.notify(describe_advance(result), title="Plan")
        self._poll_plans()

    def _reschedule(self, name: str, delay: float, callback: Any) -> None:
        """One pending timer per poll, however often the poll was started early."""
        old = self._poll_timers.pop(name, None)
        if old is not None:
            old.stop()
        if self.is_mounted:
            self._poll_timers[name] = self.set_timer(delay, callback)

    # plain actions -----------------------------------------------------------------------------
    def action_diff(self) -> None:
        tabs = self.query_one(TabbedContent)
        if tabs.active != "tab-diff":
            tabs.active = "tab-diff"  # TabActivated loads the diff
        elif self.selected_lane:
            self._load_diff(self.selected_lane)

    def action_output(self) -> None:
        self.query_one(TabbedContent).active = "tab-output"

    def action_show_tab(self, tab: str) -> None:
        """The tab keys (`keys.py`: 1–5): the tab's own load runs on `TabActivated`."""
        self.query_one(TabbedContent).active = tab

    def action_toggle_raw(self) -> None:
        """The Output pane between the readable conversation and the raw lines: the tail is loaded
        again in the other form, and the stream goes on from its end, as on a lane switch."""
        pane = self.query_one(OutputPane)
        pane.readable = not pane.readable
        self.query_one(TabbedContent).active = "tab-output"
        lane_id = self.selected_lane
        if lane_id is not None:
            self.lanes_app.bridge.select(lane_id)
            self._load_output(lane_id)
