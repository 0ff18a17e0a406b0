"""Work on a Ray lane's node, and the lane's end: gates, publish, stop and discard (`RayLaneEnds`).

Split from `ray_runner` (placing and watching lanes) because these all visit the node where the
lane's worktree is, through its live actor or, once that actor is retired, a short-lived one pinned
to the node (`ray_actors.LaneActors.visit_node`); the lifecycle they follow is in `ray_runner`'s
docstring.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import Any

import ray

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import validate_lane_id
from lanes_tui.engine.git import worktrees
from lanes_tui.engine.git.commands import run_git
from lanes_tui.engine.lanes.runner import Published
from lanes_tui.engine.remote.mirror import LaneMirror, SharedRemote
from lanes_tui.engine.remote.ray_actors import Gone, LaneActors, Unreachable
from lanes_tui.engine.state.model import LIVE_STATES, LaneRecord

log = logging.getLogger("lanes_tui.engine.remote.ray_runner")


class RayLaneEnds:
    """Mixed into `RayRunner`: needs its cluster connection, mirror, actors, remote and per-lane locks,
    and its `_refresh`, `_pollable`, `_absorb` and `_fault` (how a lane's status reaches the mirror)."""

    repo: Path
    config: Config
    mirror: LaneMirror
    remote: SharedRemote
    actors: LaneActors
    _alive: dict[str, bool]

    def connect(self) -> None:
        raise NotImplementedError

    def _lock(self, lane_id: str) -> asyncio.Lock:
        raise NotImplementedError

    async def _refresh(self, lane_id: str) -> bool:
        raise NotImplementedError

    def _pollable(self, record: LaneRecord) -> bool:
        raise NotImplementedError

    def _absorb(self, lane_id: str, seq: int, answer: dict[str, Any]) -> bool:
        raise NotImplementedError

    def _fault(self, lane_id: str, exc: Exception) -> bool:
        raise NotImplementedError

    # --- Work on the node's worktree --------------------------------------------------------------
    async def _visit(self, lane_id: str, method: str, *args: Any, timeout: float = 3600.0) -> Any:
        """`method` on the lane's node: through its live actor, else (its actor retired) through a
        short-lived one pinned to that node; the node's status afterwards goes into the mirror."""
        record = self.mirror.read(lane_id)
        info = self.mirror.runner_info(lane_id)
        await asyncio.to_thread(self.connect)
        gone_fix = f"`lanes-tui recover --relaunch {lane_id}` runs it again from its last checkpoint"
        if record.state == "unreachable":  # a call could hang for as long as the work may take
            raise LanesError(f"lane {lane_id}'s node {record.node} does not answer",
                             "try again once it answers (`lanes-tui status` shows it)")
        if info.get("actor", "live") == "live":
            try:
                answer = await self.actors.call(lane_id, "visit", method, *args, timeout=timeout)
            except (Unreachable, Gone) as exc:
                self._fault(lane_id, exc)
                raise LanesError(f"lane {lane_id}'s node {record.node} does not answer: {exc}", gone_fix) from None
        else:
            node_id, spec = info.get("node_id"), info.get("spec")
            alive = {n["NodeID"] for n in await asyncio.to_thread(ray.nodes) if n.get("Alive")}
            if not node_id or not spec or node_id not in alive:
                raise LanesError(f"lane {lane_id}'s node {record.node} is gone, and its worktree with it", gone_fix)
            try:
                answer = await self.actors.visit_node(node_id, spec, method, *args, timeout=timeout)
            except (Unreachable, Gone) as exc:
                raise LanesError(f"lane {lane_id}'s node {record.node} does not answer: {exc}", gone_fix) from None
        if answer.get("status") is not None:
            self.mirror.from_node(lane_id, answer["status"])
        return answer["value"]

    async def run_gates(self, lane_id: str) -> dict[str, object]:
        """The gates where the worktree is; the packet, kept in the mirror for `check` and `accept`."""
        packet: dict[str, object] = await self._visit(lane_id, "run_gates")
        self.mirror.write_packet(lane_id, dict(packet))
        return packet

    async def publish(self, lane_id: str) -> Published:
        """The node commits what is pending on `lane/<id>` and pushes it to the shared remote."""
        done: dict[str, str] = await self._visit(lane_id, "publish")
        return Published(ref=done["ref"], commit=done["commit"], where=self.config.runner.remote)

    async def fetch_branch(self, lane_id: str) -> str:
        """Publish, then fetch `lane/<id>` into the lead's repository; the commit accept fast-forwards to."""
        published = await self.publish(lane_id)
        await asyncio.to_thread(self.remote.fetch_branch, lane_id)
        return published.commit

    # --- Ending -----------------------------------------------------------------------------------
    async def _retire(self, lane_id: str) -> list[int]:
        """Checkpoint, stop through the shim, drain output and status, THEN kill the actor."""
        forced: list[int] = []
        with contextlib.suppress(Unreachable, Gone, LanesError):
            await self.actors.call(lane_id, "checkpoint", timeout=120.0)
        try:
            forced = await self.actors.call(lane_id, "stop", None, timeout=120.0)
            for _ in range(64):
                seq = self.mirror.seq(lane_id)
                answer = await self.actors.call(lane_id, "poll", seq, 4 << 20)
                self._absorb(lane_id, seq, answer)
                if len(answer["output"][0]) == 0:
                    break
        except (Unreachable, Gone) as exc:
            self._fault(lane_id, exc)
            return forced
        handle = self.actors.forget(lane_id)
        if handle is not None:
            await asyncio.to_thread(ray.kill, handle)
        self.mirror.set_runner_info(lane_id, actor="retired")
        self._alive[lane_id] = False
        return forced

    async def stop(self, lane_id: str) -> list[int]:
        """Stop the lane (the shim takes its tree down) and let its actor go; the pids killed by force."""
        validate_lane_id(lane_id)
        if not self.mirror.store.exists(lane_id):  # nothing of ours: at most a stray actor by that name
            await asyncio.to_thread(self.actors.kill_by_name, lane_id)
            return []
        record = self.mirror.read(lane_id)
        if record.runner != "ray" or self.mirror.runner_info(lane_id).get("actor", "live") != "live":
            return []
        await asyncio.to_thread(self.connect)
        if record.state == "unreachable":  # one quick try, not minutes of timeouts on a silent node
            await self._refresh(lane_id)
            record = self.mirror.read(lane_id)
            if record.state == "unreachable":
                raise LanesError(f"lane {lane_id}'s node {record.node} does not answer: it cannot be stopped now",
                                 "try again once it answers; a node that is gone takes the lane's processes "
                                 "with it (the lane then shows lost)")
            if not self._pollable(record):
                return []
        async with self._lock(lane_id):
            forced = await self._retire(lane_id)
        record = self.mirror.read(lane_id)
        if record.state in LIVE_STATES:  # stopped before its supervisor could say how it ended
            self.mirror.mark(lane_id, "exited", f"stopped by the lead on {record.node}")
        return forced

    async def discard(self, lane_id: str) -> list[str]:
        """Stop the lane, remove its worktree and clone on the node, its refs on the remote and the
        lead's copy of its branch, then its mirror; what was removed."""
        record = self.mirror.read(lane_id)
        removed: list[str] = []
        try:
            removed += await self._visit(lane_id, "discard")
        except LanesError as exc:  # a lost node took its worktree with it: the rest is still ours to clean
            self.mirror.note(lane_id, f"discard: {exc}")
        await asyncio.to_thread(self.actors.kill_by_name, lane_id)
        removed += await asyncio.to_thread(self.remote.drop_lane, lane_id)
        branch = f"lane/{lane_id}"
        if worktrees.current_branch(self.repo) != branch and run_git(
                self.repo, "branch", "-D", "--", branch, check=False).returncode == 0:
            removed.append(f"{branch} (fetched)")
        if self.mirror.remove(lane_id):
            removed.append(str(self.mirror.paths.lane(lane_id).dir))
        self._alive.pop(lane_id, None)
        log.info("discarded %s (%s)", lane_id, record.node)
        return removed
