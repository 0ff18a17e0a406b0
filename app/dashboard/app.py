"""The dashboard App: owns the engine and the bridge; the screen owns the panes and the keys."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

from textual import work
from textual.app import App

from lanes_tui.app.dashboard.bridge import EngineBridge
from lanes_tui.app.dashboard.keys import KNOWN_KEY_IDS
from lanes_tui.app.dashboard.palette import DashboardCommands
from lanes_tui.app.dashboard.screen import DashboardScreen
from lanes_tui.engine import Engine, LanesError, set_user_config_value


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
        self._kept_theme = ""
        """The theme the lead's config holds (`_keep_theme` writes only a different one)."""

    async def on_mount(self) -> None:
        await self.engine.start()
        self._restore_theme()
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

    def _restore_theme(self) -> None:
        """The theme last chosen in the palette (`[dashboard] theme`, kept in the lead's own config),
        set before the screen is drawn; from then on every change of theme is kept there."""
        name = self.engine.config.dashboard.theme
        if name and name in self.available_themes:
            self.theme = name
        elif name:
            self.notify(f"[dashboard] theme names {name!r}, which is not a theme of this Textual; known: "
                        f"{', '.join(sorted(self.available_themes))}", severity="warning", timeout=15)
        self._kept_theme = self.theme
        self.theme_changed_signal.subscribe(self, lambda theme: self._keep_theme(theme.name))

    @work(group="theme", exclusive=True)
    async def _keep_theme(self, name: str) -> None:
        if name == self._kept_theme:
            return
        self._kept_theme = name
        try:
            await asyncio.to_thread(set_user_config_value, self.engine.repo, "dashboard.theme", name)
        except (LanesError, OSError) as exc:  # a broken or unwritable user config: the lead is told
            self.notify(f"the theme is not kept for the next start: {exc}", severity="warning", timeout=10)

    @work(group="engine-events", exclusive=True)
    async def _follow_engine(self) -> None:
        await self.bridge.run()

    async def on_unmount(self) -> None:
        gc.unfreeze()  # what the app held may go now (several apps run in one test process)
        await self.engine.aclose()
