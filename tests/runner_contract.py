"""The contract every `Runner` must keep, as scenarios a runner's own test module runs.

`tests/test_runner_contract.py` runs them against `LocalRunner`; `tests/test_ray_runner.py` against
the Ray runner on a local cluster. A scenario gets a `RunnerWorld`: the lead's repository and a
factory for a fresh runner on it (a new runner object is what a restarted dashboard has). The
lanes are real: the built-in `sim` agent in a real worktree, its output read back through the
runner.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.lanes.launcher import LaunchRequest
from lanes_tui.engine.lanes.runner import Runner
from lanes_tui.engine.state.model import LIVE_STATES
from tests.helpers import write_config

#: A sim agent on a terminal (pty) channel: the kind of lane that takes the lead's messages.
SIMPTY = ('[providers.simpty]\nargv = ["{python}", "-m", "lanes_tui.engine.sim", "--prompt", "{prompt}"]\n'
          'prompt = "arg"\nchannel = "pty"\nfamily = "sim"\n')


def write_contract_config(repo: Path, extra: str = "") -> None:
    """The contract's lanes run `simpty` (see SIMPTY); `extra` adds tables (a `[runner]`, say)."""
    write_config(repo, chains='backend = ["simpty"]', extra=SIMPTY + extra)


#: The agent of the contract's lane: says hello, echoes what the lead sends, edits a file, ends on EOF.
ECHO_SCRIPT = "say hello from the lane\nwrite contract.txt made by the lane\necho-input 120\nsay bye"


@dataclass
class RunnerWorld:
    repo: Path
    make: Callable[[], Runner]
    #: How long the runner may take to show a change (a cluster adds its own hops).
    patience_s: float = 30.0


async def until(what: str, probe: Callable[[], Awaitable[object]], timeout: float) -> object:
    """Poll a runner's real answer with a bound; never a fixed sleep."""
    end = time.monotonic() + timeout
    while True:
        value = await probe()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"{what}: not within {timeout:g}s")
        await asyncio.sleep(0.05)


async def read_all(runner: Runner, lane: str, seq: int = 0) -> tuple[bytes, int]:
    chunks: list[bytes] = []
    while True:
        data, seq = await runner.output(lane, seq, 64 * 1024)
        if not data:
            return b"".join(chunks), seq
        chunks.append(data)


async def contract_lifecycle(world: RunnerWorld) -> None:
    """start → output (with replay) → send → watch → sample → attach again → stop → gates → publish → discard."""
    runner = world.make()
    patience = world.patience_s
    record = await runner.start(LaunchRequest(prompt=ECHO_SCRIPT, slug="contract", raw=True))
    lane = record.id
    try:
        assert record.state in ("queued", "launching", "running")

        async def said_hello() -> bool:
            text, _ = await read_all(runner, lane)
            return b"hello from the lane" in text and b"echoing input" in text

        await until("the agent's first words", said_hello, patience)

        # Replay from a sequence number gives exactly what followed it; one past the end starts again.
        everything, end = await read_all(runner, lane)
        middle = len(everything) // 2
        tail, tail_end = await read_all(runner, lane, middle)
        assert everything[middle:] == tail[: len(everything) - middle] and tail_end >= end
        again, _ = await runner.output(lane, end + 10**9, 1 << 20)
        assert again.startswith(everything[:20]), "a sequence past the end replays from the start"

        reply = await runner.send(lane, "ping from the lead")
        assert reply.get("ok") is True and reply.get("via"), reply
        # The lead shows the lane: its supervisor grants a watch lease (read at the live pace, `lanes.cadence`).
        assert await runner.watch(lane, 15) == 15.0

        async def echoed() -> bool:
            text, _ = await read_all(runner, lane)
            return b"echo: ping from the lead" in text

        await until("the agent's echo of the lead's message", echoed, patience)
        sample = await until("a meters sample", lambda: runner.sample(lane), patience)
        assert isinstance(sample, dict) and "rss_bytes" in sample

        # A restarted dashboard (a new runner object) finds the lane still running.
        fresh = world.make()
        assert await fresh.attach(lane) is True
        assert (await fresh.status(lane)).state == "running"

        stopped_by_force = await fresh.stop(lane)
        assert isinstance(stopped_by_force, list)

        async def settled() -> bool:
            return (await fresh.status(lane)).state not in LIVE_STATES

        await until("the lane to settle after stop", settled, patience)
        assert await fresh.attach(lane) is False

        packet = await fresh.run_gates(lane)
        assert packet["changed_files"] == ["contract.txt"] and packet["gates_status"], packet

        published = await fresh.publish(lane)
        assert published.ref == f"refs/heads/lane/{lane}" and len(published.commit) == 40
        if published.where != "local":  # a remote runner pushed it: the lead fetches it from there
            git(world.repo, "fetch", "-q", published.where, published.ref)
            shown = git(world.repo, "show", f"{published.commit}:contract.txt")
            assert "made by the lane" in shown, "the pushed commit holds the lane's work, not yet committed"
        assert git(world.repo, "rev-parse", "--verify", f"{published.commit}^{{commit}}").strip() == published.commit

        removed = await fresh.discard(lane)
        assert removed, "discard names what it removed"
        with pytest.raises(LanesError):
            await fresh.publish(lane)
    finally:
        await world.make().stop(lane)


async def contract_refuses_ids_that_are_not_lanes(world: RunnerWorld) -> None:
    """A path, `..` or an unknown lane gets one clear error from every method, never a traceback."""
    runner = world.make()
    for bad in ("../escape", "no-such-lane-a1"):
        for method in (runner.status, runner.publish, runner.discard):
            with pytest.raises(LanesError):
                await method(bad)
    assert await runner.attach("no-such-lane-a1") is False
    with pytest.raises(LanesError):
        await runner.attach("../escape")


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout
