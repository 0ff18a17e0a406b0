"""`RayRunner`: lanes in named, detached Ray actors on a cluster (with `ray_actors`, `ray_ends` and
`ray_doctor`, the only modules that import Ray).

Imported only by `decisions.runners.make_runner` when `[runner] kind = "ray"`; the actors' handles,
calls and environment are in `ray_actors`, work on a lane's node and the lane's end in `ray_ends`.
Each lane is one actor (`actor.LaneActorBody` on its node, named `spec.actor_name(repo_key,
lane_id)` in `spec.NAMESPACE`, `lifetime="detached"` so it outlives the dashboard, `max_restarts=0`
because a restart would run an agent again blindly), placed by one `lane_slot` of custom resource
and the config's node labels.
The lead's disk keeps a mirror of every Ray lane (`mirror.LaneMirror`); `sync` refreshes it.

Lifecycle, and why:
* `start` pushes the lane's base to the shared remote (`BASE_REF`), writes the mirror record, creates
  the actor and calls `begin` (clone, worktree, supervisor under the reaper shim on the node).
* `stop` calls the actor's `stop` (the shim stops the lane's whole tree) THEN `ray.kill`s it: a kill
  alone SIGKILLs the worker first. A lane that ends by itself is let go the same way by `sync`, so a
  finished lane holds no `lane_slot`. Its worktree stays on the node (`ray.json` says the actor is
  `retired`); gates, publish and discard then visit the node with a short-lived actor pinned to it.
* Faults: an actor that does not answer (`ActorUnavailableError`, or no answer within
  `call_timeout_s`) makes the lane `unreachable`; a dead or vanished actor makes it `lost`, the node
  named. `relaunch` runs the next attempt on another node from the last pushed checkpoint.
* A start the cluster cannot place (every `lane_slot` taken) is refused, not queued: one clear
  error, and no record, actor or remote ref is left (the plan scheduler retries later).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import validate_lane_id
from lanes_tui.engine.lanes.launcher import LaunchRequest, supervisor_alive
from lanes_tui.engine.lanes.runner import read_output
from lanes_tui.engine.remote.inbox_relay import lead_answers, take_node_files
from lanes_tui.engine.remote.mirror import LaneMirror, SharedRemote, node_label, plan_launch, relaunch_request
from lanes_tui.engine.remote.ray_actors import Gone, LaneActor, LaneActors, Unreachable, actor_env
from lanes_tui.engine.remote.ray_doctor import CLUSTER_FIX, check_reachable, cluster_checks, first_line
from lanes_tui.engine.remote.ray_ends import RayLaneEnds
from lanes_tui.engine.remote.spec import NAMESPACE, NodeLaneSpec, actor_name
from lanes_tui.engine.state.model import FINAL_STATES, LIVE_STATES, LaneRecord
from lanes_tui.engine.state.paths import repo_key

__all__ = ["RayRunner"]

log = logging.getLogger(__name__)



class RayRunner(RayLaneEnds):
    """Lanes as detached actors on the Ray cluster at `config.runner.address` (module docstring)."""

    kind = "ray"

    def __init__(self, repo: Path, config: Config, *, work_root: str | None = None,
                 call_timeout_s: float = 5.0, placement_timeout_s: float = 120.0) -> None:
        self.repo = repo
        self.config = config
        self.key = repo_key(repo)
        self.mirror = LaneMirror(repo)
        self.remote = SharedRemote(repo, config.runner.remote)
        #: The nodes' folder for clones and worktrees (None: each node's `~/.cache/lanes-tui/ray`).
        self.work_root = work_root
        #: How long a start waits for a node with a free `lane_slot` before it is refused.
        self.placement_timeout_s = placement_timeout_s
        self._connected_here = False
        #: The lanes' actors; a status, output or send answers within `call_timeout_s` or the lane is unreachable.
        self.actors = LaneActors(self.key, call_timeout_s)
        self._alive: dict[str, bool] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    # --- The cluster ------------------------------------------------------------------------------
    def connect(self) -> None:
        """Join the cluster once per process (`ray.init` takes seconds); one LanesError if it cannot."""
        if ray.is_initialized():
            return
        address = self.config.runner.address
        # Off the main thread (the async methods connect through `to_thread`) Ray leaves the process's
        # SIGTERM handler alone and says so; the dashboard keeps its own handler, and the notice is noise.
        check_reachable(address)  # Ray itself retries an address that does not answer for minutes
        worker_log = logging.getLogger("ray._private.worker")
        level = worker_log.level
        worker_log.setLevel(logging.ERROR)
        try:
            ray.init(address=address, namespace=NAMESPACE, log_to_driver=False, logging_level=logging.WARNING)
        except Exception as exc:  # ConnectionError, RuntimeError, TimeoutError…: all mean "no cluster there"
            raise LanesError(f"no Ray cluster answers at {address!r}: {first_line(exc)}", CLUSTER_FIX) from None
        finally:
            worker_log.setLevel(level)
        self._connected_here = True

    async def close(self) -> None:
        """Let go of the cluster (only a connection this runner made); the lanes' actors keep running."""
        self.actors.clear()
        if self._connected_here and ray.is_initialized():
            await asyncio.to_thread(ray.shutdown)
        self._connected_here = False

    def _lock(self, lane_id: str) -> asyncio.Lock:
        return self._locks.setdefault(lane_id, asyncio.Lock())

    # --- Starting ---------------------------------------------------------------------------------
    async def start(self, request: LaunchRequest) -> LaneRecord:
        """Validate like `launch_lane`, push the base, write the mirror, place the actor, begin."""
        return await self._launch(request)

    async def _launch(self, request: LaunchRequest, *, start_commit: str | None = None,
                      base_sha: str | None = None, avoid_node: str | None = None) -> LaneRecord:
        record, spec = plan_launch(self.repo, self.config, request, start_commit=start_commit, base_sha=base_sha,
                                   work_root=self.work_root)
        lane_id = record.id
        await asyncio.to_thread(self.connect)  # no cluster: refused before anything exists
        strategy = await asyncio.to_thread(self._placement, avoid_node)
        await asyncio.to_thread(self.remote.push_base, lane_id, spec.start_commit)
        self.mirror.create(record)
        self.mirror.set_runner_info(lane_id, spec=spec.to_json(), actor="live")
        try:
            begun = await self._place_and_begin(lane_id, spec, strategy)
        except BaseException:
            await self._undo_start(lane_id)
            raise
        where = begun["node"]
        self.mirror.set_runner_info(lane_id, node_id=where["node_id"], hostname=where["hostname"],
                                    clone=begun["prepared"].get("clone"))
        self.mirror.from_node(lane_id, begun["record"], node=node_label(where["hostname"], where["node_id"]))
        self._alive[lane_id] = True
        return self.mirror.read(lane_id)

    def _placement(self, avoid_node: str | None) -> Any:
        """Refuse a start no node can take now; for a relaunch, a soft pull towards another node."""
        total = ray.cluster_resources().get("lane_slot", 0)
        if total < 1:
            raise LanesError("no node of the cluster offers a lane_slot",
                             "start the nodes with `ray start --resources '{\"lane_slot\": 2}'`")
        if ray.available_resources().get("lane_slot", 0) < 1:
            raise LanesError(f"every lane slot of the cluster is taken ({total:g} of {total:g})",
                             "wait for a lane to end, stop one, or add a node")
        if avoid_node is None:
            return None
        try:  # Ray's own per-node view (no public API gives it without the dashboard)
            from ray._private.state import available_resources_per_node

            free = available_resources_per_node()
        except (ImportError, AttributeError, RuntimeError):
            return None
        others = sorted(((res.get("lane_slot", 0), node) for node, res in free.items()
                         if node != avoid_node and res.get("lane_slot", 0) >= 1), reverse=True)
        if not others:
            return None
        return NodeAffinitySchedulingStrategy(node_id=others[0][1], soft=True, _spill_on_unavailable=True)

    async def _place_and_begin(self, lane_id: str, spec: NodeLaneSpec, strategy: Any) -> dict[str, Any]:
        options: dict[str, Any] = dict(
            name=actor_name(self.key, lane_id), namespace=NAMESPACE, lifetime="detached", max_restarts=0,
            max_task_retries=0, resources={"lane_slot": 1}, num_cpus=0, max_concurrency=4)
        if self.config.runner.labels:
            options["label_selector"] = dict(self.config.runner.labels)
        if strategy is not None:
            options["scheduling_strategy"] = strategy
        try:
            handle = await asyncio.to_thread(lambda: LaneActor.options(**options, **actor_env()).remote(spec.to_json()))
        except ValueError as exc:  # the name is taken: an actor of an earlier lane with this id
            raise LanesError(f"an actor for lane {lane_id} already runs on the cluster ({first_line(exc)})",
                             f"`ray kill` it or pick another --id: {actor_name(self.key, lane_id)}") from None
        self.actors.keep(lane_id, handle)
        try:
            await self.actors.answer(handle.node.remote(), self.placement_timeout_s)
        except Unreachable:
            raise LanesError(f"no node took lane {lane_id} within {self.placement_timeout_s:g}s: every lane "
                             "slot (or every node with the labels asked for) is taken", "wait for a lane to end, "
                             "stop one, or add a node") from None
        except Gone as exc:
            raise LanesError(f"lane {lane_id}'s actor died before it started: {exc}",
                             "see `ray status` and the node's logs") from None
        try:
            begun: dict[str, Any] = await self.actors.answer(handle.begin.remote(), 900.0)
        except BaseException as exc:  # placed: the node cleans up what the start made there, then it goes
            with contextlib.suppress(Exception):
                await self.actors.answer(handle.discard.remote(), 60.0)
            if isinstance(exc, Unreachable | Gone):
                raise LanesError(f"lane {lane_id} did not start on its node: {exc}", "see the node's logs") from None
            raise
        return begun

    async def _undo_start(self, lane_id: str) -> None:
        """A start that failed leaves no actor, remote ref or mirror (as `launch_lane` undoes its own)."""
        handle = self.actors.forget(lane_id)
        if handle is not None:  # never placed, or its node already cleaned up (`_place_and_begin`)
            with contextlib.suppress(Exception):
                ray.kill(handle)
        with contextlib.suppress(LanesError):
            await asyncio.to_thread(self.remote.drop_lane, lane_id)
        self.mirror.remove(lane_id)

    # --- Reading ----------------------------------------------------------------------------------
    def _pollable(self, record: LaneRecord) -> bool:
        """A lane whose actor is ours to ask: placed (its start wrote the node; a start still waiting
        for a node is not unreachable) and neither let go, lost nor decided."""
        info = self.mirror.runner_info(record.id)
        return (record.runner == "ray" and record.state not in FINAL_STATES and record.state != "lost"
                and info.get("actor", "live") == "live" and bool(info.get("node_id")))

    async def _refresh(self, lane_id: str) -> bool:
        """One poll of the lane's actor into the mirror; True if its state changed."""
        async with self._lock(lane_id):
            record = self.mirror.read(lane_id)
            if not self._pollable(record):
                return False
            await asyncio.to_thread(self.connect)
            changed = False
            for _ in range(8):  # a lane that printed a lot catches up in batches
                seq = self.mirror.seq(lane_id)
                answers = lead_answers(self.mirror.inbox(lane_id))  # the lead's, to questions asked there
                try:
                    answer = await self.actors.call(lane_id, "poll", seq, 1 << 20, answers)
                except (Unreachable, Gone) as exc:
                    return self._fault(lane_id, exc) or changed
                changed = self._absorb(lane_id, seq, answer) or changed
                if answer["status"] is None or len(answer["output"][0]) < 1 << 20:
                    break
            status = answer["status"]
            if status is not None and not status.get("supervisor_alive") and not status.get("shim_alive"):
                await self._retire(lane_id)  # it ended: let the actor (and its lane_slot) go
                if self.mirror.read(lane_id).state in LIVE_STATES:  # its supervisor died without a word
                    self.mirror.mark(lane_id, "lost", f"its supervisor on {record.node} is gone")
                changed = changed or self.mirror.read(lane_id).state != record.state
            return changed

    def _absorb(self, lane_id: str, seq: int, answer: dict[str, Any]) -> bool:
        status = answer["status"]
        if status is None:  # still beginning
            return False
        data, next_seq = answer["output"]
        self.mirror.append_output(lane_id, seq, data, next_seq)
        take_node_files(self.mirror.inbox(lane_id), answer.get("inbox") or {})  # questions reach the Inbox
        self.mirror.add_sample(lane_id, answer["sample"])
        self._alive[lane_id] = bool(status.get("supervisor_alive"))
        return self.mirror.from_node(lane_id, status)

    def _fault(self, lane_id: str, exc: Exception) -> bool:
        """The lead-side states of a cluster fault (see the module docstring); True if state changed."""
        self._alive[lane_id] = False
        node = self.mirror.read(lane_id).node or "its node"
        if isinstance(exc, Gone):
            self.mirror.set_runner_info(lane_id, actor="gone")
            return self.mirror.mark(lane_id, "lost", f"lost with node {node}: {exc}")
        return self.mirror.mark(lane_id, "unreachable", f"node {node} does not answer")

    async def sync(self) -> list[str]:
        """Refresh every Ray lane's mirror (status, new output, latest sample); the ids whose state changed."""
        lanes = [record.id for record in self.mirror.ray_lanes() if self._pollable(record)]
        if not lanes:
            return []
        results = await asyncio.gather(*(self._refresh(lane_id) for lane_id in lanes), return_exceptions=True)
        for lane_id, result in zip(lanes, results, strict=True):
            if isinstance(result, BaseException) and not isinstance(result, LanesError):
                raise result
            if isinstance(result, LanesError):
                log.warning("sync of %s: %s", lane_id, result)
        return [lane_id for lane_id, result in zip(lanes, results, strict=True) if result is True]

    async def attach(self, lane_id: str) -> bool:
        """After a restart: is the lane's actor alive with its supervisor running? (Then `sync` goes on
        with its output from the mirror's sequence.)"""
        validate_lane_id(lane_id)
        if not self.mirror.store.exists(lane_id):
            return False
        record = self.mirror.read(lane_id)
        if record.runner != "ray":
            return await asyncio.to_thread(supervisor_alive, self.repo, lane_id)
        await self._refresh(lane_id)
        return self._pollable(self.mirror.read(lane_id)) and self._alive.get(lane_id, False)

    async def status(self, lane_id: str) -> LaneRecord:
        record = self.mirror.read(lane_id)
        if self._pollable(record):
            await self._refresh(lane_id)
            record = self.mirror.read(lane_id)
        return record

    async def output(self, lane_id: str, from_seq: int, max_bytes: int) -> tuple[bytes, int]:
        """From the mirror; a reader at its end first pulls what the node has beyond it."""
        record = self.mirror.read(lane_id)
        if from_seq >= self.mirror.seq(lane_id) and self._pollable(record):
            await self._refresh(lane_id)
        return await asyncio.to_thread(read_output, self.mirror.paths.lane(lane_id).output, from_seq, max_bytes)

    async def sample(self, lane_id: str) -> dict[str, Any] | None:
        await self.status(lane_id)
        return self.mirror.last_sample(lane_id)

    async def send(self, lane_id: str, text: str) -> dict[str, Any]:
        record = self.mirror.read(lane_id)
        try:
            reply: dict[str, Any] = await self.actors.call(lane_id, "send", text,
                                                           timeout=max(30.0, self.actors.call_timeout_s))
        except (Unreachable, Gone) as exc:
            self._fault(lane_id, exc)
            raise LanesError(f"lane {lane_id} on {record.node} did not take the message: {exc}",
                             "see its state with `lanes-tui status`") from None
        return reply

    async def watch(self, lane_id: str, seconds: float) -> float:
        """The lease goes to the lane's supervisor on its node, through its actor (`NodeLane.watch`)."""
        try:
            granted = await self.actors.call(lane_id, "watch", seconds)
        except (Unreachable, Gone) as exc:
            raise LanesError(f"lane {lane_id} cannot be reached for a watch lease: {exc}") from None
        return float(granted)

    # --- Relaunch ---------------------------------------------------------------------------------
    async def relaunch(self, lane_id: str) -> LaneRecord:
        """The next attempt of a lost (or ended) lane, on another node, from its last pushed checkpoint
        (`refs/lanes-wip/<id>`, else its published branch, else its base)."""
        record = self.mirror.read(lane_id)
        if record.runner != "ray":
            raise LanesError(f"lane {lane_id} runs on this machine", "use `lanes-tui recover --relaunch` for it")
        if record.state in LIVE_STATES or record.state == "unreachable":
            raise LanesError(f"lane {lane_id} is {record.state} on {record.node}",
                             "stop it first, or wait until it is lost (its node gone)")
        found = await asyncio.to_thread(self.remote.last_work, lane_id)
        source, start = found if found is not None else ("its base", record.base_sha)
        request = relaunch_request(record, self.mirror.paths.lane_ids())
        avoid = self.mirror.runner_info(lane_id).get("node_id")
        new = await self._launch(request, start_commit=start, base_sha=record.base_sha, avoid_node=avoid)
        record = self.mirror.read(lane_id)
        record.superseded_by = new.id
        self.mirror.write(record)
        self.mirror.note(new.id, f"relaunched from {lane_id} ({record.state} on {record.node}) "
                                 f"at {source} {start[:12]}")
        return new

    # --- doctor ---------------------------------------------------------------------------------
    def doctor(self) -> list[tuple[str, bool, str]]:
        """(check, ok, detail): the cluster, versions on every node, lane slots, the remote from a node."""
        try:
            self.connect()
        except LanesError as exc:
            return [("cluster", False, str(exc))]
        return cluster_checks(self.config.runner)
