"""Answering many lanes at once, and "allow always" for a lane's tool permission prompts.

With many lanes on the same task, several agents ask the same thing ("may I run the migrations?").
After the lead answers one, the other open questions that are the same — same kind, same options,
title and body equal once case and spacing are set aside — are offered the same answer in one
confirm; nothing is answered for the lead without that y.

`Y` (yes, always) on a tool permission prompt (a structured agent's `can_use_tool`) opens the allow
dialog: the engine answers it yes and records a rule for its lane (`Engine.allow_always`, `state.allow`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from textual import work

from lanes_tui.app.dashboard.flows import DecisionFlows
from lanes_tui.engine import LanesError
from lanes_tui.widgets import AllowRuleModal, ConfirmModal

__all__ = ["InboxFlows", "same_questions"]


def _normalised(text: Any) -> str:
    return " ".join(str(text or "").split()).casefold()


def _shape(question: Mapping[str, Any]) -> tuple[Any, ...]:
    options = tuple(str(o.get("id")) for o in question.get("options") or () if isinstance(o, Mapping))
    return (question.get("kind"), _normalised(question.get("title")), _normalised(question.get("body")), options)


def same_questions(question: Mapping[str, Any], questions: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The other open questions that ask the same as `question` (see the module docstring), oldest first."""
    shape = _shape(question)
    return [q for q in questions if q.get("state") == "open" and q.get("id") != question.get("id")
            and _shape(q) == shape]


class InboxFlows(DecisionFlows):
    """Mixed into the dashboard screen before `DecisionFlows`, whose answers it follows up."""

    async def _offer_same_answer(self, question: dict[str, Any], answered: str) -> None:
        """After `question` was answered `answered`: the same answer for the open questions like it?"""
        same = same_questions(question, self.questions)
        if not same:
            return
        lines = [f"{question['lane']} was answered {answered!r}. {len(same)} other open question"
                 f"{'s ask' if len(same) > 1 else ' asks'} the same:",
                 *(f"  {q['lane']}: {q.get('title')}" for q in same),
                 f"y answers {'them all' if len(same) > 1 else 'it'} {answered!r} too; n leaves "
                 f"{'them' if len(same) > 1 else 'it'} open"]
        if not await self.app.push_screen_wait(ConfirmModal(f"Answer all {len(same) + 1} the same?", lines)):
            return
        engine = self.lanes_app.engine
        done: list[str] = []
        refused: list[str] = []
        for other in same:  # one refusal (answered meanwhile, withdrawn) is named; the others go on
            try:
                await engine.answer(str(other["id"]), answered)
                done.append(str(other["lane"]))
            except LanesError as exc:
                refused.append(f"{other['lane']}: {exc.what}")
        if done:
            self.app.notify(f"answered {answered!r} in {', '.join(done)}", title="Answered")
        if refused:
            self.app.notify("\n".join(refused), title="Not answered", severity="warning", timeout=10)

    @work(group="answer")
    async def action_allow_always(self) -> None:
        question = self._selected_question()
        if question is None:
            return
        if question.get("kind") != "permission" or not (question.get("correlation") or {}).get("tool_name"):
            self.app.notify("allow always is for a tool's permission prompt; answer this one with y or n",
                            severity="warning")
            return
        choice = await self.app.push_screen_wait(AllowRuleModal(question))
        if choice is None:
            return
        rule = await self._guard(lambda: self.lanes_app.engine.allow_always(question["id"], choice.pattern))
        if rule is not None:
            self.app.notify(f"{question['lane']}: allowed; from now on {rule.describe()} is allowed by rule "
                            "in this lane", title="Allowed always")

