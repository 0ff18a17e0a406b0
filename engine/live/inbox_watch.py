"""The engine's eye on the inbox: the questions as last read, reread when inotify says the folder moved.

A part of `live.engine.Engine`, split from it because the inbox is watched apart from the lanes: its
own inotify watch on the inbox folder wakes a rescan at once (an agent's `ask` shows without waiting
for the tick), and without inotify the Engine's tick calls `scan` instead (`polling`). A scan emits
`QuestionsChanged` only when a question came, went or changed state.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from lanes_tui.engine.inbox.store import InboxStore
from lanes_tui.engine.inbox.view import QuestionView
from lanes_tui.engine.lanes.inotify import TreeWatcher
from lanes_tui.engine.state.events import EngineEvent, QuestionsChanged
from lanes_tui.engine.state.paths import StatePaths

__all__ = ["InboxWatch"]

log = logging.getLogger("lanes_tui.engine.live.engine")  # the Engine's logger, as before the split


class InboxWatch:
    """`emit`: how a change of the questions reaches the engine's subscribers."""

    def __init__(self, paths: StatePaths, inbox: InboxStore, emit: Callable[[EngineEvent], None]) -> None:
        self.paths = paths
        self.inbox = inbox
        self.emit = emit
        self._questions_sig: tuple[tuple[str, str], ...] | None = None
        self._questions: list[QuestionView] = []
        #: The inotify watch on the inbox folder; None while none runs (then the tick polls).
        self.watcher: TreeWatcher | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def polling(self) -> bool:
        """No inotify watch on the inbox: the Engine's tick rescans it."""
        return self.watcher is None

    def questions(self) -> list[QuestionView]:
        """The inbox, every question's view, oldest first (open, answered, orphaned, …)."""
        return list(self._questions)

    def watch(self) -> None:
        """inotify on the inbox folder wakes a rescan at once; without it the tick polls."""
        self.paths.inbox.mkdir(parents=True, exist_ok=True)
        watcher = TreeWatcher(self.paths.inbox, exclude=())
        if watcher.start() and watcher.active:
            self.watcher = watcher
            asyncio.get_running_loop().add_reader(watcher.fileno(), self._on_event)
            self._task = asyncio.create_task(self._loop(), name="lanes-engine-inbox")
        else:
            watcher.close()

    def _on_event(self) -> None:
        if self.watcher is not None:
            self.watcher.drain()
        self._wake.set()

    async def _loop(self) -> None:
        while not self._closed:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self.scan()
            except Exception:
                log.exception("inbox scan failed")

    async def scan(self) -> None:
        views = await asyncio.to_thread(self.inbox.list)
        sig = tuple((v.question.id, v.state) for v in views)
        if sig != self._questions_sig:
            self._questions_sig = sig
            self._questions = list(views)
            self.emit(QuestionsChanged(tuple(self._questions)))

    async def stop(self) -> None:
        """Stop the watch and its loop (the Engine's `aclose`)."""
        self._closed = True
        if self.watcher is not None:
            with contextlib.suppress(ValueError, OSError):
                asyncio.get_running_loop().remove_reader(self.watcher.fileno())
            self.watcher.close()
            self.watcher = None
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
