"""Ages move with the clock (issue 32): a tick rewrites the Inbox's ages and the Stalls pane's idle
times, and repaints only the rows whose text changed. The clock is a `now` argument: no sleeping.

Correctness is checked against a pane built directly at the later time: the same screen.
"""

from __future__ import annotations

from typing import Any

from textual.geometry import Region

from lanes_tui.widgets import InboxPane, LanesTable, StallsPane
from lanes_tui.widgets._lane_order import attention, ordered
from tests.snapshot_apps.widget_apps import NOW, WidgetHost, lane, question

#: One young question (its age changes every second), one past the minute (once a minute), one past the
#: day (once an hour).
ASKED = [
    question("q_young", "young-a1", "open", NOW - 10, title="Run the migrations?"),
    question("q_older", "older-a1", "open", NOW - 300, title="Delete the cache?"),
    question("q_oldest", "oldest-a1", "orphaned", NOW - 90_000, title="Keep the fixtures?"),
]


def _spy(widget: Any) -> tuple[list[tuple[Region, ...]], list[str]]:
    """What `widget` asks to repaint, and which rows' lines it builds again."""
    refreshes: list[tuple[Region, ...]] = []
    built: list[str] = []
    real_refresh, real_build = widget.refresh, widget._build_row

    def refresh(*regions: Region, **kwargs: Any) -> Any:
        refreshes.append(regions)
        return real_refresh(*regions, **kwargs)

    def build(key: str, *args: Any) -> Any:
        built.append(key)
        return real_build(key, *args)

    widget.refresh = refresh
    widget._build_row = build
    return refreshes, built


async def test_an_inbox_tick_repaints_only_the_rows_whose_age_changed() -> None:
    pane = InboxPane()
    app = WidgetHost(pane)
    async with app.run_test(size=(120, 20)) as pilot:
        pane.sync(ASKED, NOW)
        await pilot.pause()
        assert [pane.get_cell(k, "age").plain for k in ("q_young", "q_older", "q_oldest")] == ["10s", "5m", "1d01h"]
        refreshes, built = _spy(pane)
        before = pane.cell_updates

        pane.tick(NOW + 1)  # one second on: only the young question's age reads differently
        await pilot.pause()
        assert pane.get_cell("q_young", "age").plain == "11s"
        assert pane.cell_updates == before + 1
        young_row = Region(0, pane.get_row_index("q_young") + 1, pane.size.width, 1)
        assert refreshes == [(young_row,)], f"only the young question's row may be repainted, got {refreshes}"
        assert built == ["q_young"]

        refreshes.clear()
        built.clear()
        pane.tick(NOW + 1.5)  # the same second: the same texts, nothing repainted
        await pilot.pause()
        assert refreshes == [] and built == [] and pane.cell_updates == before + 1

        pane.tick(NOW + 60)  # a minute on: the young one and the 5-minute one change, not the day-old one
        await pilot.pause()
        assert sorted(set(built)) == ["q_older", "q_young"]
        assert pane.get_cell("q_young", "age").plain == "1m" and pane.get_cell("q_older", "age").plain == "6m"
        ticked = app.export_screenshot()

    fresh = InboxPane()
    again = WidgetHost(fresh, lambda p: p.sync(ASKED, NOW + 60))
    async with again.run_test(size=(120, 20)) as pilot:
        await pilot.pause()
        assert again.export_screenshot() == ticked


#: A quiet lane (idle past the warning) and one the watchdog stopped: both idle times count on.
QUIET = lane("quiet-a1", "running", idle_s=130.0, created=NOW - 900, updated=NOW - 200)
STOPPED = lane("stopped-a1", "stalled", updated=NOW - 30, stall={"idle_s": 900.0, "idle_timeout_s": 900})


async def test_the_stalls_idle_times_count_on_from_their_sample() -> None:
    pane = StallsPane()
    app = WidgetHost(pane)
    async with app.run_test(size=(120, 20)) as pilot:
        pane.sync([QUIET, STOPPED], 120, NOW)
        await pilot.pause()
        # The stopped lane was idle 900 s when its record was written, 30 s ago.
        assert pane.get_cell("quiet-a1", "idle").plain == "2m10s"
        assert pane.get_cell("stopped-a1", "idle").plain == "15m"
        refreshes, built = _spy(pane)

        pane.tick(NOW + 1)
        await pilot.pause()
        assert pane.get_cell("quiet-a1", "idle").plain == "2m11s"
        assert built == ["quiet-a1"] and len(refreshes) == 1  # the stopped lane's "15m" did not change

        pane.sync([QUIET, STOPPED], 120, NOW + 2)  # the same sample again (a poll): it counts on
        assert pane.get_cell("quiet-a1", "idle").plain == "2m12s"
        newer = lane("quiet-a1", "running", idle_s=125.0, created=NOW - 900)
        pane.sync([newer, STOPPED], 120, NOW + 3)  # a newer sample: counted from when it came
        assert pane.get_cell("quiet-a1", "idle").plain == "2m05s"
        pane.tick(NOW + 5)
        assert pane.get_cell("quiet-a1", "idle").plain == "2m07s"


async def test_the_stalls_pane_leaves_out_a_relaunched_lane() -> None:
    pane = StallsPane()
    app = WidgetHost(pane)
    async with app.run_test(size=(120, 20)) as pilot:
        relaunched = lane("stall-a1", "stalled", superseded_by="stall-a2",
                          stall={"idle_s": 900.0, "idle_timeout_s": 900})
        pane.sync([relaunched, lane("stall-a2", "running", idle_s=2.0), STOPPED], 120, NOW)
        await pilot.pause()
        assert pane.row_keys == ["stopped-a1"]


def test_a_relaunched_lane_sorts_last_by_attention() -> None:
    old = lane("stall-a1", "stalled", created=NOW - 900, superseded_by="stall-a2")
    new = lane("stall-a2", "running", created=NOW - 100)
    done = lane("done-a1", "accepted", created=NOW - 950)
    ready = lane("ready-a1", "ready", created=NOW - 50)
    assert attention(old) == 5 > attention(done)
    assert [s.id for s in ordered([old, new, done, ready], "attention")] == ["ready-a1", "stall-a2", "done-a1",
                                                                              "stall-a1"]


async def test_a_narrow_lanes_table_draws_only_the_columns_it_keeps() -> None:
    table = LanesTable()
    app = WidgetHost(table, lambda t: t.sync([QUIET, STOPPED], NOW))
    async with app.run_test(size=(80, 12)) as pilot:
        await pilot.pause()
        table.show_columns(LanesTable.NARROW_COLUMNS)
        await pilot.pause()
        assert table.shown_columns == ["id", "state", "why"]
        screen = app.export_screenshot()
        assert "running" in screen and "stalled" in screen and "provider" not in screen
        assert table.virtual_size.width < 80  # nothing to scroll sideways: every kept column fits
        table.show_columns(None)
        await pilot.pause()
        assert table.shown_columns == [key for key, _ in LanesTable.COLUMNS]
        assert "provider" in app.export_screenshot()
