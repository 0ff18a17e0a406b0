#!/usr/bin/env python3
"""A fake interactive aider for the pty channel: ordinary output that looks prompt-ish (a numbered list,
a diff line with `(y/n)`), then the real prompt `Apply edits to calc.py? (Y)es/(N)o [Yes]: ` with no
newline, read from the terminal.

* default: reads one line from the terminal, prints `answered <x>`, records the raw line (repr) in
  `fake_aider_answer.txt` in its cwd, prints aider's Tokens/Cost line and exits 0;
* `--vanish`: once lanes-tui has asked about the prompt (a question file appears in the lane's inbox),
  the prompt vanishes (the screen is cleared and other output printed); after the question is
  cancelled it listens a little longer and records whatever was typed (it must be nothing).
"""

from __future__ import annotations

import os
import select
import sys
import time
from pathlib import Path

ANSWER = Path("fake_aider_answer.txt")
PROMPT = "Apply edits to calc.py? (Y)es/(N)o [Yes]: "


def out(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def wait_for(suffix: str, timeout: float = 20.0) -> bool:
    """Until a file `q_<hex><suffix>` is in this lane's inbox (suffix ".json": the question itself)."""
    inbox = Path(os.environ["LANES_HOME"]) / "inbox" / os.environ["LANES_LANE"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        names = os.listdir(inbox) if inbox.is_dir() else []
        if any(n.startswith("q_") and n.endswith(suffix) and n.count(".") == suffix.count(".") for n in names):
            return True
        time.sleep(0.05)
    return False


def typed_within(seconds: float) -> bytes:
    got = b""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([0], [], [], left)
        if ready:
            chunk = os.read(0, 1024)
            if not chunk:
                break
            got += chunk
    return got


def main() -> int:
    if not os.isatty(0) or not os.isatty(1):
        print("fake_aider: needs a terminal", file=sys.stderr)
        return 2
    try:  # an interactive CLI expects the pty as its controlling terminal ...
        os.close(os.open("/dev/tty", os.O_RDWR))
    except OSError as exc:
        print(f"fake_aider: no controlling terminal: {exc}", file=sys.stderr)
        return 2
    if os.getsid(0) != os.getpid() or os.getpgrp() != os.getpid():  # ... and leads its own session and group
        print("fake_aider: not a session and process group leader", file=sys.stderr)
        return 2
    columns, rows = os.get_terminal_size(1)
    out(f"terminal {columns}x{rows}\n")
    out("Aider v0.86.1\nMain model: sonnet with diff edit format\n")
    out("Here is the plan:\n1. Ask the user: Continue? (y/n)\n2. Apply edits? (Y)es/(N)o when unsure\n")
    out("calc.py\n<<<<<<< SEARCH\n-    if input('Overwrite? (y/n) ') == 'y':\n"
        "+    if input('Overwrite? (Y)es/(N)o ') == 'y':\n>>>>>>> REPLACE\n\n")
    out(PROMPT)
    if "--vanish" in sys.argv[1:]:
        if not wait_for(".json"):
            print("\nfake_aider: no question was asked", file=sys.stderr)
            return 3
        out("\x1b[2J\x1b[HSkipping the edit: the file changed on disk.\nRe-reading calc.py\n")
        wait_for(".cancelled.json")
        got = typed_within(0.8)
        ANSWER.write_text(repr(got.decode(errors="replace")) if got else "")
        out(f"typed while gone: {got!r}\n")
        return 0
    line = sys.stdin.readline()
    ANSWER.write_text(repr(line))
    out(f"answered {line.strip()}\n")
    out("Tokens: 12k sent, 345 received. Cost: $0.05 message, $0.12 session.\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
