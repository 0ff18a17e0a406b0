"""The coalesced output pump (issue 15): a trickle rests between reads, a flood is read at once,
and every byte and line still reaches its consumers; `/proc` samples agree with psutil."""

from __future__ import annotations

import asyncio
import fcntl
import os
import subprocess
import sys
from collections.abc import Callable

import psutil
import pytest

from lanes_tui.engine.lanes.output_pump import (
    FLOOD_HOLD_S,
    READ_CHUNK,
    LineFramer,
    Rhythm,
    pipe_capacity,
    pump,
    pump_fd,
)
from lanes_tui.engine.procs import tree
from lanes_tui.engine.procs.process import PIPE_BYTES
from lanes_tui.engine.procs.procfs import boot_time, read_stat
from lanes_tui.engine.procs.sampler import sample_tree
from lanes_tui.engine.procs.tree import ProcKey, process_create_time


class Source:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def pause_reading(self) -> None:
        self.calls.append("pause")

    def resume_reading(self) -> None:
        self.calls.append("resume")


def _drive(data: list[bytes], rest_s: float) -> tuple[bytes, list[bytes], list[str]]:
    async def go() -> tuple[bytes, list[bytes], list[str]]:
        stream = asyncio.StreamReader(limit=4 * READ_CHUNK)
        for part in data:
            stream.feed_data(part)
        asyncio.get_running_loop().call_later(0.05, stream.feed_eof)
        source, chunks, lines = Source(), bytearray(), []
        await pump(stream, source, on_chunk=chunks.extend, on_block=lambda b: lines.extend(b.split(b"\n")),
                   rest_s=rest_s)
        return bytes(chunks), lines, source.calls

    return asyncio.run(go())


def test_a_trickle_rests_between_reads_and_loses_nothing() -> None:
    chunks, lines, calls = _drive([b"one\ntw", b"o\nthree"], rest_s=0.1)
    assert chunks == b"one\ntwo\nthree"
    assert lines == [b"one", b"two", b"three"]  # the partial last line is flushed at the end
    assert calls == ["pause", "resume"]  # one short read (all that was there), one rest


def test_a_flood_is_read_again_at_once() -> None:
    count = 3 * READ_CHUNK // 100 + 3  # three full chunks, then a short read of 292 bytes
    data = (b"x" * 99 + b"\n") * count
    chunks, lines, calls = _drive([data], rest_s=0.2)
    assert chunks == data and len(lines) == count
    assert calls == []  # the last, short, read came right after a flood: no rest either


def test_a_short_read_rests_only_once_the_flood_is_a_second_old() -> None:
    now = [100.0]
    rhythm = Rhythm(0.5, clock=lambda: now[0])
    assert rhythm.rest_after(10)  # a trickle rests
    assert not rhythm.rest_after(65536)  # a flood never does
    now[0] += FLOOD_HOLD_S / 2
    assert not rhythm.rest_after(200)  # the flooding writer's first piece after the full pipe
    now[0] += FLOOD_HOLD_S
    assert rhythm.rest_after(200)  # quiet for a while: a trickle again
    assert not Rhythm(0.0).rest_after(10)  # rest_s 0: every write is read as it comes


def test_the_proc_sample_agrees_with_psutil() -> None:
    # The child says it is running once its own code runs: Popen returns when exec closes the
    # error pipe, before the kernel has set up the new argv, so /proc/PID/cmdline can still be empty.
    script = "import time; print('up', flush=True); time.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"up\n"
        info = next(p for p in sample_tree() if p.pid == child.pid)
        proc = psutil.Process(child.pid)
        assert abs(info.create_time - (proc.create_time() - psutil.boot_time())) < 0.05  # both since boot
        assert info.name == proc.name() and info.ppid == proc.ppid()
        assert info.cmdline == f"{sys.executable} -c {script}"
        stat = read_stat(child.pid)
        assert stat is not None and not stat.zombie
    finally:
        child.kill()
        child.communicate()
    assert read_stat(child.pid) is None


class PipeAgent:
    """A real pipe whose writer plays the agent; `rest` is the pump's injected sleep."""

    def __init__(self, parts: list[bytes]) -> None:
        self.read_end, self.write_end = os.pipe()
        os.set_blocking(self.read_end, False)
        self.parts = list(parts)
        self.rests: list[float] = []
        self.mosts: list[float] = []
        """The longest rest the pump allowed each time (`most`: the pipe's room at the rate seen)."""

    def write_next(self) -> None:
        if self.parts:
            os.write(self.write_end, self.parts.pop(0))
        elif self.write_end >= 0:
            os.close(self.write_end)
            self.write_end = -1

    async def rest(self, seconds: float, *, most: float = float("inf")) -> None:
        self.rests.append(seconds)
        self.mosts.append(most)
        self.write_next()  # what the agent printed while the pump rested

    def close(self) -> None:
        if self.write_end >= 0:
            os.close(self.write_end)


