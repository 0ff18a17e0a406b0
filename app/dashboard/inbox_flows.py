"""Answering many lanes at once, and "allow always" for a lane's tool permission prompts.

With many lanes on the same task, several agents ask the same thing ("may I run the migrations?").
After the lead answers one, the other open questions that are the same — same kind, same options,
title and body equal once case and spacing are set aside — are offered the same answer in one
confirm; nothing is answered for the lead without that y.

`Y` (yes, always) on a tool permission prompt (a structured agent's `can_use_tool`) opens the allow
dialog: the engine answers it yes and records a rule for its lane (`Engine.allow_always`, `state.allow`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual import work

from lanes_tui import widgets  # the dialogs' modules load on their keys
from lanes_tui.app.dashboard.flows import DecisionFlows
from lanes_tui.engine import LanesError, QuestionView

__all__ = ["InboxFlows", "same_questions"]


def _normalised(text: str) -> str:
    return " ".join(text.split()).casefold()


def _shape(view: QuestionView) -> tuple[Any, ...]:
    question = view.question
    return (question.kind, _normalised(question.title), _normalised(question.body),
            tuple(o.id for o in question.options))


def same_questions(view: QuestionView, questions: Sequence[QuestionView]) -> list[QuestionView]:
    """The other open questions that ask the same as `view` (see the module docstring), oldest first."""
    shape = _shape(view)
    return [q for q in questions if q.state == "open" and q.question.id != view.question.id and _shape(q) == shape]


class InboxFlows(DecisionFlows):
    """Mixed into the dashboard screen before `DecisionFlows`, whose answers it follows up."""

    async def _offer_same_answer(self, question: QuestionView, answered: str) -> None:
        """After `question` was answered `answered`: the same answer for the open questions like it?"""
        same = same_questions(question, self.questions)
        if not same:
            return
        lines = [f"{question.question.lane} was answered {answered!r}. {len(same)} other open question"
                 f"{'s ask' if len(same) > 1 else ' asks'} the same:",
                 *(f"  {q.question.lane}: {q.question.title}" for q in same),
                 f"y answers {'them all' if len(same) > 1 else 'it'} {answered!r} too; n leaves "
                 f"{'them' if len(same) > 1 else 'it'} open"]
        if not await self.app.push_screen_wait(widgets.ConfirmModal(f"Answer all {len(same) + 1} the same?", lines)):
            return
        engine = self.lanes_app.engine
        done: list[str] = []
        refused: list[str] = []
        for other in same:  # one refusal (answered meanwhile, withdrawn) is named; the others go on
            try:
                await engine.answer(other.question.id, answered)
                done.append(other.question.lane)
            except LanesError as exc:
                refused.append(f"{other.question.lane}: {exc.what}")
        if done:
            self.app.notify(f"answered {answered!r} in {', '.join(done)}", title="Answered")
        if refused:
            self.app.notify("\n".join(refused), title="Not answered", severity="warning", timeout=10)

    @work(group="answer")
    async def action_allow_always(self) -> None:
        view = self._selected_question()
        if view is None:
            return
        question = view.question
        if question.kind != "permission" or not question.correlation.get("tool_name"):
            self.app.notify("allow always is for a tool's permission prompt; answer this one with y or n",
                            severity="warning")
            return
        choice = await self.app.push_screen_wait(widgets.AllowRuleModal(view))
        if choice is None:
            return
        rule = await self._guard(lambda: self.lanes_app.engine.allow_always(question.id, choice.pattern))
        if rule is not None:
            self.app.notify(f"{question.lane}: allowed; from now on {rule.describe()} is allowed by rule "
                            "in this lane", title="Allowed always")

