"""The Worktrees pane: where each lane works, and how far it is from its target.

Rows come from the engine (it runs git; widgets never do): {lane, path, branch, changed, insertions,
deletions, ahead, behind, commits}. `+`/`-` are the lines the lane added and removed against its base,
uncommitted work included, so the lead sees the size of a lane before opening its diff. `behind` > 0
means an accept will rebase the lane first, so it is coloured as a warning. The highlighted row's
tooltip lists the lane's own commits (newest first), since agents that commit leave their story there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from textual.content import Content

from lanes_tui.widgets import _format as fmt
from lanes_tui.widgets._keyed_table import Cell, KeyedTable


class WorktreesPane(KeyedTable):
    """One row per lane worktree, keyed by lane id, in the order given."""

    COLUMNS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("lane", "lane"), ("branch", "branch"), ("changed", "changed"), ("insertions", "+"),
        ("deletions", "-"), ("ahead", "ahead"), ("behind", "behind"), ("path", "path"),
    )
    TITLE: ClassVar[str] = "Worktrees"

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._commits: dict[str, str] = {}
        """Lane id → its commits as tooltip text."""

    @property
    def selected_lane(self) -> str | None:
        return self.selected_key

    def sync(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Show exactly these worktrees; a missing number (None) shows as blank, not 0."""
        self._commits = {str(r["lane"]): _commits_text(r.get("commits")) for r in rows}
        self._apply([(str(r["lane"]), self._row(r)) for r in rows])
        self._set_tooltip()

    def _selection_changed(self, key: str | None) -> None:
        self._set_tooltip()

    def _set_tooltip(self) -> None:
        text = self._commits.get(self.selected_key or "")
        # Content, not str: commit summaries may hold brackets that markup would eat.
        self.tooltip = Content(text) if text else None

    def _row(self, r: Mapping[str, Any]) -> tuple[Cell, ...]:
        behind, added, removed = r.get("behind"), r.get("insertions"), r.get("deletions")
        return (
            Cell(str(r["lane"])),
            Cell(str(r.get("branch") or "")),
            Cell(_num(r.get("changed")), right=True),
            Cell(_signed("+", added), "success" if added else "", right=True),
            Cell(_signed("-", removed), "error" if removed else "", right=True),
            Cell(_num(r.get("ahead")), right=True),
            Cell(_num(behind), "warning" if behind else "", right=True),
            Cell(_shorten_path(str(r.get("path") or ""), 40)),
        )


def _commits_text(commits: Any) -> str:
    """`abc1234 summary — author` per commit, or a line saying the work is not committed yet."""
    if commits is None:
        return ""
    lines = [f"{str(c.get('sha', ''))[:7]} {fmt.truncate(fmt.clean_text(str(c.get('summary') or '')), 72)}"
             f" — {c.get('author') or '?'}" for c in commits if isinstance(c, Mapping)]
    return "\n".join(lines) or "no commits on the lane branch: its work is uncommitted until accept"


def _num(value: Any) -> str:
    return "" if value is None else str(value)


def _signed(sign: str, value: Any) -> str:
    """`+12` / `-3` as git's stat shows them; 0 stays a bare 0 and unknown stays blank."""
    return "" if value is None else f"{sign}{value}" if value else "0"


def _shorten_path(path: str, width: int) -> str:
    """Keep the end of a long path (the lane's folder), which is the part that tells lanes apart."""
    return path if len(path) <= width else "…" + path[-(width - 1):]