def _drive_fd(agent: PipeAgent, *, before: bool) -> tuple[bytes, list[bytes], int]:
    """Run `pump_fd` on the agent's pipe; the count of times the fd was registered with the loop."""

    async def go() -> tuple[bytes, list[bytes], int]:
        loop = asyncio.get_running_loop()
        registered = 0
        add_reader = loop.add_reader

        def counting_add_reader(fd: int, callback: Callable[..., object], *args: object) -> None:
            nonlocal registered
            registered += 1
            add_reader(fd, callback, *args)

        loop.add_reader = counting_add_reader  # type: ignore[method-assign]
        if before:
            agent.write_next()
        # Runs only once the pump waits on the loop (the fake rests never suspend): the first part
        # for a silent start, else the writer's close.
        loop.call_soon(agent.write_next)
        chunks, lines = bytearray(), []
        await pump_fd(agent.read_end, on_chunk=chunks.extend, on_block=lambda b: lines.extend(b.split(b"\n")),
                      rest_s=0.25, sleep=agent.rest)
        return bytes(chunks), lines, registered

    try:
        return asyncio.run(go())
    finally:
        agent.close()


def test_a_trickle_read_from_a_pipe_end_never_registers_it_with_the_loop() -> None:
    agent = PipeAgent([b"one\ntw", b"o\nthree"])
    chunks, lines, registered = _drive_fd(agent, before=True)
    assert chunks == b"one\ntwo\nthree" and lines == [b"one", b"two", b"three"]
    assert agent.rests == [0.25, 0.25]  # one rest after each short read; the writer closed in the second
    assert registered == 0  # after each rest the output was already there: no epoll_ctl at all
    with pytest.raises(OSError):
        os.fstat(agent.read_end)  # the pump owns the read end and closed it


def test_a_silent_pipe_waits_on_the_loop_until_the_agent_writes() -> None:
    agent = PipeAgent([b"late line\n"])
    chunks, lines, registered = _drive_fd(agent, before=False)
    assert lines == [b"late line"] and chunks == b"late line\n"
    assert registered == 1 and agent.rests == [0.25]


def test_a_flood_from_a_pipe_end_is_read_again_without_a_rest() -> None:
    flood = (b"y" * 99 + b"\n") * 600  # 60,000 bytes: one read, at least FLOOD_BYTES
    agent = PipeAgent([flood])
    chunks, lines, registered = _drive_fd(agent, before=True)
    assert chunks == flood and len(lines) == 600
    assert agent.rests == []  # read again at once: the empty pipe waits on the loop, then EOF
    assert registered == 1


def test_a_trickle_of_large_lines_still_rests() -> None:
    """A structured CLI prints a tool result as one line of several KB (Claude's of tens of KB): a read
    of one such line is a trickle, not a flood, and must not keep the pump reading line by line."""
    big = [b"{" + b"x" * 9_000 + b"}\n", b"{" + b"y" * 20_000 + b"}\n"]
    agent = PipeAgent(big)
    chunks, lines, _ = _drive_fd(agent, before=True)
    assert chunks == b"".join(big) and len(lines) == 2
    assert agent.rests == [0.25, 0.25]


