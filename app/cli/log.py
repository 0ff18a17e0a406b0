"""`lanes-tui --debug` and `LANES_TUI_LOG=LEVEL`: a rotating log file of what a command did.

Off unless asked for, and then the standard library only (`logging`), so `lanes-tui ask` inside an
agent's shell may log too without leaving its budget; `cli.main` imports this module only when
`--debug` or `LANES_TUI_LOG` is given. The file is the repository's `.lanes/state/logs/lanes-tui.log`
(a lane's own state folder inside a lane, `$XDG_STATE_HOME/lanes-tui/` outside any repository),
rotated at 1 MB with three old files kept: a debug session must never fill a disk. Every engine module
logs under `lanes_tui.…`, so its records land here too.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

LOG_ENV = "LANES_TUI_LOG"
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
_ON = ("1", "on", "yes", "true")
_OFF = ("", "0", "off", "no", "false")
MAX_BYTES = 1_000_000
BACKUPS = 3


def wanted_level(debug: bool, environ: Mapping[str, str]) -> int | None:
    """The level asked for (`--debug` wins: debug), or None for no log at all."""
    if debug:
        return logging.DEBUG
    value = environ.get(LOG_ENV, "").strip().lower()
    if value in _OFF:
        return None
    if value in _ON:
        return logging.DEBUG
    if value not in LEVELS:
        print(f"lanes-tui: {LOG_ENV}={value!r} is not a level — logging at debug "
              f"(use one of {', '.join(LEVELS)}, or off)", file=sys.stderr)
        return logging.DEBUG
    return LEVELS[value]


def log_path(repo: Path | None, environ: Mapping[str, str]) -> Path:
    """Where the log goes: the state folder of `repo` (or of the repository around here), else XDG's."""
    home = environ.get("LANES_HOME", "")
    if repo is None and home:  # inside a lane: its state folder is the lead's repository's
        return Path(home) / "logs" / "lanes-tui.log"
    start = (repo or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if (folder / ".lanes").is_dir() or (folder / ".git").exists():
            return folder / ".lanes" / "state" / "logs" / "lanes-tui.log"
    base = environ.get("XDG_STATE_HOME") or os.path.join(environ.get("HOME", "/tmp"), ".local", "state")  # noqa: S108
    return Path(base) / "lanes-tui" / "lanes-tui.log"


def start(level: int, repo: Path | None, environ: Mapping[str, str],
          arguments: Sequence[str]) -> logging.Logger | None:
    """A rotating file handler on the `lanes_tui` logger; None (and one stderr line) if it cannot be opened."""
    path = log_path(repo, environ)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS,
                                                       encoding="utf-8")
    except OSError as exc:  # a log is a help, never a reason to refuse the command
        print(f"lanes-tui: cannot write the log {path}: {exc.strerror or exc} — going on without it", file=sys.stderr)
        return None
    handler.setLevel(level)  # `-v` may lower the logger's level for stderr; the file keeps the level asked for
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"))
    root = logging.getLogger("lanes_tui")
    root.addHandler(handler)
    root.setLevel(level)
    log = logging.getLogger("lanes_tui.app.cli")
    shown = " ".join(arguments)  # a prompt can be long: the start of it says which command this was
    log.info("lanes-tui %s (pid %d, log %s)", shown if len(shown) <= 300 else shown[:299] + "…", os.getpid(), path)
    return log
