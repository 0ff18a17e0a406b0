"""The list panes' fast cell path draws exactly what DataTable's Rich path draws (issue 15, B1)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.renderables.styled import Styled

from lanes_tui.fast.plain_cell import plain_cell_line

CONSOLE = Console(width=200, color_system="truecolor")
STYLES = [Style(), Style(color="red"), Style(bgcolor="#102030"), Style(bold=True, color="#e0e0e0"),
          Style(dim=True), Style(reverse=True, bgcolor="blue"), Style.from_meta({"row": 3, "column": 1})]
#: Mostly what the panes show (printable ASCII), and now and then what the fast path must refuse.
TEXTS = st.text(alphabet=st.sampled_from([*"ab Z09:/.%-_~ ", "·", "—", "✗", "\t", "é", "漢", "\x1b", "\u0301",
                                          "\u00a0", "\u200b"]),
                max_size=24)


def _cells(segments: list[Segment]) -> list[tuple[str, Style]]:
    """What the terminal shows: each character with its style, however the segments are cut (no style
    and the null style draw the same)."""
    return [(char, segment.style or Style()) for segment in segments for char in segment.text]


def _rich(text: Text, width: int, padding: int, pre: Style, post: Style) -> list[Segment]:
    """DataTable's own path for a row of height 1 (`DataTable._render_cell`)."""
    options = CONSOLE.options.update_dimensions(width, 1).update(no_wrap=True)
    lines = CONSOLE.render_lines(Styled(Padding(text, (0, padding)), pre_style=pre, post_style=post), options)
    assert len(lines) == 1
    return lines[0]


@settings(max_examples=400, deadline=None)
@given(plain=TEXTS, justify=st.sampled_from(["left", "right", "center", "full", "default", None]),
       tone=st.sampled_from([None, *STYLES[1:4]]), width=st.integers(0, 30), padding=st.integers(0, 2),
       pre=st.sampled_from(STYLES), post=st.sampled_from(STYLES))
def test_the_fast_path_draws_what_rich_draws_or_declines(plain: str, justify: str | None, tone: Style | None,
                                                          width: int, padding: int, pre: Style,
                                                          post: Style) -> None:
    text = Text(plain, justify=justify, end="")  # type: ignore[arg-type]
    if tone is not None:
        text.stylize(tone)
    fast = plain_cell_line(text, width, padding, pre, post)
    if fast is None:
        # Declined only where Rich has work to do, never for what the panes show every tick.
        assert not (plain.isascii() and plain.isprintable() and justify in ("left", "right", None)
                    and width > 2 * padding)
        return
    assert _cells(fast) == _cells(_rich(text, width, padding, pre, post))
    assert sum(len(segment.text) for segment in fast) == width


def test_a_cell_in_several_styles_or_with_a_tab_goes_to_rich() -> None:
    two = Text("ab", justify="left", end="")
    two.stylize(Style(color="red"), 0, 1)
    assert plain_cell_line(two, 10, 1, Style(), Style()) is None
    assert plain_cell_line(Text("a\tb", justify="left", end=""), 10, 1, Style(), Style()) is None
    assert plain_cell_line(Text("ab", justify="left"), 10, 1, Style(), Style()) is None  # ends in "\n"
    assert plain_cell_line(Text("ab", justify="center", end=""), 10, 1, Style(), Style()) is None


async def test_the_lanes_table_draws_its_cells_the_fast_way_and_the_same() -> None:
    """Every cell of a real Lanes table, with and without the cursor: the table's own path (fast for
    plain cells) and DataTable's Rich path give the same characters in the same styles."""
    from textual.widgets import DataTable

    from lanes_tui.widgets import LanesTable
    from tests.snapshot_apps.widget_apps import LANES, NOW, WidgetHost

    table = LanesTable()
    app = WidgetHost(table)
    async with app.run_test(size=(160, 30)) as pilot:
        table.sync(LANES, NOW)
        table.update_meters(LANES[0].id, {"idle_s": 75, "cpu_percent": 99.4, "rss_bytes": 2 * 1024**3})
        table.focus()
        await pilot.pause()
        slow_calls = 0
        real = DataTable._render_cell

        def counted(self: DataTable[object], *args: object, **kwargs: object) -> object:
            nonlocal slow_calls
            slow_calls += 1
            return real(self, *args, **kwargs)  # type: ignore[arg-type]

        checked = 0
        for row in range(table.row_count):
            for column, spec in enumerate(table.ordered_columns):
                width = spec.get_render_width(table)
                for cursor in (False, True):
                    table._cell_render_cache.clear()
                    DataTable._render_cell = counted  # type: ignore[method-assign,assignment]
                    try:
                        fast = table._render_cell(row, column, table.rich_style, width, cursor)
                    finally:
                        DataTable._render_cell = real  # type: ignore[method-assign]
                    table._cell_render_cache.clear()
                    slow = real(table, row, column, table.rich_style, width, cursor)
                    assert [_cells(line) for line in fast] == [_cells(line) for line in slow], (row, spec.key)
                    checked += 1
        assert checked >= 2 * len(LANES) * len(LanesTable.COLUMNS)
        assert slow_calls < checked // 10, (slow_calls, checked)  # nearly every cell took the fast path