def test_a_larger_pipe_floods_at_half_its_capacity() -> None:
    """The supervisor gives its agents 256 KiB pipes: a rest's 60 KB is a trickle there, 200 KB a flood."""
    agent = PipeAgent([(b"t" * 99 + b"\n") * 600, (b"f" * 99 + b"\n") * 2000])
    fcntl.fcntl(agent.read_end, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    assert pipe_capacity(agent.read_end) == PIPE_BYTES
    chunks, lines, _ = _drive_fd(agent, before=True)
    assert len(chunks) == 260_000 and len(lines) == 2600
    assert agent.rests == [0.25]  # after the trickle; the flood is read again at once


class UnwatchedAgent(PipeAgent):
    """Prints `rate` bytes a second in lines of `line` bytes, on a fake clock; its rests are a lane's
    nobody watches (`cadence.OutputCadence.delay`: 2 s, never past `most`, never under `rest_s`)."""

    def __init__(self, rate: int, line: int) -> None:
        super().__init__([])
        fcntl.fcntl(self.read_end, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        self.rate, self.line, self.now, self.reads = rate, line, 0.0, 0

    def clock(self) -> float:
        return self.now

    async def rest(self, seconds: float, *, most: float = float("inf")) -> None:
        self.rests.append(seconds)
        self.mosts.append(most)
        waited = max(seconds, min(2.0, most))
        self.now += waited
        if len(self.rests) > 12:
            os.close(self.write_end)
            self.write_end = -1
            return
        lines = max(1, round(self.rate * waited / self.line))
        os.write(self.write_end, (b"x" * (self.line - 1) + b"\n") * lines)


def test_a_fast_writer_nobody_watches_rests_only_as_long_as_the_pipe_has_room_for() -> None:
    """codex at 20 lines a second (about 100 KB/s) filled more than half the 256 KiB pipe in an unwatched
    2 s rest: every rest ended in a flood and a second of reads line by line (B3). The rate seen between
    two reads caps the next rest at what fills a quarter of the pipe (64 KiB), so reads stay trickles.
    Here at 50 KB/s: the first unwatched rest reads about 100 KB, every later one about 64 KB."""
    agent = UnwatchedAgent(rate=50_000, line=5_000)
    os.write(agent.write_end, b"first\n")
    sizes: list[int] = []

    async def go() -> None:
        await pump_fd(agent.read_end, on_chunk=lambda c: sizes.append(len(c)), on_block=lambda b: None,
                      rest_s=0.5, sleep=agent.rest, clock=agent.clock)

    try:
        asyncio.run(go())
    finally:
        agent.close()
    quarter = PIPE_BYTES // 4
    assert agent.mosts[0] == float("inf")  # one read: no rate yet, the cadence's own 2 s rest
    assert sizes[1] == 100_000  # that rest's output
    assert all(abs(m - quarter / 50_000) < 0.05 for m in agent.mosts[2:])  # then about 1.3 s
    assert all(abs(size - quarter) <= 5_000 for size in sizes[3:])  # reads of a quarter of the pipe
    assert len(agent.rests) > 12  # a rest after every read: never a flood, never line by line


def test_a_slow_writer_nobody_watches_keeps_its_long_rests() -> None:
    """At a real CLI's pace (a few KB a second) a quarter of the pipe takes far longer than 2 s to fill."""
    agent = UnwatchedAgent(rate=10_000, line=5_000)
    os.write(agent.write_end, b"first\n")

    async def go() -> None:
        await pump_fd(agent.read_end, on_chunk=lambda c: None, on_block=lambda b: None, rest_s=0.5,
                      sleep=agent.rest, clock=agent.clock)

    try:
        asyncio.run(go())
    finally:
        agent.close()
    assert all(m > 2.0 for m in agent.mosts)  # the cap never bites: every rest is the cadence's 2 s


def test_a_read_hands_its_complete_lines_over_as_one_block() -> None:
    framer = LineFramer()
    assert framer.feed_block(b"partial") is None
    assert framer.feed_block(b" line\nsecond\nthi") == b"partial line\nsecond"
    assert framer.feed_block(b"rd\n") == b"third"
    assert framer.feed_block(b"\n") == b""  # one empty line
    assert framer.flush() == []
    blocks: list[bytes] = []
    agent = PipeAgent([b"a\nb\nc", b"\n"])

    async def go() -> None:
        agent.write_next()
        asyncio.get_running_loop().call_soon(agent.write_next)
        await pump_fd(agent.read_end, on_chunk=lambda c: None, on_block=blocks.append, sleep=agent.rest)

    try:
        asyncio.run(go())
    finally:
        agent.close()
    assert blocks == [b"a\nb", b"c"]


def test_a_process_keeps_its_identity_when_the_wall_clock_is_stepped(monkeypatch: pytest.MonkeyPatch) -> None:
    """CI saw NTP step the clock 7 s mid-run: `btime` of /proc/stat moved, and every supervisor whose
    key was made before the step looked like another process. Keys are seconds since boot now; a key an
    earlier version wrote in wall-clock time still matches through today's `btime`."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        started = process_create_time(child.pid)
        assert started is not None
        key = ProcKey(child.pid, started)
        legacy = ProcKey(child.pid, started + boot_time())
        assert key.alive() and legacy.alive()
        monkeypatch.setattr(tree, "boot_time", lambda: 1_700_000_007.0)  # the clock stepped
        assert key.alive()
        assert not ProcKey(child.pid, started + 0.5).alive()  # another start is another process
    finally:
        child.kill()
        child.communicate()
    assert not key.alive()
