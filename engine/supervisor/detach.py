"""The supervisor's start handshake: fork away from the launcher, then say "up" once the lane is held.

Split from `supervisor.main` (the lane's story) because it is process plumbing: the launcher waits on
a pipe for one byte, so `run` returns only once the supervisor is really running.
"""

from __future__ import annotations

import os

__all__ = ["detach", "signal_ready"]


def detach() -> None:
    """Fork: the parent returns to the launcher once the child says it is up; the child goes on."""
    read_fd, write_fd = os.pipe()
    if os.fork() > 0:
        os.close(write_fd)
        ok = os.read(read_fd, 1) == b"1"
        os._exit(0 if ok else 1)
    os.close(read_fd)
    os.environ["LANES_SUPERVISOR_READY_FD"] = str(write_fd)


def signal_ready() -> None:
    fd = os.environ.pop("LANES_SUPERVISOR_READY_FD", None)
    if fd is not None:
        os.write(int(fd), b"1")
        os.close(int(fd))
