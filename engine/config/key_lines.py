"""Where a key sits in `.lanes/config.toml`: the line a ConfigError points the lead at.

Split from `settings` (the parser) because it reads the raw text, not the parsed TOML: tomllib
reports no positions for a key whose value is wrong, only for syntax errors. Every expression here
runs in linear time on any line, since the text may be anything a hand or an agent wrote.
"""

from __future__ import annotations

import json
import re

__all__ = ["did_you_mean", "find_key_line", "shown"]


def did_you_mean(name: str, valid: tuple[str, ...] | list[str]) -> str:
    """`did you mean 'max_parallel'? (valid: …)`: the fix half of an unknown-name error."""
    import difflib  # only an error needs it: kept out of every process that reads a valid config

    close = difflib.get_close_matches(name, list(valid), n=1)
    listing = f"valid: {', '.join(valid)}" if valid else "none are defined"
    return f"did you mean {close[0]!r}? ({listing})" if close else listing


def shown(value: object, limit: int | None = None) -> str:
    """A value as the lead wrote it in TOML (`true`, `"6"`), with its type: `boolean true`."""
    kind = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array",
            dict: "table"}.get(type(value), type(value).__name__)
    return f"{kind} {json.dumps(value, default=str)[:limit]}"

_HEADER_RE = re.compile(r"^\s*\[\[?(?P<path>[^\]]*)\]\]?\s*(?:#.*)?$")  # linear: no two runs compete
_KEY_PART = r"""(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')"""
_ASSIGN_RE = re.compile(rf"^\s*(?P<key>{_KEY_PART}(?:\s*\.\s*{_KEY_PART})*)\s*=")
_PART_RE = re.compile(r"""\s*("[^"]*"|'[^']*'|[^.\s"']+)\s*(?:\.|\Z)""")


def _split_key(dotted: str) -> tuple[str, ...]:
    """The parts of a dotted key; () for text that is none (read part by part: linear on any line)."""
    parts: list[str] = []
    pos = 0
    while pos < len(dotted):
        match = _PART_RE.match(dotted, pos)
        if match is None:
            return ()
        parts.append(match.group(1))
        pos = match.end()
    return tuple(part[1:-1] if part[:1] in "\"'" else part for part in parts)


def find_key_line(text: str, dotted_key: str) -> int | None:
    """1-based line where `dotted_key` is set, else where its nearest enclosing table is; None if neither.

    A light scan (headers and `key =` lines, no multi-line strings): enough to point the lead at the
    right place, which is all a line number in an error is for.
    """
    target = tuple(dotted_key.split("."))
    best: tuple[int, int] | None = None  # (matched parts, line)
    table: tuple[str, ...] = ()
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER_RE.match(line)
        if header:
            table = _split_key(header.group("path"))
            full = table
        else:
            assign = _ASSIGN_RE.match(line)
            if not assign:
                continue
            full = table + _split_key(assign.group("key"))
        if full == target[:len(full)] and (best is None or len(full) > best[0]):
            best = (len(full), number)
            if len(full) == len(target):
                return number
    return best[1] if best else None
