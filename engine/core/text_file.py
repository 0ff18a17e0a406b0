"""A small text file the lead wrote (rules, notes) read whole, with one clear error for each way it is
unusable: too large, unreadable, not UTF-8, NUL bytes. Such text goes into an agent's prompt, so a
mistake is refused with its fix rather than sent on, and at most `limit + 1` bytes are ever read.
"""

from __future__ import annotations

from pathlib import Path

from lanes_tui.engine.core.errors import LanesError

__all__ = ["read_text_file"]


def read_text_file(path: Path, limit: int, what: str, *, too_large: str, unreadable: str) -> str | None:
    """The file's text; None when it does not exist; LanesError naming `what` (`the rules file`) and
    `path` otherwise, with `too_large` / `unreadable` as the fix of those two."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)  # enough to know it is too big, never more
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise LanesError(f"{what} {path} is a folder", unreadable) from None
    except OSError as exc:
        raise LanesError(f"cannot read {what} {path}: {exc.strerror or exc}", unreadable) from None
    if len(data) > limit:
        raise LanesError(f"{what} {path} is larger than {limit // 1024} KiB ({limit:,} bytes)", too_large)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise LanesError(f"{what} {path} is not UTF-8 text", "save it as UTF-8") from None
    if "\x00" in text:
        raise LanesError(f"{what} {path} contains NUL bytes", "give a text file")
    return text
