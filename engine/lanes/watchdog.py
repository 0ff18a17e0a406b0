"""The stall watchdog: pure decision logic fed with samples, so it is tested with scripted histories.

Activity is any of: new output bytes, a changed file in the worktree, a change in the process set,
or CPU of the process tree above a small share of the elapsed time. A lane waiting on a question is
never idle: the lead is the one who is slow, not the agent; nor is a CLI that said it waits before
retrying a rate-limited request by itself (`retrying`, until the time it gave): the provider is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from lanes_tui.engine.procs.sampler import ProcInfo

__all__ = ["ProcInfo", "Sample", "Verdict", "Watchdog"]


@dataclass(frozen=True)
class Sample:
    """What one tick of the sampler saw. `t` is monotonic seconds from the injected clock."""

    t: float
    output_bytes: int
    files_changed: bool
    procs: tuple[ProcInfo, ...]
    waiting: bool = False
    #: The CLI is inside a back-off it announced (`Channel.retrying_until`).
    retrying: bool = False

    @property
    def proc_keys(self) -> frozenset[tuple[int, float]]:
        return frozenset(p.key for p in self.procs)

    @property
    def rss(self) -> int:
        return sum(p.rss for p in self.procs)

    def cpu_by_key(self) -> Mapping[tuple[int, float], float]:
        return {p.key: p.cpu_s for p in self.procs}


@dataclass(frozen=True)
class Verdict:
    """The watchdog's reading of one sample."""

    t: float
    idle_s: float
    active: bool
    reasons: tuple[str, ...]
    cpu_percent: float
    stalled: bool


@dataclass
class Watchdog:
    """Tracks the time since the last activity; `observe` says when the lane is stalled.

    `idle_timeout_s = 0` turns stalling off but still measures idle time for the meters.
    `cpu_share` is the fraction of one core (over the interval) that counts as working.
    """

    idle_timeout_s: float
    cpu_share: float = 0.02
    last_activity: float | None = None
    _prev: Sample | None = field(default=None, repr=False)

    def observe(self, sample: Sample) -> Verdict:
        prev = self._prev
        self._prev = sample
        if self.last_activity is None:
            self.last_activity = sample.t
        reasons: list[str] = []
        cpu_percent = 0.0
        if prev is not None:
            elapsed = max(sample.t - prev.t, 1e-9)
            cpu_delta = _cpu_delta(prev, sample)
            cpu_percent = 100.0 * cpu_delta / elapsed
            if sample.output_bytes > prev.output_bytes:
                reasons.append("output")
            if sample.proc_keys != prev.proc_keys:
                reasons.append("processes")
            if cpu_delta > self.cpu_share * elapsed:
                reasons.append("cpu")
        if sample.files_changed:
            reasons.append("files")
        if sample.waiting:
            reasons.append("waiting")
        if sample.retrying:
            reasons.append("retrying")
        if reasons:
            self.last_activity = sample.t
        idle = max(0.0, sample.t - self.last_activity)
        stalled = self.idle_timeout_s > 0 and not sample.waiting and idle >= self.idle_timeout_s
        return Verdict(sample.t, idle, bool(reasons), tuple(reasons), cpu_percent, stalled)


def _cpu_delta(prev: Sample, cur: Sample) -> float:
    """CPU seconds spent between two samples by processes present in both (or new in `cur`)."""
    before = prev.cpu_by_key()
    total = 0.0
    for key, cpu in cur.cpu_by_key().items():
        total += max(0.0, cpu - before.get(key, 0.0))
    return total
