"""Injected clocks: stall, timeout and queue logic is tested with a fake clock, never with sleeps.

asyncio is imported when a clock first sleeps, not with this module: `lanes-tui inbox`, `answer`
and `ask --help` use a clock for timestamps only and never pay the ~80 ms asyncio (and ssl) costs.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def time(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        import asyncio

        await asyncio.sleep(seconds)


class FakeClock:
    """A clock that moves only when told; `sleep` advances it and yields once to the loop."""

    def __init__(self, start: float = 1000.0, wall: float = 1_700_000_000.0) -> None:
        self._mono = start
        self._wall_offset = wall - start

    def monotonic(self) -> float:
        return self._mono

    def time(self) -> float:
        return self._mono + self._wall_offset

    def advance(self, seconds: float) -> None:
        self._mono += seconds

    async def sleep(self, seconds: float) -> None:
        import asyncio

        self._mono += max(0.0, seconds)
        await asyncio.sleep(0)
