"""A snapshot of the whole dashboard at 120x36 with a fake engine and fixed data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lanes_tui.app.dashboard.app import LanesApp
from tests.fake_engine import FakeEngine, lane


def test_dashboard_snapshot(snap_compare: Any, tmp_path: Path, monkeypatch: Any) -> None:
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
    engine.inbox.ask("question-a1", kind="yesno", title="Deploy the calculator to staging?")

    async def settle(pilot: Any) -> None:
        await pilot.pause(0.2)

    app = LanesApp(Path("/repo/calculator"), engine=engine, flush_s=0.01)  # type: ignore[arg-type]
    assert snap_compare(app, terminal_size=(120, 36), run_before=settle)
