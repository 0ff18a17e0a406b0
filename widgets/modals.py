"""The decision dialogs: confirm (accept / abandon), recover, answer a question, give a reason, start a lane.

Each is a `ModalScreen[T]` that returns through `dismiss(value)` (HOUSE_STYLE point 11); the App
pushes it with a callback or `push_screen_wait` and sends the engine command. The dialogs show what
the engine planned (e.g. `AcceptPlan.describe()`) and never decide anything themselves — except
that a plan the engine refused cannot be confirmed from here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from lanes_tui.widgets import _format as fmt
from lanes_tui.widgets._dialog import Dialog, plain_lines
from lanes_tui.widgets.conflicts_modal import predicted_lines
from lanes_tui.widgets.start_lane import StartLaneModal

if TYPE_CHECKING:  # the accept modal is given the engine's plan; it never asks the engine for one
    from lanes_tui.engine import AcceptPlan, QuestionView

__all__ = ["AcceptModal", "ConfirmModal", "ReasonModal", "RecoverChoice", "RecoverModal", "StartLaneModal",
           "TextAnswerModal"]

REFUSED = "REFUSED"


class ConfirmModal(Dialog[bool]):
    """Shows a plan; y → True, n / escape → False. A refused plan cannot be confirmed."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "confirm", "Yes, do it", id="confirm.yes"),
        Binding("n", "cancel", "No", id="confirm.no"),
        Binding("escape", "cancel", "Cancel", id="confirm.cancel"),
    ]

    def __init__(self, title: str, lines: Sequence[str], *, refused: bool = False) -> None:
        super().__init__()
        self.title_text = title
        self.lines = list(lines)
        self.refusals = [line for line in self.lines if line.startswith(REFUSED)]
        self.refused = refused or bool(self.refusals)
        """Whether y is disabled: the caller said so, or the engine's plan has a REFUSED line."""

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Content(self.title_text), classes="title")
            with VerticalScroll(classes="body"):
                yield from self.compose_body()
                yield from self.compose_details()
            yield from self.compose_note()

    def compose_body(self) -> ComposeResult:
        """The plan's lines, refusals in `$error`."""
        yield from plain_lines(self.lines)

    def compose_note(self) -> ComposeResult:
        """Below the body: why y is disabled, if it is, and the keys."""
        if self.refused:
            reason = self.refusals[0].removeprefix(REFUSED).lstrip(": ") if self.refusals else "the engine refused"
            yield Static(Content(f"This cannot go ahead: {reason}. y is disabled; fix the cause first."),
                         classes="note refused", id="refused-note")
            yield Static("n / escape close", classes="hint")
        else:
            yield Static("y confirm  ·  n / escape cancel", classes="hint")

    def compose_details(self) -> ComposeResult:
        """What a subclass shows below the plan's lines, inside the scrolling body."""
        yield from ()

    def action_confirm(self) -> None:
        if self.refused:
            self.app.bell()
            return
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)


