"""Start a lane's supervisor by asking the repository's fork server (`supervisor.fork_server`) for one.

Each lane has its own supervisor process, and each used to be a fresh interpreter: 13–14 MB of PSS a
lane, mostly the same imported modules twenty times over (B10, issue 15). The fork server imports the
supervisor once and forks a supervisor per request, so the lanes share those pages until they write
them. It is an optimisation only: whenever the server cannot be reached or started, the launcher
starts the supervisor as a fresh interpreter as before (`launcher.spawn_supervisor`).

The server listens on an abstract Unix socket (no file to go stale or to fit in 108 bytes) named by the
user, the repository and the installed code, so a lanes-tui that was upgraded starts a server of its
own; each side checks the other's user id (`SO_PEERCRED`). A request names the lane and carries the
supervisor's allow-listed environment; the server derives every path itself.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.digest import sha256_hex
from lanes_tui.engine.core.peer import peer_uid

__all__ = ["FORK_SERVER_ENV", "StartFailed", "Unavailable", "address", "enabled", "prestart", "release",
           "start_supervisor"]

#: `LANES_TUI_FORK_SERVER=0` starts every supervisor as a fresh interpreter (no fork server).
FORK_SERVER_ENV = "LANES_TUI_FORK_SERVER"
#: How long a new fork server may take to listen.
SERVER_START_TIMEOUT_S = 30.0
#: How long a server started early (`prestart`) waits for its launcher's request: the launcher asks once
#: its git work is done, which a slow disk can make seconds; a launcher killed meanwhile (no `release`)
#: leaves a server that is gone this much later. A launch that asks later starts a server as before.
PRESTART_FIRST_REQUEST_S = 4.0
MAX_REPLY_BYTES = 64 * 1024


class Unavailable(Exception):
    """No fork server could be reached or started: start the supervisor the ordinary way."""


class StartFailed(Exception):
    """The server forked the supervisor and it did not come up (its log says why)."""


def enabled() -> bool:
    return os.environ.get(FORK_SERVER_ENV, "1") != "0"


def address(repo: Path) -> bytes:
    """The abstract socket name of `repo`'s fork server for this user and this installed code."""
    return b"\0lanes-tui-fork/" + sha256_hex(os.fsencode(
        f"{os.getuid()}\0{repo.resolve()}\0{sys.executable}\0{code_signature()}")).encode()[:32]


def code_signature() -> str:
    """The supervisor's code as installed (paths and modification times of its modules): a server
    started before an upgrade or an edit never forks supervisors of the old code for the new."""
    folder = Path(__file__).resolve().parent.parent / "supervisor"
    parts = []
    for path in sorted(folder.glob("*.py")):
        try:
            parts.append(f"{path.name}:{path.stat().st_mtime_ns}")
        except OSError:
            continue
    return f"{folder}|{'|'.join(parts)}"


def prestart(repo: Path, server_env: Mapping[str, str]) -> subprocess.Popen[bytes] | None:
    """Start `repo`'s fork server now, without waiting for it, when none answers.

    A cold server is an interpreter importing the supervisor (0.17–0.24 s, B5); started before the
    launcher's own git work (the lead checkout's snapshot, `git worktree add`), it is listening by the
    time `start_supervisor` asks, instead of being started then. None when a server answers already (or
    none could be started: `start_supervisor` then starts one as before). Hand the result to
    `start_supervisor`, or to `release` when the launch fails first.
    """
    if not enabled():
        return None
    sock = _connect(repo)
    if sock is not None:  # a warm server: the launch will ask it (a connection without a request is refused)
        sock.close()
        return None
    try:
        return _spawn_server(repo, server_env, first_request_s=PRESTART_FIRST_REQUEST_S)
    except OSError:
        return None


def release(repo: Path, early: subprocess.Popen[bytes] | None) -> None:
    """The launch that called `prestart` failed: the server it started leaves once idle (`LINGER_S`)
    instead of waiting for a request that will not come (a connection without one counts as served)."""
    if early is not None and _listening(early):
        sock = _connect(repo)
        if sock is not None:
            sock.close()


