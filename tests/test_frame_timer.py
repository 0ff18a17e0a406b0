"""The dashboard's frame timer ticks at the next grid point after a late frame, not one beyond it."""

from __future__ import annotations

import asyncio

from textual.app import App

from lanes_tui.app.frame_timer import FrameTimer


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


async def test_after_a_quiet_spell_the_second_frame_comes_at_the_next_grid_point() -> None:
    """A key after a quiet spell: its frame comes at once (late to its grid point) and takes 0.3 of an
    interval, during which the output becomes ready. That frame comes at the next grid point, 151.0:
    Textual's own `Timer` skips to 152.0, one whole interval later."""
    fake = FakeTime()
    ticks: list[float] = []
    timer: FrameTimer

    def frame() -> None:
        ticks.append(fake.now)
        timer.pause()  # as `Screen._on_timer_update` does
        fake.now += 0.3  # the frame's own work
        if len(ticks) == 2:
            timer.resume()  # something became dirty while the frame was drawn

    app = App[None]()
    async with app.run_test():
        timer = FrameTimer.install(app, 1.0, frame, name="frames", clock=fake.clock, sleep=fake.sleep)
        assert timer in app._timers  # stopped with the app's other timers
        timer.resume()
        await _until(lambda: len(ticks) == 1)
        assert ticks == [101.0]
        await _until(lambda: fake.now >= 102.0)  # asleep to its next grid point, then paused
        fake.now = 150.45  # a quiet spell, then a key press
        timer.resume()
        await _until(lambda: len(ticks) == 3)
        assert ticks == [101.0, 150.45, 151.0]
        timer.stop()


async def test_a_reset_starts_the_grid_again() -> None:
    fake = FakeTime()
    ticks: list[float] = []
    app = App[None]()
    async with app.run_test():
        timer = FrameTimer.install(app, 1.0, lambda: ticks.append(fake.now), name="frames", clock=fake.clock,
                                   sleep=fake.sleep)
        timer.resume()
        await _until(lambda: len(ticks) == 2)
        assert ticks == [101.0, 102.0]
        fake.now += 0.5
        timer.reset()
        await _until(lambda: len(ticks) == 4)
        assert ticks[2:] == [104.5, 105.5]  # the grid starts over from the reset
        timer.stop()
