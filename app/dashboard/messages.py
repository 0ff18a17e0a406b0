"""The Textual messages the engine bridge posts: few, small, and batched."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from textual.message import Message

from lanes_tui.engine import LaneStatus, MeterSample, QuestionView, StallReport


@dataclass
class LanesChanged(Message):
    """Lanes whose record changed since the last flush (newest status of each)."""

    statuses: tuple[LaneStatus, ...]
    removed: tuple[str, ...] = ()


@dataclass
class MetersChanged(Message):
    """The newest sample of each lane sampled since the last flush."""

    samples: Mapping[str, MeterSample]


@dataclass
class OutputChanged(Message):
    """New output of the lane on screen; other lanes' output stays on disk until selected."""

    lane_id: str
    text: str


@dataclass
class QuestionsUpdated(Message):
    """The whole inbox, oldest first, each question as the engine read it (`QuestionView`)."""

    questions: tuple[QuestionView, ...]


@dataclass
class StallRaised(Message):
    """The watchdog stopped a lane, with its report."""

    lane_id: str
    report: StallReport


@dataclass
class EngineNoticed(Message):
    message: str
    severity: str = "information"


@dataclass
class GitWatchWarned(Message):
    """The git watch's warnings now (empty: all clear): a target moved without an accept, a remote changed."""

    warnings: tuple[str, ...]
