"""B1: key-press to screen update in the dashboard, p50 / p95 / max, with N lanes printing 20 lines/s.

The real `LanesApp` with the real `Engine` runs in this process on the benchmark repository (real
detached supervisors and sim agents), at 120×36 under `App.run_test`. After a warm-up, `down` /
`up` is pressed K times (bouncing between the first and the last lane, so long tables scroll), a
human-like 100–200 ms apart, and each press is timed from just before the key event is sent until
the first frame that shows its effect.

How "the frame that shows it" is found (Textual 8.2, `textual/screen.py`, `textual/app.py`):

- The key goes in exactly as a terminal driver sends it: `driver.send_message(events.Key(...))`,
  i.e. `run_coroutine_threadsafe(app._post_message(key))`; nothing waits for idle in between (which
  `Pilot.press` does, and which would add its own 20 ms+ sleeps).
- Every frame leaves through one door: the screen's update timer (`Screen._on_timer_update`, at most
  `MAX_FPS` a second) lays out and repaints the dirty widgets and calls `Screen._compositor_refresh`,
  which calls `App._display(screen, update)` with the compositor's update for the top screen. The
  benchmark replaces `app._display` on the instance with a probe that calls the original, then —
  because in headless mode `_display` returns before turning the update into terminal bytes — does
  that work itself (`CompositorUpdate.render_segments(console)`, the bulk of what a real driver does
  before its `write`), then takes `perf_counter()` as the frame's time. Frames skipped by
  `batch_update` (`app._batch_count`) do not count.
- A press is "on screen" at the first frame at which its effect is in the widget state the frame
  was rendered from: the Lanes table's `cursor_row` is the target row *and* that row lies inside
  the table's scrolled window (the cursor scroll is applied in the same timer tick, before the
  compositor update). State is checked inside the probe, synchronously after the frame was built,
  so no other code can run between building the frame and checking it.
- A second figure, `output`, is the time until the frame in which the Output pane shows the newly
  selected lane's tail (`OutputPane.lane_id` is the lane and the pane is scrolled to its end):
  the cursor move posts `LaneSelected`, the screen loads the lane's last 64 KiB in a worker and
  replaces the pane. That is the time until the lead can read what the lane is doing.

Each run is a fresh app; the table reports per size the median over runs of each run's p50 and p95
and the maximum over all presses.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import RenderableType
from textual import events
from textual._compositor import CompositorUpdate
from textual.screen import Screen

from tests.bench.report import median, percentile

SIZE = (120, 36)


@dataclass
class B1Run:
    presses: int
    cursor_ms: list[float] = field(default_factory=list)
    output_ms: list[float] = field(default_factory=list)
    timeouts: int = 0
    frames: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "presses": self.presses,
            "timeouts": self.timeouts,
            "cursor_p50_ms": percentile(self.cursor_ms, 50),
            "cursor_p95_ms": percentile(self.cursor_ms, 95),
            "cursor_max_ms": max(self.cursor_ms, default=float("nan")),
            "output_p50_ms": percentile(self.output_ms, 50),
            "output_p95_ms": percentile(self.output_ms, 95),
            "output_max_ms": max(self.output_ms, default=float("nan")),
            "frames_per_s": self.frames / self.wall_s if self.wall_s else 0.0,
            "process_cpu_percent": 100.0 * self.cpu_s / self.wall_s if self.wall_s else 0.0,
            "cursor_ms": [round(v, 3) for v in self.cursor_ms],
            "output_ms": [round(v, 3) for v in self.output_ms],
        }


class FrameProbe:
    """Wraps `app._display`: every real frame resolves the waiters whose condition it satisfies."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.frames = 0
        self._original = app._display
        self._waiters: list[tuple[Callable[[], bool], asyncio.Future[float]]] = []
        app._display = self._display

    def _display(self, screen: Screen[Any], renderable: RenderableType | None) -> None:
        self._original(screen, renderable)
        if renderable is None or self.app._batch_count:
            return
        if isinstance(renderable, CompositorUpdate):
            renderable.render_segments(self.app.console)  # what a real driver does before writing
        now = time.perf_counter()
        self.frames += 1
        if self._waiters:
            still = []
            for condition, future in self._waiters:
                if future.done():
                    continue
                if condition():
                    future.set_result(now)
                else:
                    still.append((condition, future))
            self._waiters = still

    def when(self, condition: Callable[[], bool]) -> asyncio.Future[float]:
        """A future holding the time of the first frame (from now on) at which `condition` holds."""
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._waiters.append((condition, future))
        return future

    def clear(self) -> None:
        for _, future in self._waiters:
            future.cancel()
        self._waiters = []


def _cursor_on(table: Any, row: int) -> Callable[[], bool]:
    """The frame shows the cursor on `row`, and `row` inside the table's scrolled window."""
    return lambda: bool(table.cursor_row == row and _row_visible(table, row))


def _output_of(pane: Any, lane_id: object) -> Callable[[], bool]:
    """The frame shows `lane_id`'s output, scrolled to its end."""
    return lambda: bool(pane.lane_id == lane_id and pane.is_vertical_scroll_end)


