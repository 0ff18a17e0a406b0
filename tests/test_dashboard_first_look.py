"""The dashboard's start-up (docs/benchmarks.md B7): the first frame drawn from disk before the Engine.

- `first_look` reads every lane's status and the inbox from disk, as the engine's first scan would.
- Importing the dashboard loads no `Engine`, no decisions, no Markdown, no tomlkit, no GitPython.
- A real dashboard (no engine given) paints its lanes from the first look, then the engine's picture
  replaces it; after that, the help screen, the conversation view, tomlkit and GitPython are still not
  loaded: they are imported when their key is pressed. Facts about modules, never times.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from lanes_tui.app.dashboard.app import LanesApp
from lanes_tui.engine import first_look
from lanes_tui.widgets import LanesTable
from tests.helpers import run_lane, wait_state, write_config

#: Loaded on their key, never at start-up.
ON_USE = ("markdown_it", "lanes_tui.widgets.help_screen", "lanes_tui.widgets.conversation", "tomlkit", "git",
          "lanes_tui.widgets.modals", "lanes_tui.widgets.start_lane", "lanes_tui.widgets.allow_modal",
          "lanes_tui.widgets.conflicts_modal", "lanes_tui.widgets.lane_filter", "textual.widgets._text_area")
#: The panes of the tabs the first frame does not show: built (and imported) after it.
LATER_PANES = ("lanes_tui.widgets.diff_pane", "lanes_tui.widgets.gates_pane", "lanes_tui.widgets.worktrees_pane",
               "lanes_tui.widgets.plan_pane")


def _modules_after(code: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
                          capture_output=True, text=True, check=True)
    return set(proc.stdout.split())


def test_importing_the_dashboard_loads_no_engine() -> None:
    loaded = _modules_after("import lanes_tui.app.dashboard.app")
    heavy = ("lanes_tui.engine.live.engine", "lanes_tui.engine.decisions.api", "lanes_tui.engine.lanes.launcher",
             "psutil", *ON_USE, *LATER_PANES)
    assert [m for m in heavy if m in loaded] == []


def test_first_look_reads_the_lanes_on_disk(repo: Path) -> None:
    write_config(repo)
    lane = run_lane(repo, "say hello\nexit 0\n", lane_id="look-1")
    wait_state(repo, lane, "ready,rejected,exited")
    look = first_look(repo)
    assert [s.id for s in look.lanes] == [lane]
    assert look.questions == ()
    assert first_look(repo / "nowhere").lanes == ()


async def test_first_frame_from_disk_then_the_engine(repo: Path) -> None:
    write_config(repo)
    lane = run_lane(repo, "say hello\nexit 0\n", lane_id="look-2")
    wait_state(repo, lane, "ready,rejected,exited")
    app = LanesApp(repo)  # no engine given: the real one, built after the first frame
    async with app.run_test(size=(120, 36)) as pilot:
        assert app.screen.query_one(LanesTable).get_row(lane)  # painted from the first look or the engine
        while app.first_look is not None:
            await pilot.pause(0.05)
        await pilot.pause()
        assert app.screen.query_one(LanesTable).selected_lane == lane  # selected once the engine is up
        assert app.engine.lanes()[0].id == lane


def test_after_start_up_the_on_use_modules_are_not_loaded(repo: Path) -> None:
    write_config(repo)
    code = f"""
import asyncio
import json
from pathlib import Path

import pytest
from lanes_tui.app.dashboard.app import LanesApp

async def main():
    app = LanesApp(Path({str(repo)!r}))
    async with app.run_test(size=(120, 36)) as pilot:
        while app.first_look is not None:
            await pilot.pause(0.05)
        await pilot.pause(0.5)

asyncio.run(main())
"""
    loaded = _modules_after(code)
    assert "lanes_tui.engine.live.engine" in loaded  # the engine did start
    assert [m for m in ON_USE if m in loaded] == []


def hold_engine_start(monkeypatch: pytest.MonkeyPatch) -> tuple[asyncio.Event, asyncio.Event]:
    """`Engine.start` held: the first event is set when a start begins, and the start goes on only once
    the second is set (the moment between the first frame and the engine's picture, made to last)."""
    from lanes_tui.engine import Engine

    began, release = asyncio.Event(), asyncio.Event()
    real_start = Engine.start

    async def held_start(self: Engine) -> None:
        began.set()
        await release.wait()
        await real_start(self)

    monkeypatch.setattr(Engine, "start", held_start)
    return began, release


async def test_a_quit_while_the_engine_starts_waits_for_that_start_then_closes_the_engine(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A browser tab closed (or SIGTERM) right after the first frame quits while the engine is still
    starting: the app waits for the start to finish and then closes the engine, so nothing it began
    (its watch task, its threads) outlives the app. The start is held until the app is closing."""
    write_config(repo)
    began, release = hold_engine_start(monkeypatch)
    app = LanesApp(repo)

    async def release_once_closing() -> None:
        while not app._quitting:
            await asyncio.sleep(0.01)
        release.set()

    async with app.run_test(size=(120, 36)):
        await asyncio.wait_for(began.wait(), 60)
        releaser = asyncio.create_task(release_once_closing())
    await releaser
    engine = app._engine
    assert engine is not None and engine._closed and engine._task is None  # started, then closed
    assert app.first_look is not None  # the screen never took the engine's picture: it was closing


async def test_keys_pressed_while_the_engine_starts_act_once_it_is_up(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first frame comes before the engine: a key pressed then (the lead's `t` on the lane on screen,
    here `?`) is held and acts once the engine is up, never lost on a screen with no lane selected."""
    from lanes_tui.widgets.help_screen import HelpScreen

    write_config(repo)
    began, release = hold_engine_start(monkeypatch)
    app = LanesApp(repo)
    async with app.run_test(size=(120, 36)) as pilot:
        await asyncio.wait_for(began.wait(), 60)
        await pilot.press("question_mark")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)  # held while the engine starts
        release.set()
        while app.first_look is not None:
            await pilot.pause(0.05)
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)  # then acted on


