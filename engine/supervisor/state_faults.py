"""How a lane ends when its state cannot be written: a full disk, or a write refused outright.

Split from `supervisor.main` (the lane's story, `Supervisor`) because this is the rare path around
it: `entry` reserves a little space before the run and, when a state write fails, asks the
supervisor to end the lane FAILED-RESOURCE with a reason built here, instead of dying mid-write and
leaving it `lost`. The constants stay importable from `supervisor.main`, where `entry` reads them.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
from pathlib import Path

from lanes_tui.engine.core.atomic import private_opener

log = logging.getLogger("lanes_tui.supervisor")

#: A full disk (or quota) under the state folder: the lane ends FAILED-RESOURCE, not `lost`.
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})
#: A write refused outright: the lane's folder made read-only (an agent's `chmod`), a read-only mount.
NOT_WRITABLE = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
#: A file the supervisor deletes when the disk fills, so its receipt and last state still fit.
SPACE_RESERVE = "space-reserve"
SPACE_RESERVE_BYTES = 64 * 1024


def reserve_space(lane_dir: Path) -> None:
    """Keep a little space for the lane's last words (`out_of_space_reason`); best effort."""
    with contextlib.suppress(OSError), open(lane_dir / SPACE_RESERVE, "wb", opener=private_opener) as f:
        f.write(bytes(SPACE_RESERVE_BYTES))


def out_of_space_reason(lane_dir: Path, lane_id: str, exc: OSError) -> str:
    """The disk holding the state is full: free the reserve, and the reason naming where.

    Without this the supervisor died mid-write, left no receipt, and the lane showed as `lost`.
    The agent is already stopped: the write that failed ran in the supervisor's own loop, and
    the agent run stops every descendant on its way out.
    """
    with contextlib.suppress(OSError):
        (lane_dir / SPACE_RESERVE).unlink()
    where = exc.filename or str(lane_dir)
    log.error("no space left writing %s", where)
    return (f"no space left on the device holding {where} ({exc.strerror}): free some space, then "
            f"`lanes-tui recover {lane_id}`")


def not_writable_reason(lane_dir: Path, lane_id: str, exc: OSError) -> str:
    """A state write was refused: the reason naming the file, instead of dying and leaving the lane
    `lost` with nothing said. The lane's own folder, when it is the one refused and is the lead's, is
    made writable again (0700) first, or the end could not be recorded either; when that is not
    enough (a read-only mount), the reason goes to the supervisor's log and `status` shows the lane's
    folder as its problem."""
    where = exc.filename or str(lane_dir)
    restored = ""
    folder = lane_dir
    if not folder.is_symlink() and not os.access(folder, os.W_OK):
        with contextlib.suppress(OSError):
            if folder.stat().st_uid == os.geteuid():
                os.chmod(folder, 0o700)
                restored = f"; lanes-tui made {folder} writable again"
    reason = (f"the lane's state could not be written ({exc.strerror}: {where}){restored}: "
              f"`lanes-tui recover {lane_id}` or `lanes-tui abandon {lane_id} --force`")
    log.error("state write refused: %s", reason)
    return reason
