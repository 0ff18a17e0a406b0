"""Open the dashboard on a repository (or the embedded demo) and close everything it opened.

The process's exit code is the App's (`App.return_code`): 1 when Textual caught an error, so a
dashboard that panics never looks like a clean quit. Textual's full traceback (with locals, often
hundreds of lines) goes to the engine log instead of the lead's terminal, which gets one line.
"""

from __future__ import annotations

import io
import logging
import sys
from pathlib import Path

from lanes_tui.engine import StatePaths, find_repo_root, load_config


def run_dashboard(*, repo: Path | None, demo: bool, keep: bool, demo_dir: Path | None = None) -> int:
    from lanes_tui.engine import build_demo, start_demo_lanes

    built = None
    if demo:
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
    try:
        if built is not None:
            start_demo_lanes(built)
        app = LanesApp(root, demo=built is not None)
        # Textual prints what ended the app (a traceback, a panic) on `error_console` after the
        # terminal is restored: kept here, and reported by `_exit_code` below.
        app.error_console = Console(file=errors, markup=False, highlight=False)
        app.run()
    finally:
        if built is not None and not keep:
            _stop_all(root)
            built.remove()
        elif built is not None:
            print(f"demo repository kept at {built.repo}")
    return _exit_code(app.return_code, errors.getvalue(), paths.engine_log)


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
