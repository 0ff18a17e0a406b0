"""`python -m lanes_tui.engine.procs.reaper_shim [--grace S] [--parent PID] -- ARGV...`: a process
that takes its child's whole tree with it when it goes.

Why it exists: a lane on a Ray cluster runs inside an actor's worker process, and `ray.kill` (or a
node that drops the actor) SIGKILLs that worker. The lane's supervisor and agent run in sessions of
their own, so nothing would stop them: they would go on working, unseen, on a node the lead has
written off. The actor therefore starts the supervisor under this shim. The shim

* asks the kernel for SIGTERM when its parent dies (`PR_SET_PDEATHSIG`), and checks the parent is
  still the one it was started under right after, closing the race where it died first;
* is a child subreaper (`PR_SET_CHILD_SUBREAPER`), so whatever its child orphans (a `setsid`'d
  grandchild) is re-parented to it, stays findable under `/proc/<shim>/task/*/children`, and is
  reaped by it;
* on SIGTERM, SIGINT or SIGHUP (or its parent's death) sends SIGTERM to its child (the supervisor,
  which then stops its agent by escalation), waits up to `--grace` seconds for it, then SIGKILLs
  every descendant that is left and reaps them all;
* when its child exits on its own, stops any descendant left behind (SIGTERM, then SIGKILL, each
  with a deadline) and exits with the child's code (128 + the signal if a signal killed it).

So the worker's death takes the lane's tree with it. The shim sits above every Ray lane for the
lane's whole life, so it stays import-light: only the standard library's `os`, `signal`, `select`,
`sys`, `time`, `contextlib` and `ctypes`, nothing of lanes-tui (not even `procs.tree`, which pulls in `typing` and
`dataclasses`). `--parent` names the pid the shim must be the child of (the starter passes its own
pid); without it, the parent seen at start is taken.

The PDEATHSIG caveat: the kernel sends it when the *thread* that started the shim exits, not only
the process, so the starter must start it from a thread that lives as long as the lane (a Ray
actor's method threads do).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time

#: How long a stopped child (the supervisor) gets before every descendant is SIGKILLed. It matches
#: `lanes.launcher.SUPERVISOR_STOP_GRACE_S` (the supervisor's own stop sequence, EOF → SIGINT →
#: SIGTERM → SIGKILL on its agent, plus room; a test keeps the two equal): importing the launcher
#: here would load most of the engine into a process that only waits.
DEFAULT_GRACE_S = 20.0
#: Descendants left after the child itself is gone: SIGTERM, this long, then SIGKILL, this long.
LEFTOVER_TERM_S = 3.0
LEFTOVER_KILL_S = 3.0
#: How often the shim looks again without a signal to wake it: its parent (should PDEATHSIG be
#: unavailable) and, while stopping, descendants that are not its children.
IDLE_WAKE_S = 1.0
STOP_POLL_S = 0.05

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
USAGE = "usage: python -m lanes_tui.engine.procs.reaper_shim [--grace SECONDS] [--parent PID] -- ARGV..."


class Shim:
    """The shim's state: its child, how the child ended, and whether a stop was asked for."""

    def __init__(self, parent: int) -> None:
        self.parent = parent
        self.child = 0
        self.status: int | None = None  # the child's wait status once reaped
        self.stop = False
        self._wake_r, self._wake_w = os.pipe()  # non-inheritable: the child never holds them
        os.set_blocking(self._wake_w, False)
        os.set_blocking(self._wake_r, False)
        signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)  # a full pipe still wakes `_sleep`
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on_stop)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so a child's death wakes `_sleep`

    def _on_stop(self, signum: int, frame: object) -> None:
        self.stop = True

    def parent_gone(self) -> bool:
        return os.getppid() != self.parent

    def reap(self) -> None:
        """Reap every child that ended (the child and any orphan re-parented here); note the child's status."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.child:
                self.status = status

    def _sleep(self, seconds: float) -> None:
        """Wait for a signal (a child's death, a stop) or `seconds`, whichever comes first."""
        select.select([self._wake_r], [], [], max(0.0, seconds))
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wake_r, 512):
                pass

    def wait_child(self) -> bool:
        """Until the child is reaped (True) or a stop is asked for: a signal, or the parent gone (False)."""
        while True:
            self.reap()
            if self.status is not None:
                return True
            if self.stop or self.parent_gone():
                self.stop = True
                return False
            self._sleep(IDLE_WAKE_S)

    def wait_stopped_child(self, grace_s: float) -> None:
        """After the stop's SIGTERM: the child's exit, or the end of the grace."""
        deadline = time.monotonic() + grace_s
        while self.status is None and time.monotonic() < deadline:
            self.reap()
            if self.status is None:
                self._sleep(min(IDLE_WAKE_S, deadline - time.monotonic()))

    def sweep(self, *, term_s: float, kill_s: float) -> None:
        """Stop every descendant left: SIGTERM and `term_s` (skipped when 0), then SIGKILL and
        `kill_s`, reaping as they go. A descendant that is not our child is reaped by its parent."""
        for sig, wait_s in ((signal.SIGTERM, term_s), (signal.SIGKILL, kill_s)):
            if sig == signal.SIGTERM and term_s <= 0:
                continue
            living = _descendants(os.getpid())
            if not living:
                return
            for pid in living:
                _signal(pid, sig)
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline:
                self.reap()
                if not _descendants(os.getpid()):
                    return
                self._sleep(STOP_POLL_S)
        self.reap()

    def exit_code(self) -> int:
        status = self.status
        if status is None:
            return 128 + signal.SIGKILL
        if os.WIFSIGNALED(status):
            return 128 + os.WTERMSIG(status)
        return os.waitstatus_to_exitcode(status)


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _children(pid: int) -> list[int]:
    """Direct children from the kernel's per-task lists (no scan of every process)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as handle:
                found.extend(int(x) for x in handle.read().split())
        except OSError:
            continue
    return found


def _alive(pid: int) -> bool:
    """Not gone and not a zombie (a zombie only waits to be reaped: signalling it does nothing)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return False
    return raw[raw.rindex(b")") + 2:][:1] not in (b"Z", b"X")


