"""Child processes as request → handle → outcome, always in their own session, stopped by escalation.

Every stop goes EOF → SIGINT → SIGTERM → SIGKILL on the whole process group, each step with its own
deadline, and then sweeps descendants that escaped the group with `setsid` (found by the lane's
environment marker or by parentage under a subreaper). Nothing here trusts a pid alone: a process is
identified by (pid, create_time), so a recycled pid is never signalled.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import fcntl
import logging
import os
import signal
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lanes_tui.engine.procs.procfs import read_stat
from lanes_tui.engine.procs.tree import (
    TREE_READS,
    ProcKey,
    child_pids,
    descendant_pids,
    descendants,
    process_create_time,
    processes_with_env,
    reap_adopted_zombies,
    same_process,
)

__all__ = [  # the tree reads live in `tree`; they are re-exported for the callers that stop processes
    "TREE_READS", "ProcKey", "ProcessHandle", "ProcessOutcome", "ProcessRequest", "StopDeadlines", "chain_preexec",
    "child_pids",
    "descendant_pids", "descendants", "kill_processes", "kill_processes_now", "process_create_time",
    "processes_with_env", "reap_adopted_zombies", "same_process", "set_child_subreaper", "stop_group_now",
]

log = logging.getLogger(__name__)

PR_SET_CHILD_SUBREAPER = 36
#: The capacity of an agent's stdout pipe: four times Linux's default 64 KiB. The supervisor
#: reads a trickle after a rest of up to 2 s (`lanes.output_pump`, `lanes.cadence`), and what the agent
#: prints meanwhile must fit in the pipe, or the agent blocks and the reader takes it for a flood and
#: reads every write as it comes: a structured CLI's lines are KBs each (a tool result inline), and a
#: Claude lane at 20 lines a second prints ~180 KB/s (B3 `--traffic claude`). A pipe's capacity counts
#: against the user's pipe allowance (`/proc/sys/fs/pipe-user-pages-soft`, 64 MiB by default, past which
#: the kernel refuses to grow pipes and makes new ones small): 100 lanes' stdout take 25 MiB of it.
PIPE_BYTES = 256 * 1024


@dataclass(frozen=True)
class ProcessRequest:
    """What to start: argv list only, never a shell string."""

    argv: Sequence[str]
    cwd: Path
    env: Mapping[str, str] = field(repr=False)  # never in a log line: it holds the provider's keys
    stdin_pipe: bool = True
    name: str = "agent"
    #: Run in the child between fork and exec (e.g. `LaneCgroup.joiner()`); system calls only. Several
    #: steps (the cgroup join, then a confinement that forbids writing cgroupfs) are one `chain_preexec`.
    preexec: Callable[[], None] | None = None
    #: stdout and stderr as plain non-blocking pipe ends (`ProcessHandle.output_fds`) for a reader that
    #: polls them itself (`lanes.output_pump.pump_fd`), instead of asyncio stream readers.
    raw_output: bool = False


@dataclass(frozen=True)
class ProcessOutcome:
    """How a process ended, with monotonic start and end for durations."""

    returncode: int | None
    started: float
    ended: float
    stopped_by: str | None = None  # the escalation step that ended it, if we stopped it

    @property
    def duration_s(self) -> float:
        return self.ended - self.started


@dataclass
class StopDeadlines:
    """Seconds to wait after each escalation step before the next one."""

    eof: float = 2.0
    sigint: float = 2.0
    sigterm: float = 5.0
    sigkill: float = 5.0
    steps: tuple[str, ...] = field(default=("eof", "sigint", "sigterm", "sigkill"))

    @property
    def total_s(self) -> float:
        """The longest a whole stop sequence can take."""
        return float(sum(getattr(self, step) for step in self.steps))


def chain_preexec(*steps: Callable[[], None] | None) -> Callable[[], None] | None:
    """One `preexec_fn` that runs each step in order (None steps left out; None when none is left).

    Order matters: a cgroup join writes `cgroup.procs`, which a kernel ruleset applied after it may
    forbid, so the join comes first and a step that confines the child comes after it.
    """
    chosen = tuple(step for step in steps if step is not None)
    if not chosen:
        return None
    if len(chosen) == 1:
        return chosen[0]

    def run_all() -> None:
        for step in chosen:
            step()

    return run_all


def set_child_subreaper() -> bool:
    """Adopt orphaned descendants (e.g. a grandchild that called setsid) so they can be found and stopped."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


