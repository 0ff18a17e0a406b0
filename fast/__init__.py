"""The fence: every use of a Textual or Rich private name lives here, and nowhere else.

Owns the dashboard's fast paths: measured wins that need Textual's private API (its compositor, styles
cache, timer). Nothing outside this folder touches a private name
of Textual or Rich (`tests/test_fence.py` reads the source). It may import Textual, Rich and the standard
library, and must never import the app, the widgets or the engine: the app and the widgets build on it
(`FastScreen`, `use_framed_rows`), it builds on nothing of ours.

Degrade, never crash: `checks` tests at start-up, once a process, that what each fast path relies on is
still there in the shape it was checked in (methods' parameters, attributes); a path that fails is off,
its users take Textual's stock path, and one log line (logger `lanes_tui.fast`, the dashboard's engine
log) says which paths are off and why. `LANES_TUI_STOCK=1` turns every path off. How to move to a new
Textual: docs/textual.md.

Checked against Textual 8.2.7 and 8.2.8 (the pin, `textual>=8.2.7,<8.3`; 8.2.8 is what the tests and
the benchmarks ran on) and Rich 14.2 / 15.0. Per module, with its switch in `checks.PATHS`, what it
replaces, the figure that justified it (docs/benchmarks.md) and the test that holds it equal to stock:

- `compositor` (switch `compositor`): replaces `Compositor._get_renders` for a partial update, rendering
  only the widgets whose visible part it overlaps. B2: an Output frame 7.4 → 2.7 ms.
  Held equal by `tests/test_lean_compositor.py`.
- `frame_timer` (`frame_timer`): replaces `Timer._run` for the screen's frames, a frame as soon as resumed
  and at most one an interval. B1: output p50 54.8 → 35.5 ms (a frame waited 17–33 ms on Textual's grid).
  Held equal by `tests/test_frame_timer.py` (fake clock).
- `screen` (both above): `FastScreen` assigns `Screen._compositor` and overrides `Screen._update_timer`.
  Held equal by the dashboard snapshots, run in both modes.
- `framed_rows` (`framed_rows`): replaces `StylesCache.render` / `render_line` for plain content rows
  (border and padding joined once), for the Output pane and the list panes, which are otherwise
  Textual's public Line API (`use_framed_rows`). B2: the Output pane's part of a frame 4.0 → 1.6 ms.
  Held equal by `tests/test_framed_rows.py`.
- Not here any more: the lean terminal driver (its input thread slept until a key: 0.14 % of a core,
  not worth replacing the thread every key of the lead comes through; docs/upstream.md offers it to
  Textual) and the DataTable and Log surgery (the panes are on the public Line API now).
- `checks`: the start-up checks (`NEEDS`: what each switch relies on); `tests/test_fence.py`.

`tests/test_app_*.py` and `tests/test_widgets*.py` pass with `LANES_TUI_STOCK=1` too, on the same
snapshots (`.ci/run` runs them both ways): the fast paths draw what stock Textual draws.
"""

from __future__ import annotations

from lanes_tui.fast.checks import PATHS, STOCK_ENV, enabled, off_reasons, recheck

__all__ = ["PATHS", "STOCK_ENV", "enabled", "off_reasons", "recheck"]
