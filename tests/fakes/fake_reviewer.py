#!/usr/bin/env python3
"""A fake reviewer CLI for the review tests: reads the review prompt on stdin to EOF, then answers
the way its MODE says. With `--json` it prints codex `exec --json` events (PROVIDERS.md: thread.started,
item.completed agent messages, turn.completed with usage), so the codex channel meters its tokens.

Modes: `clean` (REVIEW: CLEAN), `blocking` (two findings, REVIEW: BLOCKING), `garbage` (prose, no
verdict line), `silent` (prints nothing and sleeps far past any timeout), `writer` (writes into every
file of the diff in its working folder, and tries the lane's worktree through LANES_WORKTREE... which
is its own folder, then says CLEAN), `prompt` (echoes the prompt, then CLEAN).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

THREAD = "0199a213-81c0-7800-8aa1-bbab2a035a99"


def say(text: str, as_json: bool) -> None:
    if as_json:
        event = {"type": "item.completed", "item": {"id": "item_1", "type": "agent_message", "text": text}}
        sys.stdout.write(json.dumps(event, separators=(",", ":")) + "\n")
    else:
        sys.stdout.write(text + "\n")
    sys.stdout.flush()


def main() -> int:
    mode = sys.argv[1]
    as_json = "--json" in sys.argv[2:]
    prompt = sys.stdin.read()
    if as_json:
        sys.stdout.write(json.dumps({"type": "thread.started", "thread_id": THREAD}) + "\n")
    if mode == "silent":
        time.sleep(3600)
        return 0
    if mode == "prompt":
        say(prompt, as_json)
        say("REVIEW: CLEAN", as_json)
    elif mode == "clean":
        say("I read the diff; the change does what the task asks.\nREVIEW: CLEAN", as_json)
    elif mode == "blocking":
        say("Two problems:\n- calc.py:2: divides by zero when b is 0\n- calc.py: no test covers the new branch\n"
            "REVIEW: BLOCKING", as_json)
    elif mode == "garbage":
        say("Looks mostly fine to me, though I am not sure about everything.", as_json)
    elif mode == "writer":
        paths = re.findall(r"^diff --git a/(\S+) b/", prompt, re.MULTILINE)
        for rel in paths:
            target = Path.cwd() / rel
            try:
                target.write_text("the reviewer was here\n")
                say(f"wrote {rel}", as_json)
            except OSError as exc:
                say(f"could not write {rel}: {exc.strerror}", as_json)
        try:
            (Path.cwd() / "reviewer-note.txt").write_text("note\n")
        except OSError as exc:
            say(f"could not create a file: {exc.strerror}", as_json)
        say(f"LANES_WORKTREE={os.environ.get('LANES_WORKTREE')}", as_json)
        say("REVIEW: CLEAN", as_json)
    if as_json:
        usage = {"input_tokens": 1200, "cached_input_tokens": 0, "output_tokens": 80}
        sys.stdout.write(json.dumps({"type": "turn.completed", "usage": usage}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
