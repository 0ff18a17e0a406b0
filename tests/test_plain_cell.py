"""The fast plain-line path draws exactly what Rich draws (issue 15, B1); the list panes' own cell path is
held equal in `tests/test_keyed_table.py`."""

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


async def test_the_output_pane_builds_a_plain_line_as_log_renders_it() -> None:
    """Lines of every kind, each drawn by the pane (direct for one-cell characters) and by Log."""
    import random

    from textual.widgets import Log

    from lanes_tui.widgets import OutputPane
    from tests.snapshot_apps.widget_apps import WidgetHost

    rng = random.Random(7)
    alphabet = [*"line 7: simulated output ", "·", "✗", "é", "\t", "漢", "\u0301", "\x7f"]
    lines = ["", "plain ascii line", "tab\there", *("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
                                                 for _ in range(300))]
    pane = OutputPane()
    app = WidgetHost(pane)
    async with app.run_test(size=(100, 20)) as pilot:
        pane.show("lane-a1", "\n".join(lines))
        await pilot.pause()
        style = pane.rich_style
        real = Log._render_line_strip
        fell_back: list[int] = []

        def spy(self: Log, y: int, rich_style: object) -> object:
            fell_back.append(y)
            return real(self, y, rich_style)  # type: ignore[arg-type]

        for y, line in enumerate(pane._lines):
            pane._render_line_cache.clear()
            Log._render_line_strip = spy  # type: ignore[method-assign,assignment]
            try:
                ours = pane._render_line_strip(y, style)
            finally:
                Log._render_line_strip = real  # type: ignore[method-assign]
            theirs = real(pane, y, style)
            assert _cells(list(ours)) == _cells(list(theirs)), repr(line)
            assert ours.cell_length == theirs.cell_length, repr(line)
        plain = [y for y, line in enumerate(pane._lines) if not any(c in line for c in "\t漢\u0301\x7f")]
        assert len(plain) > 50 and not set(plain) & set(fell_back)  # plain lines never went through Log
