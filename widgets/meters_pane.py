"""The Meters pane: the machine under the lanes (CPU, memory, load, disk, heavy slots), the lanes
running against `max_parallel`, and the spend, with sparklines for CPU and spend over time.

Machine figures arrive every tick. They are turned into `Readings` — rounded to what the eye can
tell apart — and set on a reactive: when a tick reads the same as the last one the reactive sees an
equal value and nothing repaints (the ProgressBar pattern). The sparklines keep a bounded history.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Label, Sparkline, Static

from lanes_tui.widgets import _format as fmt

HISTORY = 120
#: Free space below this at the worktree root is shown as an error: worktrees and gates will fail.
LOW_DISK_BYTES = 5 * 1024**3


@dataclass(frozen=True)
class Readings:
    """One tick of machine figures as shown (rounded), so equal-looking ticks compare equal."""

    cpu: int | None = None
    mem: int | None = None
    load1: float | None = None
    disk_free: str = ""
    low_disk: bool = False
    slots_used: int = 0
    slots_total: int = 0
    holders: tuple[tuple[str, int], ...] = ()
    running: int = 0
    max_parallel: int = 0
    spend: str = ""
    tokens: str = ""

    @classmethod
    def from_mapping(cls, m: Mapping[str, Any]) -> Readings:
        disk = m.get("disk_free_bytes")
        holders = tuple((str(h.get("lane") or "?"), int(h.get("pid") or 0))
                        for h in m.get("slot_holders") or () if isinstance(h, Mapping))
        return cls(
            cpu=_round(m.get("cpu_percent")), mem=_round(m.get("mem_percent")),
            load1=None if m.get("load1") is None else round(float(m["load1"]), 2),
            disk_free=fmt.size(disk), low_disk=disk is not None and disk < LOW_DISK_BYTES,
            slots_used=int(m.get("slots_used") or 0), slots_total=int(m.get("slots_total") or 0),
            holders=holders, running=int(m.get("running") or 0), max_parallel=int(m.get("max_parallel") or 0),
            spend=fmt.cost(m.get("spend_usd")) or "$0.00", tokens=fmt.tokens(m.get("tokens")) or "0",
        )


class MetersPane(Vertical):
    """`update_machine(m)` each tick; keys as in `Readings.from_mapping` (all optional)."""

    DEFAULT_CSS = """
    MetersPane {
        height: auto;
        border: round $panel;
        border-title-color: $text-muted;
        padding: 0 1;
    }
    MetersPane > #meters-text {
        height: auto;
    }
    MetersPane > .spark-row {
        height: 1;
    }
    MetersPane > .spark-row > Label {
        width: 7;
        color: $text-muted;
    }
    MetersPane > .spark-row > Sparkline {
        width: 1fr;
    }
    """

    readings: reactive[Readings] = reactive(Readings, always_update=False)
    """What the text shows; equal readings do not repaint."""

    def __init__(self, *, history: int = HISTORY, name: str | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._cpu: deque[float] = deque(maxlen=history)
        self._spend: deque[float] = deque(maxlen=history)
        self.border_title = "Meters"

    def compose(self) -> ComposeResult:
        yield Static(id="meters-text")
        with Horizontal(classes="spark-row"):
            yield Label("cpu")
            yield Sparkline([], id="cpu-spark")
        with Horizontal(classes="spark-row"):
            yield Label("spend")
            yield Sparkline([], id="spend-spark")

    def on_mount(self) -> None:
        self.query_one("#meters-text", Static).update(_describe(self.readings))

    def update_machine(self, m: Mapping[str, Any]) -> None:
        """One tick of machine figures: the text repaints only if it reads differently; the
        sparklines take one point each (the CPU and the running total of spend)."""
        self.readings = Readings.from_mapping(m)
        if m.get("cpu_percent") is not None:
            self._cpu.append(float(m["cpu_percent"]))
            self.query_one("#cpu-spark", Sparkline).data = list(self._cpu)
        if m.get("spend_usd") is not None:
            self._spend.append(float(m["spend_usd"]))
            self.query_one("#spend-spark", Sparkline).data = list(self._spend)

    def validate_readings(self, readings: Readings) -> Readings:
        """Clamp percentages to 0-100 (a sampler's first tick can read above 100)."""
        return replace(readings, cpu=_clamp(readings.cpu), mem=_clamp(readings.mem))

    def watch_readings(self, readings: Readings) -> None:
        if self.is_mounted:
            self.query_one("#meters-text", Static).update(_describe(readings))


def _describe(r: Readings) -> Content:
    """Three lines; figures that need the lead's eye are coloured from the theme."""
    def val(text: str, tone: str = "") -> Content:
        return Content.styled(text, f"${tone}" if tone else "bold")

    cpu = "-" if r.cpu is None else f"{r.cpu}%"
    mem = "-" if r.mem is None else f"{r.mem}%"
    load = "-" if r.load1 is None else f"{r.load1:.2f}"
    full = r.slots_total > 0 and r.slots_used >= r.slots_total
    holders = ", ".join(f"{lane} (pid {pid})" for lane, pid in r.holders) or "free"
    line1 = Content.assemble(
        "CPU ", val(cpu, "warning" if (r.cpu or 0) >= 90 else ""), "   mem ",
        val(mem, "warning" if (r.mem or 0) >= 90 else ""), "   load ", val(load),
        "   disk free ", val(r.disk_free or "-", "error" if r.low_disk else ""),
    )
    line2 = Content.assemble(
        "slots ", val(f"{r.slots_used}/{r.slots_total}", "warning" if full else ""), "   ",
        Content(fmt.truncate(holders, 90)),
    )
    line3 = Content.assemble(
        "lanes ", val(f"{r.running}/{r.max_parallel}"), " running   spend ", val(r.spend),
        "   tokens ", val(r.tokens),
    )
    return Content("\n").join([line1, line2, line3])


def _round(value: Any) -> int | None:
    return None if value is None else round(float(value))


def _clamp(value: int | None) -> int | None:
    return None if value is None else min(100, max(0, value))
