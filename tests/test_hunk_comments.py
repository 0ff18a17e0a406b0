"""Issue 32, item 7: comments on a hunk of a lane's diff, and one message to several lanes.

Real lanes under real supervisors: a fake claude that acknowledges each message it is sent (`ack:
<text>`, so what reached the agent is read back from its conversation), sim lanes that end at once
(a lane that is not running), and `recover --relaunch` carrying a kept comment into the next
attempt's prompt. The command line runs as real processes; the dashboard is driven with Textual's
Pilot over a fake engine whose `send`, `comment` and `broadcast` reach the real lanes. Waits are on
files and on the screen, each with a deadline; nothing sleeps for time.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from lanes_tui.engine import conversation, diff_hunks, hunk_at
from lanes_tui.engine.lanes.launcher import stop_lane
from tests.fakes import CLAUDE_TABLE
from tests.helpers import cli, output, run_lane, status, wait_for, wait_state, write_config

VIA = "claude-stream-json"


def lane_dir(repo: Path, lane: str) -> Path:
    return repo / ".lanes" / "state" / "lanes" / lane


def events(repo: Path, lane: str, kind: str) -> list[dict[str, Any]]:
    path = lane_dir(repo, lane) / "events.jsonl"
    return [e for e in map(json.loads, path.read_text().splitlines()) if e.get("type") == kind]


def printed(repo: Path, lane: str) -> str:
    try:
        return output(repo, lane)
    except FileNotFoundError:
        return ""


def acks(repo: Path, lane: str) -> list[str]:
    """What the fake claude acknowledged: the text of each message that reached it."""
    return [t.text.removeprefix("ack: ") for t in conversation(repo, lane)
            if t.role == "assistant" and t.text.startswith("ack: ")]


def chat_lane(repo: Path, lane_id: str) -> str:
    lane = run_lane(repo, "chat", lane_id=lane_id, extra=("--lane", "fakeclaude", "--raw"))
    wait_for(lambda: "ready for messages" in printed(repo, lane), timeout=60)
    return lane


def stop(repo: Path, *lanes: str) -> None:
    for lane in lanes:
        asyncio.run(stop_lane(repo, lane))
        wait_state(repo, lane)


def one_line_refusal(proc: Any) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return str(lines[0])


# --- the hunks of a diff -------------------------------------------------------------------------------

DIFF = """diff --git a/calc.py b/calc.py
index 1111111..2222222 100644
--- a/calc.py
+++ b/calc.py
@@ -1,3 +1,3 @@ def add(a, b):
 def add(a, b):
