"""The agent's output, read in coalesced chunks and framed into lines.

A supervisor must not wake once per line an agent flushes: after a read that drains what was there
(a short chunk), the reader rests for `REST_S` so the next read takes everything written in the
meantime in one go; a read of `FLOOD_BYTES` or more is a flood, and the next read follows at once.

Two readers share that rhythm. `pump_fd` reads a plain pipe end itself: after a rest it simply
reads, and only a read that finds nothing registers the descriptor with the event loop, so a steady
trickle costs one timer wake-up and one `read` per rest and no `epoll_ctl` at all (B3 measured
pause/resume of an asyncio transport at a third of a printing supervisor's time). `pump` reads an
asyncio stream (the pseudo-terminal) and rests by pausing its transport; a terminal with the lead
attached is never paused (`PtyTerminal.pause_reading`), so typing echoes at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from lanes_tui.engine.core.utf8 import whole_chars_end

MAX_LINE = 1 << 20
READ_CHUNK = 1 << 16
#: Seconds a trickle's source rests between two reads (0: read each write as it comes). Each wake-up
#: of a Python event loop costs 0.15-0.35 ms of CPU on the benchmark machine whatever it does (B3's
#: floor: a bare asyncio loop reading a pipe); twice a second keeps a printing lane near 0.1 % of a
#: core, and half a second is still within what the dashboard shows as live.
REST_S = 0.5
#: After a flood-sized read, no rest for this long: a flooding writer's next read is often short (it
#: was blocked on the full pipe and has just written its first piece again), and resting on that
#: throttled a flood to what the pipe holds per rest (B8: 2.7 MB/s with a 29 MB/s agent).
FLOOD_HOLD_S = 1.0
#: A read at least this long is a flood, read again at once: after a rest a flooding agent has filled
#: the pipe (64 KiB) and blocks on it, so resting again would throttle the agent itself (B8 measured
#: 0.4 MB/s when only a full READ_CHUNK counted as a flood). Half the pipe: a trickle's read after a
#: rest is a few lines, and one line of a structured CLI is one tool call or result, several KB (Claude's
#: `user` lines carry a result twice: 15-48 KB in the recordings of tests/bench/traffic). At 4 KiB each
#: such line counted as a flood and held the pump reading line by line: a Claude lane printing 20 lines
#: a second woke its supervisor 20 times a second (B3 with `--traffic claude`: 0.70 % of a core).
#: A pipe of another capacity (`pipe_capacity`: the supervisor's agents get `procs.process.PIPE_BYTES`)
#: floods at half of it, and is read a whole pipe at a time.
FLOOD_BYTES = 32 * 1024


class Pausable(Protocol):
    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...


class Rest(Protocol):
    """The pump's rest: `rest_s` while the lane is watched; while nobody watches, longer (a lane's
    `cadence.OutputCadence.rest`), but never past `most`, the longest the pipe allows at the rate seen."""

    def __call__(self, rest_s: float, *, most: float = ...) -> Awaitable[None]: ...


async def plain_rest(rest_s: float, *, most: float = float("inf")) -> None:
    """A rest of `rest_s` seconds, whoever watches (the pumps' default outside a lane)."""
    await asyncio.sleep(rest_s)


class LineFramer:
    """Bytes in, complete lines out; a line longer than `limit` is cut so memory stays bounded.

    Lines come out as one *block* per read (the complete lines joined by newlines, without the
    last one), so a flood of short lines costs a few C-level scans per read, not Python work per
    line: B8 ingests tens of MB/s only this way. `feed` splits the block for callers that want lines.
    """

    def __init__(self, limit: int = MAX_LINE) -> None:
        self.limit = limit
        self._buf = bytearray()

    def feed_block(self, data: bytes) -> bytes | None:
        """The complete lines `data` finishes, as one block; None when it finishes none."""
        cut = data.rfind(b"\n")
        if cut >= 0:
            block = bytes(self._buf) + data[:cut] if self._buf else data[:cut]
            self._buf = bytearray(data[cut + 1:])
            return block
        self._buf += data
        if len(self._buf) <= self.limit:
            return None
        end = whole_chars_end(bytes(self._buf)) or len(self._buf)  # a character cut in two waits
        block = bytes(self._buf[:end])
        del self._buf[:end]
        return block

    def feed(self, data: bytes) -> list[bytes]:
        block = self.feed_block(data)
        return [] if block is None else block.split(b"\n")

    def flush(self) -> list[bytes]:
        rest = bytes(self._buf)
        self._buf.clear()
        return [rest] if rest else []


class WholeLines:
    """One pipe's bytes to a log shared with the other pipe, a whole line at a time.

    An agent's stdout and stderr are read apart; written to the log as read, a warning on stderr
    lands inside a half-read stdout line (codex's JSON lines). Each stream holds back its unfinished
    last line until its newline comes (or the stream ends, or it outgrows `limit`), so the log
    interleaves whole lines only. The watchdog counts bytes as they are read, not as written here.
    """

    def __init__(self, write: Callable[[bytes], None], limit: int = MAX_LINE) -> None:
        self.write, self.limit = write, limit
        self._tail = b""

    def feed(self, chunk: bytes) -> None:
        data = self._tail + chunk if self._tail else chunk
        cut = data.rfind(b"\n") + 1
        if len(data) - cut > self.limit:
            cut = len(data)
        if cut:
            self.write(data[:cut])
        self._tail = data[cut:]

    def flush(self) -> None:
        if self._tail:
            tail, self._tail = self._tail, b""
            self.write(tail)


def pipe_capacity(fd: int) -> int:
    """How many bytes the pipe `fd` holds before its writer blocks (Linux's default when unknown)."""
    try:
        return max(READ_CHUNK, fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ))
    except OSError:  # not a pipe (a test's socket, another platform)
        return READ_CHUNK


