"""The command line's way to a lane on a cluster node (`[runner] kind = "ray"`): through its runner.

A Ray lane has no supervisor, socket or worktree on the lead's machine: `run` starts it through the
runner, and `stop`, `send` and `peek` reach it there. The runner is the `Engine`'s (the door's one
object that holds it, built by the engine's `make_runner`), so the command line and the dashboard
drive a remote lane the same way, and nothing here imports Ray: with the default config these
functions are never called (`is_remote` is False for every local lane).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from lanes_tui.engine import (
    LIVE_STATES,
    Config,
    Engine,
    LaneRecord,
    LanesError,
    LaunchRequest,
    StatePaths,
    StopReport,
    read_lane,
    strip_ansi,
    terminal_text,
)

T = TypeVar("T")

#: How much of a remote lane's output `peek` reads back from the end of the mirror's copy.
PEEK_TAIL_BYTES = 256 * 1024


def is_remote(repo: Path, lane_id: str) -> bool:
    """Does the lane run elsewhere (its record names a runner other than `local`)? An unknown lane is
    a LanesError naming it, as for every command on a lane."""
    return read_lane(repo, lane_id, reconciled=False).runner != "local"


def with_engine(repo: Path, config: Config, action: Callable[[Engine], Awaitable[T]]) -> T:
    """Run one command on an engine over the repository (its runner is the config's), on a fresh loop."""

    async def main() -> T:
        return await action(Engine(repo, config=config))

    return asyncio.run(main())


def start_remote(repo: Path, config: Config, request: LaunchRequest) -> LaneRecord:
    """`run` with a remote runner: the runner creates the lane on a node and writes its mirror."""
    return with_engine(repo, config, lambda engine: engine.runner.start(request))


def _require_remote_runner(config: Config, lane_id: str) -> None:
    if config.runner.kind == "local":
        raise LanesError(f"lane {lane_id} runs on a cluster node but [runner] kind is 'local'",
                         'set [runner] kind = "ray" in .lanes/config.toml to reach it')


def stop_remote(repo: Path, config: Config, lane_ids: list[str]) -> list[StopReport]:
    """Stop remote lanes through their runner, then report how each ended (as the mirror says)."""
    for lane_id in lane_ids:
        _require_remote_runner(config, lane_id)
        if not live_remote_ids(repo, [lane_id]):
            record = read_lane(repo, lane_id, reconciled=False)
            raise LanesError(f"lane {lane_id} is not running ({record.state}: {record.state_reason})",
                             f"nothing to stop; `lanes-tui status {lane_id}` shows it")

    async def stop(engine: Engine) -> list[int]:
        forced: list[int] = []
        for lane_id in lane_ids:
            forced += await engine.kill(lane_id)
        return forced

    with_engine(repo, config, stop)
    reports = []
    for lane_id in lane_ids:
        record = read_lane(repo, lane_id, reconciled=False)
        where = f"{record.node}:{record.worktree}" if record.node else record.worktree
        reports.append(StopReport(record.id, record.state, record.result, record.state_reason, where))
    return reports


def send_remote(repo: Path, config: Config, lane_id: str, text: str) -> dict[str, Any]:
    """`send` to a remote lane: the runner carries the message to the node's supervisor."""
    _require_remote_runner(config, lane_id)
    return with_engine(repo, config, lambda engine: engine.runner.send(lane_id, text))


def peek_remote(repo: Path, config: Config, lane_id: str, lines: int, *, readable: bool = False,
                width: int = 0) -> list[str]:
    """The last `lines` lines of a remote lane's output, read through its runner: from a little before
    the end of the mirror's copy (the runner's sequence numbers are byte offsets of the same output),
    so a long log is not carried over the network whole. `readable` as for a local lane (`peek_output`)."""
    _require_remote_runner(config, lane_id)
    try:
        mirrored = StatePaths(repo).lane(lane_id).output.stat().st_size
    except OSError:
        mirrored = 0
    start = max(0, mirrored - PEEK_TAIL_BYTES)

    async def tail(engine: Engine) -> bytes:
        chunks: list[bytes] = []
        seq = start
        while True:
            data, seq = await engine.runner.output(lane_id, seq, PEEK_TAIL_BYTES)
            if not data:
                return b"".join(chunks)[-8 * PEEK_TAIL_BYTES:]
            chunks.append(data)

    shown = with_engine(repo, config, tail).decode("utf-8", errors="replace").splitlines()
    if start > 0 and shown:
        shown = shown[1:]  # began mid-line
    shown = [terminal_text(strip_ansi(line)) for line in shown]  # as a local lane's peek: nothing reaches the terminal
    if readable:
        from lanes_tui.engine import readable_lines

        shown = readable_lines(shown, width=width)
    return shown[-lines:] if lines else []


#: States in which a remote lane's node may still be running something of it (an unreachable node too).
REMOTE_RUNNING = LIVE_STATES | {"checking", "reviewing", "unreachable"}


def live_remote_ids(repo: Path, lane_ids: list[str]) -> list[str]:
    """The remote lanes among `lane_ids` that are in a state their node is still running them."""
    found = []
    for lane_id in lane_ids:
        record = read_lane(repo, lane_id, reconciled=False)
        if record.runner != "local" and record.state in REMOTE_RUNNING:
            found.append(lane_id)
    return found
