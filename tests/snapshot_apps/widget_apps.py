"""Host apps and fixed data for the widget tests and snapshots: one widget, fed by hand, no engine.

Timestamps are fixed (`NOW`) so ages and elapsed times never change between runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widget import Widget

from lanes_tui.engine import LaneStatus, QuestionView
from lanes_tui.engine.inbox.files import Option, Question

NOW = 1_700_000_000.0


def lane(lane_id: str, state: str, **extra: Any) -> LaneStatus:
    """A typed lane status as the engine's `lane_status()` makes it."""
    task = lane_id.rsplit("-a", 1)[0]
    data: dict[str, Any] = {
        "id": lane_id, "task": task, "task_type": "backend", "state": state,
        "state_reason": f"{state} for a test", "result": None, "provider": "sim",
        "providers_tried": [{"provider": "sim", "model": "sim-1", "result": None}],
        "chain": ["sim"], "attempt": 1, "worktree": f"/wt/proj-1234abcd/{lane_id}",
        "branch": f"lane/{lane_id}", "base_sha": "0" * 40, "target_branch": "programme",
        "created": NOW - 600, "updated": NOW - 60, "idle_s": 4.0, "cpu_percent": 12.0,
        "rss_bytes": 80 * 1024 * 1024, "procs": 2, "output_bytes": 2048, "tokens": 15300,
        "cost_usd": 0.42, "cost_estimated": False, "session_id": None, "stall": None,
    }
    data.update(extra)
    return LaneStatus.from_json(data)


LANES: list[LaneStatus] = [
    lane("fix-login-a1", "running", providers_tried=[{"provider": "claude", "model": "sonnet"}], provider="claude",
         context={"used": 126_000, "window": 200_000, "warn": 0.85, "source": "reported"}),
    lane("add-cache-a1", "waiting", state_reason="a question is open in the inbox", idle_s=30.0,
         context={"used": 185_000, "window": 200_000, "warn": 0.85, "source": "table"}),
    lane("slow-docs-a1", "stalled", state_reason="no activity for 900.0s", cpu_percent=0.0, rss_bytes=0,
         stall={"idle_s": 900.0, "idle_timeout_s": 900, "at": NOW - 100,
                "tree": [{"pid": 4242, "ppid": 1, "name": "python", "cmdline": "python -m sim [x]",
                          "cpu_s": 1.25, "rss": 30 * 1024 * 1024}]}),
    lane("tidy-tests-a2", "ready", attempt=2, state_reason="gates passed", tokens=120_000, cost_usd=1.5,
         cost_estimated=True),
    lane("bad-gates-a1", "rejected", state_reason="gate 'python -m pytest -q' failed (exit 1)"),
    lane("old-work-a1", "accepted", state_reason="merged into programme at abcdef1234"),
    lane("quiet-one-a1", "running", idle_s=420.0, cpu_percent=0.0, procs=3,
         tree=[{"pid": 5150, "name": "sim", "cpu_s": 0.4, "rss": 12 * 1024 * 1024},
               {"pid": 5151, "name": "sleep", "cpu_s": 0.0, "rss": 1024 * 1024}]),
]


#: A best-of-3 group, ranked: the winner CLEAN, the runner-up's review MISSING, the last one BLOCKING.
BEST_OF: list[LaneStatus] = [
    lane("parse-csv-b1-a1", "ready", task="parse-csv", group="bo-parse-csv-1a2b3c", rank=1, review="CLEAN",
         state_reason="gates passed; review CLEAN by codex"),
    lane("parse-csv-b2-a1", "ready", task="parse-csv", group="bo-parse-csv-1a2b3c", rank=2, review="MISSING",
         state_reason="gates passed; review MISSING: no REVIEW: line"),
    lane("parse-csv-b3-a1", "rejected", task="parse-csv", group="bo-parse-csv-1a2b3c", rank=3, review="BLOCKING",
         state_reason="review BLOCKING by codex: 2 findings"),
]
#: Verdicts for some of LANES (the review column).
REVIEWS = {"tidy-tests-a2": "CLEAN", "old-work-a1": "CLEAN"}


def question(qid: str, lane_id: str, state: str, created: float, *, answer: str | None = None,
             answered_by: str | None = None, reason: str | None = None, **extra: Any) -> QuestionView:
    """A question's view as the engine's inbox reads it (`extra`: the `Question`'s own fields; options
    as `{"id", "label"}` objects, as on disk)."""
    fields: dict[str, Any] = {
        "id": qid, "lane": lane_id, "attempt": 1, "kind": "yesno", "source": "ask-cli",
        "title": f"question {qid}", "body": "", "options": [], "default": None, "deadline": None,
        "correlation": {}, "created": created,
    }
    fields.update(extra)
    fields["options"] = tuple(Option(o["id"], o["label"]) for o in fields["options"])
    return QuestionView(Question(**fields), state, answer, answered_by, None, reason)


