"""Who is at the other end of a Unix socket: the one check every lanes-tui socket makes.

A lane's control socket (`supervisor.control`) and the fork server's (`supervisor.fork_server`,
`lanes.fork_client`) both serve the lead's own processes only, whatever the socket's permissions.
"""

from __future__ import annotations

import socket
import struct

__all__ = ["peer_pid", "peer_uid"]


def _credentials(sock: socket.socket) -> tuple[int, int, int] | None:
    """(pid, uid, gid) of the connecting process (Linux `SO_PEERCRED`); None where the platform cannot tell."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    pid, uid, gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return int(pid), int(uid), int(gid)


def peer_uid(sock: socket.socket) -> int | None:
    """The connecting process's uid; None where the platform cannot tell."""
    found = _credentials(sock)
    return None if found is None else found[1]


def peer_pid(sock: socket.socket) -> int | None:
    """The connecting process's pid, from the kernel (never from what it says); None where unknown."""
    found = _credentials(sock)
    return None if found is None else found[0]
