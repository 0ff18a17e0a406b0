"""What may end or pause a running agent besides its own exit, the watchdog and the wall clock.

The supervisor hands an `AgentRun` a list of guards: the resource guard (a cap that fired in the
lane's cgroup, or the sampler's fallback caps) and the spend guard (a cost or token cap reached: the
lane is paused and the lead asked). Each watchdog tick calls `check` with the sample just taken; a
guard that returns a `Finding` ends the run with that finding's result and reason. After the agent
exited by itself, `after_exit` may still explain how (an OOM kill is a SIGKILL the agent did not
choose). `release` is called before the run stops the agent and once at the end: a guard that
paused (froze) the lane's processes must let them go, or a stop signal would never land.

`first_finding`, `first_exit_finding` and `release_all` run a run's guards in order; a guard that
raises is logged and passed over, never allowed to end the lane by itself.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from lanes_tui.engine.lanes.watchdog import ProcInfo, Sample

__all__ = ["Finding", "RunGuard", "first_exit_finding", "first_finding", "release_all"]

log = logging.getLogger(__name__)


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


def first_finding(guards: Sequence[RunGuard], sample: Sample | None) -> Finding | None:
    """The first finding of a guard on this tick's sample (None before the first sample)."""
    if sample is None:
        return None
    for guard in guards:
        try:
            finding = guard.check(sample)
        except Exception:
            log.exception("guard %r failed", guard)
            continue
        if finding is not None:
            return finding
    return None


def first_exit_finding(guards: Sequence[RunGuard], returncode: int | None,
                       last: tuple[ProcInfo, ...]) -> Finding | None:
    """The first guard's explanation of an exit the agent made by itself, if any."""
    for guard in guards:
        try:
            finding = guard.after_exit(returncode, last)
        except Exception:
            log.exception("guard %r failed after the exit", guard)
            continue
        if finding is not None:
            return finding
    return None


def release_all(guards: Sequence[RunGuard]) -> None:
    """Every guard lets go of what it paused."""
    for guard in guards:
        try:
            guard.release()
        except Exception:
            log.exception("guard %r failed to release", guard)
