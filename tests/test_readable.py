"""A structured lane's output made readable (`engine/channels/readable*.py`): what the Output pane and
`peek` show instead of multi-KB JSON lines.

The recorded lines are what the real CLIs printed against the scripted model server
(`tests/readable_samples/README.md`); the hand-written ones are the shapes PROVIDERS.md and the fake
CLIs give, and odd or hostile variants of them. Whatever comes in, nothing raises, no escape reaches
the output, and no JSON line is ever shown raw.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine.channels.readable import (
    MAX_HELD_CHARS,
    MAX_TEXT_LINES,
    SHORT,
    Readable,
    ReadableStream,
    readable_lines,
)
from lanes_tui.engine.channels.readable_dialects import render

SAMPLES = Path(__file__).parent / "readable_samples"
RECORDED = Path(__file__).parent / "real_cli" / "samples"


def sample(name: str) -> list[str]:
    return (SAMPLES / name).read_text(encoding="utf-8").splitlines()


def lines_of(*events: dict[str, Any]) -> list[str]:
    return readable_lines([json.dumps(e) for e in events])


# --- recorded lines of the real CLIs -----------------------------------------------------------------

def test_claude_recorded_run_reads_as_a_conversation() -> None:
    raw = sample("claude_run.jsonl")
    assert max(map(len, raw)) > 2000  # what the lead had to read before: the init line alone
    assert readable_lines(raw) == [
        "# claude · model claude-sonnet-5-5 · session 2be8b479-f8f9-40a3-885b-43af794586b2",
        "Writing hello.txt.",
        "→ Write: /tmp/cwork-lswhc9ja/hello.txt",
        "  ⎿ File created successfully at: /tmp/cwork-lswhc9ja/hello.txt (file state is current in your context — no "
        "need to Read it…",
        "Running python3 -c \"open('ran.txt','w').write('hi')\".",
        "→ Bash: python3 -c \"open('ran.txt','w').write('hi')\"",
        "? permission: Bash: python3 -c \"open('ran.txt','w').write('hi')\"",
        "  ⎿ (Bash completed with no output)",
        "wrote hello.txt and ran the command",
        "= done · 3 turns · 1.8 s · $0.0096 · tokens 3600 in · 240 out",
    ]


def test_claude_recorded_errors_say_what_the_api_said_once() -> None:
    assert readable_lines(sample("claude_billing.jsonl"))[1:] == [
        "! error (billing_error): Credit balance is too low",
        "! failed (API 400)",  # the result repeats the message: said once, its status added
        "= ended · 1 turn · 0.6 s · $0.0000",
    ]
    assert readable_lines(sample("claude_overloaded.jsonl"))[1:3] == [
        "… API retry 1/1 in 1.2 s: 529 overloaded",
        "! error (server_error): API Error: 529 Overloaded. This is a server-side issue, usually temporary — try "
        "again in a moment. If it persists, check your inference gateway (127.0.0.1:37213).",
    ]
    assert readable_lines(sample("claude_usage_limit.jsonl"))[1:3] == [
        "! rate limit rejected (five_hour), resets 2026-12-03 16:51 UTC",
        "! error (rate_limit): You've hit your 5-hour limit · resets 4:51pm (UTC)",
    ]


def test_codex_recorded_lines() -> None:
    assert readable_lines(sample("codex_run.jsonl")) == [
        "# codex · thread 01a23cc8-8681-7772-9208-8908494c452a",
        "→ edit: add /work/lane/hello.txt",
        "→ $ cat hello.txt",  # `/bin/bash -lc 'cat hello.txt'` as the lead would type it
        "  ⎿ exit 0: hello",
        "Wrote hello.txt and ran cat.",
        "= turn done · tokens 3600 in (+1800 cached, +300 written) · 240 out (+60 reasoning)",
    ]
    assert readable_lines(sample("codex_rate_limit.jsonl"))[1:] == [
        "… Reconnecting... 1/2 (exceeded retry limit, last status: 429 Too Many Requests)",  # codex retrying
        "… Reconnecting... 2/2 (exceeded retry limit, last status: 429 Too Many Requests)",
        "! error: exceeded retry limit, last status: 429 Too Many Requests",
        "! turn failed",  # the same words again: not repeated
    ]
    assert readable_lines(sample("codex_warning.jsonl"))[1] == (
        "! warning: Model metadata for `gpt-5-codex` not found. Defaulting to fallback metadata; this can degrade "
        "performance and cause issues.")


def test_gemini_recorded_lines() -> None:
    assert readable_lines(sample("gemini_run.jsonl")) == [
        "# gemini · model gemini-2.5-pro · session dc1fb898-5283-42e4-9634-603adc6355a1",
        "> write hello.txt then run a command",
        "→ write_file: hello.txt",
        "  ⎿ ok",
        "→ run_shell_command: echo ran > ran.txt",
        "  ⎿ ok",
        "wrote hello.txt",  # two streamed deltas ("wrote h", "ello.txt"): one message
        "= done · 2 tool calls · 3.5 s · tokens 3600 in · 240 out",
    ]
    failed = readable_lines(sample("gemini_rate_limit.jsonl"))
    assert failed[2].startswith("! error: [API Error: Resource has been exhausted (e.g. check quota). Suggested "
                                "retry after 1s.]") and len(failed[2]) <= 210
    assert failed[3] == "= ended"


def _recordings() -> list[Path]:
    return sorted(RECORDED.glob("*/*.jsonl")) + sorted(SAMPLES.glob("*.jsonl"))


@pytest.mark.parametrize("path", _recordings(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_recorded_line_is_read_and_none_shows_raw(path: Path) -> None:
    """Every recording (the tier's, once merged, and ours): each JSON line is known to its dialect
    (no compact `· type` line), and none comes out as JSON or longer than a wrapped text line."""
    reader = Readable()
    for raw in path.read_text(encoding="utf-8").splitlines():
        msg = json.loads(raw)
        assert render(reader, msg) is not None, f"{path.name}: no dialect knows {msg.get('type')!r}"
    for line in readable_lines(path.read_text(encoding="utf-8").splitlines()):
        assert not line.lstrip().startswith("{"), line
        assert len(line) <= 400, line


# --- claude: the shapes the recordings do not have ---------------------------------------------------

def test_claude_message_printed_again_shows_once_and_quiet_lines_show_nothing() -> None:
    said = {"type": "assistant", "message": {"id": "msg_01", "content": [{"type": "text", "text": "Cleaning."}]}}
    assert lines_of(said, said, {"type": "stream_event", "event": {"type": "content_block_delta"}},
                    {"type": "system", "subtype": "hook_started", "hook_name": "x"},
                    {"type": "control_response", "response": {"subtype": "success", "request_id": "r"}}) == [
        "Cleaning."]


def test_claude_tools_thinking_subagents_and_questions() -> None:
    todos = [{"content": "write", "status": "completed", "activeForm": "Writing"},
             {"content": "test", "status": "in_progress", "activeForm": "Running the tests"}]
    ask = {"questions": [{"question": "Which database?", "header": "DB", "multiSelect": False,
                          "options": [{"label": "postgres"}, {"label": "sqlite"}]}]}
    out = lines_of(
        {"type": "assistant", "message": {"id": "m1", "content": [
            {"type": "thinking", "thinking": "The user wants\na file."},
            {"type": "tool_use", "id": "t1", "name": "TodoWrite", "input": {"todos": todos}},
            {"type": "tool_use", "id": "t2", "name": "Edit",
             "input": {"file_path": "/w/calc.py", "old_string": "a" * 900, "new_string": "b"}},
            {"type": "tool_use", "id": "t3", "name": "Task",
             "input": {"description": "find the bug", "prompt": "p" * 500}},
            {"type": "tool_use", "id": "t4", "name": "AskUserQuestion", "input": ask}]}},
        {"type": "assistant", "parent_tool_use_id": "t3", "message": {"id": "m2", "content": [
            {"type": "tool_use", "id": "t5", "name": "Grep", "input": {"pattern": "def add", "path": "/w"}}]}},
        {"type": "user", "parent_tool_use_id": "t3", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t5",
             "content": [{"type": "text", "text": "calc.py:1\ncalc.py:9\n"}]},
            {"type": "tool_result", "tool_use_id": "t6",
             "content": [{"type": "image", "source": {"data": "A" * 5000}}]}]}},
        {"type": "control_request", "request_id": "r1", "request": {"subtype": "can_use_tool",
                                                                    "tool_name": "AskUserQuestion", "input": ask}},
        {"type": "control_cancel_request", "request_id": "r1"},
        {"type": "user", "message": {"role": "user", "content": "also update the changelog"}},
    )
    assert out == [
        "  (thinking) The user wants a file.",
        "→ TodoWrite: 2 items, 1 done; now: Running the tests",
        "→ Edit: /w/calc.py",
        "→ Task: find the bug",
        "→ AskUserQuestion: Which database? [postgres / sqlite]",
        "  → Grep: def add",
        "    ⎿ calc.py:1 (+1 line)",
        "    ⎿ (image)",  # not its 5,000 bytes of base64
        "? asks: Which database? [postgres / sqlite]",
        "? (the question was withdrawn)",
        "> also update the changelog",
    ]


def test_claude_system_lines_results_and_unknown_types() -> None:
    out = lines_of(
        {"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted", "level": "info"},
        {"type": "system", "subtype": "model_fallback", "content": "Opus is busy: using Sonnet", "level": "warning"},
        {"type": "system", "subtype": "permission_denied", "tool_name": "Bash", "message": "not allowed here"},
        {"type": "system", "subtype": "brand_new", "count": 3},
        {"type": "result", "subtype": "error_max_turns", "is_error": True, "num_turns": 40, "duration_ms": 61000,
         "total_cost_usd": 1.5, "usage": {"input_tokens": 10, "output_tokens": 20, "cache_read_input_tokens": 5,
                                          "cache_creation_input_tokens": 7}},
        {"type": "mystery", "id": 7, "blob": "x" * 5000, "nested": {"a": 1}},
    )
    assert out == [
        "# compact_boundary: Conversation compacted",
        "! model_fallback: Opus is busy: using Sonnet",
        "! permission denied: Bash: not allowed here",
        "· system brand_new (subtype=brand_new, count=3)",
        "! error_max_turns",
        "= ended · 40 turns · 61.0 s · $1.5000 · tokens 10 in (+5 cached, +7 written) · 20 out",
        "· mystery (id=7, blob=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…)",
    ]


# --- codex and gemini: the item kinds and streaming --------------------------------------------------

def test_codex_items_show_completed_not_each_update() -> None:
    todo = {"id": "i2", "type": "todo_list", "items": [{"text": "write calc", "completed": False},
                                                        {"text": "test it", "completed": False}]}
    done = {**todo, "items": [{"text": "write calc", "completed": True}, {"text": "test it", "completed": True}]}
    out = lines_of(
        {"type": "item.completed", "item": {"id": "i1", "type": "reasoning", "text": "**Planning** the change"}},
        {"type": "item.started", "item": todo},
        {"type": "item.updated", "item": {**todo, "items": [{"text": "write calc", "completed": True}]}},
        {"type": "item.completed", "item": done},
        # its start was cut off the tail: the command is named before its result
        {"type": "item.completed", "item": {"id": "i3", "type": "command_execution", "command": ["pytest", "-q"],
                                            "aggregated_output": "F\n1 failed\n", "exit_code": 1}},
        {"type": "item.started", "item": {"id": "i4", "type": "mcp_tool_call", "server": "docs", "tool": "search",
                                          "arguments": {"query": "asyncio timeout"}}},
        {"type": "item.completed", "item": {"id": "i4", "type": "mcp_tool_call", "server": "docs", "tool": "search",
                                            "result": {"content": [{"type": "text", "text": "3 hits"}]}}},
        {"type": "item.completed", "item": {"id": "i5", "type": "web_search", "query": "python 3.11 taskgroup"}},
        {"type": "item.completed", "item": {"id": "i6", "type": "file_change", "status": "failed",
                                            "changes": [{"path": "a.py", "kind": "update"}]}},
        {"type": "item.completed", "item": {"id": "i7", "type": "collab_tool_call", "tool": "spawn"}},
        {"type": "turn.failed", "error": {"message": "stream disconnected"}},
        {"type": "error", "message": "unexpected status 500"},
    )
    assert out == [
        "  (thinking) Planning the change",
        "→ todo: 2 items: write calc …",
        "  ⎿ todo: 2/2 done",
        "→ $ pytest -q",
        "  ⎿ exit 1: F (+1 line)",
        "→ mcp docs.search: asyncio timeout",
        "  ⎿ 3 hits",
        "→ web search: python 3.11 taskgroup",
        "! failed edit: update a.py",
        "· codex collab_tool_call (id=i7, tool=spawn)",
        "! turn failed: stream disconnected",
        "! error: unexpected status 500",
    ]


def test_gemini_deltas_join_into_one_message_and_errors_have_their_severity() -> None:
    out = lines_of(
        {"type": "message", "role": "user", "content": "line one\nline two\nline three"},
        *({"type": "message", "role": "assistant", "content": piece, "delta": True} for piece in ("I will ", "look.")),
        {"type": "tool_use", "tool_name": "read_file", "tool_id": "r1", "parameters": {"absolute_path": "/w/a.py"}},
        {"type": "tool_result", "tool_id": "r1", "status": "error",
         "error": {"type": "FILE_NOT_FOUND", "message": "no such file"}},
        {"type": "error", "severity": "warning", "message": "Loop detected"},
        {"type": "message", "role": "assistant", "content": "Stopped", "delta": True},  # never ended: flushed
    )
    assert out == ["> line one (+2 lines)", "I will look.", "→ read_file: /w/a.py", "  ⎿ error: no such file",
                   "! warning: Loop detected", "Stopped"]


# --- not JSON, odd, hostile --------------------------------------------------------------------------

def test_lines_that_are_not_a_dialect_pass_unchanged() -> None:
    plain = ["=== lanes-tui: claude (sonnet) starting ===", "warning: stdin is not a terminal",
             "Tokens: 12k sent, 345 received. Cost: $0.05 message, $0.12 session.", "", "   indented",
             '{"a": 1}', "{not json", "[1, 2]"]
    assert readable_lines(plain) == plain
    assert readable_lines(['{"a": "' + "x" * 500 + '"}'])[0].startswith("· json (a=xxx")  # long: compact


ODD: list[Any] = [None, 0, -1, 1e308, float("nan"), True, "", "x" * 10_000, [], [None, 1, "s"], {}, {"type": 3},
                  "\x1b]52;c;aGk=\x07\x1b[2J"]


def _mutations(msg: Any, rng: random.Random) -> list[Any]:
    """Copies of `msg` with one value (at any depth) replaced by an odd one, and one key dropped."""
    paths: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
        for key, value in list(items):
            paths.append((node, key))
            walk(value)

    out = []
    for _ in range(12):
        clone = copy.deepcopy(msg)
        paths.clear()
        walk(clone)
        if not paths:
            break
        node, key = rng.choice(paths)
        node[key] = copy.deepcopy(rng.choice(ODD))
        out.append(clone)
        clone = copy.deepcopy(msg)
        paths.clear()
        walk(clone)
        node, key = rng.choice(paths)
        if isinstance(node, dict):
            del node[key]
            out.append(clone)
    return out


def test_odd_fields_never_raise_in_any_dialect() -> None:
    """The dialects themselves (not only the reader's safety net) take any value in any field."""
    rng = random.Random(29)
    lines = [line for p in sorted(SAMPLES.glob("*.jsonl")) for line in p.read_text(encoding="utf-8").splitlines()]
    lines += [json.dumps(e) for e in (
        {"type": "item.completed", "item": {"id": "i", "type": "todo_list", "items": [{"text": "a", "completed": 1}]}},
        {"type": "item.completed", "item": {"id": "i", "type": "mcp_tool_call", "error": {"message": "x"}}},
        {"type": "control_request", "request": {"subtype": "can_use_tool", "tool_name": "Bash", "input": {}}},
        {"type": "system", "subtype": "api_retry", "attempt": "two"},
        {"type": "assistant", "message": {"content": [{"type": "thinking", "thinking": "t"}]}, "error": "x"})]
    for raw in lines:
        for odd in _mutations(json.loads(raw), rng):
            reader = Readable()
            out = render(reader, odd)  # raises here if a handler trusts a field
            for line in out or []:
                assert isinstance(line, str)


def test_escapes_from_the_json_never_reach_the_output() -> None:
    evil = "\x1b[2J\x1b]52;c;aGk=\x07\u202eevil\x9b31m"
    out = lines_of(
        {"type": "assistant", "message": {"id": "m", "content": [
            {"type": "text", "text": f"hi {evil}"}, {"type": "tool_use", "id": "t", "name": f"Bash{evil}",
                                                     "input": {"command": f"ls {evil}"}}]}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t", "content": evil}]}},
        {"type": f"x{evil}", evil: evil},
    )
    text = "\n".join(out)
    assert not any(ch in text for ch in "\x1b\x07\x9b\u202e"), out


def test_long_text_is_wrapped_and_cut() -> None:
    words = " ".join(f"word{i}" for i in range(40))
    wrapped = Readable(width=40).text(words)
    assert len(wrapped) > 1 and all(len(line) <= 40 for line in wrapped)
    assert " ".join(wrapped) == words
    many = "\n".join(f"line {i}" for i in range(MAX_TEXT_LINES + 50))
    cut = readable_lines([json.dumps({"type": "item.completed", "item": {"type": "agent_message", "text": many}})])
    assert len(cut) == MAX_TEXT_LINES + 1 and cut[-1].startswith("… (+50 lines")
    call = lines_of({"type": "tool_use", "tool_name": "run_shell_command", "parameters": {"command": "x" * 5000}})
    assert len(call[0]) == len("→ run_shell_command: ") + SHORT


# --- the stream: chunks as the dashboard gets them ---------------------------------------------------

def test_chunks_split_anywhere_read_as_the_whole_lines() -> None:
    text = "\n".join([*sample("claude_run.jsonl"), "=== lanes-tui: codex (gpt-5.5) starting ===",
                      *sample("codex_run.jsonl"), *sample("gemini_run.jsonl")]) + "\n"
    whole = "".join(f"{line}\n" for line in readable_lines(text.split("\n")[:-1]))
    rng = random.Random(5)
    for _ in range(20):
        stream, got, at = ReadableStream(), [], 0
        while at < len(text):
            step = rng.choice((1, 7, 100, 3000, 20_000))
            got.append(stream.feed(text[at:at + step]))
            at += step
        got.append(stream.flush())
        assert "".join(got) == whole


def test_a_partial_plain_line_shows_at_once_and_a_partial_json_line_waits() -> None:
    stream = ReadableStream()
    assert stream.feed("progress 10%") == "progress 10%"  # open, as in the raw pane
    assert stream.feed(" 20%\n{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_") == " 20%\n"
    assert stream.feed('message","text":"hi"}}\n') == "hi\n"
    assert not stream.structured or stream.feed("") == ""
    assert stream.structured


def test_a_tail_that_begins_mid_line_drops_the_torn_json() -> None:
    text = "\n".join(sample("codex_run.jsonl")) + "\n"
    torn = text[text.index("\n") + 20:]  # from the middle of the second line
    out = ReadableStream(cut_head=True).feed(torn)
    assert out.split("\n")[0] == "→ edit: add /work/lane/hello.txt"  # the torn turn.started is gone
    assert ReadableStream(cut_head=True).feed("plain start\nnext\n") == "plain start\nnext\n"  # not JSON: kept


def test_an_endless_json_line_is_not_held_forever() -> None:
    stream = ReadableStream()
    note = stream.feed('{"type":"assistant","message":{"content":"' + "x" * (MAX_HELD_CHARS + 10))
    assert note.startswith("· a JSON line longer than")
    assert stream.feed("x" * 100) == ""
    assert stream.feed('"}}\nafter\n') == "after\n"


def test_plain_output_in_any_chunks_comes_out_unchanged() -> None:
    """A plain lane (or a CLI's warnings) takes the fast path: every byte as it came, braces and all."""
    text = "".join(f"step {i}: def f(x): {{ return x }}\n  {{indented}}\nprogress {i}%\r" for i in range(300))
    rng = random.Random(7)
    for cut_head in (False, True):
        stream, got, at = ReadableStream(cut_head=cut_head), [], 0
        while at < len(text):
            step = rng.choice((1, 5, 64, 999))
            got.append(stream.feed(text[at:at + step]))
            at += step
        assert "".join(got) == text
        assert not stream.structured
