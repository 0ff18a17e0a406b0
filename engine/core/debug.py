"""Debug and test hooks: which modules a process loaded, and a `kill -9` at a named step.

A hook that reports which modules a process loaded, so tests can hold each process to its
import budget (the supervisor never loads tomlkit or GitPython; `lanes-tui ask` only the inbox).

Set `LANESTUI_DEBUG_MODULES=FILE` and a process that called `report_modules_at_exit()` appends one
JSON line to FILE when it exits normally: its program name, pid, arguments and sorted `sys.modules`. The name
avoids the `LANES_` prefix on purpose: lane environments drop those, and the hook should follow a
lane into the processes an agent starts.

`crash_point(name)` SIGKILLs the process when `LANES_TUI_CRASH_AT=name`: tests kill `run`, `check`
and `accept` at each of their steps and show that nothing is wedged, lost or leaked. That name keeps
the `LANES_` prefix on purpose: a supervisor gets `LANES_TUI_*`, an agent never does.
`fail_point(name)` is its gentler twin for in-process failures: it raises instead of killing, so a
test can show how the dashboard ends when Textual catches an error (exit code, one stderr line).
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import sys

MODULES_ENV = "LANESTUI_DEBUG_MODULES"
#: A test hook: `LANES_TUI_CRASH_AT=merge:before` SIGKILLs the process at that point (see `crash_point`).
CRASH_ENV = "LANES_TUI_CRASH_AT"


def report_modules_at_exit(program: str) -> None:
    """Register the exit-time report when the environment asks for it; otherwise do nothing."""
    path = os.environ.get(MODULES_ENV)
    if path:
        atexit.register(_write, path, program)


def _write(path: str, program: str) -> None:
    # A name mapped to None is one the process blocked (the supervisor blocks ssl): not loaded.
    line = json.dumps({"program": program, "pid": os.getpid(), "argv": sys.argv[1:],
                       "modules": sorted(name for name, mod in sys.modules.items() if mod is not None)})
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")


def crash_point(name: str) -> None:
    """Die by SIGKILL here when `LANES_TUI_CRASH_AT` names this point: no cleanup, no `finally`."""
    if os.environ.get(CRASH_ENV) == name:
        import logging  # only when crashing: `lanes-tui ask` imports this module and never logs

        logging.getLogger(__name__).warning("test hook: crashing at %s", name)
        os.kill(os.getpid(), signal.SIGKILL)


def fail_point(name: str) -> None:
    """Raise here when `LANES_TUI_CRASH_AT` names this point: an ordinary bug, for the caller to handle."""
    if os.environ.get(CRASH_ENV) == name:
        raise RuntimeError(f"test hook: {CRASH_ENV}={name}")
