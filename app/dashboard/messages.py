"""The Textual messages the engine bridge posts: few, small, and batched."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from textual.message import Message

from lanes_tui.engine import LaneStatus


@dataclass
class LanesChanged(Message):
    """Lanes whose record changed since the last flush (newest status of each)."""

    statuses: tuple[LaneStatus, ...]
    removed: tuple[str, ...] = ()


@dataclass
class MetersChanged(Message):
    """The newest sample of each lane sampled since the last flush."""

    samples: Mapping[str, Mapping[str, Any]]


@dataclass
class OutputChanged(Message):
    """New output of the lane on screen; other lanes' output stays on disk until selected."""

    lane_id: str
    text: str


@dataclass
class QuestionsUpdated(Message):
    questions: tuple[Mapping[str, Any], ...]


@dataclass
class StallRaised(Message):
    lane_id: str
    report: Mapping[str, Any]


@dataclass
class EngineNoticed(Message):
    message: str
    severity: str = "information"


@dataclass
class GitWatchWarned(Message):
    """The git watch's warnings now (empty: all clear): a target moved without an accept, a remote changed."""

    warnings: tuple[str, ...]
