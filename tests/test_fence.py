"""The fence (issue 31): Textual's and Rich's private names are touched only in `fast/`, and a Textual whose
private API moved makes the dashboard slower, never crashed.

The first half reads the source (`tests/fence_check.py`); the second changes Textual under the fence's
feet (a method's parameters, as 8.2.7 changed `StylesCache.render_line`'s) or sets `LANES_TUI_STOCK=1`,
and checks that the stock path is installed, that one log line says so, and that the panes still draw.
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual._compositor import Compositor
from textual._styles_cache import StylesCache
from textual.timer import Timer

from lanes_tui.fast import checks
from tests.fence_check import check, sources_under

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"app": "lanes_tui.app", "widgets": "lanes_tui.widgets", "engine": "lanes_tui.engine",
           "fast": "lanes_tui.fast"}


def test_nothing_outside_the_fence_touches_a_private_name() -> None:
    touches = check(sources_under(ROOT, FOLDERS, fence="fast"))
    assert touches == [], "move these into fast/ behind a public function or class: " + "; ".join(touches)


PLANTED = '''
import importlib
import os
import textual._compositor as comp
from textual import _time
from textual.widgets import DataTable, Log
from textual.widgets.data_table import _EMPTY_TEXT

class Pane(Log):
    def _render_line(self, y, scroll_x, width):
        return self._lines[y]

class Deeper(Pane):
    def lines(self):
        return len(self._lines) + self._width

class Mine:
    def __init__(self):
        self._cells = {}
        self._exit = None

    def cells(self):
        return self._cells

def sneaky(table: DataTable) -> None:
    t = table
    t._render_cell(0, 0, None, 1)
    getattr(table, "_line_cache").clear()
    importlib.import_module("textual._xterm_parser")
    os._exit(0)
'''


def test_the_check_finds_planted_touches_and_passes_our_own_private_names(tmp_path: Path) -> None:
    """Not vacuous: a private import (plain, aliased, as a string), an override and attributes of a
    Textual subclass (and of our subclass of it), and an alias's private call are each reported; our own
    class's `_cells` and `os._exit` are not."""
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "planted.py").write_text(PLANTED)
    (tmp_path / "fast").mkdir()
    (tmp_path / "fast" / "allowed.py").write_text("from textual._compositor import Compositor\n")
    found = check(sources_under(tmp_path, {"app": "lanes_tui.app", "fast": "lanes_tui.fast"}, fence="fast"))
    assert found == [
        "app/planted.py:4 imports textual._compositor",
        "app/planted.py:5 imports textual._time",
        "app/planted.py:7 imports textual.widgets.data_table._EMPTY_TEXT",
        "app/planted.py:10 overrides Pane._render_line (Textual's private)",
        "app/planted.py:11 touches ._lines",
        "app/planted.py:15 touches ._lines",
        "app/planted.py:15 touches ._width",
        "app/planted.py:27 touches ._render_cell",
        "app/planted.py:28 touches ._line_cache through getattr",
        "app/planted.py:29 imports textual._xterm_parser",
    ]


