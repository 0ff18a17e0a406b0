"""The dashboard's eye on the targets and remotes (`git.watch`): its warnings reach the attention bar.

A part of `live.engine.Engine`. `status` and `doctor` read the git watch when they run; the dashboard
must say the same while it stays open, without asking git at every tick. So every `every_s` the
tick starts one look in the background (never two at once), and when the warnings differ from the
last ones a `GitWatchChanged` event carries them all (an empty tuple when they are gone).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable
from pathlib import Path

from lanes_tui.engine.git.watch import git_watch_warnings
from lanes_tui.engine.state.events import EngineEvent, GitWatchChanged

__all__ = ["GitWatchTick"]

log = logging.getLogger(__name__)


class GitWatchTick:
    """`emit`: how a change of the warnings reaches the engine's subscribers."""

    def __init__(self, repo: Path, emit: Callable[[EngineEvent], None]) -> None:
        self.repo = repo
        self.emit = emit
        #: Seconds between two looks (each runs a few git commands in a worker thread).
        self.every_s = 30.0
        self._git_watch_task: asyncio.Task[list[str]] | None = None
        self._last_git_watch = -math.inf
        #: What the last look found; the dashboard shows these.
        self.warnings: tuple[str, ...] = ()

    def soon(self, now: float) -> None:
        """Start a look when one is due and none runs; emit its warnings when they changed."""
        task = self._git_watch_task
        if task is not None and task.done():
            self._git_watch_task = None
            try:
                found = tuple(task.result())
            except Exception:  # a repository mid-rewrite: said in the log, looked at again next period
                log.exception("the git watch could not be read")
                found = self.warnings
            if found != self.warnings:
                self.warnings = found
                self.emit(GitWatchChanged(found))
        if self._git_watch_task is None and now - self._last_git_watch >= self.every_s:
            self._last_git_watch = now
            self._git_watch_task = asyncio.ensure_future(asyncio.to_thread(git_watch_warnings, self.repo))

    async def stop(self) -> None:
        task, self._git_watch_task = self._git_watch_task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
