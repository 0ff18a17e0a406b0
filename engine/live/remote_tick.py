"""The dashboard's side of a remote runner: the engine refreshes the mirror of the cluster's lanes.

A part of `live.engine.Engine`. A Ray lane's record, output and samples reach the lead's disk only
when the runner syncs them (`RemoteRunner.sync`), and that call crosses the network: it must never
hold the watch loop up. So every `sync_s` the tick starts one sync in the background (never
two at once); the lanes it reports changed are scanned at the next tick like lanes whose files
inotify named — their mirror files changed, and the watch reads them as it reads a local lane.
A sync that fails is said once (an `EngineNotice`) and tried again at the next period: the mirror
keeps the last known states meanwhile, and a lane the runner cannot reach shows `unreachable`.

It also routes the dashboard's commands on one lane to the runner that has it (`runner_of`): a lane
the lead started before switching `[runner] kind` still runs where it was started.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.decisions.runners import LocalRunner, remote_runner
from lanes_tui.engine.lanes.runner import RemoteRunner, Runner, as_remote
from lanes_tui.engine.state.events import EngineEvent, EngineNotice
from lanes_tui.engine.state.store import LaneStore

__all__ = ["RemoteTick"]

log = logging.getLogger(__name__)


class RemoteTick:
    """The mirror's sync and the routing of one lane's commands; `emit` says a failed sync once."""

    def __init__(self, repo: Path, config: Config, store: LaneStore, runner: Runner,
                 emit: Callable[[EngineEvent], None]) -> None:
        self.repo = repo
        self.config = config
        self.store = store
        self.runner = runner
        self.emit = emit
        #: Seconds between two syncs of the remote lanes' mirror (a sync crosses the network).
        self.sync_s = 1.0
        self._sync_task: asyncio.Task[list[str]] | None = None
        self._last_sync = -math.inf
        self._sync_problem: str | None = None
        #: Syncs done; tests wait on it instead of on wall-clock time.
        self.syncs = 0

    @property
    def remote(self) -> RemoteRunner | None:
        """The runner when it keeps a mirror of lanes that run elsewhere, else None (local lanes)."""
        return as_remote(self.runner)

    def sync_soon(self, now: float) -> None:
        """Start a sync in the background when one is due and none runs."""
        remote = self.remote
        if remote is None or now - self._last_sync < self.sync_s:
            return
        if self._sync_task is not None and not self._sync_task.done():
            return
        self._last_sync = now
        self._sync_task = asyncio.create_task(remote.sync(), name="lanes-engine-remote-sync")

    def synced_lanes(self) -> set[str]:
        """The lanes the finished sync found changed ({} while it runs, or when none finished)."""
        task = self._sync_task
        if task is None or not task.done():
            return set()
        self._sync_task = None
        self.syncs += 1
        try:
            changed = task.result()
        except asyncio.CancelledError:
            return set()
        except Exception as exc:  # the cluster: said once, tried again at the next period
            problem = f"the remote lanes were not synced: {exc}"
            if problem != self._sync_problem:
                log.warning("%s", problem)
                self.emit(EngineNotice(problem, "warning"))
            self._sync_problem = problem
            return set()
        self._sync_problem = None
        return {lane_id for lane_id in changed if isinstance(lane_id, str)}

    async def sync_now(self) -> list[str]:
        """Sync at once (after a command on a remote lane), waiting for one already running first."""
        remote = self.remote
        if remote is None:
            return []
        if self._sync_task is not None and not self._sync_task.done():
            with contextlib.suppress(Exception):
                await self._sync_task
        return await remote.sync()

    async def stop(self) -> None:
        """Cancel a sync in flight when the engine closes; the remote lanes keep running."""
        task, self._sync_task = self._sync_task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def runner_of(self, lane_id: str) -> Runner:
        """The runner that has this lane: the engine's when its kind is the lane's, a local runner for a
        local lane under a cluster config; a cluster lane under a local config is refused with the fix."""
        record = await asyncio.to_thread(self.store.read, lane_id)
        if record.runner == self.runner.kind:
            return self.runner
        if record.runner == "local":
            return LocalRunner(self.repo, self.config)
        return remote_runner(self.repo, self.config, record)

    async def send(self, lane_id: str, text: str) -> dict[str, Any]:
        """A message for the lane's agent, wherever it runs (`lanes-tui send` from the dashboard)."""
        runner = await self.runner_of(lane_id)
        return await runner.send(lane_id, text)

    async def gates_remote(self, lane_id: str) -> dict[str, object] | None:
        """Run a cluster lane's gates on its node and sync its packet here; None for a local lane."""
        runner = await self.runner_of(lane_id)
        if runner.kind == "local":
            return None
        packet = await runner.run_gates(lane_id)
        await self.sync_now()
        return packet