async def test_the_later_tabs_are_in_the_first_frame_and_their_panes_come_with_the_engine(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first frame names every tab, with only the Output pane built; the Diff, Gates, Worktrees and
    Plan panes are built while the engine starts, so the lead's first `2` (held until the engine is up)
    finds the Diff pane, which shows the selected lane's diff."""
    from textual.widgets import TabbedContent, TabPane

    from lanes_tui.app.dashboard.later_tabs import LATER_TABS
    from lanes_tui.widgets.diff_pane import DiffPane

    write_config(repo)
    lane = run_lane(repo, "write notes.txt hello\nsay done\nexit 0\n", lane_id="look-3")
    wait_state(repo, lane, "ready,rejected,exited")
    began, release = hold_engine_start(monkeypatch)
    at_first_frame: dict[str, object] = {}
    begin_engine = LanesApp._begin_engine

    def look_then_begin(app: LanesApp, screen: Any) -> None:  # called once the first frame is drawn
        at_first_frame["panes"] = {tab_id: len(screen.query_one(f"#{tab_id}", TabPane).children)
                                   for tab_id in LATER_TABS}
        at_first_frame["tabs"] = {str(tab.label) for tab in screen.query("ContentTab")}
        begin_engine(app, screen)

    monkeypatch.setattr(LanesApp, "_begin_engine", look_then_begin)
    app = LanesApp(repo)
    async with app.run_test(size=(120, 36)) as pilot:
        try:
            await asyncio.wait_for(began.wait(), 60)
            await pilot.press("2")  # held: the engine is not up yet
        finally:
            release.set()  # a failure above must not leave the app's exit waiting on the held start
        while app.first_look is not None:
            await pilot.pause(0.05)
        assert at_first_frame["panes"] == dict.fromkeys(LATER_TABS, 0)  # the first frame built none of them
        assert {"Output", "Diff", "Gates", "Worktrees", "Plan"} <= cast(set[str], at_first_frame["tabs"])
        built = {tab_id: [w.id for w in app.screen.query_one(f"#{tab_id}", TabPane).children] for tab_id in LATER_TABS}
        assert built == {tab_id: [pane_id] for tab_id, (_label, _cls, pane_id) in LATER_TABS.items()}
        pane = app.screen.query_one(DiffPane)
        while pane.lane_id != lane:  # the held `2` opened the Diff tab, which loads the lane's diff
            await pilot.pause(0.05)
        assert app.screen.query_one(TabbedContent).active == "tab-diff"
        assert [h.file for h in pane.hunks] == ["notes.txt"]


def test_the_collector_is_off_until_the_first_frame_and_on_after_it(repo: Path) -> None:
    """`lanes-tui` (the dashboard) starts with the collector off (B7: its passes over Textual's objects
    were a tenth of the start) and turns it on, over a frozen heap, once the first frame is drawn; a
    headless command never turns it off, nor does `--web` (a server that runs for hours). Read from the real
    command line in a fresh interpreter."""
    write_config(repo)
    code = f"""
import gc, json
from textual.app import App
from lanes_tui.app.cli.main import main

seen = {{}}
real_run = App.run

def run(self, *args, **kwargs):
    import lanes_tui.app.dashboard.app as dashboard

    seen["App.run"] = gc.isenabled()
    begin = dashboard.LanesApp._begin_engine

    def begin_then_quit(app, screen):
        seen["first frame"] = gc.isenabled()
        begin(app, screen)
        seen["after it"] = gc.isenabled()
        seen["frozen"] = gc.get_freeze_count() > 0
        app.exit()

    dashboard.LanesApp._begin_engine = begin_then_quit
    return real_run(self, headless=True, size=(120, 36))

App.run = run
seen["dashboard code"] = main(["--repo", {str(repo)!r}])
seen["after the dashboard"] = gc.isenabled()
gc.disable(); gc.enable()
seen["status code"] = main(["status", "--repo", {str(repo)!r}])
seen["after status"] = gc.isenabled()
import lanes_tui.app.cli.web as web

def serve(args):  # what the server would run with, for hours
    seen["web serves with it on"] = gc.isenabled()
    return 0

web.serve_web = serve
seen["web code"] = main(["--web", "--repo", {str(repo)!r}])
seen["after web"] = gc.isenabled()
print(json.dumps(seen))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen == {"App.run": False, "first frame": False, "after it": True, "frozen": True,
                    "dashboard code": 0, "after the dashboard": True, "status code": 0, "after status": True,
                    "web serves with it on": True, "web code": 0, "after web": True}
