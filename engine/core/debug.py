"""A debug hook that reports which modules a process loaded, so tests can hold each process to its
import budget (the supervisor never loads tomlkit or GitPython; `lanes-tui ask` only the inbox).

Set `LANESTUI_DEBUG_MODULES=FILE` and a process that called `report_modules_at_exit()` appends one
JSON line to FILE when it exits normally: its program name, pid, arguments and sorted `sys.modules`. The name
avoids the `LANES_` prefix on purpose: lane environments drop those, and the hook should follow a
lane into the processes an agent starts.
"""

from __future__ import annotations

import atexit
import json
import os
import sys

MODULES_ENV = "LANESTUI_DEBUG_MODULES"


def report_modules_at_exit(program: str) -> None:
    """Register the exit-time report when the environment asks for it; otherwise do nothing."""
    path = os.environ.get(MODULES_ENV)
    if path:
        atexit.register(_write, path, program)


def _write(path: str, program: str) -> None:
    line = json.dumps({"program": program, "pid": os.getpid(), "argv": sys.argv[1:],
                       "modules": sorted(sys.modules)})
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")
