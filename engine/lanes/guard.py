"""What may end or pause a running agent besides its own exit, the watchdog and the wall clock.

The supervisor hands an `AgentRun` a list of guards: the resource guard (a cap that fired in the
lane's cgroup, or the sampler's fallback caps) and the spend guard (a cost or token cap reached: the
lane is paused and the lead asked). Each watchdog tick calls `check` with the sample just taken; a
guard that returns a `Finding` ends the run with that finding's result and reason. After the agent
exited by itself, `after_exit` may still explain how (an OOM kill is a SIGKILL the agent did not
choose). `release` is called before the run stops the agent and once at the end: a guard that
paused (froze) the lane's processes must let them go, or a stop signal would never land.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from lanes_tui.engine.lanes.watchdog import ProcInfo, Sample

__all__ = ["Finding", "RunGuard"]


@dataclass(frozen=True)
class Finding:
    """Why a guard ended a run: a lane result (`FAILED-RESOURCE`, `OUT-OF-BUDGET`), one line for the
    lead, and the figures behind it (kept in the lane's events and record)."""

    result: str
    reason: str
    detail: dict[str, Any] = field(default_factory=dict)


class RunGuard(Protocol):
    """One guard of a run (see the module docstring)."""

    def check(self, sample: Sample) -> Finding | None:
        """Called on every watchdog tick with what the sampler just saw."""
        ...

    def after_exit(self, returncode: int | None, last: tuple[ProcInfo, ...]) -> Finding | None:
        """Called once when the agent exited on its own; `last` is the last sampled tree."""
        ...

    def release(self) -> None:
        """Undo any pause; called before the agent is stopped and when the run ends."""
        ...
