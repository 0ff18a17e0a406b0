"""Where a key sits in a plan file: the line a PlanError points the lead at.

tomllib reports positions only for syntax errors, so the raw text is scanned: table headers,
`[[tickets]]` headers (counted, so ticket 3's `scope` is found in the third block) and `key =`
lines, skipping the inside of multi-line strings (a prompt may well contain `scope = …`). A light
scan, linear on any line: enough to point at the right place, which is all a line number is for.
"""

from __future__ import annotations

import re

__all__ = ["PlanLines"]

_HEADER_RE = re.compile(r"^\s*(?P<open>\[\[?)\s*(?P<name>[A-Za-z0-9_.\"' -]*?)\s*\]\]?\s*(?:#.*)?$")
_ASSIGN_RE = re.compile(r"""^\s*(?P<key>"[^"]*"|'[^']*'|[A-Za-z0-9_-]+)\s*[.=]""")
_TRIPLE_RE = re.compile(r'"""|\'\'\'')

#: (table, ticket index or None, key or None) → first line (1-based).
_Spot = tuple[str, int | None, str | None]


class PlanLines:
    """The lines of a plan file's tables, tickets and keys."""

    def __init__(self, text: str) -> None:
        self.spots: dict[_Spot, int] = {}
        self.text_lines = text.splitlines()
        self.ticket_spans: list[tuple[int, int]] = []  # (header line, last line) of each [[tickets]]
        table, ticket = "", None
        open_quote: str | None = None
        for number, line in enumerate(self.text_lines, start=1):
            if open_quote is not None:  # inside a multi-line string: only its end matters
                if line.count(open_quote) % 2 == 1:
                    open_quote = None
                continue
            header = _HEADER_RE.match(line)
            if header:
                table = header.group("name").strip().strip("\"'")
                ticket = None
                if header.group("open") == "[[" and table == "tickets":
                    ticket = len(self.ticket_spans)
                    self.ticket_spans.append((number, number))
                self.spots.setdefault((table, ticket, None), number)
                continue
            if ticket is not None:
                self.ticket_spans[ticket] = (self.ticket_spans[ticket][0], number)
            assign = _ASSIGN_RE.match(line)
            if assign:
                key = assign.group("key").strip("\"'")
                self.spots.setdefault((table, ticket, key), number)
                if not table:
                    self.spots.setdefault((key, None, None), number)
            triple = _TRIPLE_RE.search(line)
            if triple and line.count(triple.group()) % 2 == 1:
                open_quote = triple.group()

    def top(self, name: str) -> int | None:
        """The line of a top-level table (`[plan]`, the first `[[tickets]]`) or key."""
        return self.spots.get((name, None, None)) or self.spots.get((name, 0, None))

    def plan_key(self, key: str) -> int | None:
        """The line of `key` under `[plan]`, else of `[plan]` itself."""
        return self.spots.get(("plan", None, key)) or self.top("plan")

    def ticket_key(self, index: int, key: str, needle: str | None = None) -> int | None:
        """The line of ticket `index`'s `key` (of `needle` quoted inside its value, when given),
        else of the ticket's header; None for tickets written inline (`tickets = [{…}]`)."""
        line = self.spots.get(("tickets", index, key))
        if line is None:
            return self.spots.get(("tickets", index, None)) or self.top("tickets")
        if needle is not None:
            end = self.ticket_spans[index][1]
            quoted = (f'"{needle}"', f"'{needle}'")
            for number in range(line, end + 1):
                if any(q in self.text_lines[number - 1] for q in quoted):
                    return number
        return line
