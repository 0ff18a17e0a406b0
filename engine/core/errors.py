"""One error type the command line can print as a single clear line."""

from __future__ import annotations


class LanesError(Exception):
    """A refusal the lead can act on: what is wrong and how to fix it, in one line.

    The command line prints `str(error)` on stderr and exits non-zero; the dashboard shows it as a
    notification. Never raise it for a programming error, only for bad input or a refused action.
    """

    def __init__(self, what: str, fix: str | None = None) -> None:
        self.what = what
        self.fix = fix
        super().__init__(f"{what} — {fix}" if fix else what)


class ConfigError(LanesError):
    """The config file is malformed or names something that does not exist."""

    def __init__(self, what: str, fix: str | None = None, *, key: str | None = None,
                 line: int | None = None, path: str | None = None) -> None:
        self.key = key
        self.line = line
        self.path = path
        where = path or ".lanes/config.toml"
        if line is not None:
            where = f"{where}:{line}"
        prefix = f"{where}: " + (f"[{key}] " if key else "")
        super().__init__(prefix + what, fix)
