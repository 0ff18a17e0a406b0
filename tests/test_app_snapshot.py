"""Snapshots of the whole dashboard with a fake engine and fixed data: at 120x36, and on the terminals
of issue 32 (80x24 and 100x30 compact, 160x48 wide, too small for anything but the size notice, and
the light theme)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lanes_tui.app.dashboard.app import LanesApp
from lanes_tui.engine.core.clock import FakeClock
from lanes_tui.engine.inbox.store import InboxStore
from tests.fake_engine import FakeEngine, lane


def _dashboard(tmp_path: Path, monkeypatch: Any) -> LanesApp:
    import time as real_time

    from lanes_tui.app.dashboard import screen as screen_module
    from tests import fake_engine

    class FrozenTime:
        """Ages and elapsed times on screen are computed from now: freeze it for a stable picture."""

        @staticmethod
        def time() -> float:
            return fake_engine.NOW

        def __getattr__(self, name: str) -> Any:
            return getattr(real_time, name)

    monkeypatch.setattr(screen_module, "time", FrozenTime())
    from lanes_tui.app.dashboard import meters_feed

    caps = [{"cap": "cpu", "value": "100%", "mechanism": "cgroup-v2 cpu.max"},
            {"cap": "memory", "value": "2.0 GiB", "mechanism": "cgroup-v2 memory.max"}]
    # The caps' mechanisms are this machine's cgroups: fixed here so the picture is the same everywhere.
    monkeypatch.setattr(meters_feed, "governor_summary", lambda config: caps)
    engine = FakeEngine(tmp_path / "x", [
        lane("ready-a1", "ready", state_reason="gates passed; review CLEAN", review="CLEAN", idle_s=None,
             cpu_percent=0.0, rss_bytes=0),
        lane("question-a1", "waiting", state_reason="a question is open in the inbox"),
        lane("stall-a1", "stalled", result="LANE-STALLED", state_reason="no activity for 900s",
             stall={"idle_s": 900.2, "tree": [{"pid": 4242, "name": "python", "cmdline": "python -m agent"}]}),
        lane("busy-a1", "running", cpu_percent=99.0, tokens={"total": 12000}, cost_usd=0.42),
    ])
    # Asked 42 s before the frozen now (the inbox stamps the question with its own clock): a fixed age.
    engine.inbox = InboxStore(tmp_path / "x" / "inbox", clock=FakeClock(wall=fake_engine.NOW - 42))
    engine.inbox.ask("question-a1", kind="yesno", title="Deploy the calculator to staging?")
    return LanesApp(Path("/repo/calculator"), engine=engine, flush_s=0.01)  # type: ignore[arg-type]


async def _settle(pilot: Any) -> None:
    await pilot.pause(0.2)


def test_dashboard_snapshot(snap_compare: Any, tmp_path: Path, monkeypatch: Any) -> None:
    app = _dashboard(tmp_path, monkeypatch)
    assert snap_compare(app, terminal_size=(120, 36), run_before=_settle)


#: (terminal size, tab shown, theme): compact with Output and with a side pane as its tab, wide, the
#: size notice, and the light theme.
SIZES = {
    "80x24": ((80, 24), None, None),
    "80x24-inbox": ((80, 24), "tab-inbox", None),
    "100x30-stalls": ((100, 30), "tab-stalls", None),
    "160x48": ((160, 48), None, None),
    "50x15-notice": ((50, 15), None, None),
    "100x30-light": ((100, 30), "tab-inbox", "textual-light"),
}


@pytest.mark.parametrize("case", list(SIZES))
def test_dashboard_snapshot_at(case: str, snap_compare: Any, tmp_path: Path, monkeypatch: Any) -> None:
    size, tab, theme = SIZES[case]
    app = _dashboard(tmp_path, monkeypatch)

    async def show(pilot: Any) -> None:
        from textual.widgets import TabbedContent

        if theme is not None:
            app.theme = theme
        if tab is not None:
            app.screen.query_one("#detail", TabbedContent).active = tab
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=size, run_before=show)
