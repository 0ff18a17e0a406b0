"""The dashboard App: owns the engine and the bridge; the screen owns the panes and the keys."""

from __future__ import annotations

import gc
from pathlib import Path

from textual import work
from textual.app import App

from lanes_tui.app.dashboard.bridge import EngineBridge
from lanes_tui.app.dashboard.keys import KNOWN_KEY_IDS
from lanes_tui.app.dashboard.palette import DashboardCommands
from lanes_tui.app.dashboard.screen import DashboardScreen
from lanes_tui.engine import Engine


class LanesApp(App[None]):
    """Closing the app never stops a lane: lanes belong to their supervisors, not to the dashboard."""

    TITLE = "lanes-tui"
    CSS_PATH = "lanes.tcss"
    COMMANDS = App.COMMANDS | {DashboardCommands}

    def __init__(self, repo: Path, *, demo: bool = False, engine: Engine | None = None,
                 flush_s: float = 0.1) -> None:
        super().__init__()
        self.repo = repo
        self.engine = engine or Engine(repo)
        self.bridge = EngineBridge(self, self.engine, flush_s=flush_s)
        self.sub_title = f"{repo}{'  (demo)' if demo else ''}"

    async def on_mount(self) -> None:
        await self.engine.start()
        if self.engine.config.keys:
            unknown = sorted(k for k in self.engine.config.keys if k not in KNOWN_KEY_IDS)
            if unknown:
                self.notify(f"[keys] in .lanes/config.toml names unknown key ids: {', '.join(unknown)}; "
                            f"known: {', '.join(sorted(KNOWN_KEY_IDS))}", severity="warning", timeout=15)
            self.set_keymap(dict(self.engine.config.keys))
        screen = DashboardScreen()
        await self.push_screen(screen)
        self.bridge.target = screen  # the screen owns the panes: engine messages go straight to it
        self._follow_engine()
        # Once the screen is up, the ~80,000 objects of Textual, the modules and the panes live as
        # long as the app: frozen, full collections stop walking them (one of 0.34 s every 20 s
        # over five printing lanes was 1.7 % of a core, docs/benchmarks.md B2).
        self.call_after_refresh(gc.freeze)

    @work(group="engine-events", exclusive=True)
    async def _follow_engine(self) -> None:
        await self.bridge.run()

    async def on_unmount(self) -> None:
        gc.unfreeze()  # what the app held may go now (several apps run in one test process)
        await self.engine.aclose()
