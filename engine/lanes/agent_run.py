"""One provider run inside the supervisor: output pump, watchdog ticks, wall-clock limit, outcome.

Output goes to `output.log` as raw bytes (nothing is lost or re-encoded) and, framed into lines with
a size guard for output that never sends a newline, to the pattern scanner and the channel
(`engine.channels`). The channel is also ticked on its own short interval, independent of the
watchdog's `sample_s`, so an answer reaches the agent promptly; a channel with `uses_pty` gets the
agent started in a pseudo-terminal instead of on pipes.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import signal
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO

from lanes_tui.engine.channels import Channel
from lanes_tui.engine.channels.base import ProviderError
from lanes_tui.engine.core.atomic import append_jsonl
from lanes_tui.engine.core.clock import Clock
from lanes_tui.engine.lanes.cadence import OutputCadence
from lanes_tui.engine.lanes.classify import Classification, PatternScanner, classify
from lanes_tui.engine.lanes.guard import Finding, RunGuard, first_exit_finding, first_finding, release_all
from lanes_tui.engine.lanes.output_pump import MAX_LINE, READ_CHUNK, REST_S, LineFramer, WholeLines, pump, pump_fd
from lanes_tui.engine.lanes.pipe_io import PipeIO
from lanes_tui.engine.lanes.watchdog import ProcInfo, Sample, Verdict, Watchdog
from lanes_tui.engine.procs.process import (
    ProcessHandle,
    ProcessRequest,
    ProcKey,
    StopDeadlines,
    kill_processes,
    reap_adopted_zombies,
)
from lanes_tui.engine.procs.sampler import sample_tree

if TYPE_CHECKING:
    from lanes_tui.engine.channels.pty_process import PtyTerminal

log = logging.getLogger(__name__)

__all__ = ["MAX_LINE", "READ_CHUNK", "AgentRun", "LineFramer", "RunOutcome", "RunSettings"]


@dataclass
class RunSettings:
    timeout_s: float
    idle_timeout_s: float
    sample_s: float
    deadlines: StopDeadlines = field(default_factory=StopDeadlines)
    warn_after_s: float | None = None  # past this idle time a sample carries the process tree


@dataclass
class RunOutcome:
    classification: Classification
    returncode: int | None
    started: float
    ended: float
    stall_report: dict[str, Any] | None = None
    #: Set when a guard (a cap, the spend) ended or explained the run.
    finding: Finding | None = None
    #: The first line that matched the provider's `retry_patterns`, if any (`supervisor.retry.settle`).
    retry_hit: str | None = None
    #: The structured API error the channel reported last, if any (`supervisor.retry.settle`).
    error: ProviderError | None = None


class AgentRun:
    """Runs one agent process to its end and says how it ended."""

    def __init__(self, request: ProcessRequest, *, stdin_data: bytes | None, keep_stdin_open: bool,
                 output: BinaryIO, samples_path: Any, scanner: PatternScanner, settings: RunSettings,
                 clock: Clock, files_changed: Callable[[], bool], is_waiting: Callable[[], bool],
                 on_waiting: Callable[[bool], None], on_line: Callable[[bytes], None] | None = None,
                 on_stall: Callable[[dict[str, Any]], None] | None = None,
                 on_started: Callable[[ProcessHandle], None] | None = None,
                 channel: Channel | None = None, guards: Sequence[RunGuard] = (),
                 cadence: OutputCadence | None = None) -> None:
        self.request = request
        self.stdin_data = stdin_data
        self.keep_stdin_open = keep_stdin_open
        self.output = output
        self.samples_path = samples_path
        self.scanner = scanner
        self.settings = settings
        self.clock = clock
        self.files_changed = files_changed
        self.is_waiting = is_waiting
        self.on_waiting = on_waiting
        self.on_line = on_line
        self.on_stall = on_stall
        self.on_started = on_started
        self.channel = channel
        self.guards = tuple(guards)
        self.output_bytes = 0
        self.handle: ProcessHandle | None = None
        self.terminal: PtyTerminal | None = None
        self.stop_requested = asyncio.Event()
        self.waiting = False
        self._last_procs: tuple[ProcInfo, ...] = ()
        self._last_sample: Sample | None = None
        #: A trickle of output is read at most once per `rest_s` (`output_pump`); a flood at once.
        self.rest_s = REST_S
        #: Longer rests while nobody watches the lane (the supervisor's `cadence`, which the dashboard's
        #: watch lease reaches).
        self.cadence = cadence or OutputCadence()
        #: Every rest the live one: without a supervisor's cadence (a review run, which no lease reaches),
        #: or for a channel that can ask the lead (its questions must not wait).
        self._live = cadence is None or (channel is not None and channel.asks)
        #: An unwatched rest stays within a quarter of the idle timeout (`OutputCadence.delay`).
        self._most_rest = settings.idle_timeout_s / 4 if settings.idle_timeout_s > 0 else float("inf")
        #: Set after each batch of output: wakes an asking channel that has nothing pending.
        self._beat = asyncio.Event()

    async def _start(self) -> tuple[ProcessHandle, list[asyncio.StreamReader | int]]:
        channel = self.channel
        if channel is not None and channel.uses_pty:
            # Only a terminal lane pays for the pty machinery (and pyte behind it).
            from lanes_tui.engine.channels.pty_process import start_in_pty
            from lanes_tui.engine.channels.screen import COLUMNS, ROWS

            handle, self.terminal = await start_in_pty(self.request, rows=ROWS, columns=COLUMNS,
                                                       on_bytes=self._guarded(channel.on_output))
            channel.attach(self.terminal)
            return handle, [self.terminal.reader]
        handle = await ProcessHandle.start(dataclasses.replace(self.request, raw_output=True))
        if channel is not None:
            channel.attach(PipeIO(handle))
        return handle, list(handle.output_fds)

    async def run(self) -> RunOutcome:
        started = self.clock.time()
        try:
            self.handle, streams = await self._start()
        except (FileNotFoundError, PermissionError, NotADirectoryError, subprocess.SubprocessError) as exc:
            # SubprocessError: the child failed before exec (its cgroup join or Landlock ruleset).
            reason = f"cannot start {self.request.argv[0]!r}: {getattr(exc, 'strerror', None) or exc}"
            self._write(f"lanes-tui: {reason}\n".encode())
            outcome = classify(None, self.scanner, spawn_error=reason)
            return RunOutcome(outcome, 127, started, self.clock.time())
        handle = self.handle
        if self.on_started is not None:
            self.on_started(handle)
        feeder = asyncio.create_task(self._feed_stdin(handle))
        pumps = [asyncio.create_task(self._pump(s)) for s in streams]
        ticker = asyncio.create_task(self._tick_channel())
        waiter = asyncio.create_task(handle.proc.wait())
        stop_wait = asyncio.create_task(self.stop_requested.wait())
        watchdog = Watchdog(self.settings.idle_timeout_s)
        begin = self.clock.monotonic()
        last_tick = begin
        waited = 0.0  # time spent waiting for the lead does not count against the wall-clock limit
        stalled: Verdict | None = None
        stall_report: dict[str, Any] | None = None
        timed_out: float | None = None
        finding: Finding | None = None
        try:
            while not waiter.done():
                done, _ = await asyncio.wait({waiter, stop_wait}, timeout=self.settings.sample_s,
                                             return_when=asyncio.FIRST_COMPLETED)
                if waiter in done or stop_wait in done:
                    break
                verdict = self._tick(watchdog)
                if verdict.stalled and stalled is None:
                    stalled = verdict
                    stall_report = {"idle_s": round(verdict.idle_s, 1), "at": self.clock.time(),
                                    "tree": [p.to_json() for p in self._last_procs],
                                    "idle_timeout_s": self.settings.idle_timeout_s}
                    if self.on_stall is not None:
                        self.on_stall(stall_report)
                    break
                finding = first_finding(self.guards, self._last_sample)
                if finding is not None:
                    break
                now = self.clock.monotonic()
                if "waiting" in verdict.reasons:
                    waited += now - last_tick
                last_tick = now
                self._set_waiting("waiting" in verdict.reasons)
                if self.settings.timeout_s > 0 and now - begin - waited >= self.settings.timeout_s:
                    timed_out = self.settings.timeout_s
                    break
            if not waiter.done():
                # We are about to kill the agent: its channel must not read the dying screen as a
                # vanished prompt; open questions are orphaned when the channel closes.
                ticker.cancel()
                deadlines = self.settings.deadlines
                if finding is not None:
                    # A cap, or the lead's "no" at a spend cap: no grace for more work. SIGTERM is sent
                    # while the lane may still be paused, so it lands before the agent runs again.
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(handle.pgid, signal.SIGTERM)
                    deadlines = dataclasses.replace(deadlines, steps=("sigterm", "sigkill"))
                release_all(self.guards)
                await handle.stop(deadlines, extra=[ProcKey(p.pid, p.create_time) for p in self._last_procs])
            await waiter
            self.cadence.wake()  # the agent is gone: its last output is read now, not after a rest
            if finding is None and stalled is None and timed_out is None and not self.stop_requested.is_set():
                finding = first_exit_finding(self.guards, handle.proc.returncode, self._last_procs)
            await asyncio.wait(pumps, timeout=5.0)
        finally:
            release_all(self.guards)
            for task in (feeder, ticker, stop_wait, *pumps):
                task.cancel()
            for task in (feeder, ticker, stop_wait, *pumps):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            if self.channel is not None:
                self._guarded(self.channel.close)()
            if self.terminal is not None:
                self.terminal.close()
            await self._stop_descendants()
        rc = handle.proc.returncode
        if finding is not None:
            result = Classification(finding.result, finding.reason)
        else:
            channel = self.channel
            result = classify(rc, self.scanner, stalled=stalled is not None, timed_out=timed_out,
                              stopped_by_lead=self.stop_requested.is_set(),
                              error=channel.error if channel is not None else None,
                              provider=channel.ctx.provider if channel is not None else None)
        return RunOutcome(result, rc, started, self.clock.time(), stall_report, finding, self.scanner.retry_hit,
                          self.channel.error if self.channel is not None else None)

    def _set_waiting(self, waiting: bool) -> None:
        if waiting != self.waiting:
            self.waiting = waiting
            self.on_waiting(waiting)

    async def _tick_channel(self) -> None:
        """An asking channel's beat: answers are delivered within `poll_s`, not at the next sample.

        It beats only while the channel `needs_beat` (a question pending, a terminal to watch); in
        between, the next batch of output wakes it, in the same loop turn as the read.
        """
        channel = self.channel
        if channel is None or not channel.asks:
            return  # it flushes its meters after output and at each sample (`Channel.flush_due`)
        while True:
            try:
                await channel.tick()
                # The channel opens and closes questions itself: show `waiting` now, not at the
                # next watchdog sample.
                self._set_waiting(self.is_waiting())
            except Exception:
                log.exception("channel tick failed")
            self._beat.clear()
            if channel.needs_beat:
                await asyncio.sleep(channel.poll_s)
            else:  # nothing pending: the next output (or a question it opens) wakes the channel
                await self._beat.wait()

    async def _feed_stdin(self, handle: ProcessHandle) -> None:
        if self.terminal is not None:
            if self.stdin_data:
                self.terminal.write(self.stdin_data)
            return
        stdin = handle.proc.stdin
        if stdin is None:
            return
        try:
            if self.stdin_data:
                stdin.write(self.stdin_data)
                await stdin.drain()
            if not self.keep_stdin_open:
                stdin.close()
        except (BrokenPipeError, ConnectionResetError):
            return

    async def _pump(self, stream: asyncio.StreamReader | int) -> None:
        """One output stream to the lane's log, the channel and the scanner (a pipe end or the terminal)."""
        channel = self.channel
        raw_hook = self._guarded(channel.on_output) if channel is not None and not channel.uses_pty else None

        after: Callable[[], None] | None = None
        if channel is not None:
            after = self._beat.set if channel.asks else self._guarded(channel.flush_due)

        # A pipe (stdout, stderr) reaches the log a whole line at a time, so the two never mix in a line.
        lines = WholeLines(self._log) if isinstance(stream, int) else None

        def on_chunk(chunk: bytes) -> None:
            if lines is None:
                self._write(chunk)
            else:
                self.output_bytes += len(chunk)
                lines.feed(chunk)
            if raw_hook is not None:
                raw_hook(chunk)

        if isinstance(stream, int):
            try:
                await pump_fd(stream, on_chunk=on_chunk, on_block=self._block, rest_s=self.rest_s, after=after,
                              sleep=self._rest)
            finally:
                assert lines is not None
                lines.flush()
        else:
            await pump(stream, self.terminal, on_chunk=on_chunk, on_block=self._block, rest_s=self.rest_s,
                       after=after, sleep=self._rest)

    async def _rest(self, rest_s: float, *, most: float = float("inf")) -> None:
        """The pump's rest; `most` is what the pipe allows at the rate seen (`output_pump.Rhythm`)."""
        await self.cadence.rest(rest_s, live=self._live, most=min(self._most_rest, most))

    @staticmethod
    def _guarded(hook: Callable[..., None]) -> Callable[..., None]:
        """A channel bug is logged, never allowed to kill the lane or the pump."""

        def call(*args: Any) -> None:
            try:
                hook(*args)
            except Exception:
                log.exception("channel hook %s failed", getattr(hook, "__qualname__", hook))

        return call

    def _write(self, chunk: bytes) -> None:
        self._log(chunk)
        self.output_bytes += len(chunk)

    def _log(self, chunk: bytes) -> None:
        self.output.write(chunk)
        self.output.flush()

    def _block(self, block: bytes) -> None:
        """The complete lines of one read: scanned as one text, then to the hooks."""
        self.scanner.feed_bytes(block)
        if self.on_line is not None:
            for line in block.split(b"\n"):
                try:
                    self.on_line(line)
                except Exception:
                    log.exception("line hook failed")
        if self.channel is not None:
            try:
                self.channel.on_block(block)
            except Exception:  # a channel parser bug must not kill the lane
                log.exception("channel hook failed on a block of output")

    def _tick(self, watchdog: Watchdog) -> Verdict:
        if self.channel is not None and not self.channel.asks:
            self._guarded(self.channel.flush_due)()  # a meter write held back by its rate limit
        reap_adopted_zombies(keep=(self.handle.pid,) if self.handle else ())
        procs = sample_tree()
        self._last_procs = procs or self._last_procs
        sample = Sample(self.clock.monotonic(), self.output_bytes, self.files_changed(), procs,
                        waiting=self.is_waiting(), retrying=self._retrying())
        self._last_sample = sample
        verdict = watchdog.observe(sample)
        record: dict[str, object] = {
            "t": self.clock.time(), "idle_s": round(verdict.idle_s, 2),
            "cpu_percent": round(verdict.cpu_percent, 1), "rss_bytes": sample.rss,
            "procs": len(procs), "output_bytes": self.output_bytes,
            "active": list(verdict.reasons), "waiting": sample.waiting,
        }
        warn = self.settings.warn_after_s
        if warn and verdict.idle_s >= warn and not sample.waiting:
            # The Stalls pane shows what a quiet lane is running before the watchdog has to act.
            record["tree"] = [p.to_json() for p in procs[:12]]
        append_jsonl(self.samples_path, record)
        return verdict

    def _retrying(self) -> bool:
        """The CLI said it waits before retrying by itself (`Channel.report_retry`) and that time has
        not come: its silence is the provider's back-off, not a stall."""
        until = self.channel.retrying_until if self.channel is not None else None
        return until is not None and self.clock.time() < until

    async def _stop_descendants(self) -> None:
        """Whatever is still below the supervisor once the agent is gone (setsid grandchildren)."""
        left = sample_tree(stable=True)
        if left:
            keys: Sequence[ProcKey] = [ProcKey(p.pid, p.create_time) for p in left]
            log.info("stopping %d leftover descendant(s): %s", len(keys), [k.pid for k in keys])
            await kill_processes(keys, term_s=self.settings.deadlines.sigterm,
                                 kill_s=self.settings.deadlines.sigkill)
            reap_adopted_zombies(keep=(self.handle.pid,) if self.handle else ())