def _descendants(root: int) -> list[int]:
    """Every living descendant, read twice: a children list is only reliable for stopped tasks
    (proc(5)), so the union of two walks is taken, as `procs.tree.descendant_pids` does."""
    union: dict[int, None] = {}
    for _ in range(2):
        frontier, seen = [root], {root}
        while frontier:
            nxt: list[int] = []
            for parent in frontier:
                for child in _children(parent):
                    if child not in seen:
                        seen.add(child)
                        union[child] = None
                        nxt.append(child)
            frontier = nxt
    return [pid for pid in union if _alive(pid)]


def _prctl(option: int, value: int) -> bool:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(option, value, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _spawn(command: list[str]) -> int:
    """Start the child in a session of its own, with the signals Python ignores (SIGPIPE, SIGXFSZ) back
    to their defaults, as `subprocess.Popen` would."""
    return os.posix_spawnp(command[0], command, os.environ, setsid=True, setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))


def parse_args(argv: list[str]) -> tuple[float, int | None, list[str]]:
    """(grace, parent pid or None, the child's argv); ValueError with the reason for bad input."""
    grace, parent = DEFAULT_GRACE_S, None
    args = list(argv)
    while args and args[0] != "--":
        if args[0] in ("--grace", "--parent") and len(args) >= 2:
            try:
                number = float(args[1]) if args[0] == "--grace" else int(args[1])
            except ValueError:
                raise ValueError(f"{args[0]} wants a number, not {args[1]!r}") from None
            if args[0] == "--grace":
                if not 0 <= number < 86400:
                    raise ValueError(f"--grace {args[1]} is out of range (0 to 86400 seconds)")
                grace = float(number)
            else:
                if not 0 < number < 2**22:
                    raise ValueError(f"--parent {args[1]} is not a pid")
                parent = int(number)
            del args[:2]
        else:
            raise ValueError(f"unknown argument {args[0]!r}")
    if len(args) < 2:
        raise ValueError("no command after --")
    return grace, parent, args[1:]


def main(argv: list[str] | None = None) -> int:
    try:
        grace, parent, command = parse_args(sys.argv[1:] if argv is None else argv)
    except ValueError as exc:
        print(f"reaper_shim: {exc}\n{USAGE}", file=sys.stderr)
        return 2
    shim = Shim(parent if parent is not None else os.getppid())
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if shim.parent_gone():  # it died before PDEATHSIG was armed: nobody would ever stop us
        print("reaper_shim: the parent is already gone; not starting", file=sys.stderr)
        return 128 + signal.SIGTERM
    if shim.stop:
        return 128 + signal.SIGTERM
    try:
        shim.child = _spawn(command)
    except (OSError, NotImplementedError) as exc:  # NotImplementedError: a libc without POSIX_SPAWN_SETSID
        print(f"reaper_shim: cannot start {command[0]}: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
        return 127
    if shim.wait_child():  # the child ended by itself: stop whatever it left behind
        shim.sweep(term_s=LEFTOVER_TERM_S, kill_s=LEFTOVER_KILL_S)
        return shim.exit_code()
    _signal(shim.child, signal.SIGTERM)  # a stop (a signal, or the parent's death)
    shim.wait_stopped_child(grace)
    shim.sweep(term_s=0.0 if shim.status is None else LEFTOVER_TERM_S, kill_s=LEFTOVER_KILL_S)
    if shim.status is None:  # SIGKILLed in the sweep; reap it, so its status is known
        deadline = time.monotonic() + LEFTOVER_KILL_S
        while shim.status is None and time.monotonic() < deadline:
            shim.reap()
            if shim.status is None:
                shim._sleep(STOP_POLL_S)
    return shim.exit_code()


if __name__ == "__main__":
    sys.exit(main())