class AcceptModal(ConfirmModal):
    """The accept confirm: the engine's plan with each gate's step under its gates line, the review and
    the lead's verification toned by what they say, then the lane's scope and the files outside it.

    A lane with no scope shows no scope block (nothing is checked). Files outside the scope are a
    refusal in the engine's plan, so y is disabled and the note says how to override. A plan refused
    only by its review (`review_override`: BLOCKING, or stale) keeps y: the note says so, and the caller
    asks for the reason before it accepts with `override_review` (the engine re-checks everything).
    """

    DEFAULT_CSS = """
    AcceptModal .scope {
        height: auto;
        margin-top: 1;
    }
    AcceptModal .outside, AcceptModal .gate-failed, AcceptModal .review-blocking {
        color: $error;
    }
    AcceptModal .gate-passed, AcceptModal .review-clean {
        color: $success;
    }
    AcceptModal .review-missing, AcceptModal .stale, AcceptModal .conflict {
        color: $warning;
    }
    AcceptModal .unverified {
        color: $text-muted;
    }
    AcceptModal .overridable {
        color: $warning;
        text-style: bold;
    }
    """

    #: Files outside the scope listed one a line before "and N more" (the body scrolls, but not forever).
    SHOWN_OUTSIDE = 40
    #: A gate step's mark by its status (`decisions.gates.run.GateResult.status`).
    GATE_MARKS: ClassVar[Mapping[str, str]] = {"passed": "✓", "failed": "✗", "timeout": "✗", "not-run": "·",
                                                  "planned": "·"}

    def __init__(self, title: str, lines: Sequence[str], *, scope: Sequence[str] = (),
                 outside: Sequence[str] = (), refused: bool = False, gates: Sequence[Mapping[str, Any]] = (),
                 review: str | None = None, review_override: bool = False,
                 conflicts: Sequence[Mapping[str, Any]] = ()) -> None:
        super().__init__(title, lines, refused=refused)
        self.conflicts = predicted_lines(conflicts)
        """The radar's findings for the lane (`LaneStatus.conflicts`, given by the app), as lines."""
        self.scope = list(scope)
        """The lane's scope: exact paths and folders ending in `/`."""
        self.outside = list(outside)
        """The changed files outside `scope`."""
        self.gates = list(gates)
        """The packet's gate results, one a step: command, status, exit code, duration."""
        self.review = review
        """The review's verdict (CLEAN, BLOCKING, MISSING), None when the lane has no review."""
        self.review_override = review_override and bool(self.refusals) and not refused
        """Every refusal is the review's: y asks for a reason instead of being disabled."""
        if self.review_override:
            self.refused = False

    @classmethod
    def for_plan(cls, title: str, plan: AcceptPlan, conflicts: Sequence[Mapping[str, Any]] = ()) -> AcceptModal:
        """The modal of an engine's accept plan (its scope shown in a block of its own, not as lines), with
        the radar's findings for the lane as the app has them."""
        return cls(title, plan.describe(scope=False), scope=plan.scope, outside=plan.outside_scope,
                   gates=plan.gates, review=str(plan.review_detail.get("verdict") or "") or None,
                   review_override=plan.review_blocked, conflicts=conflicts)

    def compose_body(self) -> ComposeResult:
        """The plan's lines, each gate step right under the gates line, verdicts and stale marks toned."""
        steps_shown = False
        for line in self.lines:
            text = line.lstrip(" ")
            shown = Static(Content(text), classes=self._line_classes(line))
            if len(text) < len(line):  # an indented line (a finding) stays indented where it wraps
                shown.styles.padding = (0, 0, 0, len(line) - len(text))
            yield shown
            if not steps_shown and line.startswith("gates:"):
                steps_shown = True
                yield from self._gate_steps()
        if not steps_shown:
            yield from self._gate_steps()
        for line in self.conflicts:
            yield Static(Content(line), classes="line conflict")

    def _line_classes(self, line: str) -> str:
        if line.startswith(REFUSED):
            return "line overridable" if self.review_override else "line refused"
        if line.startswith("review:") and self.review:
            return f"line review-{self.review.lower()}" + (" stale" if "STALE" in line else "")
        if "STALE" in line:
            return "line stale"
        return "line unverified" if line.startswith("verification: not verified") else "line"

    def _gate_steps(self) -> ComposeResult:
        for gate in self.gates:
            status = str(gate.get("status") or "?")
            code = gate.get("exit_code")
            seconds = gate.get("duration_s")
            name, ran = gate.get("name"), gate.get("shown") or gate.get("command", "?")
            text = f"{self.GATE_MARKS.get(status, '?')} {f'{name}: ' if name else ''}{ran} — {status}"
            text += f" (exit {code})" if isinstance(code, int) and code != 0 else ""
            if isinstance(seconds, int | float):
                text += f", {seconds:.1f}s" if seconds < 60 else f", {fmt.duration(seconds)}"
            tone = "gate-passed" if status == "passed" else "gate-failed" if status in ("failed", "timeout") else ""
            step = Static(Content(text), classes=f"line gate {tone}".rstrip())
            step.styles.padding = (0, 0, 0, 2)  # under its gates line, and so where a long command wraps
            yield step

    def compose_note(self) -> ComposeResult:
        if not self.review_override:
            yield from super().compose_note()
            return
        yield Static(Content("Only the review stands in the way. y asks for your reason and accepts over the "
                             "review; the reason is recorded with the accept."),
                     classes="note overridable", id="override-note")
        yield Static("y override with a reason  ·  n / escape cancel", classes="hint")

    def compose_details(self) -> ComposeResult:
        if not self.scope:
            return
        with Vertical(id="scope", classes="scope"):
            yield Static(Content("scope: " + ", ".join(self.scope)), classes="line")
            if not self.outside:
                yield Static(Content("every changed file is inside the scope"), classes="line")
                return
            yield Static(Content(f"outside the scope ({len(self.outside)}):"), classes="line refused")
            for name in self.outside[:self.SHOWN_OUTSIDE]:
                yield Static(Content(f"  {name}"), classes="line outside")
            if len(self.outside) > self.SHOWN_OUTSIDE:
                yield Static(Content(f"  … and {len(self.outside) - self.SHOWN_OUTSIDE} more"), classes="line")


class ReasonModal(Dialog[str | None]):
    """Asks the lead why (an override's reason, a verification's evidence): enter sends the text,
    escape cancels with None. An empty reason is refused inline: the engine would refuse it too."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="reason.cancel"),
    ]

    def __init__(self, title: str, lines: Sequence[str], *, placeholder: str = "your reason") -> None:
        super().__init__()
        self.title_text = title
        self.lines = list(lines)
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Content(self.title_text), classes="title")
            with VerticalScroll(classes="body"):
                yield from plain_lines(self.lines)
            yield Input(placeholder=self.placeholder, id="reason")
            yield Static("", classes="error", id="reason-error")
            yield Static("enter send  ·  escape cancel", classes="hint")

    def on_mount(self) -> None:
        self.query_one("#reason", Input).focus()

    @on(Input.Submitted, "#reason")
    def _submit(self, event: Input.Submitted) -> None:
        event.stop()
        if not event.value.strip():
            self.query_one("#reason-error", Static).update(f"type {self.placeholder}, or press escape")
            return
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)


@dataclass(frozen=True)
class RecoverChoice:
    """What the recover dialog returns: `recheck` or `relaunch`, with the lead's note for the relaunch."""

    action: str
    note: str = ""


