"""The coalesced output pump (issue 15): a trickle rests between reads, a flood is read at once,
and every byte and line still reaches its consumers; `/proc` samples agree with psutil."""

from __future__ import annotations

import asyncio
import subprocess

import psutil

from lanes_tui.engine.lanes.output_pump import READ_CHUNK, pump
from lanes_tui.engine.procs.procfs import read_stat
from lanes_tui.engine.procs.sampler import sample_tree


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
        await pump(stream, source, on_chunk=chunks.extend, on_line=lines.append, rest_s=rest_s)
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
    assert calls == ["pause", "resume"]  # only after the last, short, read


def test_the_proc_sample_agrees_with_psutil() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        info = next(p for p in sample_tree() if p.pid == child.pid)
        proc = psutil.Process(child.pid)
        assert abs(info.create_time - proc.create_time()) < 0.05
        assert info.name == proc.name() and info.ppid == proc.ppid()
        assert info.cmdline == "sleep 30"
        stat = read_stat(child.pid)
        assert stat is not None and not stat.zombie
    finally:
        child.kill()
        child.wait()
    assert read_stat(child.pid) is None
