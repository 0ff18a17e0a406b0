"""A lane's small JSON files of entries (the "allow always" rules, the kept hunk comments): read capped
and forgiving, written by one writer at a time.

Both are written by the lead's tools and may be edited by hand or by an agent, so a read trusts
nothing: a symlink, a file over its cap, bad JSON or a wrong shape gives no entries (logged), never an
error that would stop the dashboard or a relaunch.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from lanes_tui.engine.core.atomic import PRIVATE_FILE, read_json

__all__ = ["locked", "read_entries"]

log = logging.getLogger(__name__)


def read_entries(path: Path, key: str, max_bytes: int) -> list[object]:
    """The list under `key` in the JSON object at `path`; [] when the file is missing, a symlink,
    larger than `max_bytes`, not JSON or not of that shape."""
    try:
        if path.is_symlink() or path.stat().st_size > max_bytes:
            log.warning("ignoring %s: a symlink or larger than %d bytes", path, max_bytes)
            return []
        data = read_json(path)
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        log.warning("ignoring %s: %s", path, exc)
        return []
    entries = data.get(key) if isinstance(data, dict) else None
    return list(entries) if isinstance(entries, list) else []


@contextlib.contextmanager
def locked(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `lock_path` (created private, never through a symlink): one writer of
    the file it guards at a time (two dashboards, a dashboard and the command line)."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, PRIVATE_FILE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
