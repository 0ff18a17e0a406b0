"""The dashboard opens on a repository, shows the lanes already on disk, and `q` quits cleanly."""

from __future__ import annotations

import gc
from pathlib import Path

from textual.timer import Timer

from lanes_tui.app.dashboard.app import LanesApp
from lanes_tui.engine.live.engine import Engine
from lanes_tui.fast import enabled
from lanes_tui.fast.frame_timer import FrameTimer
from lanes_tui.widgets import LanesTable
from tests.helpers import run_lane, wait_state, write_config


async def test_dashboard_shows_existing_lanes_and_quits(repo: Path) -> None:
    write_config(repo)
    lane = run_lane(repo, "write hi.txt hi\n", lane_id="shown")
    wait_state(repo, lane)
    engine = Engine(repo, poll_s=0.05)
    app = LanesApp(repo, engine=engine)
    gc.unfreeze()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        # The long-lived objects of the screen are out of the collector's way once it is drawn.
        assert gc.get_freeze_count() > 10_000
        table = app.screen.query_one(LanesTable)
        assert lane in table.row_keys
        assert str(table.get_cell(lane, "state")) == "ready"
        # The frames it drew came from the frame timer (Textual's own with the fast path off).
        assert isinstance(app.screen._update_timer, FrameTimer if enabled("frame_timer") else Timer)

        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0
    assert gc.get_freeze_count() == 0  # given back to the collector when the app closed
    assert engine._task is None  # the engine was closed when the app unmounted
