"""The lane views and meters (output, diff, meters, attention bar), each mounted alone and fed by hand."""

from __future__ import annotations

from typing import Any

from textual.widgets import Sparkline, Static

from lanes_tui.widgets import AttentionBar, DiffPane, MetersPane, OutputPane, diff_pane
from tests.snapshot_apps.widget_apps import DIFF, MACHINE, WidgetHost

# --- OutputPane ------------------------------------------------------------------------------------


async def test_output_is_bounded_cleaned_and_only_for_the_shown_lane() -> None:
    pane = OutputPane(max_lines=50)
    app = WidgetHost(pane)
    async with app.run_test(size=(120, 36)) as pilot:
        pane.show("a-a1", "".join(f"old {i}\n" for i in range(500)))
        assert pane.line_count <= 51
        assert pane.lines[-2] == "old 499"
        assert not pane.append("b-a1", "not mine\n")
        assert pane.append("a-a1", "\x1b[31mred\x1b[0m \x07bell\r\nprogress 10%\rprogress 90%\n")
        assert pane.lines[-3:-1] == ["red bell", "progress 90%"]
        for i in range(200):
            pane.append("a-a1", f"new {i}\n")
        assert pane.line_count <= 51
        assert pane.lines[-2] == "new 199"
        pane.append("a-a1", "x" * 10_000)
        assert max(len(line) for line in pane.lines) <= 4000
        pane.show("b-a1", "fresh\n")
        assert pane.lines[0] == "fresh" and pane.lane_id == "b-a1"
        await pilot.pause()


async def test_output_follows_unless_scrolled_up() -> None:
    pane = OutputPane()
    app = WidgetHost(pane)
    async with app.run_test(size=(120, 36)) as pilot:
        pane.show("a-a1", "".join(f"line {i}\n" for i in range(200)))
        await pilot.pause()
        assert pane.following and pane.styles.scrollbar_visibility == "hidden"
        pane.append("a-a1", "one more\n")
        await pilot.pause()
        assert pane.is_vertical_scroll_end
        pane.scroll_to(y=10, animate=False, immediate=True)
        await pilot.pause()
        pane.append("a-a1", "and another\n")
        await pilot.pause()
        assert pane.scroll_y == 10  # the lead is reading: the view stays put
        assert pane.styles.scrollbar_visibility == "visible"  # and sees where in the output
        text_width = pane.scrollable_content_region.width
        pane.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        assert pane.styles.scrollbar_visibility == "hidden"  # at the tail the thumb is not drawn
        assert pane.scrollable_content_region.width == text_width  # its gutter stays: no text moves


# --- DiffPane --------------------------------------------------------------------------------------


async def test_diff_colours_and_cuts_huge_diffs() -> None:
    pane = DiffPane()
    app = WidgetHost(pane, lambda p: p.show("a-a1", DIFF))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        body = pane.query_one("#diff-body", Static)
        text = str(body.content)
        assert "+def sub(a, b):" in text and not pane.truncated
        huge = "".join(f"+line {i}\n" for i in range(diff_pane.MAX_LINES + 500))
        pane.show("a-a1", huge)
        await pilot.pause()
        text = str(body.content)
        assert pane.truncated and "diff cut after" in text
        assert text.count("\n") <= diff_pane.MAX_LINES + 1
        pane.show("b-a1", "")
        assert "no changes" in str(body.content)


# --- MetersPane ------------------------------------------------------------------------------------


async def test_meters_repaint_only_when_the_reading_changes() -> None:
    pane = MetersPane(history=5)
    app = WidgetHost(pane)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        text = pane.query_one("#meters-text", Static)
        updates = 0
        layouts: list[bool] = []
        real_update = text.update

        def counting_update(*args: Any, **kwargs: Any) -> None:
            nonlocal updates
            updates += 1
            layouts.append(kwargs.get("layout", True))
            real_update(*args, **kwargs)

        text.update = counting_update  # type: ignore[method-assign]
        pane.update_machine(MACHINE)
        pane.update_machine(dict(MACHINE, cpu_percent=37.2))  # reads "37%" again: no repaint
        assert updates == 1
        pane.update_machine(dict(MACHINE, cpu_percent=150.0))
        assert updates == 2 and pane.readings.cpu == 100  # clamped by the validator
        pane.update_machine(dict(MACHINE, cpu_percent=42.0))
        pane.update_machine(dict(MACHINE, cpu_percent=43.0))
        # A line that got longer or shorter lays the screen out again; figures of the same length do not.
        assert layouts == [True, True, True, False]
        for i in range(10):
            pane.update_machine(dict(MACHINE, cpu_percent=float(i)))
        spark = pane.query_one("#cpu-spark", Sparkline)
        assert spark.data is not None and list(spark.data) == [5.0, 6.0, 7.0, 8.0, 9.0]
        await pilot.pause()
        shown = str(text.content)
        assert "slots 1/2" in shown and "tidy-tests-a2 (pid 777)" in shown and "lanes 3/6" in shown
        assert "$4.20" in shown and "512.0k" in shown and "120.0G" in shown


# --- AttentionBar ----------------------------------------------------------------------------------


async def test_attention_bar_gets_loud() -> None:
    bar = AttentionBar()
    app = WidgetHost(bar)
    async with app.run_test(size=(120, 36)) as pilot:
        assert not bar.has_class("-questions") and "all quiet" in str(bar.content)
        bar.set_counts(2, 0, 1)
        await pilot.pause()
        assert bar.has_class("-questions") and "2 open questions" in str(bar.content)
        bar.set_counts(2, 1, 1)
        assert bar.has_class("-stalls") and not bar.has_class("-questions")
        bar.set_counts(0, 0, 3)
        assert bar.has_class("-ready") and not bar.has_class("-stalls")
        bar.set_counts(-1, 0, 0)
        assert bar.counts == (0, 0, 0, 0)
        bar.set_counts(0, 0, 0, 1)  # a plan ticket to take over is as loud as a stall
        assert bar.has_class("-stalls") and "1 ticket to take over" in str(bar.content)