QUESTIONS: list[QuestionView] = [
    question("q_000000000003", "add-cache-a1", "open", NOW - 30, title="Use redis for the cache?"),
    question("q_000000000001", "gone-lane-a1", "orphaned", NOW - 3600, title="Delete the fixtures dir?",
             reason="the lane died"),
    question("q_000000000002", "fix-login-a1", "answered", NOW - 300, kind="choice", source="claude-stdio",
             title="Which login flow?", answer="oauth",
             options=[{"id": "oauth", "label": "OAuth"}, {"id": "pw", "label": "password"}]),
    question("q_000000000004", "fix-login-a1", "delivered", NOW - 900, title="Already delivered"),
    question("q_000000000005", "tidy-tests-a2", "cancelled", NOW - 800, title="Cancelled one"),
    question("q_000000000006", "tidy-tests-a2", "expired", NOW - 700, title="Expired one"),
]

MACHINE: dict[str, Any] = {
    "cpu_percent": 37.4, "mem_percent": 61.2, "load1": 2.345, "disk_free_bytes": 120 * 1024**3,
    "slots_used": 1, "slots_total": 2, "slot_holders": [{"lane": "tidy-tests-a2", "pid": 777, "since": NOW - 20}],
    "running": 3, "max_parallel": 6, "spend_usd": 4.2, "tokens": 512_000,
}

WORKTREES: list[dict[str, Any]] = [
    {"lane": "fix-login-a1", "path": "/home/lead/.local/share/lanes-tui/proj-1234abcd/fix-login-a1",
     "branch": "lane/fix-login-a1", "changed": 3, "insertions": 42, "deletions": 7, "ahead": 1,
     "behind": 0, "commits": [{"sha": "1f2e3d4c" + "0" * 32, "summary": "Fix the [login] redirect",
                               "author": "codex", "timestamp": NOW - 120}]},
    {"lane": "tidy-tests-a2", "path": "/home/lead/.local/share/lanes-tui/proj-1234abcd/tidy-tests-a2",
     "branch": "lane/tidy-tests-a2", "changed": 12, "insertions": 310, "deletions": 128,
     "ahead": 2, "behind": 4},
    {"lane": "add-cache-a1", "path": "/home/lead/.local/share/lanes-tui/proj-1234abcd/add-cache-a1",
     "branch": "lane/add-cache-a1", "changed": 0, "insertions": 0, "deletions": 0, "ahead": 0,
     "behind": None, "commits": []},
]

DIFF = """diff --git a/calc.py b/calc.py
index 1111111..2222222 100644
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,5 @@
 def add(a, b):
-    return a+b
+    return a + b
+
+def sub(a, b):
+    return a - b
"""


class WidgetHost(App[None]):
    """Mounts one widget and calls `feed(widget)` once it is mounted."""

    def __init__(self, widget: Widget, feed: Callable[[Any], None] | None = None) -> None:
        super().__init__()
        self.widget = widget
        self.feed = feed
        self.messages: list[Any] = []

    def compose(self) -> ComposeResult:
        yield self.widget

    def on_mount(self) -> None:
        if self.feed is not None:
            self.feed(self.widget)

    def on_lanes_table_lane_selected(self, message: Any) -> None:
        self.messages.append(message)

    def on_inbox_pane_question_selected(self, message: Any) -> None:
        self.messages.append(message)


class ModalHost(App[None]):
    """Pushes one modal on mount and keeps what it dismissed with in `results`."""

    def __init__(self, make: Callable[[], Screen[Any]]) -> None:
        super().__init__()
        self.make = make
        self.results: list[Any] = []

    def on_mount(self) -> None:
        self.push_screen(self.make(), self.results.append)


@asynccontextmanager
async def showing_lanes(lanes: list[LaneStatus], *, height: int,
                        size: tuple[int, int]) -> AsyncIterator[tuple[Any, WidgetHost, Pilot[None]]]:
    """A Lanes table `height` lines tall in a host app of `size`, synced with `lanes` at NOW and drawn."""
    from lanes_tui.widgets import LanesTable

    table = LanesTable()
    app = WidgetHost(table)
    app.CSS = f"LanesTable {{ height: {height}; }}"
    async with app.run_test(size=size) as pilot:
        table.sync(lanes, NOW)
        await pilot.pause()
        yield table, app, pilot
