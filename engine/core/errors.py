"""One error type the command line can print as a single clear line."""

from __future__ import annotations

#: Every character `str.splitlines` breaks a line at, and how it is shown instead (its escape).
_LINE_BREAKS = str.maketrans({c: repr(c)[1:-1] for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})


class LanesError(Exception):
    """A refusal the lead can act on: what is wrong and how to fix it, in one line.

    The command line prints `str(error)` on stderr and exits non-zero; the dashboard shows it as a
    notification. Never raise it for a programming error, only for bad input or a refused action.
    """

    def __init__(self, what: str, fix: str | None = None) -> None:
        # A value quoted from a file (a key, a path) may hold a line break: shown escaped, one line stays one.
        what, fix = what.translate(_LINE_BREAKS), fix and fix.translate(_LINE_BREAKS)
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
