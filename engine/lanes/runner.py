"""Where lanes run: the `Runner` protocol every runner keeps (`decisions.runners` has the runners).

A runner is everything the engine and the command line need from the place a lane runs: start it,
find it again after the dashboard restarted (`attach`), replay its output from a sequence number,
send the agent a message, read its meters, run its gates where its worktree is, publish its branch,
stop it and throw it away. The Ray runner (`lanes_tui.engine.remote`, the optional `[ray]` extra)
implements the same methods for lanes on other machines; `tests/runner_contract.py` is the suite
every runner must pass.

`decisions.runners` holds the runners themselves (`LocalRunner`, and `make_runner`, which picks the
one `[runner] kind` names): they run gates and talk to supervisors, which this layer cannot import.

The output sequence number is a byte offset into the lane's output as the runner keeps it: a
reader that saw `seq` bytes asks for what follows, and a runner that has less than that (its log
was cut, or it is a new attempt) starts again from 0, so a replay never skips output silently.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

from lanes_tui.engine.lanes.launcher import (
    LaunchRequest,
)
from lanes_tui.engine.state.model import LaneRecord


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

    async def watch(self, lane_id: str, seconds: float) -> float:
        """A watch lease: the lane's output is read at the live pace for `seconds` (`lanes.cadence`);
        the seconds granted. LanesError when no supervisor holds the lane."""
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


class RemoteRunner(Runner, Protocol):
    """A runner whose lanes live elsewhere (the Ray runner): the lead's machine keeps a mirror of each
    lane (record, output, samples, packet) that `sync` refreshes; the engine and the command line
    read that mirror exactly as they read a local lane."""

    async def sync(self) -> list[str]:
        """Refresh the local mirror of every remote lane of the repository; the ids whose state changed."""
        ...

    async def relaunch(self, lane_id: str) -> LaneRecord:
        """The lane's next attempt on another node, from its last pushed checkpoint."""
        ...

    async def fetch_branch(self, lane_id: str) -> str:
        """The node publishes the lane's branch and the lead fetches `refs/heads/lane/<id>`; its commit."""
        ...

    def doctor(self) -> list[tuple[str, bool, str]]:
        """(check, ok, detail) lines for `lanes-tui doctor`."""
        ...

    async def close(self) -> None:
        """Let go of the cluster connection; the lanes keep running."""
        ...


def as_remote(runner: Runner) -> RemoteRunner | None:
    """The runner as a `RemoteRunner` when it keeps a mirror (it has `sync`), else None."""
    return cast(RemoteRunner, runner) if callable(getattr(runner, "sync", None)) else None


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
