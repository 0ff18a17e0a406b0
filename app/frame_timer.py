"""The dashboard screen's frame timer: Textual's, minus one interval of waiting after a late frame.

A Textual screen draws its frames from one timer on a grid of `1 / MAX_FPS` (16.7 ms). A frame that
comes late to its grid point — the first after a quiet spell always does, since a paused timer
ticks the moment something changes — makes `Timer._run` skip ahead, and it skips one grid point too
far (`count = int(elapsed / interval + 1)` and then `count + 1`): the next frame waits one to two
intervals instead of up to one. On a key press that is the frame after the cursor's, the one that
shows the lane's output (B1: 17–33 ms of its ~55 ms were that wait). `FrameTimer` is `Timer._run`
with the skip to the next grid point; `install` puts it where `Screen` looks for its timer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from textual import _time
from textual.message_pump import MessagePump
from textual.timer import EventTargetGone, Timer

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


class FrameTimer(Timer):
    """A repeating timer that, after a late tick, ticks again at the next point of its grid.

    `clock` and `sleep` are Textual's own unless a test passes its fake ones.
    """

    def __init__(self, target: MessagePump, interval: float, *, name: str, callback: Callable[[], object],
                 clock: Clock = _time.get_time, sleep: Sleep = _time.sleep) -> None:
        super().__init__(target, interval, name=name, callback=callback, pause=True)
        self._clock = clock
        self._sleep = sleep

    @classmethod
    def install(cls, pump: MessagePump, interval: float, callback: Callable[[], object], *, name: str,
                clock: Clock = _time.get_time, sleep: Sleep = _time.sleep) -> FrameTimer:
        """Start a paused timer owned by `pump` (stopped with its other timers), as `set_interval` does."""
        timer = cls(pump, interval, name=name, callback=callback, clock=clock, sleep=sleep)
        timer._start()
        pump._timers.add(timer)
        return timer

    async def _run(self) -> None:
        count = 0
        interval = self._interval
        await self._active.wait()
        start = self._clock()
        while True:
            next_tick = start + (count + 1) * interval
            now = self._clock()
            if next_tick < now:  # late: the next grid point after now (Timer's `+ 1` skips one more)
                count = int((now - start) / interval)
                continue
            await self._sleep(next_tick - now)
            count += 1
            await self._active.wait()
            if self._reset:
                start = self._clock()
                count = 0
                self._reset = False
                continue
            try:
                await self._tick(next_timer=next_tick, count=count)
            except EventTargetGone:
                break