class ProcessHandle:
    """A running child in its own session; `stop()` escalates on its process group."""

    def __init__(self, request: ProcessRequest, proc: asyncio.subprocess.Process, started: float) -> None:
        self.request = request
        self.proc = proc
        self.started = started
        self.pgid = proc.pid  # start_new_session makes the child the leader of its own group
        self.key = ProcKey(proc.pid, process_create_time(proc.pid) or 0.0)
        self.stopped_by: str | None = None
        #: The read ends of stdout and stderr when the request asked for `raw_output`; their reader
        #: owns and closes them.
        self.output_fds: list[int] = []

    @property
    def pid(self) -> int:
        return self.proc.pid

    @classmethod
    async def start(cls, request: ProcessRequest) -> ProcessHandle:
        pipes = [os.pipe(), os.pipe()] if request.raw_output else []
        if pipes:
            _grow(pipes[0][0])  # stdout, where an agent prints its lines; stderr's few stay at the default
        try:
            proc = await asyncio.create_subprocess_exec(
                *request.argv,
                cwd=str(request.cwd),
                env=dict(request.env),
                stdin=asyncio.subprocess.PIPE if request.stdin_pipe else asyncio.subprocess.DEVNULL,
                stdout=pipes[0][1] if pipes else asyncio.subprocess.PIPE,
                stderr=pipes[1][1] if pipes else asyncio.subprocess.PIPE,
                start_new_session=True,
                preexec_fn=request.preexec,
            )
        except BaseException:
            for read_end, write_end in pipes:
                os.close(read_end)
                os.close(write_end)
            raise
        for read_end, write_end in pipes:  # the child holds the write ends now; EOF once it (and its own) exit
            os.close(write_end)
            os.set_blocking(read_end, False)
        log.info("started %s pid=%s argv0=%s", request.name, proc.pid, request.argv[0])
        handle = cls(request, proc, time.monotonic())
        handle.output_fds = [read_end for read_end, _ in pipes]
        return handle

    async def wait(self, timeout: float | None = None) -> int | None:
        """The exit code, or None if it is still running after `timeout` seconds."""
        try:
            return await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            return None

    async def stop(self, deadlines: StopDeadlines | None = None, extra: Iterable[ProcKey] = ()) -> int | None:
        """Escalate until the group is gone; then stop any listed straggler outside the group."""
        d = deadlines or StopDeadlines()
        for step in d.steps:
            if self.proc.returncode is not None and not _group_alive(self.pgid):
                break
            if step == "eof" and self.proc.stdin is None:
                continue  # nothing to close (a terminal agent): no reason to wait for it
            self.stopped_by = self.stopped_by or step
            if step == "eof":
                self._close_stdin()
                wait_s = d.eof
            else:
                sig = {"sigint": signal.SIGINT, "sigterm": signal.SIGTERM, "sigkill": signal.SIGKILL}[step]
                log.info("stop %s pid=%s pgid=%s: %s", self.request.name, self.pid, self.pgid, step)
                _signal_group(self.pgid, sig)
                wait_s = {"sigint": d.sigint, "sigterm": d.sigterm, "sigkill": d.sigkill}[step]
            await self.wait(wait_s)
            await _wait_group_gone(self.pgid, 0.2 if self.proc.returncode is not None else 0.0)
        stragglers = [k for k in extra if k.alive()]
        if stragglers:
            await kill_processes(stragglers, term_s=d.sigterm, kill_s=d.sigkill)
        return self.proc.returncode

    def _close_stdin(self) -> None:
        stdin = self.proc.stdin
        if stdin is not None and not stdin.is_closing():
            with contextlib.suppress(OSError, RuntimeError):
                stdin.close()

    def outcome(self, ended: float | None = None) -> ProcessOutcome:
        return ProcessOutcome(self.proc.returncode, self.started, ended or time.monotonic(), self.stopped_by)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _group_signalable(pgid: int) -> bool:
    """Does the kernel still know the group (zombies included)? A group we may not signal counts."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _group_alive(pgid: int) -> bool:
    """Any member of the group left? Zombies we adopted are reaped first so they do not count."""
    for attempt in range(2):
        if not _group_signalable(pgid):
            return False
        if attempt == 0 and not reap_adopted_zombies(keep=(pgid,)):
            return True
    return True


async def _wait_group_gone(pgid: int, timeout: float) -> None:
    end = time.monotonic() + timeout
    while _group_alive(pgid) and time.monotonic() < end:
        await asyncio.sleep(0.02)


async def kill_processes(
    keys: Iterable[ProcKey], *, term_s: float = 3.0, kill_s: float = 3.0
) -> list[ProcKey]:
    """SIGTERM every still-identical process, then SIGKILL survivors; returns those that had to be stopped."""
    targets = [k for k in keys if k.alive()]
    for sig, wait_s in ((signal.SIGTERM, term_s), (signal.SIGKILL, kill_s)):
        living = [k for k in targets if k.alive()]
        if not living:
            break
        for key in living:
            log.info("signal %s to pid=%s", sig.name, key.pid)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(key.pid, sig)
        end = time.monotonic() + wait_s
        while any(k.alive() for k in living) and time.monotonic() < end:
            await asyncio.sleep(0.02)
    return targets


def stop_group_now(leader: ProcKey, *, term_s: float = 3.0, kill_s: float = 3.0) -> list[int]:
    """Synchronously stop the process group `leader` leads (SIGTERM, then SIGKILL), for code that is
    not async (reconcile). Nothing is signalled unless the leader is still that very process;
    returns the pids of the group that were signalled.

    While any member lives, the kernel keeps the group's id from being reused, so the SIGKILL to the
    group after the leader has gone still reaches only the members that were in it.
    """
    if not leader.alive():
        return []
    pgid = leader.pid
    members = [pid for pid in _all_pids() if _pgid(pid) == pgid]
    for sig, wait_s in ((signal.SIGTERM, term_s), (signal.SIGKILL, kill_s)):
        log.info("signal %s to group %s", sig.name, pgid)
        _signal_group(pgid, sig)
        end = time.monotonic() + wait_s
        while _group_exists(pgid) and time.monotonic() < end:
            time.sleep(0.02)
        if not _group_exists(pgid):
            break
    return members


def _group_exists(pgid: int) -> bool:
    """Any member of the group left (zombies count: not ours to reap, their parent does)?

    Unlike `_group_alive` this reaps nothing, so it is safe in a process whose children asyncio
    waits for (the dashboard runs reconcile in a thread).
    """
    if not _group_signalable(pgid):
        return False
    return any(_pgid(pid) == pgid and _not_zombie(pid) for pid in _all_pids())


def _all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _not_zombie(pid: int) -> bool:
    stat = read_stat(pid)
    return stat is not None and not stat.zombie


def kill_processes_now(keys: Iterable[ProcKey], *, term_s: float = 3.0, kill_s: float = 3.0) -> list[int]:
    """`kill_processes` for code that is not async: SIGTERM, then SIGKILL survivors; the pids signalled."""
    targets = [k for k in keys if k.alive()]
    for sig, wait_s in ((signal.SIGTERM, term_s), (signal.SIGKILL, kill_s)):
        living = [k for k in targets if k.alive()]
        for key in living:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(key.pid, sig)
        end = time.monotonic() + wait_s
        while any(k.alive() for k in living) and time.monotonic() < end:
            time.sleep(0.02)
    return [k.pid for k in targets]


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None




#: ioprio_set(2) by machine: Python has no wrapper, and psutil (its `ionice`) is kept out of supervisors.
_IOPRIO_SET = {"x86_64": 251, "aarch64": 30, "i686": 289, "i386": 289, "armv7l": 314, "ppc64le": 273,
               "s390x": 282, "riscv64": 30}


def lower_io_priority(level: int = 7) -> bool:
    """This process (and what it starts later) in the best-effort I/O class at `level`; False if not set."""
    number = _IOPRIO_SET.get(os.uname().machine)
    if number is None:
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    best_effort, who_process = 2, 1
    return int(libc.syscall(number, who_process, 0, (best_effort << 13) | level)) == 0


def _grow(fd: int) -> None:
    """Give the pipe `fd` `PIPE_BYTES` of room; a kernel or a limit that refuses leaves the default."""
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
