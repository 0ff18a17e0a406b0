"""The conflict radar as a dialog: every pair of lanes that would conflict, or that share files.

Built from the lanes' statuses (`LaneStatus.conflicts`, filled by the engine's radar): each finding
is listed once per pair, the most serious first — a trial merge into the target that conflicts, a
trial merge of two ready lanes that conflicts, then lanes that changed the same files (which may
still merge cleanly). escape or c closes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import DataTable, Label, Static

from lanes_tui.widgets._dialog import Dialog
from lanes_tui.widgets._format import tone_style

if TYPE_CHECKING:  # widgets are given statuses; they never load the engine to get them
    from lanes_tui.engine import LaneStatus

__all__ = ["KIND_LABELS", "ConflictsModal", "conflict_rows", "predicted_lines"]

#: How each kind of finding reads, most serious first (the rows' order).
KIND_LABELS = {"target": "conflicts with target", "merge": "merge conflict", "overlap": "same files"}
#: How many files a row names before "+N".
FILES_SHOWN = 4


def conflict_rows(lanes: Sequence[LaneStatus]) -> list[tuple[str, str, str]]:
    """(kind, lanes, files) once per pair and kind, the most serious first, then by lane."""
    seen: set[tuple[str, str, str]] = set()
    rows: list[tuple[int, str, str, str]] = []
    for status in lanes:
        for found in status.conflicts:
            kind = str(found.get("kind", ""))
            if kind not in KIND_LABELS:
                continue
            other = found.get("lane")
            a, b = status.id, str(other) if other else ""
            first, second = sorted((a, b)) if b else (a, "")
            key = (kind, first, second)
            if key in seen:
                continue
            seen.add(key)
            pair = f"{first} ↔ {second}" if b else f"{a} → {found.get('target') or 'its target'}"
            rows.append((list(KIND_LABELS).index(kind), KIND_LABELS[kind], pair, _files(found)))
    return [(kind, pair, files) for _, kind, pair, files in sorted(rows)]


def predicted_lines(conflicts: Sequence[Mapping[str, Any]]) -> list[str]:
    """One lane's radar findings as the accept dialog says them, the most serious first: the lead learns
    of a predicted conflict before pressing y, not from the accept that stops on it."""
    lines: list[tuple[int, str]] = []
    for found in conflicts:
        kind, other, files = str(found.get("kind", "")), found.get("lane"), _files(found)
        if kind == "target":
            target = found.get("target") or "its target"
            lines.append((0, f"the radar predicts conflicts with {target} in {files}: the accept's rebase will "
                             "stop there, nothing merged"))
        elif kind == "merge" and other:
            lines.append((1, f"the radar predicts conflicts with {other} in {files}: accept order matters"))
        elif kind == "overlap" and other:
            lines.append((2, f"shares files with {other}: {files} (they may still merge cleanly)"))
    return [line for _, line in sorted(lines, key=lambda item: item[0])]


def _files(found: Mapping[str, Any]) -> str:
    files = [str(f) for f in found.get("files") or ()]
    more = len(files) - FILES_SHOWN
    return ", ".join(files[:FILES_SHOWN]) + (f" +{more}" if more > 0 else "")


class ConflictsModal(Dialog[None]):
    """The radar's pairs for the lead to read before accepting; escape or c closes."""

    DEFAULT_CSS = """
    ConflictsModal #conflict-pairs {
        height: auto;
        max-height: 20;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,c", "close", "Close", id="conflicts.close"),
    ]

    def __init__(self, lanes: Sequence[LaneStatus]) -> None:
        super().__init__()
        self.rows = conflict_rows(lanes)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("Conflict radar", classes="title")
            if self.rows:
                table: DataTable[Text] = DataTable(id="conflict-pairs", cursor_type="row", zebra_stripes=True)
                yield table
                yield Static(Content("A merge conflict stops an accept; lanes with the same files may still merge "
                                     "cleanly. The accept queue (m) takes the conflicting lanes last."),
                             classes="note")
            else:
                yield Static(Content("No live or ready lanes share a file, and every ready lane merges cleanly."),
                             classes="line", id="no-conflicts")
            yield Static("escape / c close", classes="hint")

    def on_mount(self) -> None:
        if not self.rows:
            return
        table = self.query_one("#conflict-pairs", DataTable)
        table.add_column("kind", key="kind")
        table.add_column("lanes", key="lanes")
        table.add_column("files", key="files")
        for i, (kind, pair, files) in enumerate(self.rows):
            style = tone_style(self.app, "warning" if kind == KIND_LABELS["overlap"] else "error", bold=True)
            table.add_row(Text(kind, style=style), Text(pair), Text(files), key=str(i))
        table.focus()

    def action_close(self) -> None:
        self.dismiss(None)