def _row_visible(table: Any, row: int) -> bool:
    """Row `row` is in the window, below the fixed header (its line is `row + 1` of the table's content)."""
    top = int(table.scroll_y) + 1
    bottom = int(table.scroll_y) + table.scrollable_content_region.height
    return bool(top <= row + 1 < bottom + 1)


async def run_once(repo: Path, lanes: int, presses: int, *, warmup_presses: int = 10, settle_s: float = 3.0,
                   gap_s: tuple[float, float] = (0.1, 0.2), timeout_s: float = 10.0, seed: int = 1) -> B1Run:
    """One fresh dashboard on `repo`: warm up, then time `presses` cursor moves."""
    from lanes_tui.app.dashboard.app import LanesApp
    from lanes_tui.widgets import LanesTable, OutputPane

    app = LanesApp(repo)
    result = B1Run(presses)
    rng = random.Random(seed)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _wait_ready(app, lanes, timeout_s=60.0)
        table = screen.query_one(LanesTable)
        output = screen.query_one(OutputPane)
        probe = FrameProbe(app)
        driver = app._driver
        assert driver is not None
        await asyncio.sleep(settle_s)
        direction = 1
        total = warmup_presses + presses
        cpu0 = wall0 = 0.0
        frames0 = 0
        for i in range(total):
            if i == warmup_presses:
                cpu0, wall0, frames0 = time.process_time(), time.perf_counter(), probe.frames
            row = table.cursor_row
            if row + direction < 0 or row + direction >= table.row_count:
                direction = -direction
            target = row + direction
            lane_id = table.row_keys[target]
            cursor_seen = probe.when(_cursor_on(table, target))
            output_seen = probe.when(_output_of(output, lane_id))
            start = time.perf_counter()
            driver.send_message(events.Key("down" if direction > 0 else "up", None))
            try:
                cursor_at = await asyncio.wait_for(cursor_seen, timeout_s)
                output_at = await asyncio.wait_for(output_seen, timeout_s)
            except TimeoutError:
                probe.clear()
                if i >= warmup_presses:
                    result.timeouts += 1
                await pilot.pause()
                continue
            if i >= warmup_presses:
                result.cursor_ms.append((cursor_at - start) * 1000.0)
                result.output_ms.append((output_at - start) * 1000.0)
            await asyncio.sleep(rng.uniform(*gap_s))
        result.wall_s = time.perf_counter() - wall0
        result.cpu_s = time.process_time() - cpu0
        result.frames = probe.frames - frames0
    return result


async def _wait_ready(app: Any, lanes: int, *, timeout_s: float) -> Any:
    """Until the dashboard lists every lane and shows the first lane's output."""
    from lanes_tui.app.dashboard.screen import DashboardScreen
    from lanes_tui.widgets import LanesTable, OutputPane

    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        screen = app.screen
        if isinstance(screen, DashboardScreen):
            table = screen.query_one(LanesTable)
            if table.row_count >= lanes and screen.query_one(OutputPane).lane_id is not None:
                return screen
        await asyncio.sleep(0.05)
    raise RuntimeError(f"the dashboard never showed {lanes} lanes within {timeout_s:g}s")


def measure(repo: Path, lanes: int, *, runs: int, presses: int, warmup_presses: int = 10,
            settle_s: float = 3.0) -> dict[str, Any]:
    """`runs` fresh dashboards on the same lanes; medians of their p50 / p95."""
    summaries = []
    for run in range(runs):
        result = asyncio.run(run_once(repo, lanes, presses, warmup_presses=warmup_presses, settle_s=settle_s,
                                      seed=run + 1))
        summaries.append(result.summary())
    return {
        "lanes": lanes,
        "runs": summaries,
        "cursor_p50_ms": median([s["cursor_p50_ms"] for s in summaries]),
        "cursor_p95_ms": median([s["cursor_p95_ms"] for s in summaries]),
        "cursor_max_ms": max(s["cursor_max_ms"] for s in summaries),
        "output_p50_ms": median([s["output_p50_ms"] for s in summaries]),
        "output_p95_ms": median([s["output_p95_ms"] for s in summaries]),
        "output_max_ms": max(s["output_max_ms"] for s in summaries),
        "timeouts": sum(s["timeouts"] for s in summaries),
        "frames_per_s": median([s["frames_per_s"] for s in summaries]),
        "process_cpu_percent": median([s["process_cpu_percent"] for s in summaries]),
    }


HEADERS = ("lanes", "p50 ms", "p95 ms", "max ms", "output p50", "output p95", "output max", "timeouts",
           "frames/s", "proc CPU %")


def row(summary: dict[str, Any]) -> list[Any]:
    return [summary["lanes"], summary["cursor_p50_ms"], summary["cursor_p95_ms"], summary["cursor_max_ms"],
            summary["output_p50_ms"], summary["output_p95_ms"], summary["output_max_ms"], summary["timeouts"],
            summary["frames_per_s"], summary["process_cpu_percent"]]
