"""A confined lane's way to have its supervisor write what the kernel no longer lets it write.

Under the lane's Landlock ruleset (`lanes.confine`) an agent cannot write the state folder, so the
`ask` helper cannot create its question file and `lock` cannot append its `lock-*` events. Both
hand the write to the lane's supervisor over its control socket (`supervisor.control`, op
`inbox-write` or `lock-event`): one JSON line out, one back. The supervisor checks that the caller is
one of its own lane's processes and what it may write (a question or a delivery mark of its own lane,
never an answer; only `lock-*` events) before it writes, as lanes-tui, on the lane's behalf.

Standard library only: `ask` loads this module and must start as fast as it does now.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.errors import LanesError

__all__ = ["CONFINED_ENV", "confined", "relay"]

#: Set in the environment of a lane's confined processes (`lanes.confine`).
CONFINED_ENV = "LANES_CONFINED"
#: The lane folder's file naming the control socket (`lanes.control_client.LOCATOR`).
_LOCATOR = "control.json"
_MAX_REPLY = 64 * 1024


def confined(env: Mapping[str, str] | None = None) -> bool:
    """True in a process the kernel confines: its writes to the state folder go through the supervisor."""
    return bool((env if env is not None else os.environ).get(CONFINED_ENV))


def relay(state_dir: Path, lane: str, body: dict[str, Any], *, timeout: float = 15.0) -> dict[str, Any]:
    """Send one request to `lane`'s supervisor and return its reply; LanesError when there is no
    supervisor to write for the lane, or it refused."""
    no_supervisor = LanesError(f"lane {lane} has no running supervisor to write for it",
                               "a confined lane's helpers need their supervisor: `lanes-tui status` shows the lane")
    try:
        with open(state_dir / "lanes" / lane / _LOCATOR, encoding="utf-8") as f:
            where = json.load(f)
        path = str(where["path"])
    except (OSError, ValueError, KeyError, TypeError):
        raise no_supervisor from None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(path)
            sock.sendall((json.dumps({"protocol": 1, **body}, separators=(",", ":")) + "\n").encode("utf-8"))
            data = bytearray()
            while not data.endswith(b"\n") and len(data) < _MAX_REPLY:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        except OSError:
            raise no_supervisor from None
    try:
        reply = json.loads(data)
    except ValueError:
        raise no_supervisor from None
    if not isinstance(reply, dict):
        raise no_supervisor
    if not reply.get("ok"):
        raise LanesError(str(reply.get("error") or "the supervisor refused the write"), reply.get("fix") or None)
    return reply
