"""The fork server: one warm interpreter per repository that forks the lanes' supervisors.

`python -m lanes_tui.engine.supervisor.fork_server --repo R` imports what a supervisor imports, freezes
those objects out of the collector's reach (`gc.freeze`: a collection would otherwise write to every
one of them and un-share its page), and then forks one supervisor per request of `lanes.fork_client`.
Forked supervisors share those pages with the server and each other until they write them: about 9 MB
of PSS a lane instead of 13–14 (B10, issue 15).

Each child is a supervisor as `python -m lanes_tui.engine.supervisor` would be: its own session, the
lane's `supervisor.log` as stdout and stderr, the repository as its folder, and the environment the
request carried (allow-listed by the launcher). Its `/proc/PID/environ` is the server's, which holds
no provider's variables at all. The server reaps its children, and leaves once it has had none for
`LINGER_S` (a pidfd per child wakes it as one ends); the supervisors it started go on without it, as
detached supervisors always did.

Replies, one JSON line each: `{"forked": PID}` as soon as the child exists, then `{"ok": true, "pid":
PID}` once it said it is up, or `{"ok": false, "error": …}`; a request refused before any fork is
answered `{"ok": false, "refused": true, …}` alone, so the launcher knows nothing was started.
"""

import sys

sys.modules.setdefault("ssl", None)  # type: ignore[arg-type]  # as `supervisor.__main__`: no TLS in a supervisor

import atexit  # noqa: E402
import contextlib  # noqa: E402
import errno  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, NoReturn  # noqa: E402

from lanes_tui.engine.core.errors import LanesError  # noqa: E402
from lanes_tui.engine.core.peer import peer_uid  # noqa: E402
from lanes_tui.engine.lanes.fork_client import address  # noqa: E402
from lanes_tui.engine.state.paths import StatePaths  # noqa: E402
from lanes_tui.engine.supervisor import entry  # noqa: E402
from lanes_tui.engine.supervisor.detach import detach, signal_ready  # noqa: E402

#: Seconds without a child before the server leaves, once it has served a launcher.
LINGER_S = 0.25
#: Seconds a new server waits for the launcher that started it (which connects at once).
FIRST_REQUEST_S = 10.0
#: How often the server wakes to reap children while nothing asks it anything.
POLL_S = 0.5
#: How long a forked supervisor may take to say it is up (the launcher's own limit).
START_TIMEOUT_S = 30.0
READY_ENV = "LANES_SUPERVISOR_READY_FD"
#: How long a child that closed its ready pipe unheard gets to end by itself before it is killed.
EXIT_GRACE_S = 2.0
MAX_REQUEST_BYTES = 1 << 20


@dataclass
class _Starting:
    """A forked supervisor that has not said it is up yet, and the launcher waiting for it."""

    pid: int
    conn: socket.socket
    deadline: float


