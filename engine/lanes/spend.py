"""Spend caps that pause and ask instead of killing: the lane stops spending, the lead decides.

A lane that reaches `max_cost_usd` or `max_tokens` has usually done real work; killing it would
throw that away, and letting it run on would spend money nobody agreed to. So the `SpendGuard`
(a `RunGuard`, see `lanes.guard`) pauses the lane's processes (`procs.pause.TreePauser`, re-exported
here: a cgroup freeze, else SIGSTOP on the process tree) and asks the lead one yes/no question
through the inbox. The open question makes the lane `waiting`, so neither the watchdog nor the
wall-clock limit counts the pause against it. `yes` raises each cap that was reached by its
original amount and resumes the lane; `no` (or a question that was cancelled, expired or
orphaned) ends the run OUT-OF-BUDGET with the spend in the finding. Without an inbox there is
nobody to ask, and the cap simply ends the run.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.lanes.guard import Finding
from lanes_tui.engine.lanes.watchdog import ProcInfo, Sample
from lanes_tui.engine.procs.pause import TreePauser

if TYPE_CHECKING:
    from lanes_tui.engine.inbox.store import InboxStore
    from lanes_tui.engine.state.meters import RunMeter

__all__ = ["SpendEvents", "SpendGuard", "SpendSource", "TreePauser", "meter_spend"]

log = logging.getLogger(__name__)

#: The lane's spend now: (tokens in total, US dollars or None when no cost is known).
SpendSource = Callable[[], tuple[int, float | None]]
RESULT = "OUT-OF-BUDGET"


class SpendEvents(Protocol):
    """Where the guard's events go (`LaneStore.event` bound to the lane, for one)."""

    def __call__(self, kind: str, /, **data: Any) -> None: ...


def meter_spend(meter: RunMeter) -> SpendSource:
    """The lane totals of a channel's meter (all runs of the chain so far) as a `SpendSource`."""

    def spend() -> tuple[int, float | None]:
        snap = meter.snapshot()
        cost = snap.get("cost_usd")
        return int(snap["tokens"]["total"]), (float(cost) if cost is not None else None)

    return spend


def money(usd: float) -> str:
    return f"${usd:,.2f}"


@dataclass(frozen=True)
class _Hit:
    """One cap reached: which, its limit now, the value that reached it, and what `yes` adds."""

    cap: str  # "max_cost_usd" or "max_tokens"
    limit: float
    value: float
    step: float

    def reached(self) -> str:
        if self.cap == "max_cost_usd":
            return f"{money(self.value)} of {money(self.limit)}"
        return f"{int(self.value):,} of {int(self.limit):,} tokens"

    def more(self) -> str:
        return money(self.step) if self.cap == "max_cost_usd" else f"{int(self.step):,} tokens"

    def raised(self) -> str:
        new = self.limit + self.step
        return money(new) if self.cap == "max_cost_usd" else f"{int(new):,} tokens"


