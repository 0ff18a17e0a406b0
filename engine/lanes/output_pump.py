"""The agent's output, read in coalesced chunks and framed into lines.

A supervisor must not wake once per line an agent flushes: after a read that drains what was there
(a short chunk), the source is paused for `REST_S` so the next read takes everything written in the
meantime in one go; a read of `FLOOD_BYTES` or more is a flood, and the next read follows at once.
Pausing takes the file descriptor out of the event loop (`pause_reading`), so a trickle costs one
wake-up per rest, not one per line; a terminal with the lead attached is never paused
(`PtyTerminal.pause_reading`), so typing echoes at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from lanes_tui.engine.core.utf8 import whole_chars_end

MAX_LINE = 1 << 20
READ_CHUNK = 1 << 16
#: Seconds a trickle's source rests between two reads (0: read each write as it comes).
REST_S = 0.25
#: A read at least this long is a flood, read again at once: after a rest a flooding agent has filled
#: the pipe (64 KiB) and blocks on it, so resting again would throttle the agent itself (B8 measured
#: 0.4 MB/s when only a full READ_CHUNK counted as a flood). A trickle's read after a rest is a few lines.
FLOOD_BYTES = 4096


class Pausable(Protocol):
    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...


class LineFramer:
    """Bytes in, complete lines out; a line longer than `limit` is cut so memory stays bounded."""

    def __init__(self, limit: int = MAX_LINE) -> None:
        self.limit = limit
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        lines = []
        while True:
            cut = self._buf.find(b"\n")
            if cut < 0:
                break
            lines.append(bytes(self._buf[:cut]))
            del self._buf[: cut + 1]
        if len(self._buf) > self.limit:
            cut = whole_chars_end(bytes(self._buf)) or len(self._buf)  # a character cut in two waits
            lines.append(bytes(self._buf[:cut]))
            del self._buf[:cut]
        return lines

    def flush(self) -> list[bytes]:
        rest = bytes(self._buf)
        self._buf.clear()
        return [rest] if rest else []


def pipe_source(stream: asyncio.StreamReader) -> Pausable | None:
    """The transport behind a subprocess pipe's reader (asyncio keeps it on the reader), if any."""
    transport = getattr(stream, "_transport", None)
    if transport is None or not hasattr(transport, "pause_reading") or not hasattr(transport, "resume_reading"):
        return None
    return transport  # type: ignore[no-any-return]


async def pump(stream: asyncio.StreamReader, source: Pausable | None, *, on_chunk: Callable[[bytes], None],
               on_line: Callable[[bytes], None], rest_s: float = REST_S) -> None:
    """Read `stream` to its end: every chunk to `on_chunk`, then its complete lines to `on_line`."""
    framer = LineFramer()
    try:
        while True:
            chunk = await stream.read(READ_CHUNK)
            if not chunk:
                break
            on_chunk(chunk)
            for line in framer.feed(chunk):
                on_line(line)
            if len(chunk) < FLOOD_BYTES and rest_s > 0 and source is not None and not stream.at_eof():
                await _rest(source, rest_s)
    finally:
        for line in framer.flush():
            on_line(line)


async def _rest(source: Pausable, rest_s: float) -> None:
    source.pause_reading()
    try:
        await asyncio.sleep(rest_s)
    finally:
        source.resume_reading()
