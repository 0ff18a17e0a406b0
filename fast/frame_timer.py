"""The dashboard screen's frame timer: a frame as soon as something changed, at most one an interval.

A Textual screen draws its frames from one timer, paused while nothing is dirty. `Timer` ticks on a
fixed grid of `1 / MAX_FPS` (16.7 ms): a resumed timer waits for the next point of the grid, and after
a late tick — the first frame after a quiet spell always is late, since the paused timer slept
through its grid points — `Timer._run` skips one point too far (`count = int(elapsed / interval + 1)`
and then `count + 1`), so the next frame waits one to two intervals. On a key press that next frame
is the one that shows the lane's output after the cursor's (B1: 17–33 ms of its ~55 ms were that
wait). `FrameTimer` keeps what the grid is for, at most one frame an interval, and drops the rest:
resumed, it ticks at once unless the previous tick began less than an interval ago, and then when
that interval is up. `install` puts it where `Screen` looks for its timer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from textual import _time
from textual.message_pump import MessagePump
from textual.timer import EventTargetGone, Timer

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


class FrameTimer(Timer):
    """A repeating timer that ticks as soon as it is resumed, at most once an interval.

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
        """Tick whenever resumed, but never sooner than one interval after the previous tick began."""
        count = 0
        last = float("-inf")
        while True:
            await self._active.wait()
            if self._reset:
                self._reset = False
                last = float("-inf")
            wait = last + self._interval - self._clock()
            if wait > 0:
                await self._sleep(wait)
                continue  # paused meanwhile: wait for the next resume; else tick now
            last = self._clock()
            count += 1
            try:
                await self._tick(next_timer=last, count=count)
            except EventTargetGone:
                break
