"""How often a lane's output is read: at the live pace while someone watches it, slower while nobody does.

A printing lane's supervisor wakes once per rest of its output pump (`output_pump`), and on a
Python event loop each wake-up costs about the same whatever it reads (B3's floor). Of twenty
printing lanes the dashboard shows one lane's output; the other nineteen are read only so that
their log files grow and their meters move, which nobody sees sooner than the dashboard's own
two-second meter tick. So the rest is `REST_S` (half a second) while a *watch lease* holds, and
`UNWATCHED_REST_S` otherwise.

The dashboard's engine holds a lease on the lane it shows (`{"op": "watch"}` on the control socket,
renewed while the lane stays on screen; `live.watch_lease`). A lease that arrives mid-rest ends the
rest at once, so the lane the lead just selected streams at the live pace from its next read on.
The lease lapses by itself: a dashboard that closed or crashed leaves nothing behind.

A lane whose channel can ask the lead a question (`Channel.asks`) is always read at the live pace:
its question must not wait for a rest. A run whose agent has ended is woken (`wake`): its last output
is read at once, and the lane finishes without waiting out a rest. And an unwatched rest never takes
more than a quarter of the run's idle timeout: the watchdog counts silence from the last output read.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

#: The rest between two reads of a trickle while nobody watches the lane (see the module's docstring).
UNWATCHED_REST_S = 2.0
#: The longest lease one request may take: a watcher must come back at least this often.
MAX_LEASE_S = 60.0


class OutputCadence:
    """The output pump's rest: `rest(rest_s)` waits `rest_s` while watched, `UNWATCHED_REST_S` otherwise.

    `clock` is monotonic seconds (injected by tests).
    """

    def __init__(self, *, unwatched_rest_s: float = UNWATCHED_REST_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.unwatched_rest_s = unwatched_rest_s
        self.clock = clock
        self.watched_until = float("-inf")
        self._resting: set[asyncio.Future[None]] = set()  # one per pump resting (stdout, stderr)

    @property
    def watched(self) -> bool:
        return self.clock() < self.watched_until

    def watch(self, seconds: float) -> float:
        """Hold a lease for `seconds` (at most `MAX_LEASE_S`) from now; a rest under way ends at once.

        Returns the seconds granted. A lease never shortens one already held.
        """
        granted = max(0.0, min(float(seconds), MAX_LEASE_S))
        self.watched_until = max(self.watched_until, self.clock() + granted)
        if granted:
            self.wake()
        return granted

    def wake(self) -> None:
        """End the rests under way, if any: the pumps read what is there now."""
        for resting in self._resting:
            _settle(resting)

    def delay(self, rest_s: float, *, live: bool = False, most: float = float("inf")) -> float:
        """How long the next rest lasts for a pump whose live rest is `rest_s` (`live`: always that).

        `most` caps an unwatched rest (never below `rest_s`): the run's watchdog counts silence
        from the last output *read*, so a rest must stay well inside its idle timeout, or output
        waiting in the pipe could make a lane look stalled.
        """
        return rest_s if live or self.watched else max(rest_s, min(self.unwatched_rest_s, most))

    async def rest(self, rest_s: float, *, live: bool = False, most: float = float("inf")) -> None:
        """Rest `delay(rest_s, live=live, most=most)` seconds, or until `watch` or `wake` ends it (as
        cheap as `asyncio.sleep`, which is a future and a timer too)."""
        loop = asyncio.get_running_loop()
        resting: asyncio.Future[None] = loop.create_future()
        timer = loop.call_later(self.delay(rest_s, live=live, most=most), _settle, resting)
        self._resting.add(resting)
        try:
            await resting
        finally:
            timer.cancel()
            self._resting.discard(resting)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
