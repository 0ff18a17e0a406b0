"""Who is at the other end of a Unix socket: the one check every lanes-tui socket makes.

A lane's control socket (`supervisor.control`) and the fork server's (`supervisor.fork_server`,
`lanes.fork_client`) both serve the lead's own processes only, whatever the socket's permissions.
"""

from __future__ import annotations

import socket
import struct

__all__ = ["peer_pid", "peer_uid"]


def peer_uid(sock: socket.socket) -> int | None:
    """The connecting process's uid (Linux `SO_PEERCRED`); None where the platform cannot tell."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return int(uid)


def peer_pid(sock: socket.socket) -> int | None:
    """The connecting process's pid (Linux `SO_PEERCRED`); None where the platform cannot tell."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    pid, _uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return int(pid)