def test_the_fence_imports_nothing_of_ours_but_itself() -> None:
    """The app and the widgets build on the fence; it builds on Textual, Rich and the standard library."""
    upward = []
    for path in sorted((ROOT / "fast").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            upward += [f"{path.name}:{node.lineno} {n}" for n in names
                       if n.startswith("lanes_tui") and not n.startswith("lanes_tui.fast")]
    assert upward == []


# --- degrade, never crash ---------------------------------------------------------------------------------


@pytest.fixture
def fresh_checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The checks run again for this test, without `LANES_TUI_STOCK` unless the test sets it; the next
    user after it checks afresh (against the restored Textual)."""
    monkeypatch.delenv(checks.STOCK_ENV, raising=False)
    checks.off_reasons.cache_clear()
    yield
    checks.off_reasons.cache_clear()


def _fence_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "lanes_tui.fast"]


def test_every_fast_path_is_on_with_the_pinned_textual(fresh_checks: None,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="lanes_tui.fast"):
        assert checks.recheck() == {}
        assert all(checks.enabled(path) for path in checks.PATHS)
    assert _fence_lines(caplog) == []


def _next_textual(monkeypatch: pytest.MonkeyPatch) -> None:
    """`StylesCache.render_line` as a next patch release might have it: one parameter more, as 8.2.7 added
    `native_ansi` (Textual's own `render` still calls it as before)."""
    render_line = StylesCache.render_line

    def render_line_next(self: Any, styles: Any, y: int, size: Any, content_size: Any, padding: Any,
                         base_background: Any, background: Any, render_content_line: Any, border_title: Any,
                         border_subtitle: Any, opacity: float, ansi_theme: Any, native_ansi: bool,
                         dim: bool = False) -> Any:
        return render_line(self, styles, y, size, content_size, padding, base_background, background,
                           render_content_line, border_title, border_subtitle, opacity, ansi_theme, native_ansi)

    monkeypatch.setattr(StylesCache, "render_line", render_line_next)


async def test_a_changed_signature_turns_its_fast_path_off_with_one_log_line(
        fresh_checks: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A `StylesCache.render_line` of another shape: the framed rows are off (the panes keep Textual's own
    `StylesCache`), every other path stays on, one warning names the path and the parameters, the panes draw."""
    from textual.containers import Vertical

    from lanes_tui.fast.framed_rows import FramedRowsCache
    from lanes_tui.widgets import LanesTable, OutputPane
    from tests.snapshot_apps.widget_apps import WidgetHost, lane

    _next_textual(monkeypatch)
    with caplog.at_level(logging.INFO, logger="lanes_tui.fast"):
        off = checks.recheck()
        assert list(off) == ["framed_rows"]
        assert off["framed_rows"] == "StylesCache.render_line takes 15 parameters, not 14: adds dim"
        pane, table = OutputPane(), LanesTable()
    lines = _fence_lines(caplog)
    assert len(lines) == 1 and "framed_rows:" in lines[0] and "render_line" in lines[0], lines
    app = WidgetHost(Vertical(table, pane))
    async with app.run_test(size=(100, 30)) as pilot:
        table.sync([lane("a-a1", "running")], 1_000_000.0)
        pane.show("a-a1", "first line\nsecond line\n")
        await pilot.pause()
        shown = app.export_screenshot()
    assert type(pane._styles_cache) is StylesCache and type(table._styles_cache) is StylesCache
    assert not isinstance(pane._styles_cache, FramedRowsCache)
    assert "second&#160;line" in shown and "a-a1" in shown


async def test_a_missing_private_attribute_turns_its_fast_path_off(
        fresh_checks: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A renamed private method the frame timer overrides: the screen draws on Textual's own timer."""
    from lanes_tui.app.dashboard.screen import DashboardScreen
    from lanes_tui.fast.compositor import LeanCompositor

    monkeypatch.delattr(Timer, "_run")
    with caplog.at_level(logging.INFO, logger="lanes_tui.fast"):
        assert list(checks.recheck()) == ["frame_timer"]
        screen = DashboardScreen()
    assert len(_fence_lines(caplog)) == 1 and "Timer._run is gone" in _fence_lines(caplog)[0]
    assert not screen._fast_timer and isinstance(screen._compositor, LeanCompositor)  # (the other path stays on)


async def test_lanes_tui_stock_runs_everything_stock(fresh_checks: None, monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    from lanes_tui.app.dashboard.screen import DashboardScreen
    from lanes_tui.fast.framed_rows import FramedRowsCache
    from lanes_tui.widgets import LanesTable, OutputPane
    from tests.snapshot_apps.widget_apps import WidgetHost

    monkeypatch.setenv(checks.STOCK_ENV, "1")
    with caplog.at_level(logging.INFO, logger="lanes_tui.fast"):
        assert set(checks.recheck()) == set(checks.PATHS)
        screen = DashboardScreen()
        pane, table = OutputPane(), LanesTable()
    assert len(_fence_lines(caplog)) == 1 and "LANES_TUI_STOCK=1" in _fence_lines(caplog)[0]
    assert type(screen._compositor) is Compositor
    assert not pane.framed_rows and not table.framed_rows
    assert not isinstance(pane._styles_cache, FramedRowsCache) and not isinstance(table._styles_cache, FramedRowsCache)
    app = WidgetHost(pane)
    async with app.run_test(size=(60, 10)) as pilot:
        assert type(app.screen._update_timer) is Timer  # (the host's screen is Textual's own)
        pane.show("a-a1", "one\ntwo\n")
        await pilot.pause()
        assert pane.lines[:2] == ["one", "two"]


async def test_with_the_fast_paths_on_the_dashboard_screen_uses_them(fresh_checks: None) -> None:
    """The other side of the test above: on the pinned Textual the screen and panes do take the fast paths."""
    from lanes_tui.app.dashboard.screen import DashboardScreen
    from lanes_tui.fast.compositor import LeanCompositor
    from lanes_tui.fast.framed_rows import FramedRowsCache
    from lanes_tui.widgets import LanesTable, OutputPane

    screen, pane, table = DashboardScreen(), OutputPane(), LanesTable()
    assert isinstance(screen._compositor, LeanCompositor)
    assert screen._fast_timer
    assert pane.framed_rows and isinstance(pane._styles_cache, FramedRowsCache)
    assert table.framed_rows and isinstance(table._styles_cache, FramedRowsCache)
