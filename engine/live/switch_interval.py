"""The interpreter's thread switch interval while an `Engine` runs beside a screen's event loop.

The engine scans, reconciles and looks for conflicts in worker threads (`asyncio.to_thread`), next to
the loop that draws the dashboard. A worker running Python holds the interpreter lock; each time the
loop blocks in `select` it lets go of it, and to take it back it waits until the worker is asked to
let go, which CPython does after the switch interval (5 ms by default). A key press goes through
several turns of the loop before its frame leaves, so a scan of a hundred lanes beside it added 5 ms a
turn: B1's slow presses (docs/benchmarks.md). At 0.5 ms the worker is asked sooner; it runs as much
in the end, cut into shorter slices.

`sys.setswitchinterval` is the whole process's, so the engine takes it down only while it runs and
puts back what it found when it stops (the last engine to stop, if several ran at once).
"""

from __future__ import annotations

import sys

__all__ = ["ENGINE_SWITCH_S", "ShortSwitch"]

#: The switch interval while an engine runs (seconds).
ENGINE_SWITCH_S = 0.0005


class ShortSwitch:
    """`take()` when an engine starts, `give_back()` when it stops; counted across engines."""

    _holders = 0
    _saved: float | None = None

    def __init__(self) -> None:
        self._held = False

    def take(self) -> None:
        if self._held:
            return
        self._held = True
        if ShortSwitch._holders == 0:
            ShortSwitch._saved = sys.getswitchinterval()
            sys.setswitchinterval(min(ENGINE_SWITCH_S, ShortSwitch._saved))
        ShortSwitch._holders += 1

    def give_back(self) -> None:
        if not self._held:
            return
        self._held = False
        ShortSwitch._holders -= 1
        if ShortSwitch._holders == 0 and ShortSwitch._saved is not None:
            sys.setswitchinterval(ShortSwitch._saved)
            ShortSwitch._saved = None
