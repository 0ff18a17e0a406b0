"""Every lane's record, re-read only for the lanes whose `lane.json` changed since the last call.

The dashboard's conflict radar looks at every lane every few seconds (`decisions.queue`); reading and
validating twenty records each time was a third of the engine's work at 20 printing lanes (B2, issue 15),
for records that change a few times in a lane's life. A record is re-read when its file's identity
(inode, size, modification time in ns) differs from the last read's: `lane.json` is only ever
replaced whole (`write_json_atomic`), so a new record is a new file; `all(fresh=True)` reads them all.

The records handed out are shared between calls: callers read them and must not change them.
"""

from __future__ import annotations

import os

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.store import LaneStore

__all__ = ["RecordCache"]

Signature = tuple[int, int, int]


class RecordCache:
    """`LaneStore.all()`, remembering each record with the signature of the file it came from."""

    def __init__(self, store: LaneStore) -> None:
        self.store = store
        self._records: dict[str, tuple[Signature, LaneRecord]] = {}
        #: Records parsed by the last `all()` (the rest were still current): for tests and benchmarks.
        self.last_reads = 0

    def all(self, *, fresh: bool = False) -> list[LaneRecord]:
        """Every readable lane, oldest first, as `LaneStore.all`; an unreadable one is skipped.

        `fresh` reads every record again: a file replaced twice within the file system's clock tick,
        at the same size, on a recycled inode, would look unchanged; the radar's full look (every
        minute) makes that at most a minute stale."""
        records: dict[str, tuple[Signature, LaneRecord]] = {}
        self.last_reads = 0
        for lane_id in self.store.paths.lane_ids():
            try:
                st = os.stat(self.store.lane_paths(lane_id).record)
            except (OSError, LanesError):  # gone, unreadable, or a folder name that is no lane id
                continue
            signature = (st.st_ino, st.st_size, st.st_mtime_ns)
            known = self._records.get(lane_id)
            if known is not None and known[0] == signature and not fresh:
                records[lane_id] = known
                continue
            try:
                records[lane_id] = (signature, self.store.read(lane_id))
            except LanesError:  # corrupt or half-made: `LaneStore.scan` shows it; skipped here as in `all`
                continue
            self.last_reads += 1
        self._records = records
        return sorted((record for _, record in records.values()), key=lambda r: (r.created, r.id))
