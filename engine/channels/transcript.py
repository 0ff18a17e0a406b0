"""A structured lane's conversation as turns: what the lead reads before typing into it.

The lane's `output.log` holds what the agent printed; for `claude-stream-json` that is one JSON
object a line. Claude prints an `assistant` message several times as it grows (same `message.id`),
so a message is one turn, replaced in place, never repeated. What the lead typed is not in the
agent's output: `lanes-tui send` records each message in the lane's events with the size of
`output.log` at that moment, and `merge` puts it back at that point of the transcript.

Pure (lines and records in, turns out), standard library only: the dashboard's conversation view,
`lanes-tui attach` and the supervisor's control socket all use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from lanes_tui.engine.channels.base import json_line
from lanes_tui.engine.channels.readable_parts import tool_subject

__all__ = ["MAX_TURN_CHARS", "TranscriptParser", "Turn", "merge"]

#: A turn longer than this is cut with a note: a transcript is for reading, the log keeps everything.
MAX_TURN_CHARS = 8000


@dataclass(frozen=True)
class Turn:
    """One entry of a conversation: `user` (the task, the lead's messages), `assistant`, `tool`
    (a tool call the agent made), `result` (the end of a run of turns) or `output` (a line of a
    channel without a structure)."""

    role: str
    text: str
    #: Where it came from in `output.log` (its byte offset), for the order of the lead's messages.
    offset: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TURN_CHARS else text[:MAX_TURN_CHARS] + " … (cut; output.log has it all)"


def _tool_line(block: Mapping[str, Any]) -> str:
    name = str(block.get("name") or "tool")
    subject = tool_subject(block.get("input"))  # the field that says best what it does (as `peek` shows it)
    return f"{name}: {' '.join(subject.split())}" if subject else name


class TranscriptParser:
    """Feeds on output lines (with their byte offsets) and keeps the turns read so far.

    `structured=False` turns every non-empty line into an `output` turn: a plain lane's conversation
    is its output.
    """

    def __init__(self, *, structured: bool = True) -> None:
        self.structured = structured
        self.turns: list[Turn] = []
        self._message_at: dict[str, int] = {}

    def feed(self, line: bytes | str, offset: int = 0) -> list[Turn]:
        """Read one line; the turns it added or replaced (a grown message comes back again)."""
        text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
        if not self.structured:
            text = text.rstrip("\r\n")
            return [self._add(Turn("output", _cut(text), offset))] if text.strip() else []
        msg = json_line(text)
        if msg is None:
            return []
        kind = msg.get("type")
        message = msg.get("message")
        if kind == "assistant" and isinstance(message, Mapping):
            return self._assistant(message, offset)
        if kind == "user" and isinstance(message, Mapping):
            typed = _texts(message.get("content"))  # tool results are the agent's own business
            return [self._add(Turn("user", _cut(typed), offset))] if typed else []
        if kind == "result":
            result = msg.get("result")
            words = result if isinstance(result, str) and result.strip() else str(msg.get("subtype") or "done")
            return [self._add(Turn("result", _cut(words), offset))]
        return []

    def _assistant(self, message: Mapping[str, Any], offset: int) -> list[Turn]:
        changed: list[Turn] = []
        content = message.get("content")
        text = _texts(content)
        msg_id = message.get("id")
        if text:
            turn = Turn("assistant", _cut(text), offset)
            at = self._message_at.get(msg_id) if isinstance(msg_id, str) else None
            if at is not None:
                self.turns[at] = Turn("assistant", turn.text, self.turns[at].offset)
                changed.append(self.turns[at])
            else:
                if isinstance(msg_id, str):
                    self._message_at[msg_id] = len(self.turns)
                changed.append(self._add(turn))
        if isinstance(content, list):
            seen = {t.text for t in self.turns[-8:] if t.role == "tool"}
            for block in content:
                if isinstance(block, Mapping) and block.get("type") == "tool_use":
                    line = _cut(_tool_line(block))
                    if line not in seen:  # a grown message repeats its tool calls
                        changed.append(self._add(Turn("tool", line, offset)))
        return changed

    def _add(self, turn: Turn) -> Turn:
        self.turns.append(turn)
        return turn


def _texts(content: Any) -> str:
    """The text blocks of a message's content (a string counts as one block)."""
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    parts = [str(b.get("text")) for b in content
             if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)]
    return "\n".join(p.strip() for p in parts if p.strip())


def merge(turns: Iterable[Turn], sent: Iterable[Turn]) -> list[Turn]:
    """The agent's turns with the lead's messages put back where they were sent (by offset).

    A message sent at offset N was written before the agent printed byte N, so it goes before every
    turn that starts at N or later; the sort is stable, so equal offsets keep the lead's first.
    """
    both = [(t.offset, 0, i, t) for i, t in enumerate(sent)] + [(t.offset, 1, i, t) for i, t in enumerate(turns)]
    return [t for *_, t in sorted(both, key=lambda x: x[:3])]
