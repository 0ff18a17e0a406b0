"""How much a command says: `-q` (results and errors only), the default, or `-v` (detail, the engine's log).

`cli.main` sets the level once from the global options. A command prints its result, its refusals and
its WARNING / PROBLEM lines with plain `print` whatever the level: a script that runs `lanes-tui -q
run …` reads exactly one lane id, and a warning is never hidden from the lead (as pip's single `-q`).
What is only progress, a hint or a next step goes through `note`, dropped under `-q`; what only a lead
chasing something wants (a lane's reason, the engine's log records) goes through `detail` or the
stderr log handler, shown with `-v`. Standard library only, and `logging` only with `-v`: `ask` and
`lock` run in agents' shells and must stay lean.
"""

from __future__ import annotations

import sys

QUIET, NORMAL, VERBOSE = -1, 0, 1
_level = NORMAL


def set_level(level: int) -> None:
    """Set by `cli.main` before the command runs (a process runs one command)."""
    global _level
    _level = level


def level() -> int:
    return _level


def note(text: str, *, err: bool = False) -> None:
    """A progress, hint or next-step line: printed unless `-q`."""
    if _level > QUIET:
        print(text, file=sys.stderr if err else sys.stdout, flush=err)


def detail(text: str, *, err: bool = False) -> None:
    """A line of detail: printed only with `-v`."""
    if _level >= VERBOSE:
        print(text, file=sys.stderr if err else sys.stdout)


def log_to_stderr(count: int) -> None:
    """`-v`: the `lanes_tui` loggers' records at info (`-vv`: debug) on stderr, one line each.

    Beside the `--debug` file, not instead of it: the logger's level goes down to the lower of the two,
    and the file handler keeps its own level (`log.start`).
    """
    import logging

    wanted = logging.INFO if count < 2 else logging.DEBUG
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(wanted)
    handler.setFormatter(logging.Formatter("lanes-tui: %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("lanes_tui")
    root.addHandler(handler)
    root.setLevel(min(root.level or logging.WARNING, wanted))