class ForkServer:
    """Accepts requests on `listener` and forks a supervisor for each; `serve` returns when idle.

    Supervisors start side by side: the server waits for each one's "up" byte in the same `select`
    as for new requests, so one slow start (a cold disk, a busy machine) holds up no other launch.
    """

    def __init__(self, repo: Path, listener: socket.socket, *, linger_s: float = LINGER_S,
                 first_request_s: float = FIRST_REQUEST_S, start_timeout_s: float = START_TIMEOUT_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.repo = repo
        self.paths = StatePaths(repo)
        self.listener = listener
        self.linger_s = linger_s
        self.first_request_s = first_request_s
        self.served = False  # whether any launcher has connected yet
        self.start_timeout_s = start_timeout_s
        self.clock = clock
        self.children: set[int] = set()
        self.starting: dict[int, _Starting] = {}  # by the read end of the child's ready pipe
        self.exits: dict[int, int] = {}  # pidfd -> child pid: readable when the child has ended

    def serve(self) -> int:
        quiet_since = self.clock()
        while True:
            self._reap()
            now = self.clock()
            wait = POLL_S
            if self.children or self.starting:
                quiet_since = now
            else:
                grace = self.linger_s if self.served else self.first_request_s
                if now - quiet_since >= grace:
                    break
                wait = min(wait, grace - (now - quiet_since))
            wait = min([wait, *(max(0.0, s.deadline - now) for s in self.starting.values())])
            listening = self.listener.fileno()
            for fd in select.select([listening, *self.starting, *self.exits], [], [], wait)[0]:
                if fd == listening:
                    try:
                        conn, _ = self.listener.accept()
                    except OSError:  # the launcher went away between its connect and our accept
                        continue
                    self.served = True
                    self._handle(conn)
                elif fd in self.starting:
                    self._started(fd)
            for fd, starting in list(self.starting.items()):
                if self.clock() >= starting.deadline:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(starting.pid, signal.SIGKILL)  # its own session: pgid == pid
                    self._finish(fd, {"ok": False, "error": f"it did not say it was up within "
                                                            f"{self.start_timeout_s:g}s"})
        self._close()
        return 0

    def _close(self) -> None:
        """Stop listening; any request that reached the queue meanwhile is told to go elsewhere."""
        self.listener.setblocking(False)
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                break
            with conn:
                _send(conn, {"ok": False, "refused": True, "error": "the fork server is leaving"})
        self.listener.close()

    def _reap(self) -> None:
        for pid in list(self.children):
            with contextlib.suppress(ChildProcessError):
                done, _ = os.waitpid(pid, os.WNOHANG)
                if not done:
                    continue
            self.children.discard(pid)
        for fd, pid in list(self.exits.items()):
            if pid not in self.children:
                os.close(fd)
                del self.exits[fd]

    def _watch_exit(self, pid: int) -> None:
        """Wake the loop the moment this child ends (a pidfd), so the server leaves right after its
        last supervisor; where there are no pidfds, the loop finds it within `POLL_S`."""
        with contextlib.suppress(OSError, AttributeError):
            self.exits[os.pidfd_open(pid)] = pid

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(5.0)
        try:
            if peer_uid(conn) != os.getuid():
                conn.close()  # not the lead's: no answer at all
                return
            lane_id, env = self._request(conn)
            if _gone(conn):  # the launcher gave up waiting: it must not get a supervisor it cannot know of
                conn.close()
                return
        except (OSError, ValueError, LanesError) as exc:
            _send(conn, {"ok": False, "refused": True, "error": str(exc)})
            conn.close()
            return
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            for sock in (self.listener, conn, *(s.conn for s in self.starting.values())):
                sock.detach()  # the child closes every inherited descriptor itself; no object may close one later
            _become_supervisor(self.repo, lane_id, env, self.paths.lane(lane_id).supervisor_log, write_fd)
        os.close(write_fd)
        self.children.add(pid)
        self._watch_exit(pid)
        _send(conn, {"forked": pid})
        self.starting[read_fd] = _Starting(pid, conn, self.clock() + self.start_timeout_s)

    def _request(self, conn: socket.socket) -> tuple[str, dict[str, str]]:
        data = b""
        while b"\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                raise ValueError("the request ended early")
            data += chunk
            if len(data) > MAX_REQUEST_BYTES:
                raise ValueError("the request is too long")
        request: Any = json.loads(data.split(b"\n", 1)[0])
        if not isinstance(request, dict):
            raise ValueError("a request is a JSON object")
        lane_id, env = request.get("lane"), request.get("env")
        if not isinstance(lane_id, str) or not isinstance(env, dict) or not all(
                isinstance(k, str) and isinstance(v, str) and k and "=" not in k and "\0" not in k + v
                for k, v in env.items()):
            raise ValueError("a request names a lane and gives its environment as names and values")
        if not self.paths.lane(lane_id).record.is_file():  # validates the id; the lane must exist
            raise LanesError(f"no lane {lane_id!r} in {self.repo}")
        return lane_id, env

    def _started(self, fd: int) -> None:
        """The child's one byte on its pipe (`detach.signal_ready`), or its end before it."""
        starting = self.starting[fd]
        if os.read(fd, 1) == b"1":
            self._finish(fd, {"ok": True, "pid": starting.pid})
            return
        status = _wait_briefly(starting.pid, EXIT_GRACE_S)  # it closed its pipe unheard: it is ending
        if status is None:  # or it must
            with contextlib.suppress(ProcessLookupError):
                os.killpg(starting.pid, signal.SIGKILL)
            _, status = os.waitpid(starting.pid, 0)
        self.children.discard(starting.pid)
        self._finish(fd, {"ok": False, "error": f"it exited with code {os.waitstatus_to_exitcode(status)}"})

    def _finish(self, fd: int, reply: dict[str, Any]) -> None:
        starting = self.starting.pop(fd)
        os.close(fd)
        with starting.conn:
            _send(starting.conn, reply)


def _wait_briefly(pid: int, seconds: float) -> int | None:
    """The child's wait status once it has ended, or None if it is still running after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.02)


def _gone(conn: socket.socket) -> bool:
    """True if the other end has closed the connection: readable now, and a peek finds its end."""
    if not select.select([conn], [], [], 0)[0]:
        return False  # nothing to read: the launcher is there, waiting for the answer
    try:
        return conn.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def _become_supervisor(repo: Path, lane_id: str, env: dict[str, str], log_path: Path, ready_fd: int) -> NoReturn:
    """In the forked child: the lane's supervisor, then `os._exit` (never back into the server)."""
    code = 1
    try:
        os.closerange(3, ready_fd)  # the server's socket and every launcher's connection among them
        os.closerange(ready_fd + 1, 65536)
        os.setsid()
        log_fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        null_fd = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null_fd, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        for fd in (null_fd, log_fd):
            os.close(fd)
        os.chdir(repo)
        os.environ.clear()
        os.environ.update(env)
        os.environ[READY_ENV] = str(ready_fd)
        code = entry.main(["--repo", str(repo), "--lane", lane_id])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            atexit._run_exitfuncs()  # what a supervisor registers (the module report of the tests)
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _send(conn: socket.socket, message: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        conn.sendall(json.dumps(message).encode() + b"\n")


def _seconds(text: str) -> float | None:
    """A first-request wait from the command line: more than 0, at most `FIRST_REQUEST_S`; else None."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0 < value <= FIRST_REQUEST_S else None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    first_request_s: float | None = FIRST_REQUEST_S
    if len(args) == 4 and args[2] == "--first-request-s":  # started early by its launcher (`fork_client.prestart`)
        first_request_s = _seconds(args[3])
        args = args[:2]
    if len(args) != 2 or args[0] != "--repo" or first_request_s is None:
        print("usage: python -m lanes_tui.engine.supervisor.fork_server --repo REPO [--first-request-s S]",
              file=sys.stderr)
        return 2
    repo = Path(args[1])
    detach()  # the launcher's Popen returns once this child listens (or found a server listening)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(address(repo))
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            return 1
        signal_ready()  # another launcher's server got there first: use that one
        return 0
    listener.listen(64)
    signal_ready()
    gc.collect()
    gc.freeze()  # the imported modules' objects: never scanned again, so their pages stay shared
    return ForkServer(repo, listener, first_request_s=first_request_s).serve()


if __name__ == "__main__":
    sys.exit(main())
