#!/usr/bin/env python3
"""A fake `codex exec --json … -`: reads the prompt from stdin to EOF and prints the JSON-lines events
of PROVIDERS.md byte for byte (compact JSON): thread.started, turn.started, item.started /
item.completed (a command, a file change, an agent message), turn.completed with usage. No cost field, as
the real one. Each turn appends a line to `codex-work.txt` in its working folder, as the real codex's
apply_patch would: a lane that ran it changed something (an agent that changes nothing is NO-CHANGES).

A prompt containing `turns N` runs N turns (usage per turn: input 1000 of which 600 cached, output 100).
A prompt containing `token_count` also prints, before each `turn.completed`, the `token_count` event of
codex's protocol stream (`{"id", "msg"}`: the latest request's usage and the model's window) that codex
0.169's `exec --json` does not print: the context meter reads it where it appears.
"""

from __future__ import annotations

import json
import re
import sys

THREAD = "0199a213-81c0-7800-8aa1-bbab2a035a53"


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def main() -> int:
    if "--json" not in sys.argv[1:] or sys.argv[-1] != "-":
        print("fake_codex: expected `exec --json ... -`", file=sys.stderr)
        return 2
    prompt = sys.stdin.read()
    match = re.search(r"turns (\d+)", prompt)
    turns = int(match.group(1)) if match else 1
    emit({"type": "thread.started", "thread_id": THREAD})
    for turn in range(turns):
        emit({"type": "turn.started"})
        item = f"item_{turn * 2}"
        emit({"type": "item.started", "item": {"id": item, "type": "command_execution", "command": "bash -lc ls",
                                               "aggregated_output": "", "exit_code": None,
                                               "status": "in_progress"}})
        emit({"type": "item.completed", "item": {"id": item, "type": "command_execution",
                                                 "command": "bash -lc ls", "aggregated_output": "calc.py\n",
                                                 "exit_code": 0, "status": "completed"}})
        with open("codex-work.txt", "a", encoding="utf-8") as work:
            work.write(f"turn {turn + 1}\n")
        emit({"type": "item.completed", "item": {"id": f"{item}_patch", "type": "file_change", "status": "completed",
                                                 "changes": [{"path": "codex-work.txt", "kind": "update"}]}})
        emit({"type": "item.completed", "item": {"id": f"item_{turn * 2 + 1}", "type": "agent_message",
                                                 "text": f"Turn {turn + 1} done."}})
        if "token_count" in prompt:  # the latest request's prompt grows with the thread: 1000 per turn
            last = {"input_tokens": 1000 * (turn + 1), "cached_input_tokens": 600, "output_tokens": 100,
                    "reasoning_output_tokens": 0, "total_tokens": 1000 * (turn + 1) + 100}
            emit({"id": str(turn), "msg": {"type": "token_count", "info": {
                "total_token_usage": last, "last_token_usage": last, "model_context_window": 272000},
                "rate_limits": None}})
        emit({"type": "turn.completed", "usage": {"input_tokens": 1000, "cached_input_tokens": 600,
                                                  "output_tokens": 100}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
