"""The pieces the readable form is made of (`channels.readable`): short forms, folds, a reader's memory.

Separate from `readable` so that the dialects (`readable_dialects`) and the reader that dispatches to
them both build on it without importing each other. Standard library only.
"""

from __future__ import annotations

import json
import textwrap
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from lanes_tui.engine.core.ansi import strip_ansi, terminal_text

__all__ = [
    "MAX_HELD_CHARS", "MAX_TEXT_LINES", "REMEMBERED", "SHORT", "SUBJECT_KEYS", "ReaderState", "block_text", "clean",
    "fold", "short", "tool_call", "tool_subject", "unknown",
]

#: A tool's input, a folded result, an unknown event: at most this many characters on their line.
SHORT = 120
#: An assistant message longer than this many lines is cut with a note (the log has it all).
MAX_TEXT_LINES = 200
#: A partial JSON line longer than this is not held for its end: it is shown as cut.
MAX_HELD_CHARS = 4 << 20
#: Messages and tool calls remembered, to show a message Claude prints again only once.
REMEMBERED = 256
#: The tool input field that says best what a call does, in this order (Bash: the command; Write and
#: Edit: the path; gemini's read_file: absolute_path; codex's MCP calls: whatever comes first).
SUBJECT_KEYS = ("command", "file_path", "absolute_path", "notebook_path", "url", "query", "pattern", "path",
                "dir_path", "description", "prompt", "subject", "name")


def clean(text: str) -> str:
    """A string from the JSON made safe for the lead's terminal (escapes gone, controls shown as `?`)."""
    return terminal_text(strip_ansi(text.replace("\r\n", "\n"))).replace("\t", "    ")


def short(value: Any, limit: int = SHORT) -> str:
    """`value` on one line, whitespace folded, cut to `limit` characters with an ellipsis."""
    text = value if isinstance(value, str) else _compact_json(value)
    text = " ".join(clean(text).split())
    return text if len(text) <= limit else text[: max(1, limit - 1)] + "…"


def _compact_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)[: SHORT * 4]
    except (TypeError, ValueError, RecursionError):
        return type(value).__name__


def fold(content: Any, limit: int = SHORT) -> str:
    """A tool's result on one line: its first non-blank line and how many more there are.

    `content` is a string, or a list of blocks with `text` (Claude's tool_result, an MCP result).
    """
    text = content if isinstance(content, str) else block_text(content)
    if not text and isinstance(content, list) and content:  # no text in it: what kinds of block it holds
        kinds = [str(b.get("type")) for b in content if isinstance(b, Mapping) and isinstance(b.get("type"), str)]
        if kinds:
            return short(f"({', '.join(kinds)})", limit)
    if not text and content not in (None, "", []) and not isinstance(content, str):
        text = _compact_json(content)
    lines = clean(text).rstrip().split("\n")
    start = next((i for i, line in enumerate(lines) if line.strip()), None)
    if start is None:
        return "(no output)"
    more = len(lines) - start - 1
    first = short(lines[start], limit)
    return f"{first} (+{more} line{'s' if more > 1 else ''})" if more else first


def block_text(content: Any) -> str:
    """The text of a content that is a string, or a list of blocks (`{"type": "text", "text": …}`)."""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        content = [content]
    if not isinstance(content, list):
        return ""
    return "\n".join(str(b["text"]) for b in content if isinstance(b, Mapping) and isinstance(b.get("text"), str))


def tool_subject(tool_input: Any) -> str:
    """The input field that says best what a tool call does (`SUBJECT_KEYS`), else its first string."""
    if isinstance(tool_input, str):
        return tool_input
    if not isinstance(tool_input, Mapping):
        return ""
    for key in SUBJECT_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip():
            return value
    for key, value in tool_input.items():
        if isinstance(value, str) and value.strip() and key != "content":
            return f"{key}={value}"
    return ""


