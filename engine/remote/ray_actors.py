"""The lanes' Ray actors as `RayRunner` reaches them: handles found by name, calls with the cluster's
faults turned into two kinds, and the environment every lane actor starts with.

Split from `ray_runner` (the lifecycle of a lane) because this is the plumbing under every step of it:
`Unreachable` (no answer in time: the lane may come back) and `Gone` (the actor is dead or vanished:
its processes went with it) are what the runner maps to the `unreachable` and `lost` states.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import Any

import ray
from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError, RayTaskError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.remote.actor import LaneActorBody
from lanes_tui.engine.remote.ray_doctor import first_line
from lanes_tui.engine.remote.spec import NAMESPACE, actor_name

__all__ = ["ACTOR_ENV", "Gone", "LaneActor", "LaneActors", "Unreachable", "actor_env"]

#: What follows the lead's environment into a lane's actor (and so to its supervisor): the git
#: identity of its commits, the load wait of its gates (`LANES_HEAVY_LOAD`, as the supervisor gets it
#: locally) and lanes-tui's diagnostics (`lanes.env.DIAGNOSTIC_ENV`: the test suite's leak marker, so
#: a lane process left behind on a node fails the test that left it). Never a secret.
ACTOR_ENV = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
             "LANES_HEAVY_LOAD", "LANESTUI_DEBUG_MODULES", "LANESTEST_MARKER")

#: Ray's core worker SIGKILLs its direct children when it exits (its raylet gone, say): that is the
#: reaper shim, which then cannot take the lane's tree down, and the supervisor and agent (in a
#: session of their own) run on unseen. The shim is the lane's reaper, so Ray's is turned off for
#: the lane's actor: the worker's death reaches the shim as PDEATHSIG, and the shim stops the lane.
RAY_WORKER_ENV = {"RAY_kill_child_processes_on_worker_exit": "0"}


class _RayLaneActor(LaneActorBody):
    """The body, answering its node's id from Ray's runtime context."""

    def node_id(self) -> str:
        return str(ray.get_runtime_context().get_node_id())


LaneActor = ray.remote(_RayLaneActor)


class Unreachable(Exception):
    """The actor did not answer (its node is cut off or overloaded): the lane may come back."""


class Gone(Exception):
    """The actor is dead or no longer exists: the lane's processes went with it."""


def actor_env() -> dict[str, Any]:
    """The `runtime_env` option for a lane's actor: `RAY_WORKER_ENV` and the lead's `ACTOR_ENV`."""
    env = {**RAY_WORKER_ENV, **{name: os.environ[name] for name in ACTOR_ENV if name in os.environ}}
    return {"runtime_env": {"env_vars": env}}


class LaneActors:
    """The handles of one repository's lane actors, and calls to them."""

    def __init__(self, key: str, call_timeout_s: float) -> None:
        self.key = key
        #: How long a status, output or send may take before the lane counts as unreachable.
        self.call_timeout_s = call_timeout_s
        self._handles: dict[str, Any] = {}

    def keep(self, lane_id: str, handle: Any) -> None:
        self._handles[lane_id] = handle

    def forget(self, lane_id: str) -> Any:
        """Drop the lane's handle (the actor is untouched); the handle, or None."""
        return self._handles.pop(lane_id, None)

    def clear(self) -> None:
        self._handles.clear()

    def get(self, lane_id: str) -> Any:
        """The lane's actor handle, found by name (after a restart too); Gone when there is none."""
        handle = self._handles.get(lane_id)
        if handle is None:
            try:
                handle = ray.get_actor(actor_name(self.key, lane_id), namespace=NAMESPACE)
            except ValueError:
                raise Gone("its actor no longer exists on the cluster") from None
            self._handles[lane_id] = handle
        return handle

    async def answer(self, ref: Any, timeout: float) -> Any:
        """An actor call's answer, with the cluster's faults turned into Unreachable / Gone and a
        lane's own refusal (a LanesError on the node) into a LanesError here."""
        try:
            return await asyncio.wait_for(asyncio.wrap_future(ref.future()), timeout)
        except TimeoutError:
            raise Unreachable(f"no answer within {timeout:g}s") from None
        except ActorUnavailableError:
            raise Unreachable("the actor is unavailable") from None
        except (ActorDiedError, RayActorError) as exc:
            raise Gone(f"its actor died ({first_line(exc)})") from None
        except RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if isinstance(cause, LanesError):
                raise LanesError(cause.what, cause.fix) from None
            raise LanesError(f"the lane's node failed: {first_line(cause or exc)}",
                             "see the actor's log on the node (`ray logs`)") from None

    async def call(self, lane_id: str, method: str, *args: Any, timeout: float | None = None) -> Any:
        """`method` of the lane's actor, answered within `timeout` (default `call_timeout_s`)."""
        handle = await asyncio.to_thread(self.get, lane_id)
        try:
            return await self.answer(getattr(handle, method).remote(*args), timeout or self.call_timeout_s)
        except Gone:
            self.forget(lane_id)
            raise

    async def visit_node(self, node_id: str, spec: Any, method: str, *args: Any, timeout: float) -> Any:
        """`method` run by a short-lived actor pinned to `node_id` (a retired lane's worktree is there)."""
        strategy = NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
        visitor = LaneActor.options(num_cpus=0, max_restarts=0, max_task_retries=0, scheduling_strategy=strategy,
                                    **actor_env()).remote(spec)
        try:
            return await self.answer(visitor.visit.remote(method, *args), timeout)
        finally:
            ray.kill(visitor)

    def kill_by_name(self, lane_id: str) -> None:
        """Kill the lane's actor if one is left (never connecting just for that)."""
        self.forget(lane_id)
        if not ray.is_initialized():
            return
        with contextlib.suppress(ValueError):
            ray.kill(ray.get_actor(actor_name(self.key, lane_id), namespace=NAMESPACE))
