"""A lane's output.log interleaves stdout and stderr a whole line at a time (issue 29: codex's stderr
warning landed inside one of its stdout JSON lines).

The agent here is a real process that writes half a stdout line, waits until the supervisor has read
it (the pipe's unread count, FIONREAD, is 0), writes a whole stderr line and waits the same way, then
ends the stdout line: read as written, the log would hold the warning inside the JSON line.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from lanes_tui.engine.core.clock import RealClock
from lanes_tui.engine.lanes.agent_run import AgentRun, RunSettings
from lanes_tui.engine.lanes.classify import PatternScanner
from lanes_tui.engine.lanes.output_pump import WholeLines
from lanes_tui.engine.procs.process import ProcessRequest, StopDeadlines

AGENT = r"""
import fcntl, os, struct, termios, time

def drained(fd):
    # Until the reader has taken everything from the pipe (bounded: a broken reader fails the test).
    deadline = time.monotonic() + 20
    while struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]:
        assert time.monotonic() < deadline, "the supervisor never read the pipe"
        time.sleep(0.001)

os.write(1, b'{"type":"thread.started",')
drained(1)
os.write(2, b"WARNING: proceeding, even though we could not create PATH aliases\n")
drained(2)
os.write(1, b'"thread_id":"t1"}\n{"type":"turn.completed"}\n')
os.write(2, b"last words without a newline")
"""


async def test_stdout_and_stderr_meet_in_the_log_only_between_lines(tmp_path: Path) -> None:
    worktree = tmp_path / "wt"
    worktree.mkdir()
    request = ProcessRequest([sys.executable, "-c", AGENT], worktree, dict(os.environ), stdin_pipe=False,
                             name="lines:agent")
    settings = RunSettings(timeout_s=60, idle_timeout_s=0, sample_s=0.05,
                           deadlines=StopDeadlines(eof=0.5, sigint=1.0, sigterm=1.0, sigkill=2.0))
    output = tmp_path / "output.log"
    with open(output, "wb") as out:
        run = AgentRun(request, stdin_data=None, keep_stdin_open=False, output=out,
                       samples_path=tmp_path / "samples.jsonl", scanner=PatternScanner.from_patterns([], []),
                       settings=settings, clock=RealClock(), files_changed=lambda: False,
                       is_waiting=lambda: False, on_waiting=lambda waiting: None)
        outcome = await asyncio.wait_for(run.run(), 60)
    assert outcome.returncode == 0
    lines = output.read_bytes().split(b"\n")
    assert b'{"type":"thread.started","thread_id":"t1"}' in lines, output.read_bytes()
    assert b"WARNING: proceeding, even though we could not create PATH aliases" in lines
    assert b'{"type":"turn.completed"}' in lines
    assert lines[-1] == b"last words without a newline", "a stream's last unfinished line is still logged"
    assert run.output_bytes == len(output.read_bytes())


def test_whole_lines_holds_a_line_until_its_end_and_cuts_an_endless_one() -> None:
    written: list[bytes] = []
    lines = WholeLines(written.append, limit=8)
    lines.feed(b"ab")
    assert written == []
    lines.feed(b"c\nde")
    assert written == [b"abc\n"]
    lines.feed(b"fghijklmn")  # 11 bytes with no newline: more than the limit, written as it is
    assert written == [b"abc\n", b"defghijklmn"]
    lines.feed(b"x")
    lines.flush()
    assert written[-1] == b"x"
