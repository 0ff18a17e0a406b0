"""The Gates pane: the selected lane's gate steps — status, duration, command — and the failing step's output.

A toast saying "gates failed" sends the lead to a terminal to find out why; this pane shows each
step (`[gates.steps]`, or the commands named after their program) and, below, the whole kept output
of the first step that failed or timed out, scrollable, so a failed gate is read where it is judged.
When no check has run yet it shows the steps a check would run, marked `planned`. The engine builds
the report (`GateReport`); this pane only lays it out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content, Span
from textual.widgets import Static

from lanes_tui.widgets._format import clean_text

if TYPE_CHECKING:  # widgets are given data: importing one loads no engine module
    from lanes_tui.engine import GateReport

#: A step's mark and colour by status.
MARKS = {"passed": ("✓", "$success"), "failed": ("✗", "$error"), "timeout": ("⏱", "$error"),
         "not-run": ("–", "$warning"), "planned": ("·", "$text-muted")}
MAX_OUTPUT_CHARS = 200_000


class GatesPane(VerticalScroll):
    """`show(lane_id, report)` replaces what is shown; scroll with the usual keys."""

    DEFAULT_CSS = """
    GatesPane {
        height: 1fr;
        border: round $panel;
        border-title-color: $text-muted;
        padding: 0 1;
    }
    GatesPane:focus {
        border: round $primary;
        border-title-color: $primary;
    }
    GatesPane > #gates-body {
        width: auto;
        min-width: 100%;
    }
    """

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.lane_id: str | None = None
        self.border_title = "Gates"

    def compose(self) -> ComposeResult:
        yield Static(Content("select a lane to see its gates"), id="gates-body")

    def show(self, lane_id: str | None, report: GateReport) -> None:
        self.lane_id = lane_id
        self.border_title = f"Gates · {lane_id}" if lane_id else "Gates"
        self.query_one("#gates-body", Static).update(render_report(report))


def render_report(report: GateReport) -> Content:
    """The steps, one line each, then the warnings and the failing step's output."""
    if not report.steps:
        return Content("no gates for this lane ([gates] commands = [] or nothing detected)")
    lines: list[str] = []
    spans: list[Span] = []
    pos = 0

    def add(line: str, style: str = "") -> None:
        nonlocal pos
        if style:
            spans.append(Span(pos, pos + len(line), style))
        lines.append(line)
        pos += len(line) + 1

    if report.planned:
        add("no check has run yet; a check would run:", "$text-muted italic")
    for wait in report.waits:  # what the gates waited for (a slot, the machine's load), or why none ran
        add(f"~ {clean_text(wait)}", "$warning")
    width = max(len(s.name) for s in report.steps)
    for step in report.steps:
        mark, style = MARKS.get(step.status, ("?", ""))
        took = "" if step.status in ("planned", "not-run") else _duration(step.duration_s)
        code = f"exit {step.exit_code}" if step.exit_code is not None else ""
        head = f"{mark} {step.name:<{width}}  {step.status:<7}  {took:>6}  {code:<7}"
        spans.append(Span(pos, pos + len(head), style))
        add(f"{head}  {step.command}")
    for warning in report.warnings:
        add(f"! {warning}", "$warning")
    if report.failing is not None:
        add("")
        add(f"── output of {report.failing} ──", "bold $error")
        text = clean_text(report.output)
        if len(text) > MAX_OUTPUT_CHARS:
            text = "… (start cut)\n" + text[-MAX_OUTPUT_CHARS:]
        for line in text.rstrip("\n").split("\n"):
            add(line)
    return Content("\n".join(lines), spans)


def _duration(seconds: float) -> str:
    from lanes_tui.engine import duration_text  # here: importing the pane loads no engine module

    return duration_text(seconds)
