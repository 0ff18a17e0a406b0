"""A `Screen` that draws with the fence's compositor and frame timer, each when its fast path is on.

Off, each part is Textual's own: the screen keeps its `Compositor`, and `_update_timer` is `Screen`'s
timer on Textual's grid. See `compositor` and `frame_timer` for what they replace and why.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from textual.screen import UPDATE_PERIOD, Screen
from textual.timer import Timer

from lanes_tui.fast.checks import enabled

__all__ = ["FastScreen"]

ResultT = TypeVar("ResultT")


class FastScreen(Screen[ResultT], Generic[ResultT]):
    """`Screen` with the lean compositor and the frame timer (when their fast paths are on)."""

    def __init__(self, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._frames: Timer | None = None
        self._fast_timer = enabled("frame_timer")
        if enabled("compositor"):
            from lanes_tui.fast.compositor import LeanCompositor

            self._compositor = LeanCompositor()  # an Output frame renders the pane, not the whole screen

    @property
    def _update_timer(self) -> Timer:
        """The timer `Screen` draws its frames from: a `FrameTimer`, so a key's second frame (the lane's
        output after the cursor) comes one interval after the first, not on Textual's grid (`frame_timer`)."""
        if not self._fast_timer:
            return super()._update_timer
        if self._frames is None:
            from lanes_tui.fast.frame_timer import FrameTimer

            self._frames = FrameTimer.install(self, UPDATE_PERIOD, self._on_timer_update, name="screen_update")
        return self._frames
