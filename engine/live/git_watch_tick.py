"""The dashboard's eye on the targets and remotes (`git.watch`): its warnings reach the attention bar.

Mixed into `live.engine.Engine`. `status` and `doctor` read the git watch when they run; the dashboard
must say the same while it stays open, without asking git at every tick. So every `git_watch_s` the
tick starts one look in the background (never two at once), and when the warnings differ from the
last ones a `GitWatchChanged` event carries them all (an empty tuple when they are gone).
"""

from __future__ import annotations

import asyncio
import logging
import math
from pathlib import Path

from lanes_tui.engine.git.watch import git_watch_warnings
from lanes_tui.engine.state.events import EngineEvent, GitWatchChanged

__all__ = ["GitWatchTick"]

log = logging.getLogger(__name__)


class GitWatchTick:
    """Mixed into `Engine`: needs `repo` and `_emit()`."""

    repo: Path
    #: Seconds between two looks (each runs a few git commands in a worker thread).
    git_watch_s: float = 30.0
    _git_watch_task: asyncio.Task[list[str]] | None = None
    _last_git_watch: float = -math.inf
    #: What the last look found; the dashboard shows these.
    git_warnings: tuple[str, ...] = ()

    def _emit(self, event: EngineEvent) -> None:
        raise NotImplementedError

    def git_watch_soon(self, now: float) -> None:
        """Start a look when one is due and none runs; emit its warnings when they changed."""
        task = self._git_watch_task
        if task is not None and task.done():
            self._git_watch_task = None
            try:
                found = tuple(task.result())
            except Exception:  # a repository mid-rewrite: said in the log, looked at again next period
                log.exception("the git watch could not be read")
                found = self.git_warnings
            if found != self.git_warnings:
                self.git_warnings = found
                self._emit(GitWatchChanged(found))
        if self._git_watch_task is None and now - self._last_git_watch >= self.git_watch_s:
            self._last_git_watch = now
            self._git_watch_task = asyncio.ensure_future(asyncio.to_thread(git_watch_warnings, self.repo))

    async def stop_git_watch(self) -> None:
        task, self._git_watch_task = self._git_watch_task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