class RecoverModal(Dialog[RecoverChoice | None]):
    """Shows the recover findings; c → recheck, l (or enter in the note) → relaunch with the note
    field's text, escape → None. `n` (or a click) puts the cursor in the note, where c and l are
    letters. With `relaunch_refused` (the task used its `[lanes] attempts`) l says why instead."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "choose('recheck')", "Re-check (gates again)", id="recover.recheck"),
        Binding("l", "choose('relaunch')", "Relaunch as the next attempt", id="recover.relaunch"),
        Binding("n", "note", "Write a note for the relaunch", id="recover.note"),
        Binding("escape", "cancel", "Cancel", id="recover.cancel"),
    ]
    AUTO_FOCUS = None  # the keys first: the note field takes them only once the lead goes there

    def __init__(self, lines: Sequence[str], *, title: str = "Recover lane",
                 relaunch_refused: str | None = None) -> None:
        super().__init__()
        self.lines = list(lines)
        self.title_text = title
        self.relaunch_refused = relaunch_refused

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Content(self.title_text), classes="title")
            with VerticalScroll(classes="body"):
                yield from plain_lines(self.lines)
            yield Input(placeholder="your notes for the next attempt (optional): n to write, enter relaunches",
                        id="note", disabled=self.relaunch_refused is not None)
            yield Static("", classes="error", id="recover-error")
            yield Static("c re-check  ·  l relaunch  ·  n note  ·  escape cancel", classes="hint")

    def action_choose(self, choice: str) -> None:
        if choice == "relaunch" and self.relaunch_refused is not None:
            self.query_one("#recover-error", Static).update(Content(f"relaunch refused: {self.relaunch_refused}"))
            return
        note = self.query_one("#note", Input).value.strip() if choice == "relaunch" else ""
        self.dismiss(RecoverChoice(choice, note))

    def action_note(self) -> None:
        note = self.query_one("#note", Input)
        if not note.disabled:
            note.focus()

    @on(Input.Submitted, "#note")
    def _submit(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_choose("relaunch")

    def action_cancel(self) -> None:
        self.dismiss(None)


class TextAnswerModal(Dialog[str | None]):
    """Answer one question: typed text for a `text` question, else one of its options (by id).

    enter submits (Input.Submitted / OptionList.OptionSelected); escape cancels with None. An empty
    text answer is refused inline, since an agent cannot tell "" from a slip of the finger.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="answer.cancel"),
    ]

    def __init__(self, view: QuestionView) -> None:
        super().__init__()
        self.question = view.question
        self.options = _options(view)

    def compose(self) -> ComposeResult:
        q = self.question
        with Vertical(id="dialog"):
            yield Label(Content(q.title or "Question"), classes="title")
            yield Static(Content(f"lane {q.lane}  ·  {q.source}  ·  {q.kind}"), classes="hint")
            if q.body:
                with VerticalScroll(classes="body"):
                    yield Static(Content(q.body), classes="line")
            if self.options:
                yield OptionList(*(Option(Content(label), id=oid) for oid, label in self.options), id="choices")
                yield Static("enter choose  ·  escape cancel", classes="hint")
            else:
                default = q.default
                yield Input(value=str(default) if default else "", placeholder="your answer", id="text")
                yield Static("", classes="error", id="answer-error")
                yield Static("enter send  ·  escape cancel", classes="hint")

    def on_mount(self) -> None:
        if self.options:
            choices = self.query_one("#choices", OptionList)
            ids = [oid for oid, _ in self.options]
            default = self.question.default
            choices.highlighted = ids.index(default) if default in ids else 0
            choices.focus()
        else:
            self.query_one("#text", Input).focus()

    @on(Input.Submitted, "#text")
    def _submit_text(self, event: Input.Submitted) -> None:
        event.stop()
        if not event.value.strip():
            self.query_one("#answer-error", Static).update("type an answer, or press escape")
            return
        self.dismiss(event.value)

    @on(OptionList.OptionSelected, "#choices")
    def _submit_choice(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


def _options(view: QuestionView) -> list[tuple[str, str]]:
    """(id, label) pairs to choose from; yes/no questions without options get yes and no."""
    question = view.question
    if question.kind == "text":
        return []
    options = [(o.id, o.label or o.id) for o in question.options]
    if not options and question.kind in ("yesno", "permission"):
        options = [("yes", "yes"), ("no", "no")]
    return options
