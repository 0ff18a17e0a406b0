"""The runners: `LocalRunner` (supervisors on this machine) and `make_runner`, which picks the one
`[runner] kind` names. The protocol they keep is `lanes.runner`.

They live with the decisions because a runner runs a lane's gates (`decisions.check`) and talks to
its supervisor (`lanes.control_client`). The Ray runner's module is imported by `make_runner` and
only there, inside the function and only when `kind = "ray"`: with the default config no Ray module
is ever loaded (`tests/test_import_hygiene.py`). It is the one import against the engine's layers,
written as the allowed exception in pyproject's `[tool.importlinter]` contract (a plain `import`, not
`importlib`, so the checks see it). `RUNNER_FACTORIES` is its seam: a test registers an
in-process runner for `ray` to drive the engine, the command line and the decisions without a
cluster.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.git.commands import run_git
from lanes_tui.engine.lanes.launcher import (
    LaunchRequest,
    launch_lane,
    spawn_supervisor,
    stop_lane,
    supervisor_alive,
)
from lanes_tui.engine.lanes.runner import Published, RemoteRunner, Runner, as_remote, read_output
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore

#: `kind` -> a factory of runners. Empty by default: `local` is built in, `ray` is imported on demand.
#: Tests put an in-process runner here (`monkeypatch.setitem(RUNNER_FACTORIES, "ray", Fake)`).
RUNNER_FACTORIES: dict[str, Callable[[Path, Config], Runner]] = {}

#: The module of the Ray runner, imported by name only when the config asks for it.
RAY_RUNNER_MODULE = "lanes_tui.engine.remote.ray_runner"


def make_runner(repo: Path, config: Config) -> Runner:
    """The runner `[runner] kind` names: `LocalRunner` for `local`; for `ray` the Ray runner, whose
    module (and Ray with it) is imported here and nowhere else. Ray missing is one LanesError with
    the command that installs it, never an ImportError traceback."""
    kind = config.runner.kind
    factory = RUNNER_FACTORIES.get(kind)
    if factory is not None:
        return factory(repo, config)
    if kind == "local":
        return LocalRunner(repo, config)
    if kind != "ray":
        raise LanesError(f"[runner] kind = {kind!r} is not a runner", 'set kind = "local" or kind = "ray"')
    try:  # the layers' one allowed exception (pyproject.toml): decisions is below remote
        import lanes_tui.engine.remote.ray_runner as module
    except ModuleNotFoundError as exc:
        name = exc.name or ""
        if name == "ray" or name.startswith("ray."):
            raise LanesError('[runner] kind = "ray" needs Ray, which is not installed here',
                             "pip install -e '.[ray]' in lanes-tui's checkout, into the Python that runs it "
                             "(docs/ray.md), or set [runner] kind = \"local\"") from None
        if name == RAY_RUNNER_MODULE:
            raise LanesError("this lanes-tui has no Ray runner",
                             'update lanes-tui, or set [runner] kind = "local"') from None
        raise
    return cast(Runner, module.RayRunner(repo, config))


#: One runner per repository and `[runner]` table in a process: a Ray runner holds the process's one
#: cluster connection (`ray.init` takes seconds), so the engine, its decisions and the command line
#: of one process share it. Local runners are cheap and never kept here.
_SHARED: dict[tuple[str, str, int], Runner] = {}


def shared_runner(repo: Path, config: Config) -> Runner:
    """`make_runner`, kept for the rest of the process when the runner is not local."""
    if config.runner.kind == "local" and "local" not in RUNNER_FACTORIES:
        return LocalRunner(repo, config)
    factory = RUNNER_FACTORIES.get(config.runner.kind)
    key = (str(repo.resolve()), repr(config.runner), id(factory))
    runner = _SHARED.get(key)
    if runner is None:
        runner = _SHARED[key] = make_runner(repo, config)
    return runner


async def forget_runners() -> None:
    """Close and forget the kept runners (a test between two clusters; the lanes keep running)."""
    runners = list(_SHARED.values())
    _SHARED.clear()
    for runner in runners:
        remote = as_remote(runner)
        if remote is not None:
            await remote.close()


def remote_runner(repo: Path, config: Config, record: LaneRecord) -> RemoteRunner:
    """The runner of a lane that runs elsewhere (`record.runner` is not `local`), for a decision on
    it; a config that no longer names that runner is refused with the fix."""
    if config.runner.kind != record.runner:
        raise LanesError(f"lane {record.id} runs on a {record.runner} runner but [runner] kind is "
                         f"{config.runner.kind!r}", f'set [runner] kind = "{record.runner}" in .lanes/config.toml '
                         "to act on it")
    runner = as_remote(shared_runner(repo, config))
    if runner is None:
        raise LanesError(f"the {config.runner.kind} runner keeps no mirror of lane {record.id}",
                         "this lanes-tui cannot act on it; update lanes-tui")
    return runner


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
        from lanes_tui.engine.lanes.control_client import send_to_lane

        return await asyncio.to_thread(send_to_lane, self.repo, lane_id, text)

    async def watch(self, lane_id: str, seconds: float) -> float:
        from lanes_tui.engine.lanes.control_client import watch_lane

        return await asyncio.to_thread(watch_lane, self.repo, lane_id, seconds)

    async def sample(self, lane_id: str) -> dict[str, Any] | None:
        return await asyncio.to_thread(self.store.last_sample, lane_id)

    async def run_gates(self, lane_id: str) -> dict[str, object]:
        from lanes_tui.engine.decisions.check import check_lane

        return await check_lane(self.repo, self.config, lane_id)

    async def publish(self, lane_id: str) -> Published:
        """The lane's branch is already in the lead's repository: name it and the commit it is at."""
        self.paths.lane(lane_id)  # refuses an id that is not one
        ref = f"refs/heads/lane/{lane_id}"
        done = await asyncio.to_thread(run_git, self.repo, "rev-parse", "--verify", "--quiet", ref, check=False)
        if done.returncode != 0:
            raise LanesError(f"lane {lane_id} has no branch lane/{lane_id}", "`lanes-tui status` lists the lanes")
        return Published(ref=ref, commit=os.fsdecode(done.stdout).strip(), where="local")

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