def start_supervisor(repo: Path, lane_id: str, env: Mapping[str, str], server_env: Mapping[str, str],
                     timeout_s: float, early: subprocess.Popen[bytes] | None = None) -> int:
    """Have the fork server start `lane_id`'s supervisor with `env`; its pid once it said it is up.

    `server_env` is the environment a new server starts with (no provider's secrets: a supervisor's
    `/proc/PID/environ` is its server's, and an agent can read it). `early` is the server `prestart`
    started for this launch: waited for before another is started. Raises `Unavailable` when there
    is no server to ask, and `StartFailed` when the supervisor itself did not come up.
    """
    sock = _connect(repo)
    if not sock and early is not None and _listening(early):
        sock = _connect(repo)  # (None when it left already: it waits only so long for its first request)
    if not sock and _start_server(repo, server_env):
        sock = _connect(repo)
    if not sock:
        raise Unavailable(f"no fork server for {repo}")
    with sock:
        lines = _Lines(sock)
        try:
            sock.sendall(json.dumps({"lane": lane_id, "env": dict(env)}).encode() + b"\n")
            first = _answer(lines.next(timeout_s))
        except EOFError as exc:  # the server left without reading it: nothing was forked
            raise Unavailable(f"the fork server did not answer: {exc}") from None
        except OSError as exc:  # it may still fork (it checks that we are there first): never a second start
            raise StartFailed(f"the fork server did not answer: {exc}") from None
        if "forked" not in first:  # refused before any fork (a leaving server, a bad request)
            raise Unavailable(str(first.get("error", first)))
        try:
            answer = _answer(lines.next(timeout_s + 5.0))
        except (OSError, EOFError) as exc:  # forked, so never started again elsewhere: the lane would get two
            raise StartFailed(f"the fork server stopped answering while it started ({exc})") from None
    pid = answer.get("pid")
    if answer.get("ok") is True and isinstance(pid, int):
        return pid
    raise StartFailed(str(answer.get("error") or "no reason given"))


def _answer(line: bytes) -> dict[str, Any]:
    """One reply; a line that is no JSON object is an OSError (the server is not one of ours)."""
    try:
        answer = json.loads(line)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise OSError(f"the fork server answered {line[:80]!r}")
    return answer


def _connect(repo: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(address(repo))
        if peer_uid(sock) != os.getuid():  # somebody else's socket under our name: never hand it a lane
            raise OSError("the fork server belongs to another user")
    except OSError:
        sock.close()
        return None
    return sock


def _start_server(repo: Path, server_env: Mapping[str, str]) -> bool:
    """Start a fork server for `repo`, detached; True once one listens (this one or a racing one)."""
    try:
        proc = _spawn_server(repo, server_env)
    except OSError:
        return False
    return _listening(proc)


def _spawn_server(repo: Path, server_env: Mapping[str, str],
                  first_request_s: float | None = None) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "lanes_tui.engine.supervisor.fork_server", "--repo", str(repo)]
    if first_request_s is not None:
        argv += ["--first-request-s", f"{first_request_s:g}"]
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, close_fds=True, cwd=str(repo), env=dict(server_env))


def _listening(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the server `proc` started listens (or found one listening): its first fork exits 0 then."""
    try:
        return proc.wait(SERVER_START_TIMEOUT_S) == 0
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return False


class _Lines:
    """The server's reply lines, however the bytes arrive (two lines may come in one read)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def next(self, timeout_s: float) -> bytes:
        """The next line; EOFError if the server closed the connection first, OSError on a timeout."""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                raise OSError("timed out")
            try:
                chunk = self.sock.recv(4096)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                raise EOFError("the connection closed")
            self.buffer += chunk
            if len(self.buffer) > MAX_REPLY_BYTES:
                raise OSError("the reply is too long")
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line
