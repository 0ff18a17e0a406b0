"""Where lanes run. The `Runner` protocol hides it; `LocalRunner` uses supervisors on this machine.

A runner is everything the engine and the command line need from the place a lane runs: start it,
find it again after the dashboard restarted (`attach`), replay its output from a sequence number,
send the agent a message, read its meters, run its gates where its worktree is, publish its branch,
stop it and throw it away. The Ray runner (`lanes_tui.engine.remote`, the optional `[ray]` extra)
implements the same methods for lanes on other machines; `tests/runner_contract.py` is the suite
every runner must pass.

The output sequence number is a byte offset into the lane's output as the runner keeps it: a
reader that saw `seq` bytes asks for what follows, and a runner that has less than that (its log
was cut, or it is a new attempt) starts again from 0, so a replay never skips output silently.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.errors import LanesError
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


@dataclass(frozen=True)
class Published:
    """A lane's branch as the runner made it available to accept: the ref and the commit it names."""

    ref: str
    commit: str
    where: str
    """`local` for the lead's own repository, else the shared remote it was pushed to."""


class Runner(Protocol):
    """The place lanes run. Every method takes a lane id the runner gave out (`start`)."""

    kind: str
    """`local` or `ray`: shown by `doctor` and in the lane's events."""

    async def start(self, request: LaunchRequest) -> LaneRecord:
        """Create the lane (worktree, branch, record) and start its agent; returns the record."""
        ...

    async def attach(self, lane_id: str) -> bool:
        """After a restart of the dashboard: is the lane still held by a live process? (True: it runs.)"""
        ...

    async def status(self, lane_id: str) -> LaneRecord:
        """The lane's record as the runner knows it now."""
        ...

    async def output(self, lane_id: str, from_seq: int, max_bytes: int) -> tuple[bytes, int]:
        """Output from `from_seq` (replay), at most `max_bytes`, and the sequence number after it."""
        ...

    async def send(self, lane_id: str, text: str) -> dict[str, Any]:
        """A message for the running agent; the supervisor's reply (`ack`, how it was delivered)."""
        ...

    async def sample(self, lane_id: str) -> dict[str, Any] | None:
        """The lane's latest meters (CPU, RSS, idle, tokens), or None before the first sample."""
        ...

    async def run_gates(self, lane_id: str) -> dict[str, object]:
        """Run the lane's gates where its worktree is; returns the packet (state, gates, summary)."""
        ...

    async def publish(self, lane_id: str) -> Published:
        """Make the lane's branch available to accept (pushed to the shared remote, for a cluster)."""
        ...

    async def stop(self, lane_id: str) -> list[int]:
        """Stop the lane's processes (escalating); returns the pids that had to be killed by force."""
        ...

    async def discard(self, lane_id: str) -> list[str]:
        """Stop the lane and remove its worktree and branch; returns what was removed."""
        ...


class LocalRunner:
    """Lanes as detached supervisor processes on this machine."""

    kind = "local"

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

    async def status(self, lane_id: str) -> LaneRecord:
        return await asyncio.to_thread(self.store.read, lane_id)

    async def output(self, lane_id: str, from_seq: int, max_bytes: int) -> tuple[bytes, int]:
        """Bytes of `output.log` from `from_seq` (replay), at most `max_bytes`; and the new offset."""
        return await asyncio.to_thread(read_output, self.paths.lane(lane_id).output, from_seq, max_bytes)

    async def send(self, lane_id: str, text: str) -> dict[str, Any]:
        from lanes_tui.engine.supervisor.control_client import send_to_lane

        return await asyncio.to_thread(send_to_lane, self.repo, lane_id, text)

    async def sample(self, lane_id: str) -> dict[str, Any] | None:
        return await asyncio.to_thread(self.store.last_sample, lane_id)

    async def run_gates(self, lane_id: str) -> dict[str, object]:
        from lanes_tui.engine.decisions.check import check_lane

        return await check_lane(self.repo, self.config, lane_id)

    async def publish(self, lane_id: str) -> Published:
        """The lane's branch is already in the lead's repository: name it and the commit it is at."""
        self.paths.lane(lane_id)  # refuses an id that is not one
        ref = f"refs/heads/lane/{lane_id}"
        done = await asyncio.to_thread(subprocess.run, ["git", "rev-parse", "--verify", "--quiet", ref],
                                       cwd=self.repo, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise LanesError(f"lane {lane_id} has no branch lane/{lane_id}", "`lanes-tui status` lists the lanes")
        return Published(ref=ref, commit=done.stdout.strip(), where="local")

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
    """At most `max_bytes` of `path` from `offset`; an offset past the end (a new log) starts at 0."""
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
