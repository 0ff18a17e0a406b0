"""The tails of the rows beside the cursor are read ahead, so an arrow key shows its lane's output in
the frame after the cursor's, with the engine streaming from where that tail ended (`app.tail_prefetch`).

A fake engine counts each tail it reads and numbers it, so a test can tell a tail read ahead from one
loaded after the move, and can refuse to resume (as the real engine does when a tail is too old).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot

from lanes_tui.app.dashboard.app import LanesApp
from lanes_tui.app.dashboard.screen import DashboardScreen
from lanes_tui.widgets import LanesTable, OutputPane
from tests.fake_engine import FakeEngine, lane


class CountingEngine(FakeEngine):
    """Each tail says which read of its lane it was: `read 2 of b-a1`."""

    async def output_tail_at(self, lane_id: str, max_bytes: int = 65536) -> tuple[str, int]:
        self.calls.append(("output", lane_id))
        text = f"read {self.reads(lane_id)} of {lane_id}\n"
        return text, len(text.encode())

    def reads(self, lane_id: str) -> int:
        return self.calls.count(("output", lane_id))


def make(tmp_path: Path) -> CountingEngine:
    return CountingEngine(tmp_path, [lane("a-a1", "running"), lane("b-a1", "running"), lane("c-a1", "running")])


def shown(pilot: Pilot[None]) -> list[str]:
    pane = pilot.app.screen.query_one(OutputPane)
    return [pane.lane_id or "", *(line for line in pane.lines if line)]


async def settle(pilot: Pilot[None]) -> None:
    for _ in range(4):
        await pilot.pause()


async def test_the_next_row_is_read_ahead_and_shown_without_a_fresh_read(tmp_path: Path) -> None:
    engine = make(tmp_path)
    app = LanesApp(engine.repo, engine=engine, flush_s=0.01)  # type: ignore[arg-type]
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(LanesTable)
        assert table.selected_lane == "a-a1"
        assert shown(pilot) == ["a-a1", "read 1 of a-a1"]
        assert engine.reads("b-a1") == 1  # read ahead: the row below
        assert engine.reads("c-a1") == 0  # two rows away: not yet
        table.focus()
        await pilot.press("down")
        await settle(pilot)
        # b's tail is the one read ahead (no second read), and the stream resumes where it ended.
        assert shown(pilot) == ["b-a1", "read 1 of b-a1"]
        assert engine.reads("b-a1") == 1
        assert engine.follows[-1] == ("b-a1", len(b"read 1 of b-a1\n"))
        # Now both of b's neighbours are read (a afresh: its old tail has aged since it was shown).
        assert engine.reads("a-a1") == 2 and engine.reads("c-a1") == 1
        await pilot.press("up")
        await settle(pilot)
        assert shown(pilot) == ["a-a1", "read 2 of a-a1"]


async def test_a_tail_the_engine_cannot_resume_from_is_loaded_afresh(tmp_path: Path) -> None:
    engine = make(tmp_path)
    engine.resume_ok = False  # as when more than one read was written since the tail was read ahead
    app = LanesApp(engine.repo, engine=engine, flush_s=0.01)  # type: ignore[arg-type]
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert engine.reads("b-a1") == 1
        app.screen.query_one(LanesTable).focus()
        await pilot.press("down")
        await settle(pilot)
        assert engine.follows[-1] == ("b-a1", len(b"read 1 of b-a1\n"))  # asked, refused
        assert shown(pilot) == ["b-a1", "read 2 of b-a1"]  # so the tail was read again


async def test_without_read_ahead_only_the_selected_lane_is_read(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(DashboardScreen, "read_ahead", False)  # the B1 A/B's other arm
    engine = make(tmp_path)
    app = LanesApp(engine.repo, engine=engine, flush_s=0.01)  # type: ignore[arg-type]
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        app.screen.query_one(LanesTable).focus()
        await pilot.press("down")
        await settle(pilot)
        assert shown(pilot) == ["b-a1", "read 1 of b-a1"]
        assert [c for c in engine.calls if c[0] == "output"] == [("output", "a-a1"), ("output", "b-a1")]
        assert all(offset is None for _, offset in engine.follows)