class Rhythm:
    """When to rest: after a short read, unless a flood-sized read came within `FLOOD_HOLD_S`; and how
    long a rest may last at most (`longest_rest`).

    An unwatched lane rests 2 s (`cadence.UNWATCHED_REST_S`). A structured CLI printing fast (codex and
    gemini at 20 lines a second: about 100 KB/s) fills more than half the pipe in that time, so every
    rest ended in a flood-sized read and a second of reads line by line: 7 wake-ups a second where a
    watched lane, resting 0.5 s, had 2 (B3 on real traffic). The output seen between two reads gives
    the rate; a rest then lasts no longer than a quarter of the pipe takes to fill at it (half of the
    flood size), so a steady writer's reads stay trickles, and a lane that slows down rests long again.
    """

    def __init__(self, rest_s: float, clock: Callable[[], float] = time.monotonic,
                 flood_bytes: int = FLOOD_BYTES) -> None:
        self.rest_s = rest_s
        self.clock = clock
        self.flood_bytes = flood_bytes
        self._flood_until = float("-inf")
        self._last_read: float | None = None
        self._rate = 0.0
        """Bytes a second between the last two reads (0 until two reads were made)."""

    def rest_after(self, size: int) -> bool:
        now = self.clock()
        if self._last_read is not None and now > self._last_read:
            self._rate = size / (now - self._last_read)
        self._last_read = now
        if size >= self.flood_bytes:
            self._flood_until = now + FLOOD_HOLD_S
            return False
        return self.rest_s > 0 and now >= self._flood_until

    def longest_rest(self) -> float:
        """The longest rest that keeps the next read under half a flood, at the rate last seen."""
        return self.flood_bytes / 2 / self._rate if self._rate > 0 else float("inf")


class _Consumer:
    """What both pumps do with a chunk: the raw bytes, then its complete lines, then `after`."""

    def __init__(self, on_chunk: Callable[[bytes], None], on_block: Callable[[bytes], None],
                 after: Callable[[], None] | None) -> None:
        self.on_chunk, self.on_block, self.after = on_chunk, on_block, after
        self.framer = LineFramer()

    def take(self, chunk: bytes) -> None:
        self.on_chunk(chunk)
        block = self.framer.feed_block(chunk)
        if block is not None:
            self.on_block(block)
        if self.after is not None:
            self.after()

    def finish(self) -> None:
        """The stream ended: a last line without its newline is still a line."""
        for rest in self.framer.flush():
            self.on_block(rest)


async def pump(stream: asyncio.StreamReader, source: Pausable | None, *, on_chunk: Callable[[bytes], None],
               on_block: Callable[[bytes], None], rest_s: float = REST_S,
               after: Callable[[], None] | None = None, sleep: Rest = plain_rest) -> None:
    """Read `stream` to its end: every chunk to `on_chunk`, its complete lines to `on_block`, then `after`.

    `sleep` is the rest, as in `pump_fd` (a lane's `cadence.OutputCadence.rest`)."""
    consumer = _Consumer(on_chunk, on_block, after)
    rhythm = Rhythm(rest_s)
    try:
        while True:
            chunk = await stream.read(READ_CHUNK)
            if not chunk:
                break
            consumer.take(chunk)
            if rhythm.rest_after(len(chunk)) and source is not None and not stream.at_eof():
                await _rest(source, rest_s, sleep, rhythm.longest_rest())
    finally:
        consumer.finish()


async def _rest(source: Pausable, rest_s: float, sleep: Rest, most: float) -> None:
    source.pause_reading()
    try:
        await sleep(rest_s, most=most)
    finally:
        source.resume_reading()


async def pump_fd(fd: int, *, on_chunk: Callable[[bytes], None], on_block: Callable[[bytes], None],
                  rest_s: float = REST_S, after: Callable[[], None] | None = None,
                  sleep: Rest = plain_rest, clock: Callable[[], float] = time.monotonic) -> None:
    """Read the non-blocking pipe end `fd` to its end, like `pump`; `fd` is closed when done.

    `sleep` is the rest (a lane's `cadence.OutputCadence.rest`: longer while nobody watches it) and
    `clock` the time a flood is remembered by (injected by tests, whose `sleep` writes the agent's
    next output).
    """
    loop = asyncio.get_running_loop()
    consumer = _Consumer(on_chunk, on_block, after)
    capacity = pipe_capacity(fd)  # a whole pipe a read; a flood fills half of it
    rhythm = Rhythm(rest_s, clock, max(FLOOD_BYTES, capacity // 2))
    try:
        while True:
            try:
                chunk = os.read(fd, capacity)
            except BlockingIOError:
                await _readable(loop, fd)
                continue
            except OSError:  # EIO and the like: the writer is gone in a way a pipe rarely reports
                break
            if not chunk:
                break
            consumer.take(chunk)
            if rhythm.rest_after(len(chunk)):
                await sleep(rest_s, most=rhythm.longest_rest())
    finally:
        consumer.finish()
        with contextlib.suppress(OSError):
            os.close(fd)


async def _readable(loop: asyncio.AbstractEventLoop, fd: int) -> None:
    """Wait until `fd` has something to read (or its writer closed): registered only for the wait."""
    ready = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, wake)
    try:
        await ready
    finally:
        loop.remove_reader(fd)
