"""Open the dashboard on a repository (or the embedded demo) and close everything it opened.

The process's exit code is the App's (`App.return_code`): 1 when Textual caught an error, so a
dashboard that panics never looks like a clean quit. Textual's full traceback (with locals, often
hundreds of lines) goes to the engine log instead of the lead's terminal, which gets one line.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from lanes_tui.engine import StatePaths, find_repo_root, load_config

if TYPE_CHECKING:
    from lanes_tui.app.dashboard.app import LanesApp


def run_dashboard(*, repo: Path | None, demo: bool, keep: bool, demo_dir: Path | None = None) -> int:
    built = None
    if demo:
        from lanes_tui.engine import build_demo  # the demo and its launcher: not on a real repository's start

        built = build_demo(demo_dir)
        root = built.repo
    else:
        root = find_repo_root(repo or Path.cwd())
    load_config(root)  # refuse a bad config before anything is drawn
    paths = StatePaths(root)
    paths.ensure()
    logging.basicConfig(filename=str(paths.engine_log), level=logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from rich.console import Console

    from lanes_tui.app.dashboard.app import LanesApp

    errors = io.StringIO()
    app: LanesApp | None = None
    hangup = _Hangup(lambda: app) if built is not None else None
    try:
        if built is not None:
            from lanes_tui.engine import start_demo_lanes

            start_demo_lanes(built)
        app = LanesApp(root, demo=built is not None)
        # Textual prints what ended the app (a traceback, a panic) on `error_console` after the
        # terminal is restored: kept here, and reported by `_exit_code` below.
        app.error_console = Console(file=errors, markup=False, highlight=False)
        app.run()
    except _Stopped:
        pass
    finally:
        if hangup is not None:
            hangup.ignore()
        try:
            if built is not None and not keep:
                _stop_all(root)
                built.remove()
            elif built is not None:
                print(f"demo repository kept at {built.repo}")
        finally:
            if hangup is not None:
                hangup.restore()
    if hangup is not None and hangup.signum is not None:
        return 128 + hangup.signum  # as a shell reports a command ended by that signal
    return _exit_code(app.return_code if app is not None else 0, errors.getvalue(), paths.engine_log)


class _Stopped(BaseException):
    """Raised by `_Hangup` when its signal comes before or after the app runs: straight to the cleanup."""


class _Hangup:
    """SIGHUP (the terminal went: a closed window, `tmux kill-session`) and SIGTERM end the demo as `q`
    does, so its lanes are stopped and its repository removed instead of left behind.

    While the app runs, the signal asks it to exit (on the event loop, woken through its self-pipe);
    before or after, `_Stopped` unwinds to the cleanup. After a hangup the terminal is gone: stdin,
    stdout and stderr are pointed at /dev/null first, so the app's last writes to the terminal and its
    input thread's reads neither fail nor block. During the cleanup both signals are ignored (`ignore`).
    """

    SIGNALS = (signal.SIGHUP, signal.SIGTERM)

    def __init__(self, app: Callable[[], LanesApp | None]) -> None:
        self._app = app
        self.signum: int | None = None
        self._before = {signum: signal.signal(signum, self._on_signal) for signum in self.SIGNALS}

    def _on_signal(self, signum: int, _frame: object) -> None:
        if self.signum is None:
            logging.getLogger(__name__).warning("the demo got signal %d: stopping its lanes, removing it", signum)
        self.signum = self.signum or signum
        if signum == signal.SIGHUP:
            _detach_terminal()
        app = self._app()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if app is None or loop is None:
            raise _Stopped
        loop.call_soon_threadsafe(app.exit)

    def ignore(self) -> None:
        """Both signals ignored during the cleanup: a second one cannot cut it short."""
        for signum in self._before:
            signal.signal(signum, signal.SIG_IGN)

    def restore(self) -> None:
        """The handlers from before (the dashboard may run in a process that goes on)."""
        for signum, handler in self._before.items():
            signal.signal(signum, handler)


def _detach_terminal() -> None:
    """Point fds 0–2 at /dev/null: the terminal they named hung up."""
    null = os.open(os.devnull, os.O_RDWR)
    try:
        for fd in (0, 1, 2):
            os.dup2(null, fd)
    finally:
        os.close(null)


def _exit_code(code: int | None, printed: str, log_file: Path) -> int:
    """The dashboard's exit code, with one stderr line when it is not 0.

    `None` is Textual's "never exited" (its own docs pass it to `sys.exit`, i.e. 0). What Textual
    printed on a failure goes to the log; its last line (`RuntimeError: …` for a traceback) names the error.
    """
    code = code or 0
    if code == 0:
        sys.stderr.write(printed)  # a message given to `App.exit` on a clean quit: shown as Textual would
        return 0
    lines = [line.strip() for line in printed.splitlines() if line.strip()]
    if not lines:
        print(f"lanes-tui: the dashboard exited with code {code}", file=sys.stderr)
        return code
    logging.getLogger(__name__).error("the dashboard stopped on an error (exit code %d):\n%s", code, printed)
    print(f"lanes-tui: the dashboard stopped on an error: {lines[-1][:300]} — the full traceback is in {log_file}",
          file=sys.stderr)
    return code


def _stop_all(repo: Path) -> None:
    import asyncio

    from lanes_tui.engine import stop_lane

    async def stop() -> None:
        await asyncio.gather(*(stop_lane(repo, lane_id) for lane_id in StatePaths(repo).lane_ids()))

    asyncio.run(stop())
