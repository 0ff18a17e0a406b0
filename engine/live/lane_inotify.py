"""Which lanes changed since the last tick, told by the kernel: inotify on the state folder.

Stat-polling every lane's four files every 0.25 s made the dashboard's tick grow with the number of
lanes even when nothing was new. Here one watch sits on `.lanes/state/lanes/` (lanes appear and go)
and one on each lane folder, none recursive, and the engine drains the descriptor once per tick
(never through `add_reader`: a hundred printing lanes would wake the loop hundreds of times a
second). A tick with nothing new costs one `read` that returns EAGAIN.

The lane folders are watched for closed writes and renames, not for every `write`: `samples.jsonl`
and `events.jsonl` are appended and closed each time (`core.atomic.append_jsonl`), records are
replaced by rename (`write_json_atomic`), so each still shows up; `output.log` is held open by its
supervisor and written continuously, so it shows up only when its run ends. That is on purpose:
the output of the lane on screen is stat-checked every tick by the engine, and the output of the
other lanes is not the dashboard's business. Anything else a writer might do (a file rewritten in
place and kept open) is caught by the engine's slow full scan. The libc binding is the one of
`lanes.inotify` (its `TreeWatcher` counts changes but cannot say which lane they were in).
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from pathlib import Path

from lanes_tui.engine.lanes import inotify as _ino

_LANES_MASK = _ino.IN_CREATE | _ino.IN_DELETE | _ino.IN_MOVED_FROM | _ino.IN_MOVED_TO
_LANE_MASK = (_ino.IN_CLOSE_WRITE | _ino.IN_CREATE | _ino.IN_DELETE | _ino.IN_MOVED_FROM | _ino.IN_MOVED_TO)
_ADD_FLAGS = _ino.IN_ONLYDIR | _ino.IN_DONT_FOLLOW | _ino.IN_EXCL_UNLINK
_READ_SIZE = 64 * 1024
_MAX_READS = 64  # per drain; what is left waits for the next tick


@dataclass
class LaneChanges:
    """What one drain saw: file names by lane id, and whether everything must be looked at again."""

    lanes: dict[str, set[str]] = field(default_factory=dict)
    #: Events were lost (queue overflow) or a watch could not be added: scan every lane.
    rescan: bool = False

    def add(self, lane_id: str, name: str) -> None:
        self.lanes.setdefault(lane_id, set()).add(name)


class LaneWatch:
    """inotify on the lanes folder and each lane folder; `drain()` says which lanes changed.

    `start()` returns False where inotify is unavailable (not Linux, no instance left, the watch
    limit reached) or when `use_inotify` is False; the engine then polls, as it always did.
    """

    def __init__(self, lanes_dir: Path, *, use_inotify: bool = True) -> None:
        self.lanes_dir = lanes_dir
        self._use_inotify = use_inotify
        self._lib: _ino.Libc | None = None
        self._fd = -1
        self._top_wd = -1
        self._lane_of: dict[int, str] = {}  # watch descriptor -> lane id
        self._wd_of: dict[str, int] = {}

    @property
    def active(self) -> bool:
        return self._fd >= 0

    def start(self) -> bool:
        lib = _ino.load_libc() if self._use_inotify else None
        if lib is None:
            return False
        try:
            self._fd = lib.init1(os.O_NONBLOCK | os.O_CLOEXEC)
            self._lib = lib
            self._top_wd = lib.add_watch(self._fd, os.fsencode(self.lanes_dir), _LANES_MASK | _ADD_FLAGS)
        except OSError:
            self.close()
            return False
        for entry in _lane_dirs(self.lanes_dir):
            if not self._add_lane(entry):
                self.close()
                return False
        return True

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # closing drops every watch with it
        self._fd = -1
        self._lane_of.clear()
        self._wd_of.clear()

    def drain(self) -> LaneChanges:
        """Read every pending event without blocking; new lane folders get their watch here."""
        changes = LaneChanges()
        if self._fd < 0:
            return changes
        for data in _ino.pending_reads(self._fd, _MAX_READS, _READ_SIZE):
            self._parse(data, changes)
        if changes.rescan:
            for name in _lane_dirs(self.lanes_dir):  # a lane folder may have come while events were lost
                if name not in self._wd_of and not self._add_lane(name):
                    changes.rescan = True
        return changes

    def _parse(self, data: bytes, changes: LaneChanges) -> None:
        offset = 0
        size = _ino.EVENT.size
        while offset + size <= len(data):
            wd, mask, _cookie, length = _ino.EVENT.unpack_from(data, offset)
            name = os.fsdecode(data[offset + size:offset + size + length].rstrip(b"\0"))
            offset += size + length
            if mask & _ino.IN_Q_OVERFLOW:
                changes.rescan = True
            elif mask & _ino.IN_IGNORED:
                lane = self._lane_of.pop(wd, None)
                if lane is not None and self._wd_of.get(lane) == wd:
                    del self._wd_of[lane]
            elif wd == self._top_wd:
                if not name:
                    continue
                coming = mask & (_ino.IN_CREATE | _ino.IN_MOVED_TO) and mask & _ino.IN_ISDIR
                if coming and not self._add_lane(name):
                    changes.rescan = True
                if mask & _ino.IN_MOVED_FROM and mask & _ino.IN_ISDIR:
                    self._drop_lane(name)  # its watch would follow the folder wherever it went
                changes.add(name, "")  # the lane folder itself came or went: look at the lane
            elif (lane := self._lane_of.get(wd)) is not None:
                changes.add(lane, name)

    def _add_lane(self, name: str) -> bool:
        """Watch one lane folder; False only when the watch limit is reached."""
        assert self._lib is not None
        try:
            wd = self._lib.add_watch(self._fd, os.fsencode(self.lanes_dir / name), _LANE_MASK | _ADD_FLAGS)
        except OSError as exc:
            return exc.errno != errno.ENOSPC  # vanished already, or not a folder: nothing to watch
        self._lane_of[wd] = name
        self._wd_of[name] = wd
        return True

    def _drop_lane(self, name: str) -> None:
        wd = self._wd_of.pop(name, None)
        if wd is not None and self._lib is not None:
            self._lane_of.pop(wd, None)
            self._lib.rm_watch(self._fd, wd)


def _lane_dirs(lanes_dir: Path) -> list[str]:
    try:
        with os.scandir(lanes_dir) as entries:
            return [e.name for e in entries if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []
