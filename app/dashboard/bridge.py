"""The one bridge from engine events to Textual messages.

Events are folded into pending state and flushed at most every `flush_s`: a hundred lanes printing
twenty lines a second become one output message for the lane on screen and one meters message per
flush, so the message queue never grows with the number of lanes. Meters go at most every
`meters_s` (ten flushes, a second by default): a hundred lanes sampling every few seconds would
otherwise repaint rows of the Lanes table on nearly every flush, for figures that move once per
sample anyway; lane states, output and questions keep the short `flush_s`.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Protocol

from textual.message import Message

from lanes_tui.app.dashboard.messages import (
    EngineNoticed,
    GitWatchWarned,
    LanesChanged,
    MetersChanged,
    OutputChanged,
    QuestionsUpdated,
    StallRaised,
)
from lanes_tui.engine import (
    EngineEvent,
    EngineNotice,
    GitWatchChanged,
    LaneChanged,
    LaneRemoved,
    LaneStatus,
    MeterSample,
    MetersSampled,
    OutputAppended,
    QuestionsChanged,
    QuestionView,
    StallDetected,
)

if TYPE_CHECKING:
    from lanes_tui.engine import Engine  # the module is imported after the first frame (`app.LanesApp`)


class Poster(Protocol):
    def post_message(self, message: Message) -> bool: ...


class EngineBridge:
    def __init__(self, target: Poster, engine: Engine, *, flush_s: float = 0.1,
                 meters_s: float | None = None) -> None:
        self.target = target
        self.engine = engine
        self.flush_s = flush_s
        self.meters_s = 10 * flush_s if meters_s is None else meters_s
        self._meters_at = float("-inf")  # when meters were last posted (monotonic)
        self._meters_handle: asyncio.TimerHandle | None = None
        self.selected_lane: str | None = None
        self._lanes: dict[str, LaneStatus] = {}
        self._removed: set[str] = set()
        self._samples: dict[str, MeterSample] = {}
        self._output: list[str] = []
        self._shown_until = 0  # bytes of the selected lane's output already on screen
        self._held: list[OutputAppended] | None = None  # output that came while the tail was loading
        self._questions: tuple[QuestionView, ...] | None = None
        self._flush_handle: asyncio.TimerHandle | None = None
        self.events_seen = 0
        # Nothing is on screen yet: the engine reads no lane's output until one is selected (the
        # `output_lanes` setter is the engine's `follow_output`, and fake engines take it as a plain field).
        self.engine.output_lanes = set()

    async def run(self) -> None:
        async for event in self.engine.events():
            self.events_seen += 1
            self.fold(event)

    def fold(self, event: EngineEvent) -> None:
        """Fold one event into what the next flush posts; rare, important events go at once."""
        if isinstance(event, LaneChanged):
            self._lanes[event.lane_id] = event.status
            self._removed.discard(event.lane_id)
        elif isinstance(event, LaneRemoved):
            self._lanes.pop(event.lane_id, None)
            self._removed.add(event.lane_id)
        elif isinstance(event, MetersSampled):
            self._samples[event.lane_id] = event.sample
        elif isinstance(event, OutputAppended):
            if event.lane_id != self.selected_lane:
                return
            if self._held is not None:
                self._held.append(event)
                return
            self._append(event)
        elif isinstance(event, QuestionsChanged):
            self._questions = event.questions
        elif isinstance(event, StallDetected):
            self.target.post_message(StallRaised(event.lane_id, event.report))
            return
        elif isinstance(event, EngineNotice):
            self.target.post_message(EngineNoticed(event.message, event.severity))
            return
        elif isinstance(event, GitWatchChanged):
            self.target.post_message(GitWatchWarned(event.warnings))
            return
        self._schedule()

    def select(self, lane_id: str | None, from_offset: int | None = None) -> bool:
        """The lane on screen changed: pending output of the old one is dropped (it is on disk).

        Called before the lane's tail is loaded: the engine notes where the lane's output ends now
        and streams from there, so the stream overlaps the tail (`shown` trims it) and never gaps.
        With `from_offset` (a tail ending there is in hand already), the engine streams from there
        when it can (`Engine.follow_output`); returns whether it does.
        """
        self.selected_lane = lane_id
        resumed = False
        if from_offset is None or lane_id is None:
            self.engine.output_lanes = {lane_id} if lane_id else set()
        else:
            resumed = self.engine.follow_output(lane_id, from_offset)
        self._output.clear()
        self._held = []  # held until the tail is loaded (`shown`), then replayed past its end
        return resumed

    def shown(self, lane_id: str, end: int) -> None:
        """The tail up to byte `end` is on screen: append only what comes after it."""
        if lane_id != self.selected_lane:
            return
        held, self._held = self._held or [], None
        self._shown_until = end
        for event in held:
            self._append(event)
        if self._output:
            self._schedule()

    def _append(self, event: OutputAppended) -> None:
        if event.end <= self._shown_until:
            return
        text = event.text
        if event.offset < self._shown_until:  # partly on screen already
            text = text.encode()[self._shown_until - event.offset:].decode("utf-8", errors="replace")
        self._shown_until = event.end
        self._output.append(text)

    def _schedule(self) -> None:
        if self._flush_handle is None:
            self._flush_handle = asyncio.get_running_loop().call_later(self.flush_s, self.flush)

    def _meters_due(self) -> None:
        self._meters_handle = None
        self.flush()

    def flush(self) -> None:
        self._flush_handle = None
        if self._lanes or self._removed:
            self.target.post_message(LanesChanged(tuple(self._lanes.values()), tuple(self._removed)))
            self._lanes = {}
            self._removed = set()
        if self._samples:
            wait = self._meters_at + self.meters_s - time.monotonic()
            if wait <= 0:
                self.target.post_message(MetersChanged(self._samples))
                self._samples = {}
                self._meters_at = time.monotonic()
            elif self._meters_handle is None:  # kept, newest sample per lane, until meters are due
                self._meters_handle = asyncio.get_running_loop().call_later(wait, self._meters_due)
        if self._output and self.selected_lane is not None:
            self.target.post_message(OutputChanged(self.selected_lane, "".join(self._output)))
            self._output = []
        if self._questions is not None:
            self.target.post_message(QuestionsUpdated(self._questions))
            self._questions = None
