"""Where lanes run. The `Runner` protocol hides it; `LocalRunner` uses supervisors on this machine.

A cluster runner (the optional Ray extra of PRODUCT.md) would implement the same methods; the
engine and the dashboard only ever talk to this protocol.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, Protocol

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.lanes.launcher import (
    LaunchRequest,
    launch_lane,
    spawn_supervisor,
    stop_lane,
    supervisor_alive,
)
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore


class Runner(Protocol):
    async def start(self, request: LaunchRequest) -> LaneRecord: ...

    async def attach(self, lane_id: str) -> bool: ...

    async def output(self, lane_id: str, from_offset: int, max_bytes: int) -> tuple[bytes, int]: ...

    async def sample(self, lane_id: str) -> dict[str, Any] | None: ...

    async def stop(self, lane_id: str) -> list[int]: ...

    async def discard(self, lane_id: str) -> list[str]: ...


class LocalRunner:
    """Lanes as detached supervisor processes on this machine."""

    def __init__(self, repo: Path, config: Config) -> None:
        self.repo = repo
        self.config = config
        self.paths = StatePaths(repo)
        self.store = LaneStore(self.paths)

    async def start(self, request: LaunchRequest) -> LaneRecord:
        return await asyncio.to_thread(launch_lane, self.repo, self.config, request)

    async def restart_supervisor(self, lane_id: str) -> None:
        await asyncio.to_thread(spawn_supervisor, self.repo, lane_id, self.config)

    async def attach(self, lane_id: str) -> bool:
        """True if the lane's supervisor is alive (same pid and start time); nothing to connect."""
        return await asyncio.to_thread(supervisor_alive, self.repo, lane_id)

    async def output(self, lane_id: str, from_offset: int, max_bytes: int) -> tuple[bytes, int]:
        """Bytes of `output.log` from `from_offset` (replay), at most `max_bytes`; and the new offset."""
        return await asyncio.to_thread(read_output, self.paths.lane(lane_id).output, from_offset, max_bytes)

    async def sample(self, lane_id: str) -> dict[str, Any] | None:
        return await asyncio.to_thread(self.store.last_sample, lane_id)

    async def stop(self, lane_id: str) -> list[int]:
        return await stop_lane(self.repo, lane_id)

    async def discard(self, lane_id: str) -> list[str]:
        """Stop the lane and remove its worktree and branch: derived from its id and own root and
        witnessed by git (`git.lane_paths`), never taken from lane.json; checked before the stop."""
        from lanes_tui.engine.git.lane_paths import git_witness, locate_lane, remove_lane_worktree

        record = await asyncio.to_thread(self.store.read, lane_id)
        location = await asyncio.to_thread(locate_lane, self.repo, lane_id, record,
                                           default_root=self.config.lanes.worktree_root)
        await asyncio.to_thread(git_witness, location)
        await self.stop(lane_id)
        return await asyncio.to_thread(remove_lane_worktree, location)


def read_output(path: Path, offset: int, max_bytes: int) -> tuple[bytes, int]:
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            if offset > size:
                offset = 0
            handle.seek(offset)
            data = handle.read(max_bytes)
    except FileNotFoundError:
        return b"", 0
    return data, offset + len(data)
