"""The Meters pane: the machine under the lanes (CPU, memory, load, disk, heavy slots), the lanes
running against `max_parallel`, and the spend, with sparklines for CPU and spend over time; then the
governor's caps per lane with what enforces each on this machine, and the heavy runs (`lanes-tui
lock`) each lane took — the caps are why one hungry lane cannot take the machine, so they are shown.
A lane whose gates wait for the machine's load or a heavy slot adds a line saying so, and for how
long: a check held back looks like a hang otherwise. Running agents whose provider reports how full
their context window is add a `context` line (`a1 126.0k/200.0k 63%`), a lane near its limit in the
warning tone.

Machine figures arrive every tick. They are turned into `Readings` — rounded to what the eye can
tell apart — and set on a reactive: when a tick reads the same as the last one the reactive sees an
equal value and nothing repaints (the ProgressBar pattern). The sparklines keep a bounded history.
"""

from __future__ import annotations

import math
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
#: The context line names at most this many lanes, the fullest.
MAX_CONTEXTS = 4


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
    #: (cap, value, mechanism) per cap, as `governor_summary` gives them; the app computes them once.
    caps: tuple[tuple[str, str, str], ...] = ()
    #: (lane, heavy runs through `lanes-tui lock`) for lanes with at least one, most first.
    locks: tuple[tuple[str, int], ...] = ()
    #: (lane, `load 5.1 > 4.0, 42s`) for each lane whose gates wait (`meters_feed.gate_waits`).
    gate_waits: tuple[tuple[str, str], ...] = ()
    #: (lane, `126.0k/200.0k 63%`, near its limit) for each live lane with a context meter (`meters_feed.contexts`).
    contexts: tuple[tuple[str, str, bool], ...] = ()

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
            caps=_caps(m.get("caps")), locks=_locks(m.get("locks")), gate_waits=_gate_waits(m.get("gate_waits")),
            contexts=_contexts(m.get("contexts")),
        )


