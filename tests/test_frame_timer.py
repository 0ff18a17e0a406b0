"""The dashboard's frame timer ticks at the next grid point after a late frame, not one beyond it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from textual.app import App

from lanes_tui.fast.frame_timer import FrameTimer


class FakeTime:
    """A clock that moves only when the timer sleeps or the test says so."""

    def __init__(self) -> None:
        self.now = 100.0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


async def _until(condition: object, rounds: int = 200) -> None:
    for _ in range(rounds):
        if callable(condition) and condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the timer never got there")


def _frames(fake: FakeTime, ticks: list[float], work_s: float, dirty_again: set[int]) -> Callable[[], None]:
    """A screen's frame: note the time, pause (as `Screen._on_timer_update` does), work, and be resumed
    again if something became dirty during the frame (the ticks counted in `dirty_again`)."""

    def frame() -> None:
        ticks.append(fake.now)
        timer = TIMERS[-1]
        timer.pause()
        fake.now += work_s
        if len(ticks) in dirty_again:
            timer.resume()

    return frame


TIMERS: list[FrameTimer] = []


async def test_a_change_is_drawn_at_once_and_the_next_one_interval_after_the_last_frame() -> None:
    """A key after a quiet spell: its frame comes at once and takes 0.3 of an interval, during which the
    lane's output becomes ready; that frame comes one interval after the first began. Textual's own
    `Timer` waits for its grid: the first frame at 101.0, and after the quiet spell at 152.0."""
    fake = FakeTime()
    ticks: list[float] = []
    app = App[None]()
    async with app.run_test():
        timer = FrameTimer.install(app, 1.0, _frames(fake, ticks, 0.3, dirty_again={1, 3}), name="frames",
                                   clock=fake.clock, sleep=fake.sleep)
        TIMERS.append(timer)
        assert timer in app._timers  # stopped with the app's other timers
        timer.resume()
        await _until(lambda: len(ticks) == 2)
        assert ticks == [100.0, 101.0]  # at once, then one interval after the first began
        fake.now = 150.45  # a quiet spell (paused: no ticks), then a key press
        timer.resume()
        await _until(lambda: len(ticks) == 4)
        assert ticks == [100.0, 101.0, 150.45, 151.45]
        timer.stop()


async def test_never_more_than_one_frame_an_interval_however_often_it_is_resumed() -> None:
    fake = FakeTime()
    ticks: list[float] = []
    app = App[None]()
    async with app.run_test():
        timer = FrameTimer.install(app, 1.0, _frames(fake, ticks, 0.25, dirty_again=set(range(1, 6))),
                                   name="frames", clock=fake.clock, sleep=fake.sleep)
        TIMERS.append(timer)
        timer.resume()
        await _until(lambda: len(ticks) == 6)
        assert ticks == [100.0, 101.0, 102.0, 103.0, 104.0, 105.0]
        timer.resume()
        timer.reset()  # a reset forgets the last frame: the next comes at once
        fake.now = 105.5
        await _until(lambda: len(ticks) == 7)
        assert ticks[-1] == 105.5
        timer.stop()