-    return a - b
+    return a + b
@@ -10 +10,2 @@
-old = 1
+new = 1
+-- a line that starts like a header
diff --git a/gone.py b/gone.py
deleted file mode 100644
--- a/gone.py
+++ /dev/null
@@ -1 +0,0 @@
-print("bye")
\\ No newline at end of file
"""


def test_diff_hunks_find_each_hunk_its_file_and_the_lines_it_covers() -> None:
    hunks = diff_hunks(DIFF)
    assert [(h.file, h.header, h.new_start, h.new_count) for h in hunks] == [
        ("calc.py", "@@ -1,3 +1,3 @@ def add(a, b):", 1, 3), ("calc.py", "@@ -10 +10,2 @@", 10, 2),
        ("gone.py", "@@ -1 +0,0 @@", 0, 0)]
    assert hunks[0].lines == (" def add(a, b):", "-    return a - b", "+    return a + b")
    assert hunks[1].lines[-1] == "+-- a line that starts like a header"  # inside a hunk: a line of it
    assert hunks[2].lines == ('-print("bye")', "\\ No newline at end of file")
    lines = DIFF.split("\n")
    assert [lines[h.start] for h in hunks] == [h.header for h in hunks]
    assert hunk_at(hunks, "calc.py", 2) is hunks[0] and hunk_at(hunks, "calc.py", 11) is hunks[1]
    assert hunk_at(hunks, "calc.py", 5) is None and hunk_at(hunks, "other.py", 1) is None
    assert diff_hunks("(no changes yet)") == [] and diff_hunks("") == []


def test_broadcast_reports_each_lane_and_the_store_reads_only_what_it_wrote(tmp_path: Path) -> None:
    from lanes_tui.engine import LanesError, new_comment, send_to_lanes
    from lanes_tui.engine.lanes.control_client import Refused
    from lanes_tui.engine.state.comments import drop_comments, keep_comment, read_comments

    async def send(lane_id: str, text: str) -> dict[str, Any]:
        if lane_id == "plain-a1":
            raise Refused("lane plain-a1 takes no messages: its agent (channel plain) read its prompt")
        if lane_id == "gone-a1":
            raise LanesError("lane gone-a1 is not running (state exited): no live supervisor to talk to")
        return {"ok": True, "via": "pty"}

    report = asyncio.run(send_to_lanes(["a-a1", "plain-a1", "gone-a1", "a-a1"], "hi", send))
    assert [(r.lane_id, r.sent, r.refused) for r in report.results] == [
        ("a-a1", True, False), ("plain-a1", False, True), ("gone-a1", False, False)]  # each lane once
    assert not report.ok and report.delivered == ["a-a1"]
    assert report.lines() == ["sent to a-a1 (pty)", "skipped plain-a1: lane plain-a1 takes no messages: its agent "
                              "(channel plain) read its prompt", "skipped gone-a1: lane gone-a1 is not running "
                              "(state exited): no live supervisor to talk to"]

    lane = tmp_path / "lane"
    lane.mkdir()
    (lane / "lane.json").write_text("{}")
    first = new_comment("calc.py", "@@ -1 +1 @@", ["-a", "+b", "x" * 1000], "  rename it  ")
    assert first.text == "rename it" and first.lines[2].endswith("…") and len(first.lines[2]) == 301
    assert first.one_line() == "The lead commented on calc.py @@ -1 +1 @@ [-a | +b]: rename it"
    second = new_comment("b.py", "@@ -2 +2 @@", ["+c"], "and this")
    keep_comment(lane, first)
    assert [c.id for c in keep_comment(lane, second)] == [first.id, second.id]
    raw = json.loads((lane / "comments.json").read_text())
    raw["comments"].append({"file": 3, "text": "malformed"})  # an agent could write here: skipped, not trusted
    (lane / "comments.json").write_text(json.dumps(raw))
    assert read_comments(lane) == [first, second]
    assert drop_comments(lane, [first.id]) == 1 and read_comments(lane) == [second]
    assert drop_comments(lane, [second.id]) == 1 and not (lane / "comments.json").exists()
    for bad, says in (("", "is empty"), ("x" * 9000, "more than 8,192"), ("a\x00b", "NUL")):
        with pytest.raises(LanesError, match=says):
            new_comment("calc.py", "@@ -1 +1 @@", [], bad)


# --- a comment reaches the running agent; an ended lane keeps it for its relaunch ---------------------


def test_a_comment_reaches_the_running_agent_with_its_hunk(repo: Path) -> None:
    write_config(repo, extra=CLAUDE_TABLE)
    lane = chat_lane(repo, "chat")
    try:
        worktree = Path(status(repo, lane)["worktree"])
        (worktree / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")  # was a + b
        sent = cli(repo, "comment", lane, "calc.py:2", "this subtracts: make it add", "--json")
        assert sent.returncode == 0, sent.stderr
        body = json.loads(sent.stdout)
        assert body == {"lane": lane, "file": "calc.py", "header": "@@ -1,2 +1,2 @@", "delivered": True, "via": VIA,
                        "kept": 0}
        got = wait_for(lambda: [a for a in acks(repo, lane) if "this subtracts" in a], timeout=60)[0]
        assert "calc.py @@ -1,2 +1,2 @@" in got and "-    return a + b" in got and "+    return a - b" in got
        assert got.endswith("The lead's comment: this subtracts: make it add")
        assert [e["via"] for e in events(repo, lane, "send")] == [VIA]  # recorded as the lead's send
        assert not (lane_dir(repo, lane) / "comments.json").exists(), "delivered: nothing is kept"
    finally:
        stop(repo, lane)


def test_a_comment_on_an_ended_lane_is_in_its_next_attempts_prompt(repo: Path) -> None:
    write_config(repo)
    first = run_lane(repo, "write total.py x = 1\n", lane_id="calc")
    wait_state(repo, first)
    assert status(repo, first)["state"] == "ready"
    assert "nothing to recover" in one_line_refusal(cli(repo, "recover", first, "--relaunch"))

    kept = cli(repo, "comment", first, "total.py:1", "name it total, not x")
    assert kept.returncode == 0, kept.stderr
    assert "the comment is kept (1 in all) for its next attempt" in kept.stdout
    saved = json.loads((lane_dir(repo, first) / "comments.json").read_text())["comments"]
    assert [(c["file"], c["header"], c["lines"][0], c["text"]) for c in saved] == [
        ("total.py", "@@ -0,0 +1 @@", "+x = 1", "name it total, not x")]
    assert events(repo, first, "comment-kept")[0]["text"] == "name it total, not x"
    shown = cli(repo, "recover", first, check=True).stdout  # a ready lane with comments may be relaunched
    assert "your comment on total.py @@ -0,0 +1 @@: name it total, not x" in shown

    proc = cli(repo, "recover", first, "--relaunch", check=True)
    second = proc.stdout.strip().splitlines()[-1]
    wait_state(repo, second)
    prompt = json.loads((lane_dir(repo, second) / "lane.json").read_text())["prompt"]
    assert "> The lead's comments on your diff:\n> On total.py @@ -0,0 +1 @@:\n>     +x = 1\n" in prompt
    assert "> name it total, not x\n" in prompt
    assert prompt.index("## Findings from attempt 1") < prompt.index("> The lead's comments on your diff:")
    assert not (lane_dir(repo, first) / "comments.json").exists(), "handed over: cleared"
    assert events(repo, first, "relaunched")[-1]["comments"] == 1
    assert status(repo, second)["state"] == "ready", "the quoted comment is prose to the sim, not a step"

    assert "relaunched as calc-a2" in one_line_refusal(cli(repo, "comment", first, "total.py:1", "again"))
    assert "no hunk of calc-a2's diff holds total.py:9" in one_line_refusal(
        cli(repo, "comment", second, "total.py:9", "x"))
    assert "is not FILE:LINE" in one_line_refusal(cli(repo, "comment", second, "total.py", "x"))
    assert "the comment is empty" in one_line_refusal(cli(repo, "comment", second, "total.py:1", "  "))


# --- one message to several lanes ----------------------------------------------------------------------


def test_send_to_three_lanes_skips_the_one_not_running_and_says_why(repo: Path) -> None:
    write_config(repo, extra=CLAUDE_TABLE)
    ended = run_lane(repo, "say bye", lane_id="ended")
    one, two = chat_lane(repo, "one"), chat_lane(repo, "two")
    try:
        wait_state(repo, ended)
        proc = cli(repo, "send", one, ended, two, "--", "hello all")
        assert proc.returncode == 1, (proc.stdout, proc.stderr)  # not every lane took it
        lines = proc.stdout.strip().splitlines()
        assert lines[:2] == [f"sent to {one} ({VIA})", f"sent to {two} ({VIA})"]
        assert len(lines) == 3 and lines[2].startswith(f"skipped {ended}: lane {ended} is not running (state ")
        for lane in (one, two):
            wait_for(lambda lane=lane: "hello all" in acks(repo, lane), timeout=60)

        every = cli(repo, "send", "--all-running", "second round", "--json")
        assert every.returncode == 0, every.stderr
        assert json.loads(every.stdout) == {"sent": [{"lane": one, "via": VIA}, {"lane": two, "via": VIA}],
                                            "skipped": [], "ok": True}
        single = cli(repo, "send", two, "just you")  # the one-lane form is as it was
        assert (single.returncode, single.stdout.strip()) == (0, f"sent to {two} ({VIA})")
        for lane, expected in ((one, ["hello all", "second round"]), (two, ["hello all", "second round", "just you"])):
            wait_for(lambda lane=lane, expected=expected: acks(repo, lane) == expected, timeout=60)

        assert "no such lane nope-a1" in one_line_refusal(cli(repo, "send", one, "nope-a1", "--", "hi"))
        assert "takes the message alone" in one_line_refusal(cli(repo, "send", "--all-running", one, "hi"))
        assert len(events(repo, one, "send")) == 2, "a refused broadcast sent nothing"
    finally:
        stop(repo, one, two)
    nobody = cli(repo, "send", "--all-running", "anyone?")
    assert "no lane is running" in one_line_refusal(nobody)


# --- the dashboard -------------------------------------------------------------------------------------


async def until(pilot: Pilot[Any], done: Callable[[], object], what: str, timeout: float = 60.0) -> None:
    """Let the app run until `done()` holds; fail after `timeout` seconds with `what`."""
    end = time.monotonic() + timeout
    while not done():
        if time.monotonic() > end:
            raise AssertionError(f"{what} never happened")
        await pilot.pause(0.05)


async def test_dashboard_comments_on_hunks_and_sends_to_marked_lanes(repo: Path) -> None:
    from lanes_tui.app.dashboard.app import LanesApp
    from lanes_tui.widgets import DiffPane, LanesTable, ReasonModal
    from tests.fake_engine import FakeEngine
    from tests.fake_engine import lane as fake_lane

    write_config(repo, extra=CLAUDE_TABLE)
    ended = run_lane(repo, "say bye", lane_id="gone")
    talk = chat_lane(repo, "talk")
    try:
        wait_state(repo, ended)
        engine = FakeEngine(repo, [fake_lane(ended, "exited"), fake_lane(talk, "running")])
        app = LanesApp(repo, engine=engine, flush_s=0.01)  # type: ignore[arg-type]
        async with app.run_test(size=(140, 40)) as pilot:
            await pilot.pause()
            pane, table = app.screen.query_one(DiffPane), app.screen.query_one(LanesTable)
            assert table.selected_lane == ended
            await pilot.press("]")  # the first press opens the Diff tab
            await until(pilot, lambda: pane.lane_id == ended and pane.hunks, "the diff of the ended lane")
            assert pane.marked_hunk is None and "1 hunk: ] [ move, C comments" in str(pane.border_subtitle)
            await pilot.press("]")
            hunk = pane.marked_hunk
            assert hunk is not None and (hunk.file, hunk.header) == ("calc.py", "@@ -1 +1 @@")
            assert "hunk 1/1 calc.py" in str(pane.border_subtitle)
            await pilot.press("C")
            await until(pilot, lambda: isinstance(app.screen, ReasonModal), "the comment dialog")
            await pilot.press(*"use the helper", "enter")
            await until(pilot, lambda: "1 comment kept for the next attempt" in str(pane.border_subtitle),
                        "the kept count in the Diff tab")
            saved = json.loads((lane_dir(repo, ended) / "comments.json").read_text())["comments"]
            assert [(c["file"], c["header"], c["lines"], c["text"]) for c in saved] == [
                ("calc.py", "@@ -1 +1 @@", [f"-old {ended}", f"+new {ended}"], "use the helper")]
            assert any(n.title == "Comment kept" for n in app._notifications)

            await pilot.press("down")  # the running lane: its diff is loaded in the tab on screen
            await until(pilot, lambda: pane.lane_id == talk and pane.hunks, "the diff of the running lane")
            assert "kept" not in str(pane.border_subtitle)
            await pilot.press("]", "C")
            await until(pilot, lambda: isinstance(app.screen, ReasonModal), "the comment dialog")
            await pilot.press(*"and here", "enter")
            await until(pilot, lambda: any(n.title == "Comment sent" for n in app._notifications), "the send")
            await until(pilot, lambda: any(a.endswith("The lead's comment: and here") for a in acks(repo, talk)),
                        "the agent's ack of the comment")
            assert f"+new {talk}" in next(a for a in acks(repo, talk) if "and here" in a)

            await pilot.press("space", "up", "space")  # mark both lanes
            assert table.marked_lanes == [talk, ended]
            assert str(table.get_cell(talk, "id")).startswith("✓ ") and "2 marked" in str(table.border_title)
            await pilot.press("T")
            await until(pilot, lambda: isinstance(app.screen, ReasonModal), "the broadcast dialog")
            await pilot.press(*"to all", "enter")
            await until(pilot, lambda: any(n.title == "Sent to 1 of 2" for n in app._notifications), "the report")
            report = next(n.message for n in app._notifications if n.title == "Sent to 1 of 2")
            assert f"sent to {talk} ({VIA})" in report and f"skipped {ended}: lane {ended} is not running" in report
            assert table.marked_lanes == [] and not str(table.get_cell(talk, "id")).startswith("✓")
            await until(pilot, lambda: "to all" in acks(repo, talk), "the agent's ack of the broadcast")
            assert ("broadcast", ((talk, ended), "to all")) in engine.calls
    finally:
        await stop_lane(repo, talk)
        wait_state(repo, talk)
