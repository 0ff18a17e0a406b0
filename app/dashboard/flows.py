"""The lead's decisions from the keyboard: each opens a modal that says what will happen, then acts.

Every engine refusal arrives as a LanesError and is shown as a notification with its reason; no
traceback ever reaches the screen.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, TypeVar

from textual import work
from textual.screen import Screen

from lanes_tui import widgets  # the dialogs' modules load on their keys (`widgets.X`), not at start-up
from lanes_tui.app.dashboard.keys import help_rows
from lanes_tui.engine import TASK_TYPES, LanesError, LaneStatus, QuestionView
from lanes_tui.widgets import InboxPane

if TYPE_CHECKING:
    from lanes_tui.app.dashboard.host import DashboardHost

T = TypeVar("T")
YES_NO_KINDS = ("yesno", "permission")


class DecisionFlows(Screen[None]):
    """Mixed into the dashboard screen: needs `lanes_app`, `selected_lane`, `lanes` and `questions`."""

    lanes: dict[str, LaneStatus]
    questions: list[QuestionView]

    @property
    def lanes_app(self) -> DashboardHost:
        raise NotImplementedError

    @property
    def selected_lane(self) -> str | None:
        raise NotImplementedError

    async def _guard(self, call: Callable[[], Awaitable[T]]) -> T | None:
        try:
            return await call()
        except LanesError as exc:
            self.app.notify(str(exc), title="Refused", severity="error", timeout=10)
            return None

    def _need_lane(self) -> str | None:
        lane = self.selected_lane
        if lane is None:
            self.app.notify("select a lane first", severity="warning")
        return lane

    def _selected_question(self) -> QuestionView | None:
        """The highlighted question if it is still open, else the oldest open one.

        An orphaned question is answered only when the lead highlighted it on purpose and no one
        answered it yet: its answer goes into the lane's next attempt.
        """
        highlighted = self.query_one(InboxPane).selected_question
        open_ones = [q for q in self.questions if q.state == "open"]
        chosen: QuestionView | None = None
        if highlighted is not None and highlighted.state == "open":
            chosen = highlighted
        elif open_ones:
            chosen = open_ones[0]
        elif highlighted is not None and highlighted.state == "orphaned" and highlighted.answer is None:
            chosen = highlighted
        if chosen is None:
            self.app.notify("no open question", severity="warning")
        return chosen

    @work(group="decision", exclusive=True)
    async def action_accept(self) -> None:
        lane = self._need_lane()
        if lane is None:
            return
        engine = self.lanes_app.engine
        plan = await self._guard(lambda: engine.plan_accept(lane))
        if plan is None:
            return
        if not plan.ok and not plan.outside_scope and not plan.review_blocked:
            # an accept the engine would refuse: say why, open nothing
            self.app.notify(f"accept {lane}: {plan.refusals[0]}", title="Refused", severity="error", timeout=10)
            return
        # Files outside the lane's scope open the modal anyway (refused): the lead sees which ones. A
        # review that blocks is the one refusal the lead may lift here, with a reason.
        conflicts = self.lanes[lane].conflicts if lane in self.lanes else ()  # the radar's, as the engine gave them
        if not await self.app.push_screen_wait(widgets.AcceptModal.for_plan(f"Accept {lane}?", plan, conflicts)):
            return
        reason: str | None = None
        if plan.review_blocked:
            why = [*plan.refusals, "Why accept it anyway? The reason is recorded with the accept."]
            reason = await self.app.push_screen_wait(widgets.ReasonModal(f"Accept {lane} over its review?", why))
            if reason is None:
                return
        group = self.lanes[lane].group if lane in self.lanes else None
        outcome = await self._guard(lambda: engine.accept(lane) if reason is None
                                    else engine.accept(lane, override_review=reason))
        if outcome is None:
            return
        if outcome.state != "accepted":
            self.app.notify(outcome.message, title=outcome.state.capitalize(), severity="error", timeout=10)
            return
        self.app.notify(outcome.message, title="Accepted", timeout=10)
        if group:
            await self._offer_to_abandon_group(lane, group)

    async def _offer_to_abandon_group(self, winner: str, group: str) -> None:
        """After a best-of lane is accepted: the group's other open lanes, their worktrees listed first;
        y abandons each. Never without asking: the lead may want a second look at the runner-up."""
        rest = sorted((s for s in self.lanes.values() if s.group == group and s.id != winner
                       and s.state not in ("accepted", "abandoned")),
                      key=lambda s: (s.rank is None, s.rank or 0, s.created, s.id))
        if not rest:
            return
        lines = [f"{winner} was accepted; best-of group {group} has {len(rest)} other open "
                 f"lane{'' if len(rest) == 1 else 's'}:",
                 *(f"  #{s.rank or '-'} {s.id} ({s.state}): {s.worktree}" for s in rest),
                 "y abandons each: stops it, removes its worktree and branch; packets and logs are kept"]
        if not await self.app.push_screen_wait(widgets.ConfirmModal(f"Abandon the rest of {group}?", lines)):
            return
        engine = self.lanes_app.engine
        gone: list[str] = []
        for other in rest:  # one refusal (commits on a lane's branch, say) is shown and the others go on
            if await self._guard(partial(engine.abandon, other.id)) is not None:
                gone.append(other.id)
        if gone:
            self.app.notify(f"abandoned {', '.join(gone)}", title="Abandoned")

    @work(group="decision", exclusive=True)
    async def action_abandon(self) -> None:
        lane = self._need_lane()
        if lane is None:
            return
        engine = self.lanes_app.engine
        plan = await self._guard(lambda: engine.plan_abandon(lane))
        if plan is None:
            return
        only_commits = bool(plan.refusals) and all("--force" in r for r in plan.refusals)
        lines = plan.describe()
        if only_commits:
            lines = [line for line in lines if not line.startswith("REFUSED")]
            lines.append("y abandons anyway and those commits are lost")
        refused = bool(plan.refusals) and not only_commits
        if not await self.app.push_screen_wait(widgets.ConfirmModal(f"Abandon {lane}?", lines, refused=refused)):
            return
        removed = await self._guard(lambda: engine.abandon(lane, force=only_commits))
        if removed is not None:
            self.app.notify(f"abandoned {lane}", title="Abandoned")

    @work(group="decision", exclusive=True)
    async def action_recover(self) -> None:
        lane = self._need_lane()
        if lane is None:
            return
        engine = self.lanes_app.engine
        if await self._guard(lambda: engine.wake(lane)):  # a parked lane: its supervisor resumes it now
            self.app.notify(f"{lane} was parked; its provider starts again now", title="Resumed")
            return
        findings = await self._guard(lambda: engine.inspect(lane, stop_leftovers=False))  # the lead may cancel
        if findings is None:
            return
        refused = findings.relaunch_refused  # the task used its [lanes] attempts: the dialog says so on l
        choice = await self.app.push_screen_wait(widgets.RecoverModal(
            findings.describe(), relaunch_refused=" — ".join(refused) if refused else None))
        if choice is None:
            return
        if choice.action == "recheck":
            packet = await self._guard(lambda: engine.recheck(lane))
            if packet is not None:
                self.app.notify(f"{lane}: gates {packet.gates_status}", title="Re-checked")
        elif choice.action == "relaunch":
            # the lead's own findings, quoted in the next attempt's prompt (blank: none)
            note = choice.note if choice.note and choice.note.strip() else None
            record = await self._guard(lambda: engine.relaunch(lane, note=note))
            if record is not None:
                self.app.notify(f"{lane} relaunched as {record.id}", title="Relaunched")

    @work(group="answer")
    async def action_answer(self, value: str) -> None:
        question = self._selected_question()
        if question is None:
            return
        if question.question.kind not in YES_NO_KINDS:
            self.app.notify("this question wants text or a choice: press enter", severity="warning")
            return
        answered = await self._guard(lambda: self.lanes_app.engine.answer(question.question.id, value))
        if answered is not None:
            self._answered(question, answered)
            await self._offer_same_answer(question, answered)

    async def _offer_same_answer(self, question: QuestionView, answered: str) -> None:
        """After an answer: `inbox_flows.InboxFlows` offers it to the open questions that ask the same."""

    def _answered(self, view: QuestionView, answered: str) -> None:
        if view.state == "orphaned":
            self.app.notify(f"{view.question.lane} is gone; select it and press r, then l, to relaunch it with "
                            f"this answer ({answered}) in its prompt", title="Answer kept", severity="warning",
                            timeout=12)
        else:
            self.app.notify(f"{view.question.lane}: {view.question.title} → {answered}", title="Answered")

    @work(group="answer")
    async def action_answer_text(self) -> None:
        question = self._selected_question()
        if question is None:
            return
        value = await self.app.push_screen_wait(widgets.TextAnswerModal(question))
        if value is None:
            return
        answered = await self._guard(lambda: self.lanes_app.engine.answer(question.question.id, value))
        if answered is not None:
            self._answered(question, answered)
            await self._offer_same_answer(question, answered)

    @work(group="decision", exclusive=True)
    async def action_start(self) -> None:
        engine = self.lanes_app.engine
        types = sorted(set(TASK_TYPES) | set(engine.config.chains))
        form = await self.app.push_screen_wait(widgets.StartLaneModal(types, sorted(engine.config.providers)))
        if form is None:
            return
        from lanes_tui.engine import LaunchRequest  # the launcher: only when a lane is started here

        request = LaunchRequest(prompt=form["prompt"], task_type=form.get("task_type") or "backend",
                                lane=form.get("lane"), slug=form.get("slug"))
        record = await self._guard(lambda: engine.run_lane(request))
        if record is not None:
            self.app.notify(f"started {record.id}", title="Started")

    @work(group="decision", exclusive=True)
    async def action_kill(self) -> None:
        lane = self._need_lane()
        if lane is None:
            return
        stopped = await self._guard(lambda: self.lanes_app.engine.kill(lane))
        if stopped is not None:
            self.app.notify(f"stopped {lane}", title="Killed")

    @work(group="decision", exclusive=True)
    async def action_gates(self) -> None:
        lane = self._need_lane()
        if lane is None:
            return
        self.app.notify(f"running the gates of {lane}…")
        packet = await self._guard(lambda: self.lanes_app.engine.check(lane))
        if packet is not None:
            self.app.notify(f"{lane}: gates {packet.gates_status}", title="Gates",
                            severity="information" if packet.ok else "error")

    @work(group="review")  # not a "decision": a review runs for minutes, and `a` or `x` must not cancel it
    async def action_review(self) -> None:
        lane = self._need_lane()
        if lane is None:
            return
        self.app.notify(f"reviewing {lane}…")
        detail = await self._guard(lambda: self.lanes_app.engine.review(lane))
        if detail is not None:
            verdict, findings = detail.verdict, len(detail.findings)
            self.app.notify(f"{lane}: review {verdict} by {detail.reviewer or 'nobody'}"
                            + (f", {findings} finding{'' if findings == 1 else 's'}" if findings else "")
                            + (f" ({detail.reason})" if verdict == "MISSING" else ""), title="Review",
                            severity="information" if verdict == "CLEAN" else "warning" if verdict == "MISSING"
                            else "error")

    @work(group="decision", exclusive=True)
    async def action_verify(self) -> None:
        lane = self._need_lane()
        if lane is None:
            return
        evidence = await self.app.push_screen_wait(widgets.ReasonModal(
            f"Verify {lane}", ["What did you check yourself, and how? It is recorded with the lane's current "
                               "diff; the accept dialog shows it, marked stale if the lane changes."],
            placeholder="your evidence"))
        if evidence is None:
            return
        done = await self._guard(lambda: self.lanes_app.engine.verify(lane, evidence))
        if done is not None:
            self.app.notify(f"{lane}: verified by {done.by}: {evidence}", title="Verified")

    def action_conflicts(self) -> None:
        """The conflict radar's pairs, from the statuses the engine filled (`LaneStatus.conflicts`)."""
        self.app.push_screen(widgets.ConflictsModal(sorted(self.lanes.values(), key=lambda s: (s.created, s.id))))

    @work(group="decision", exclusive=True)
    async def action_accept_queue(self) -> None:
        """Every ready lane in the radar's order: the order first, y accepts them one by one."""
        engine = self.lanes_app.engine
        plan = await self._guard(lambda: engine.plan_queue())
        if plan is None:
            return
        if not plan.entries:
            self.app.notify("no ready lanes: nothing to accept", severity="warning")
            return
        title = f"Accept {len(plan.entries)} ready lane{'s' if len(plan.entries) != 1 else ''} in this order?"
        lines = [*plan.describe(), "each with the guarded accept; a lane with nothing to merge is skipped, any "
                 "other refusal stops the queue"]
        if not await self.app.push_screen_wait(widgets.ConfirmModal(title, lines)):
            return
        report = await self._guard(lambda: engine.accept_queue(plan))
        if report is not None:
            self.app.notify("\n".join(report.lines()), title="Accept queue", timeout=12,
                            severity="error" if not report.ok else "warning" if report.skipped else "information")

    def action_help(self) -> None:
        from lanes_tui.widgets import HelpScreen  # Markdown and its parser: on the key, not at start-up

        self.app.push_screen(HelpScreen(help_rows(dict(self.lanes_app.engine.config.keys))))