class SpendGuard:
    """Pauses the lane at a spend cap and asks the lead whether to go on (module docstring)."""

    def __init__(self, lane: str, *, max_cost_usd: float = 0.0, max_tokens: int = 0,
                 spend: SpendSource, inbox: InboxStore | None,
                 events: SpendEvents, pause: Callable[[], None], resume: Callable[[], None],
                 attempt: int = 1) -> None:
        self.lane = lane
        #: The caps as configured: what `yes` adds each time.
        self.max_cost_usd = max(0.0, float(max_cost_usd))
        self.max_tokens = max(0, int(max_tokens))
        #: The caps now (raised by each `yes`).
        self.cost_cap = self.max_cost_usd
        self.token_cap = self.max_tokens
        self.spend = spend
        self.inbox = inbox
        self.events = events
        self._pause = pause
        self._resume = resume
        self.attempt = attempt
        self.paused = False
        #: The open spend question, if any.
        self.question_id: str | None = None
        self._hits: tuple[_Hit, ...] = ()

    # --- RunGuard -------------------------------------------------------------------------------

    def check(self, sample: Sample) -> Finding | None:
        if self.question_id is not None:
            return self._poll(self.question_id)
        tokens, usd = self.spend()
        hits = self._reached(tokens, usd)
        if not hits:
            return None
        if self.inbox is None:
            return self._finding(hits, tokens, usd, "no inbox to ask the lead", answer=None)
        self._do_pause()
        title, body = self._question(hits, tokens, usd)
        try:
            question = self.inbox.ask(self.lane, kind="yesno", title=title, body=body, attempt=self.attempt,
                                      correlation={"spend_cap": [h.cap for h in hits]})
        except (LanesError, OSError) as exc:
            log.warning("lane %s: cannot ask about the spend cap: %s", self.lane, exc)
            return self._finding(hits, tokens, usd, f"the lead could not be asked ({exc})", answer=None)
        self.question_id = question.id
        self._hits = hits
        first = hits[0]
        self._emit("spend-cap", cap=first.cap, limit=first.limit, value=first.value,
                   caps=[h.cap for h in hits], spent_usd=usd, tokens=tokens, question=question.id,
                   paused=self.paused)
        return None

    def after_exit(self, returncode: int | None, last: tuple[ProcInfo, ...]) -> Finding | None:
        return None

    def release(self) -> None:
        """Withdraw an unanswered question and let the processes run (so a stop signal lands)."""
        qid, self.question_id = self.question_id, None
        if qid is not None and self.inbox is not None:
            with contextlib.suppress(LanesError, OSError):
                self.inbox.cancel(qid, "the lane stopped before the spend question was answered")
        self._do_resume()

    # --- internals ------------------------------------------------------------------------------

    def _reached(self, tokens: int, usd: float | None) -> tuple[_Hit, ...]:
        hits: list[_Hit] = []
        if self.cost_cap > 0 and usd is not None and usd >= self.cost_cap:
            hits.append(_Hit("max_cost_usd", self.cost_cap, usd, self.max_cost_usd))
        if self.token_cap > 0 and tokens >= self.token_cap:
            hits.append(_Hit("max_tokens", self.token_cap, tokens, self.max_tokens))
        return tuple(hits)

    def _question(self, hits: tuple[_Hit, ...], tokens: int, usd: float | None) -> tuple[str, str]:
        reached = " and ".join(h.reached() for h in hits)
        title = f"lane {self.lane} reached {reached}: continue with {' and '.join(h.more() for h in hits)} more?"
        raise_to = " and ".join(f"by {h.more()} to {h.raised()}" for h in hits)
        body = (f"The lane's processes are paused until you answer.\n"
                f"yes: raise the cap {raise_to} and resume the lane.\n"
                f"no: stop the lane; it ends {RESULT} with its spend recorded "
                f"({_spent(tokens, usd)}).")
        return title, body

    def _poll(self, qid: str) -> Finding | None:
        """Act on the lead's answer once there is one (a question is only open with an inbox)."""
        hits, inbox = self._hits, self.inbox
        if inbox is None:
            return None
        try:
            view = inbox.get(qid)
        except LanesError as exc:
            self.question_id = None
            tokens, usd = self.spend()
            return self._finding(hits, tokens, usd, f"the spend question could not be read ({exc})", answer=None)
        if view.state == "open":
            return None
        self.question_id = None
        if view.state in ("answered", "delivered", "expired") and view.answer == "yes":
            self._deliver(qid, view.state)
            self.cost_cap += sum(h.step for h in hits if h.cap == "max_cost_usd")
            self.token_cap += int(sum(h.step for h in hits if h.cap == "max_tokens"))
            self._do_resume()
            tokens, usd = self.spend()
            self._emit("spend-cap-raised", caps=[h.cap for h in hits], max_cost_usd=self.cost_cap,
                       max_tokens=self.token_cap, spent_usd=usd, tokens=tokens, question=qid)
            return None
        if view.state in ("answered", "delivered"):
            self._deliver(qid, view.state)
            why = "the lead chose to stop"
        elif view.state == "cancelled":
            why = f"the spend question was cancelled ({view.reason or 'no reason given'})"
        elif view.state == "orphaned":
            why = "the spend question was orphaned"
        else:
            why = f"the spend question {view.state} ({view.answer or 'no answer'})"
        tokens, usd = self.spend()
        finding = self._finding(hits, tokens, usd, why, answer=view.answer)
        self._emit("spend-cap-stopped", cap=finding.detail["cap"], state=view.state, spent_usd=usd,
                   tokens=tokens, question=qid)
        return finding

    def _finding(self, hits: tuple[_Hit, ...], tokens: int, usd: float | None, why: str,
                 answer: str | None) -> Finding:
        """OUT-OF-BUDGET naming the cap and the spend; the processes stay paused until `release`."""
        hit = self._reached_now(hits, tokens, usd)
        reason = f"spend cap reached: {hit.reached()}"
        if hit.cap == "max_cost_usd":
            reason += f" ({tokens:,} tokens)"
        elif usd is not None:
            reason += f" ({money(usd)})"
        detail = {"cap": hit.cap, "limit": hit.limit, "value": hit.value, "spent_usd": usd, "tokens": tokens,
                  "answer": answer}
        return Finding(RESULT, f"{reason}; {why}", detail)

    def _reached_now(self, hits: tuple[_Hit, ...], tokens: int, usd: float | None) -> _Hit:
        """The first cap, with the spend as it is now (it may have grown while the question was open)."""
        first = hits[0] if hits else _Hit("max_cost_usd", self.cost_cap, usd or 0.0, self.max_cost_usd)
        value = (usd if usd is not None else first.value) if first.cap == "max_cost_usd" else float(tokens)
        return _Hit(first.cap, first.limit, value, first.step)

    def _deliver(self, qid: str, state: str) -> None:
        """Mark the answer as taken, so the lane stops showing as `waiting`."""
        if self.inbox is not None and state == "answered":
            with contextlib.suppress(LanesError, OSError):
                self.inbox.deliver(qid)

    def _do_pause(self) -> None:
        if self.paused:
            return
        try:
            self._pause()
        except Exception:  # the question still goes out: the lead decides either way
            log.exception("lane %s: pausing at the spend cap failed", self.lane)
            return
        self.paused = True

    def _do_resume(self) -> None:
        if not self.paused:
            return
        self.paused = False
        try:
            self._resume()
        except Exception:
            log.exception("lane %s: resuming after the spend cap failed", self.lane)

    def _emit(self, kind: str, **data: Any) -> None:
        try:
            self.events(kind, **data)
        except Exception:
            log.exception("lane %s: cannot record the %s event", self.lane, kind)


def _spent(tokens: int, usd: float | None) -> str:
    return f"{money(usd)}, {tokens:,} tokens" if usd is not None else f"{tokens:,} tokens"