def tool_call(name: Any, tool_input: Any) -> str:
    """A tool call as `→ Name: subject` (the subject cut to `SHORT`)."""
    label = short(name, 60) if isinstance(name, str) and name.strip() else "tool"
    if isinstance(tool_input, Mapping):
        special = _special_input(label, tool_input)
        if special:
            return f"→ {label}: {special}"
    subject = short(tool_subject(tool_input))
    return f"→ {label}: {subject}" if subject else f"→ {label}"


def _special_input(name: str, tool_input: Mapping[str, Any]) -> str:
    """The tools whose telling field is not a string: a todo list, a patch of several files."""
    todos = tool_input.get("todos")
    if isinstance(todos, list):
        states = [t.get("status") for t in todos if isinstance(t, Mapping)]
        now = next((t.get("activeForm") or t.get("content") for t in todos
                    if isinstance(t, Mapping) and t.get("status") == "in_progress"), None)
        done = f"{len(todos)} items, {states.count('completed')} done"
        return done + (f"; now: {short(now, 80)}" if isinstance(now, str) else "")
    edits = tool_input.get("edits")
    if isinstance(edits, list) and isinstance(tool_input.get("file_path"), str):
        return f"{short(tool_input['file_path'])} ({len(edits)} edits)"
    return ""


def unknown(msg: Mapping[str, Any], kind: str | None = None) -> str:
    """One compact line for a JSON line no dialect knows: its type and a few of its scalar fields."""
    label = kind if kind is not None else str(msg.get("type") or "json")
    fields = []
    for key, value in msg.items():
        if key in ("type", "uuid", "session_id", "timestamp") or not isinstance(value, str | int | float | bool):
            continue
        fields.append(f"{short(key, 30)}={short(value, 40)}")
        if len(fields) == 4:
            break
    return short(f"· {label}" + (f" ({', '.join(fields)})" if fields else ""), SHORT)


class ReaderState:
    """What a reader keeps across lines for the dialects: the messages Claude printed already (it prints one
    again as it grows), gemini's streamed text until it is whole, the tool names by id. `width`
    wraps the agent's text (0: lines as they are).
    """

    def __init__(self, *, width: int = 0) -> None:
        self.width = width
        self.structured = False
        """True once a line of a known dialect was read: the pane's title says `readable` from then on."""
        self.seen: OrderedDict[str, None] = OrderedDict()
        """Claude text blocks and tool calls shown already, by message id and content (bounded)."""
        self.tools: OrderedDict[str, str] = OrderedDict()
        """Tool names by their call id (gemini and codex results name only the id)."""
        self.pending: list[str] = []
        """Gemini's streamed assistant text, until the message is whole (the next event of another kind)."""

    def flush(self) -> list[str]:
        """Streamed text held back so far (gemini's deltas), as lines: at the end of the input."""
        if not self.pending:
            return []
        text, self.pending = "".join(self.pending), []
        return self.text(text)

    def text(self, text: str, prefix: str = "") -> list[str]:
        """The agent's text as lines: cleaned, wrapped to `width` if set, cut past `MAX_TEXT_LINES`."""
        lines = clean(text).strip("\n").split("\n")
        while lines and not lines[-1].strip():
            lines.pop()
        if self.width > 8:
            lines = [w for line in lines for w in (textwrap.wrap(line, self.width - len(prefix),
                                                                 replace_whitespace=False,
                                                                 drop_whitespace=True) or [""])]
        if len(lines) > MAX_TEXT_LINES:
            lines = [*lines[:MAX_TEXT_LINES], f"… (+{len(lines) - MAX_TEXT_LINES} lines: peek --raw has them)"]
        return [prefix + line for line in lines]

    def first_time(self, key: str) -> bool:
        """Whether `key` is new (and remember it): a message printed again shows once."""
        if key in self.seen:
            return False
        self.seen[key] = None
        if len(self.seen) > REMEMBERED:
            self.seen.popitem(last=False)
        return True

    def name_tool(self, tool_id: Any, name: str) -> None:
        if isinstance(tool_id, str):
            self.tools[tool_id] = name
            if len(self.tools) > REMEMBERED:
                self.tools.popitem(last=False)
