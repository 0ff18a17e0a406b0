"""The bridge's cadence: lane states and output go out at every flush, meters at most every `meters_s`,
the newest sample per lane kept in between (no timing is asserted: flushes are called by hand)."""

from __future__ import annotations

from typing import Any

from textual.message import Message

from lanes_tui.app.dashboard.bridge import EngineBridge
from lanes_tui.app.dashboard.messages import LanesChanged, MetersChanged, OutputChanged
from lanes_tui.engine.state.events import LaneChanged, MetersSampled, OutputAppended
from lanes_tui.engine.state.samples import parse_sample
from tests.fake_engine import lane


class Target:
    def __init__(self) -> None:
        self.posted: list[Message] = []

    def post_message(self, message: Message) -> bool:
        self.posted.append(message)
        return True


class Engine:
    """What the bridge touches of an engine before `run`: the followed lanes."""

    output_lanes: set[str] | None = None


async def test_meters_wait_for_their_cadence_while_states_and_output_do_not() -> None:
    target, engine = Target(), Engine()
    bridge = EngineBridge(target, engine, flush_s=3600, meters_s=3600)  # type: ignore[arg-type]
    assert engine.output_lanes == set()  # nothing is followed before a lane is selected
    bridge.select("a-a1")
    assert engine.output_lanes == {"a-a1"}
    bridge.shown("a-a1", 0)
    bridge.fold(MetersSampled("a-a1", parse_sample({"cpu_percent": 1.0})))
    bridge.flush()
    assert [type(m) for m in target.posted] == [MetersChanged]  # the first meters go at once
    target.posted.clear()
    bridge.fold(MetersSampled("a-a1", parse_sample({"cpu_percent": 2.0})))
    bridge.fold(MetersSampled("a-a1", parse_sample({"cpu_percent": 3.0})))
    bridge.fold(LaneChanged("a-a1", lane("a-a1", "running"), "queued"))
    bridge.fold(OutputAppended("a-a1", 0, "hello\n", 0, 6))
    bridge.flush()
    assert [type(m) for m in target.posted] == [LanesChanged, OutputChanged]  # meters are held
    target.posted.clear()
    bridge.meters_s = 0  # due now
    bridge.flush()
    posted: list[Any] = target.posted
    assert [type(m) for m in posted] == [MetersChanged]
    assert posted[0].samples == {"a-a1": parse_sample({"cpu_percent": 3.0})}  # only the newest sample per lane
