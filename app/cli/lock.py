"""`lanes-tui lock [--wait S] -- CMD…`: run an agent's heavy command inside a machine-wide heavy slot.

An agent's command, not the lead's: it is not in `LEAD_ONLY`, and like `ask` it runs in agents'
shells, so this module imports only the engine's `lock` code through the door (no Textual, Rich,
tomlkit, GitPython or psutil). The work is `engine/lanes/heavy.py`; this is the parser and the
stderr lines. Exit codes: CMD's own (128+N when signal N ended it), 127 if CMD cannot start,
75 if no slot came free within `--wait`, 2 for a refusal (bad arguments or settings).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from lanes_tui.app.cli import args as cli_args
from lanes_tui.engine import run_locked


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `lock` into a `lanes-tui` subparser set."""
    lock = sub.add_parser(
        "lock", help="run a heavy command (tests, a build) inside one of the machine's heavy slots",
        description="Run CMD (no shell) once a heavy slot is free — the slots the gates use, sized by "
                    "LANES_HEAVY_SLOTS, else [gates] slots, else cores ÷ 2; 0 turns the lock off. "
                    "CMD gets its slot's own emptied TMPDIR; a lock inside a lock does not wait. "
                    "Exit: CMD's code, 127 if it cannot start, 75 if no slot came free within --wait.",
        epilog="examples:\n  lanes-tui lock -- python -m pytest -q\n  lanes-tui lock --wait 600 -- make build",
        formatter_class=cli_args.HelpText,
    )
    lock.add_argument("--wait", type=cli_args.seconds, default=None, metavar="S",
                      help="give up (exit 75) if no slot is free within S seconds (default: wait)")
    lock.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- CMD ...", help="the command and its arguments")
    lock.set_defaults(func=cmd_lock)


def cmd_lock(args: argparse.Namespace) -> int:
    argv = list(args.argv)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    return run_locked(argv, environ=os.environ, cwd=Path.cwd(), say=_say, repo=args.repo, wait_s=args.wait)


def _say(line: str) -> None:
    print(f"lanes-tui lock: {line}", file=sys.stderr, flush=True)


