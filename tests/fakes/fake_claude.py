#!/usr/bin/env python3
"""A fake `claude -p --input-format stream-json --output-format stream-json --verbose
--permission-prompt-tool stdio`: speaks the stream-json control protocol byte for byte (compact JSON,
one object a line) so the claude channel is tested against a real process.

The prompt's last line (the text of the first stream-json `user` message on stdin; lanes-tui's
preamble comes before the task) picks what it does:

* `permission` (default): asks `can_use_tool` for Bash `rm -rf build`, waits for the control_response,
  says "permission allowed" or "permission denied: <message>";
* `ask`: asks AskUserQuestion "Which database?" (postgres / sqlite) and prints the answers it got;
* `cancel`: asks, then withdraws the request with `control_cancel_request`, waits until lanes-tui has
  cancelled the question and listens a little longer: nothing may arrive;
* `rules`: asks `can_use_tool` for Bash `pytest -q`, then `pytest tests/test_calc.py`, then
  `pytest -q; rm -rf build` (ids `req_rule_1` … `req_rule_3`), one after the other, each after the
  previous answer, and says `rules: ` with each decision (an "allow always" rule test).
* `context`: as `permission`, but first a sub-agent's message (`parent_tool_use_id` set) whose large
  prompt is the sub-agent's context, not the lane's (the context meter must skip it);
* `chat`: says "ready for messages", then answers each stream-json `user` message the lead sends
  (`lanes-tui send`, attach) with an assistant line `ack: <text>`, until the message `done` (or a
  minute without one) ends the turn with the result.

In every mode a `user` message that arrives while it waits for a control_response is acknowledged
the same way (`ack: <text>`) and the wait goes on.

With `--resume ID` it continues the session: `SESSION` answers the new message's last line with
`resumed ID: <line>` and ends its turn; any other id fails as claude does (`No conversation found with
session ID: ID`, exit 1). Each run's argv is appended to `fake_claude_argv.jsonl` in its cwd.

Every stdin line after the prompt is recorded in `fake_claude_received.jsonl` in its cwd. After the
`result` line it waits for EOF on stdin (the channel must close it) and exits 0; 4 if EOF never comes.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time
from pathlib import Path

SESSION = "5f1e2d3c-0000-4000-8000-fakeclaude01"
RECEIVED = Path("fake_claude_received.jsonl")
ARGV = Path("fake_claude_argv.jsonl")


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


_buffer = bytearray()


def read_line(timeout: float, record: bool = True) -> str | None:
    """One stdin line within `timeout` seconds; "" at EOF; None on timeout (unbuffered, select-safe)."""
    deadline = time.monotonic() + timeout
    while b"\n" not in _buffer:
        ready, _, _ = select.select([0], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return None
        chunk = os.read(0, 65536)
        if not chunk:
            if not _buffer:
                return ""
            break
        _buffer.extend(chunk)
    cut = _buffer.find(b"\n")
    cut = len(_buffer) if cut < 0 else cut + 1
    line = bytes(_buffer[:cut]).decode("utf-8")
    del _buffer[:cut]
    if record:
        with RECEIVED.open("a") as handle:
            handle.write(line if line.endswith("\n") else line + "\n")
    return line


def user_text(line: str) -> str | None:
    """The text of a stream-json `user` message line, or None for any other line."""
    try:
        message = json.loads(line)
        if message.get("type") != "user":
            return None
        return "".join(b["text"] for b in message["message"]["content"] if b.get("type") == "text")
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


_acks = 0


def ack(text: str) -> None:
    global _acks
    _acks += 1
    assistant(f"msg_ack_{_acks:02d}", f"ack: {text}", usage(1, 0, 0, 1))


def next_reply(timeout: float) -> str | None:
    """The next stdin line that is not a user message (each of those is acknowledged on the way)."""
    deadline = time.monotonic() + timeout
    while True:
        line = read_line(max(0.0, deadline - time.monotonic()))
        text = user_text(line) if line else None
        if text is None:
            return line
        ack(text)


def chat() -> str:
    """Acknowledge each user message until one is `done`, or a minute passes without one."""
    while True:
        line = read_line(60.0)
        if not line:
            return f"chat ended after {_acks} message(s)"
        text = user_text(line)
        if text is None:
            print(f"fake_claude: not a user message: {line.strip()[:200]}", file=sys.stderr)
            continue
        ack(text)
        if text.strip() == "done":
            return f"chat done after {_acks} message(s)"


def assistant(msg_id: str, text: str, usage: dict, parent: str | None = None) -> None:
    emit({"type": "assistant", "message": {"id": msg_id, "type": "message", "role": "assistant",
                                           "model": "claude-sonnet-4-5-20250929",
                                           "content": [{"type": "text", "text": text}],
                                           "stop_reason": None, "usage": usage},
          "parent_tool_use_id": parent, "session_id": SESSION})


def usage(inp: int, read: int, write: int, out: int) -> dict:
    return {"input_tokens": inp, "cache_creation_input_tokens": write, "cache_read_input_tokens": read,
            "output_tokens": out, "service_tier": "standard"}


def main() -> int:
    args = sys.argv[1:]
    for flag, value in (("--input-format", "stream-json"), ("--permission-prompt-tool", "stdio")):
        if flag not in args or args[args.index(flag) + 1] != value:
            print(f"fake_claude: missing {flag} {value}", file=sys.stderr)
            return 2
    with ARGV.open("a") as handle:  # how each run was started (the resume tests read it)
        handle.write(json.dumps(args) + "\n")
    resumed = args[args.index("--resume") + 1] if "--resume" in args[:-1] else None
    if resumed is not None and resumed != SESSION:  # claude's own words for a session it does not know
        print(f"No conversation found with session ID: {resumed}", file=sys.stderr)
        return 1
    first = read_line(30.0, record=False) or ""
    try:
        message = json.loads(first)
        assert message["type"] == "user" and message["message"]["role"] == "user"
        prompt = message["message"]["content"][0]["text"]
    except (ValueError, KeyError, IndexError, TypeError, AssertionError):
        print(f"fake_claude: expected a stream-json user message, got {first[:200]!r}", file=sys.stderr)
        return 2
    # The task is the prompt's last line: lanes-tui puts its preamble before it (docs/lanes.md).
    mode = prompt.strip().splitlines()[-1].split()[0] if prompt.strip() else "permission"
    emit({"type": "system", "subtype": "init", "cwd": os.getcwd(), "session_id": SESSION,
          "tools": ["Bash", "Edit", "Read", "AskUserQuestion"], "mcp_servers": [],
          "model": "claude-sonnet-4-5-20250929", "permissionMode": "default", "apiKeySource": "none"})
    if mode == "chat":
        assistant("msg_01", "ready for messages", usage(10, 100, 20, 5))
        return finish(chat())
    if resumed is not None:  # --resume: the new message continues the conversation; nothing is asked
        text = f"resumed {resumed}: {prompt.strip().splitlines()[-1] if prompt.strip() else ''}"
        assistant("msg_01", text, usage(10, 100, 20, 5))
        return finish(text)
    # The same message twice as it grows: a meter must replace, not add.
    assistant("msg_01", "Let me clean the build folder.", usage(10, 100, 20, 5))
    assistant("msg_01", "Let me clean the build folder.", usage(10, 100, 20, 50))
    if mode == "context":  # a Task sub-agent's request: its own 150k-token context
        assistant("msg_sub_01", "Looking through the build folder.", usage(50_000, 100_000, 0, 30),
                  parent="toolu_task_01")
    request_id = "req_fake_0001"
    if mode == "rules":
        return rules()
    if mode == "ask":
        tool_input = {"questions": [{"question": "Which database?", "header": "DB", "multiSelect": False,
                                     "options": [{"label": "postgres", "description": "a server"},
                                                 {"label": "sqlite", "description": "a file"}]}]}
        tool = "AskUserQuestion"
    else:
        tool_input = {"command": "rm -rf build", "description": "Remove the build folder"}
        tool = "Bash"
    emit({"type": "control_request", "request_id": request_id,
          "request": {"subtype": "can_use_tool", "tool_name": tool, "input": tool_input,
                      "permission_suggestions": [], "tool_use_id": "toolu_fake_01"}})
    if mode == "cancel":
        emit({"type": "control_cancel_request", "request_id": request_id})
        inbox = Path(os.environ["LANES_HOME"]) / "inbox" / os.environ["LANES_LANE"]
        deadline = time.monotonic() + 20
        while not list(inbox.glob("q_*.cancelled.json")) and time.monotonic() < deadline:
            time.sleep(0.05)
        got = read_line(1.0)
        text = "nothing arrived after the cancel" if got is None else f"unexpected input: {got.strip()}"
    else:
        line = next_reply(60.0)
        if not line:
            print("fake_claude: no control_response arrived", file=sys.stderr)
            return 3
        reply = json.loads(line)
        response = reply["response"]
        if reply["type"] != "control_response" or response["request_id"] != request_id:
            print(f"fake_claude: unexpected reply {line.strip()}", file=sys.stderr)
            return 3
        decision = response["response"]
        if mode == "ask":
            text = "answers: " + json.dumps(decision.get("updatedInput", {}).get("answers"), sort_keys=True)
        elif decision["behavior"] == "allow":
            assert decision["updatedInput"] == tool_input, decision
            text = "permission allowed"
        else:
            text = f"permission denied: {decision['message']}"
    assistant("msg_02", text, usage(7, 200, 0, 9))
    return finish(text)


def finish(text: str) -> int:
    """The result line, then wait for the channel to close stdin."""
    emit({"type": "result", "subtype": "success", "is_error": False, "duration_ms": 1234,
          "duration_api_ms": 1000, "num_turns": 2, "result": text, "session_id": SESSION,
          "total_cost_usd": 0.0123, "usage": usage(17, 300, 20, 59),
          "modelUsage": {"claude-sonnet-4-5-20250929": {"inputTokens": 17, "outputTokens": 59,
                                                         "cacheReadInputTokens": 300,
                                                         "cacheCreationInputTokens": 20, "costUSD": 0.0123,
                                                         "contextWindow": 200000, "maxOutputTokens": 64000}},
          "permission_denials": []})
    # stdin stays open until the result; then the channel must close it.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        line = read_line(max(0.0, deadline - time.monotonic()))
        if line == "":
            return 0
    print("fake_claude: stdin was never closed after the result", file=sys.stderr)
    return 4


RULE_COMMANDS = ("pytest -q", "pytest tests/test_calc.py", "pytest -q; rm -rf build")


def rules() -> int:
    """Three Bash permission requests in turn; each decision is said in the result."""
    decisions = []
    for index, command in enumerate(RULE_COMMANDS, 1):
        request_id = f"req_rule_{index}"
        emit({"type": "control_request", "request_id": request_id,
              "request": {"subtype": "can_use_tool", "tool_name": "Bash",
                          "input": {"command": command, "description": "run the tests"},
                          "permission_suggestions": [], "tool_use_id": f"toolu_rule_{index}"}})
        line = next_reply(60.0)
        if not line:
            print(f"fake_claude: no control_response arrived for {request_id}", file=sys.stderr)
            return 3
        reply = json.loads(line)["response"]
        if reply["request_id"] != request_id:
            print(f"fake_claude: unexpected reply {line.strip()}", file=sys.stderr)
            return 3
        decisions.append(reply["response"]["behavior"])
    text = "rules: " + ", ".join(decisions)
    assistant("msg_02", text, usage(7, 200, 0, 9))
    return finish(text)


if __name__ == "__main__":
    sys.exit(main())
