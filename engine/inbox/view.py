"""What a question looks like to readers: its derived state (`QuestionView`), and waiting on it.

Split from `inbox.store` (which re-exports everything here) so the store is only about files: this
module turns the files found into a view, and `wait_for_answer` polls any `QuestionSource` (the
store is one) until the question leaves "open". It never imports the store: no cycle, not even for
type checking.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from lanes_tui.engine.core.clock import Clock
from lanes_tui.engine.inbox.files import Answer, Question

__all__ = ["WAITING_STATES", "QuestionSource", "QuestionView", "derive_view", "wait_for_answer"]

#: States in which the lane is waiting for the lead (the watchdog must not call it stalled).
WAITING_STATES = frozenset({"open", "answered"})


@dataclass(frozen=True)
class QuestionView:
    """A question with the state derived from its files.

    `answer` is the value that took effect or will: the lead's answer (answered, delivered, orphaned)
    or the default applied on expiry; None while open and when cancelled. `reason` is the cancel or
    orphan reason.
    """

    question: Question
    state: str
    answer: str | None
    answered_by: str | None
    answered_at: float | None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The record of `lanes-tui inbox --json`: the question plus `state` and, once answered, `answer`."""
        data = self.question.to_record()
        data["state"] = self.state
        if self.answer is not None:
            data["answer"] = self.answer
            data["answered_by"] = self.answered_by
            data["answered_at"] = self.answered_at
        if self.reason is not None:
            data["reason"] = self.reason
        return data


def derive_view(question: Question, answer: Answer | None, winner: str | None,
                mark: Mapping[str, Any]) -> QuestionView:
    """The view of a question from what is on disk: its answer (if readable), the mark that decides
    its state (`winner`, the first of MARKS present, or None) and that mark's fields (empty when
    unreadable: a mark counts by its existence). The precedence is explained in `inbox.store`.
    """
    if winner is None:
        if answer is None:
            return QuestionView(question, "open", None, None, None)
        return QuestionView(question, "answered", answer.value, answer.by, answer.at)
    reason = mark.get("reason")
    if winner == "cancelled":
        return QuestionView(question, winner, None, None, None, reason or "")
    if winner == "expired":
        value = mark.get("value")
        by = "default" if value is not None else None
        return QuestionView(question, winner, value, by, mark.get("at"))
    if answer is not None:
        return QuestionView(question, winner, answer.value, answer.by, answer.at,
                            reason if winner == "orphaned" else None)
    if winner == "delivered":
        return QuestionView(question, winner, mark.get("value"), None, mark.get("at"))
    return QuestionView(question, winner, None, None, None, reason or "")


class QuestionSource(Protocol):
    """What `wait_for_answer` needs of a store (the InboxStore is one), so this module needs no store."""

    @property
    def clock(self) -> Clock: ...

    def get(self, qid: str) -> QuestionView: ...


async def wait_for_answer(store: QuestionSource, qid: str, *, timeout_s: float | None,
                          clock: Clock | None = None, poll_s: float = 0.05) -> QuestionView:
    """Poll until the question leaves "open" or `timeout_s` passes; returns the last view either way.

    Polling (not inotify) keeps it portable and lets tests drive it with a FakeClock, whose `sleep`
    advances time; a poll reads a handful of small files.
    """
    clock = clock or store.clock
    start = clock.monotonic()
    while True:
        view = store.get(qid)
        if view.state != "open":
            return view
        if timeout_s is None:
            await clock.sleep(poll_s)
            continue
        remaining = start + timeout_s - clock.monotonic()
        if remaining <= 0:
            return view
        await clock.sleep(min(poll_s, remaining))