class MetersPane(Vertical):
    """`update_machine(m)` each tick; keys as in `Readings.from_mapping` (all optional)."""

    #: It can fill the screen (`Screen.maximize`), where the caps line shows every mechanism in full.
    ALLOW_MAXIMIZE = True

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
    MetersPane > #meters-caps {
        display: none;
        height: 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    MetersPane > #meters-caps.-shown {
        display: block;
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

    readings: reactive[Readings] = reactive(Readings, always_update=False, repaint=False)
    """What the text shows; equal readings do not repaint. New readings repaint the text (the
    watcher updates it), not the whole pane: the pane's own repaint rendered its border and every
    child again at each machine tick (docs/benchmarks.md, B2)."""

    def __init__(self, *, history: int = HISTORY, name: str | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._cpu: deque[float] = deque(maxlen=history)
        self._spend: deque[float] = deque(maxlen=history)
        self._text_shape: list[int] = []
        self.border_title = "Meters"

    def compose(self) -> ComposeResult:
        yield Static(id="meters-text")
        # One row, cut with an ellipsis in a narrow column: the caps must not push the Inbox out of
        # sight. The full line and each mechanism in full are its tooltip.
        yield Static(id="meters-caps")
        with Horizontal(classes="spark-row"):
            yield Label("cpu")
            yield Sparkline([], id="cpu-spark")
        with Horizontal(classes="spark-row"):
            yield Label("spend")
            yield Sparkline([], id="spend-spark")

    def on_mount(self) -> None:
        self._show_text(self.readings)

    def _show_text(self, readings: Readings) -> None:
        """Show the figures; a layout of the screen only when a line's length changed.

        A layout pass re-arranges every widget on the screen; new figures of the same lengths
        cannot move anything, and the figures change every tick.
        """
        text = _describe(readings)
        shape = [len(line) for line in text.plain.split("\n")]
        self.query_one("#meters-text", Static).update(text, layout=shape != self._text_shape)
        self._text_shape = shape

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

    def watch_readings(self, old: Readings, readings: Readings) -> None:
        if not self.is_mounted:
            return
        self._show_text(readings)
        if readings.caps != old.caps:
            caps = self.query_one("#meters-caps", Static)
            caps.update(_caps_line(readings.caps) if readings.caps else "")
            caps.set_class(bool(readings.caps), "-shown")
            # Content, not str: a str tooltip is parsed as markup.
            caps.tooltip = Content(_caps_tooltip(readings.caps)) if readings.caps else None


def _describe(r: Readings) -> Content:
    """Three lines (four while gates wait); figures that need the lead's eye are coloured from the theme."""
    val = _val
    cpu = "-" if r.cpu is None else f"{r.cpu}%"
    mem = "-" if r.mem is None else f"{r.mem}%"
    load = "-" if r.load1 is None else f"{r.load1:.2f}"
    full = r.slots_total > 0 and r.slots_used >= r.slots_total
    holders = ", ".join(f"{lane} (pid {pid})" for lane, pid in r.holders) or "free"
    locks = ", ".join(f"{lane} {count}" for lane, count in r.locks)
    line1 = Content.assemble(
        "CPU ", val(cpu, "warning" if (r.cpu or 0) >= 90 else ""), "   mem ",
        val(mem, "warning" if (r.mem or 0) >= 90 else ""), "   load ", val(load),
        "   disk free ", val(r.disk_free or "-", "error" if r.low_disk else ""),
    )
    line2 = Content.assemble(
        "slots ", val(f"{r.slots_used}/{r.slots_total}", "warning" if full else ""), "   ",
        Content(fmt.truncate(holders, 90)), f"   locks: {fmt.truncate(locks, 60)}" if locks else "",
    )
    line3 = Content.assemble(
        "lanes ", val(f"{r.running}/{r.max_parallel}"), " running   spend ", val(r.spend),
        "   tokens ", val(r.tokens),
    )
    lines = [line1, line2, line3]
    if r.gate_waits:  # only while a check waits: the pane keeps its three lines otherwise
        waits = "; ".join(f"{lane} {text}" for lane, text in r.gate_waits)
        lines.append(Content.assemble("gates waiting: ", Content.styled(fmt.truncate(waits, 120), "$warning")))
    if r.contexts:  # only while a running agent reports its context
        parts: list[Content | str] = ["context"]
        for lane, text, near in r.contexts:
            parts += ["  ", f"{fmt.truncate(lane, 24)} ", _val(text, "warning" if near else "")]
        lines.append(Content.assemble(*parts))
    return Content("\n").join(lines)


def _val(text: str, tone: str = "") -> Content:
    """A figure: bold, or in a theme colour when it needs the lead's eye."""
    return Content.styled(text, f"${tone}" if tone else "bold")


#: How a cap is named on the compact line (the tooltip keeps the engine's names).
_CAP_LABELS = {"memory": "mem"}


def _caps_line(caps: tuple[tuple[str, str, str], ...]) -> Content:
    """`caps/lane  cpu 100% (cgroup-v1)  mem 2.0 GiB (cgroup-v1)  pids 512 (cgroup-v1)  nice 10`.

    Only the first word of a mechanism fits here (`cgroup-v1`, `sampler`); a memory cap that is off,
    or a lane allowed to run uncapped, is what the lead must notice, so it is coloured.
    """
    parts: list[Content | str] = ["caps/lane"]
    for cap, value, mechanism in caps:
        loud = (cap == "memory" and value == "off") or cap == "uncapped"
        short = mechanism.split(" ", 1)[0]
        parts += ["  ", f"{_CAP_LABELS.get(cap, cap)} ", _val(value, "warning" if loud else "")]
        if short and short != "off" and value != "off" and cap not in ("nice", "uncapped"):
            parts.append(f" ({short})")
    return Content.assemble(*parts)


def _caps_tooltip(caps: tuple[tuple[str, str, str], ...]) -> str:
    return "\n".join(["caps per lane, and what enforces each on this machine:",
                      *(f"{cap} {value}: {mechanism or '?'}" for cap, value, mechanism in caps)])


def _caps(value: Any) -> tuple[tuple[str, str, str], ...]:
    """The "caps" list of dicts, kept only where it has a cap name (any other shape shows nothing)."""
    if not isinstance(value, list | tuple):
        return ()
    return tuple((str(c["cap"]), str(c.get("value") or "?"), str(c.get("mechanism") or ""))
                 for c in value if isinstance(c, Mapping) and c.get("cap"))


def _locks(value: Any) -> tuple[tuple[str, int], ...]:
    """The "locks" mapping lane → count, lanes with at least one run, most first."""
    if not isinstance(value, Mapping):
        return ()
    counts = [(str(lane), n) for lane, n in value.items() if isinstance(n, int) and not isinstance(n, bool) and n >= 1]
    return tuple(sorted(counts, key=lambda item: (-item[1], item[0])))


def _gate_waits(value: Any) -> tuple[tuple[str, str], ...]:
    """The "gate_waits" mapping lane → text, in lane order (any other shape shows nothing)."""
    if not isinstance(value, Mapping):
        return ()
    return tuple(sorted((str(lane), str(text)) for lane, text in value.items() if text))


def _contexts(value: Any) -> tuple[tuple[str, str, bool], ...]:
    """The "contexts" mapping lane → {used, window, fraction, near}, fullest first, at most
    `MAX_CONTEXTS` (the line must not push the sparklines away); an entry without numbers is left out
    (any other shape shows nothing)."""
    if not isinstance(value, Mapping):
        return ()
    meters = sorted(((str(lane), m) for lane, m in value.items() if isinstance(m, Mapping)
                     and all(_number(m.get(k)) for k in ("used", "window", "fraction"))),
                    key=lambda item: (-item[1]["fraction"], item[0]))
    return tuple((lane, f"{fmt.tokens(m['used'])}/{fmt.tokens(m['window'])} {m['fraction']:.0%}", m.get("near") is True)
                 for lane, m in meters[:MAX_CONTEXTS])


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _round(value: Any) -> int | None:
    return None if value is None else round(float(value))


def _clamp(value: int | None) -> int | None:
    return None if value is None else min(100, max(0, value))
