"""The typed events the engine streams to the dashboard: small, frozen, and cheap to coalesce."""

from __future__ import annotations

from dataclasses import dataclass

from lanes_tui.engine.inbox.view import QuestionView
from lanes_tui.engine.state.samples import MeterSample, StallReport
from lanes_tui.engine.state.status import LaneStatus


@dataclass(frozen=True)
class LaneChanged:
    """A lane's record changed (state, provider, result…); `status` is its newest typed status."""

    lane_id: str
    status: LaneStatus
    previous_state: str | None


@dataclass(frozen=True)
class LaneRemoved:
    lane_id: str


@dataclass(frozen=True)
class OutputAppended:
    """New bytes of `output.log` from `offset`; a flood is cut to the newest tail (`skipped` bytes)."""

    lane_id: str
    offset: int
    text: str
    skipped: int = 0
    end: int = 0  # the byte offset just past this chunk: lets a reader drop what it already showed


@dataclass(frozen=True)
class MetersSampled:
    """The supervisor's newest watchdog sample for a lane (CPU %, RSS, idle seconds, …)."""

    lane_id: str
    sample: MeterSample


@dataclass(frozen=True)
class StallDetected:
    """The watchdog stopped a lane (its `stalled` event), with its report."""

    lane_id: str
    report: StallReport


@dataclass(frozen=True)
class QuestionsChanged:
    """The inbox changed; `questions` are every question's view (`inbox.view`), oldest first."""

    questions: tuple[QuestionView, ...]


@dataclass(frozen=True)
class EngineNotice:
    """Something the lead should read: a refusal, a failure in the background, a reconcile."""

    message: str
    severity: str = "information"


@dataclass(frozen=True)
class GitWatchChanged:
    """The git watch's warnings now (`git.watch`): a target moved without an accept, a remote changed."""

    warnings: tuple[str, ...]


EngineEvent = (LaneChanged | LaneRemoved | OutputAppended | MetersSampled | StallDetected
               | QuestionsChanged | EngineNotice | GitWatchChanged)
