"""Open the dashboard on a repository (or the embedded demo) and close everything it opened."""

from __future__ import annotations

import logging
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
    from lanes_tui.app.dashboard import LanesApp

    try:
        if built is not None:
            start_demo_lanes(built)
        app = LanesApp(root, demo=built is not None)
        app.run()
    finally:
        if built is not None and not keep:
            _stop_all(root)
            built.remove()
        elif built is not None:
            print(f"demo repository kept at {built.repo}")
    return 0


def _stop_all(repo: Path) -> None:
    import asyncio

    from lanes_tui.engine import stop_lane

    async def stop() -> None:
        await asyncio.gather(*(stop_lane(repo, lane_id) for lane_id in StatePaths(repo).lane_ids()))

    asyncio.run(stop())
