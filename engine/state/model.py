"""Lane states, results and the lane record kept in `lane.json`.

The names are a contract with scripts and tests (PRODUCT.md), so they are plain strings in one place.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

STATES = (
    "queued", "launching", "running", "waiting", "stalled", "exited", "checking",
    "ready", "rejected", "conflict", "accepted", "abandoned", "lost",
)
RESULTS = ("OK", "LANE-FAILED", "LANE-STALLED", "OUT-OF-BUDGET", "CONFIG-ERROR", "FAILED-RESOURCE")
TASK_TYPES = ("backend", "hard", "ui", "tests", "docs")

#: States in which a supervisor is expected to be alive and own the lane.
LIVE_STATES = frozenset({"queued", "launching", "running", "waiting"})
#: States no process of the lane should be in any more.
FINAL_STATES = frozenset({"accepted", "abandoned"})
#: States after which a lane does nothing more by itself (`wait`'s default).
SETTLED_STATES = ("exited", "stalled", "ready", "rejected", "conflict", "accepted", "abandoned", "lost")


@dataclass
class ProviderAttempt:
    """One provider's run inside a lane: what ran, how it ended, how long it took."""

    provider: str
    model: str = ""
    result: str | None = None
    returncode: int | None = None
    started: float | None = None
    ended: float | None = None
    duration_s: float | None = None
    reason: str = ""
    session_id: str | None = None


@dataclass
class LaneRecord:
    """What `lane.json` holds. Written atomically; the supervisor is its writer while it lives."""

    id: str
    slug: str
    attempt: int
    task_type: str
    prompt: str
    chain: list[str]
    repo: str
    worktree: str
    branch: str
    base_sha: str
    target_branch: str
    state: str = "queued"
    state_reason: str = "created"
    result: str | None = None
    providers_tried: list[ProviderAttempt] = field(default_factory=list)
    created: float = 0.0
    updated: float = 0.0
    supervisor_pid: int | None = None
    supervisor_start: float | None = None
    agent_pid: int | None = None
    stall: dict[str, Any] | None = None
    session_id: str | None = None
    scope: list[str] = field(default_factory=list)
    superseded_by: str | None = None

    @property
    def provider(self) -> str | None:
        """The provider that ran last (or is running)."""
        return self.providers_tried[-1].provider if self.providers_tried else None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LaneRecord:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["providers_tried"] = [
            ProviderAttempt(**{k: v for k, v in p.items() if k in {f.name for f in fields(ProviderAttempt)}})
            for p in data.get("providers_tried", [])
        ]
        return cls(**values)
