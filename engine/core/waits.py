"""What a wait tells its caller while it waits: a heavy slot held by another run, or a machine too loaded.

A gate run that waited for a slot or for the load used to show nothing but `checking / running the
gates` for up to ten minutes: a wait nobody can see looks like a hang. The waiting loops
(`slots.acquire`, `slots.wait_for_load`) know what they wait for; only their caller knows whom to tell
(the lane's why, its events and its output for the gates; stderr and the lane's events for `lanes-tui
lock`). So a loop calls an `OnWait` listener with a `Wait` when the wait starts — at the first sample
that holds it back — and when it ends, and the texts are made here, once, so the gates, `lock`, the
Meters pane and `check --log` say the same thing.

Standard library only: `lock` runs in agents' shells.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["END", "LOAD", "SLOT", "START", "OnWait", "Wait", "default_load_limit", "holders_text", "load_text",
           "machine_load", "span"]

LOAD = "load"
SLOT = "slot"
START = "start"
END = "end"
#: The least default load limit: on one or two cores twice the cores (2, 4) is reached by an agent, the
#: dashboard and an editor alone, and a limit under that would hold every gate back on such a laptop.
MIN_DEFAULT_LOAD = 4.0


@dataclass(frozen=True)
class Wait:
    """One moment of a wait: its start (`phase` START) or its end (END, `ok` False when the budget ran out)."""

    kind: str  # LOAD | SLOT
    phase: str  # START | END
    waited_s: float
    #: The most it may last (None: for ever, as a `lock` without `--wait` waits for a slot).
    budget_s: float | None
    #: LOAD: the 1-minute load that held it back (at START the first sample, at END the last one above
    #: `limit`) and the limit.
    load: float | None = None
    limit: float | None = None
    #: SLOT: who held the slots (`slots.holders` lines: lane, pid, since, command).
    holders: tuple[Mapping[str, Any], ...] = ()
    #: END: True when what was waited for came (a slot, a load at or under the limit).
    ok: bool = True

    @property
    def what(self) -> str:
        """`the machine: load 5.1 > 4.0`, `a heavy slot: held by fix-a1 pid 4242`."""
        if self.kind == LOAD:
            return f"the machine: {load_text(self.load, self.limit)}"
        return "a heavy slot" + (f": held by {holders_text(self.holders)}" if self.holders else "")

    @property
    def reason(self) -> str:
        """`waiting for the machine: load 5.1 > 4.0 (up to 10m)`: the lane's why while it waits."""
        return f"waiting for {self.what}" + (f" (up to {span(self.budget_s)})" if self.budget_s is not None else "")

    @property
    def ended(self) -> str:
        """`waited 42s for the machine: load 5.1 > 4.0`, `… and gave up`: the line `check --log` keeps."""
        return f"waited {span(self.waited_s)} for {self.what}" + ("" if self.ok else " and gave up")

    @property
    def line(self) -> str:
        """The reason at the start, the ended line at the end."""
        return self.reason if self.phase == START else self.ended

    def fields(self) -> dict[str, object]:
        """The `gate-wait` event's fields (`for`: load | slot, as a `lock-wait` says it; `phase`, `waited_s`, …;
        a slot's holders as text). Not `kind`: `LaneStore.event` takes the event's type by that name."""
        data: dict[str, object] = {"for": self.kind, "phase": self.phase, "waited_s": round(self.waited_s, 3)}
        if self.budget_s is not None:
            data["budget_s"] = self.budget_s
        if self.kind == LOAD:
            data["load"] = None if self.load is None else round(self.load, 2)
            data["limit"] = self.limit
        elif self.holders:
            data["held_by"] = holders_text(self.holders)
        if self.phase == END:
            data["ok"] = self.ok
        return data


#: Hears a wait start and end; what it raises is the caller's (the gates' listener swallows its own I/O errors).
OnWait = Callable[[Wait], None]


def load_text(load: float | None, limit: float | None) -> str:
    """`load 5.1 > 4.0` (`load above 4.0` when the figure is unknown)."""
    bound = "?" if limit is None else f"{limit:.1f}"
    return f"load above {bound}" if load is None else f"load {load:.1f} > {bound}"


def holders_text(holders: Iterable[Mapping[str, Any]]) -> str:
    """`fix-a1 pid 4242, lead pid 77`: a slot file's holder line is written by whoever holds it (an agent's
    `lock` too), so only printable characters of a bounded length get into a why or an event."""
    def clean(value: object) -> str:
        return "".join(ch if ch.isprintable() else "?" for ch in str(value))[:64]

    return ", ".join(f"{clean(h.get('lane') or '?')} pid {clean(h.get('pid') or '?')}" for h in holders)


def span(seconds: float | None) -> str:
    """`42s`, `10m`, `1m30s`, `1h05m`: a wait's length as a why can say it."""
    if seconds is None:
        return "?"
    total = max(0, round(seconds))
    if total < 60:
        return f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes >= 60:
        hours, minutes = divmod(minutes, 60)
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m" if secs == 0 else f"{minutes}m{secs:02d}s"


def machine_load() -> float:
    """The 1-minute load average: the default load source of `slots.wait_for_load` (tests give their own)."""
    return os.getloadavg()[0]


def default_load_limit() -> float:
    """The 1-minute load above which heavy runs hold back when nothing sets one: twice the cores (where a
    suite started now mostly waits for CPU and slows every other lane with it), but at least 4.

    Twice the cores is 4 on the 2-core machines the product is tried on, the issue's `load 5.1 > 4.0`;
    on one core it would be 2, which an agent and the dashboard reach by themselves, so gates would
    wait on every check there.
    """
    return max(MIN_DEFAULT_LOAD, 2.0 * (os.cpu_count() or 1))
