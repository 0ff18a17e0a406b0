"""The dashboard App: owns the engine and the bridge; the screen owns the panes and the keys."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events, work
from textual.app import App
from textual.css.query import NoMatches

from lanes_tui.app.dashboard.keys import KNOWN_KEY_IDS
from lanes_tui.app.dashboard.later_tabs import mount_later_panes
from lanes_tui.app.dashboard.palette import DashboardCommands
from lanes_tui.app.dashboard.screen import DashboardScreen
from lanes_tui.engine import Config, FirstLook, LanesError, first_look, load_config

if TYPE_CHECKING:
    from lanes_tui.app.dashboard.bridge import EngineBridge
    from lanes_tui.engine import Engine

log = logging.getLogger(__name__)


class LanesApp(App[None]):
    """Closing the app never stops a lane: lanes belong to their supervisors, not to the dashboard.

    Start-up (docs/benchmarks.md B7): without an `engine` given, the first full frame is drawn from
    what is on disk (`first_look`: the lane records and the inbox), and only then is the `Engine`
    imported, built and started (its module brings the decisions, reconcile, the runners and git: more
    than the frame itself costs); its first scan then replaces that picture. `engine` and `bridge` are
    built on first use, so whatever asks for them early gets them, only sooner."""

    TITLE = "lanes-tui"
    CSS_PATH = "lanes.tcss"
    COMMANDS = App.COMMANDS | {DashboardCommands}

    def __init__(self, repo: Path, *, demo: bool = False, engine: Engine | None = None,
                 flush_s: float = 0.1) -> None:
        super().__init__()
        self.repo = repo
        self._engine = engine
        self._bridge: EngineBridge | None = None
        self._flush_s = flush_s
        self.config: Config = engine.config if engine is not None else load_config(repo)
        """The settings the screen needs before the engine is up (the engine's own, once it is)."""
        self.first_look: FirstLook | None = None
        """The picture the first frame is drawn from while the engine starts; None once it is up."""
        self.sub_title = f"{repo}{'  (demo)' if demo else ''}"
        self._kept_theme = ""
        self._engine_start: asyncio.Task[None] | None = None
        """The engine's start after the first frame (`_begin_engine`), awaited by `on_unmount`."""
        self._quitting = False
        self._held_keys: list[events.Key] | None = [] if engine is None else None
        """Keys pressed while the engine starts after the first frame: they act once it is up, in
        order (`on_event`), instead of meeting a screen with no lane selected yet. None: not held."""
        """The theme the lead's config holds (`_keep_theme` writes only a different one)."""

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            from lanes_tui.engine import Engine  # the heaviest import of all: after the first frame

            self._engine = Engine(self.repo, config=self.config)
        return self._engine

    @property
    def bridge(self) -> EngineBridge:
        if self._bridge is None:
            from lanes_tui.app.dashboard.bridge import EngineBridge  # with the engine, after the first frame

            self._bridge = EngineBridge(self, self.engine, flush_s=self._flush_s)
        return self._bridge

    async def on_mount(self) -> None:
        lazy = self._engine is None
        if lazy:
            self.first_look = first_look(self.repo)
        else:
            await self.engine.start()
        self._restore_theme()
        if self.config.keys:
            unknown = sorted(k for k in self.config.keys if k not in KNOWN_KEY_IDS)
            if unknown:
                self.notify(f"[keys] in .lanes/config.toml names unknown key ids: {', '.join(unknown)}; "
                            f"known: {', '.join(sorted(KNOWN_KEY_IDS))}", severity="warning", timeout=15)
            self.set_keymap(dict(self.config.keys))
        screen = DashboardScreen()
        await self.push_screen(screen)
        if lazy:
            self.call_after_refresh(self._begin_engine, screen)
        else:
            self._engine_started(screen)

    def _begin_engine(self, screen: DashboardScreen) -> None:
        """After the first frame. A task of the app's own, not a worker: a quit that comes while the
        engine starts (a browser tab closed at once, SIGTERM) must wait for that start to finish before
        the engine is closed (`on_unmount`), or the engine's threads outlive the app. The collector,
        off for the start (`cli.main`), is back on from here, over a heap frozen first: every object made
        so far is young, and its first pass would walk them all between this frame and the engine."""
        if not gc.isenabled():
            gc.freeze()
            gc.enable()
        if not self._quitting:
            self._engine_start = asyncio.create_task(self._start_engine(screen))

    async def _start_engine(self, screen: DashboardScreen) -> None:
        """The engine imported, built, started; the screen then shows its picture. An engine that
        cannot start ends the app with its error on stderr and a non-zero code, as a failed mount does."""
        panes = asyncio.ensure_future(mount_later_panes(screen))  # built while the engine's start awaits git
        try:
            await self.engine.start()
        except Exception as exc:
            log.exception("the engine did not start")
            self.exit(return_code=1, message="".join(traceback.format_exception(exc)))
            return
        finally:
            with contextlib.suppress(NoMatches):  # the app closed while they were built
                await panes
        if self._quitting:
            return
        self.first_look = None
        screen.engine_started()
        self._engine_started(screen)
        held, self._held_keys = self._held_keys or [], None
        for key in held:
            await self.on_event(key)

    async def on_event(self, event: events.Event) -> None:
        """Hold the lead's keys while the engine starts (`_held_keys`); everything else as Textual does."""
        if self._held_keys is not None and isinstance(event, events.Key):
            self._held_keys.append(event)
            return
        await super().on_event(event)

    def _engine_started(self, screen: DashboardScreen) -> None:
        self.bridge.target = screen  # the screen owns the panes: engine messages go straight to it
        self._follow_engine()
        # Once the screen is up, the ~80,000 objects of Textual, the modules and the panes live as
        # long as the app: frozen, full collections stop walking them (one of 0.34 s every 20 s
        # over five printing lanes was 1.7 % of a core, docs/benchmarks.md B2).
        self.call_after_refresh(gc.freeze)

    def _restore_theme(self) -> None:
        """The theme last chosen in the palette (`[dashboard] theme`, kept in the lead's own config),
        set before the screen is drawn; from then on every change of theme is kept there."""
        name = self.config.dashboard.theme
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
            from lanes_tui.engine import set_user_config_value  # tomlkit: only when a theme is kept

            await asyncio.to_thread(set_user_config_value, self.repo, "dashboard.theme", name)
        except (LanesError, OSError) as exc:  # a broken or unwritable user config: the lead is told
            self.notify(f"the theme is not kept for the next start: {exc}", severity="warning", timeout=10)

    @work(group="engine-events", exclusive=True)
    async def _follow_engine(self) -> None:
        await self.bridge.run()

    async def on_unmount(self) -> None:
        self._quitting = True
        gc.unfreeze()  # what the app held may go now (several apps run in one test process)
        start = self._engine_start
        if start is not None and not start.done():
            # The engine is half-started: let it finish, so that closing it stops everything it began.
            with contextlib.suppress(Exception):
                await asyncio.shield(start)
        if self._engine is not None:
            await self._engine.aclose()
