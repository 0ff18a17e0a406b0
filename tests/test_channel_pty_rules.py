"""The pty channel's delivery rules with a fake terminal and a fake clock: what is typed, and when not.

The terminal fake holds output "in flight" (written by the agent, not yet read) so the re-render just
before typing is checked: a prompt that vanished a moment ago must never get keys.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from lanes_tui.engine.channels import ChannelContext, make_channel
from lanes_tui.engine.channels.pty import PtyChannel
from lanes_tui.engine.channels.screen import DEBOUNCE_S
from lanes_tui.engine.config.providers import PRESETS
from lanes_tui.engine.core.clock import FakeClock
from lanes_tui.engine.inbox.store import InboxStore
from lanes_tui.engine.state.meters import RunMeter

LANE = "pty-a1"
PROMPT = b"Apply edits to calc.py? (Y)es/(N)o [Yes]: "


class FakeTerminal:
    def __init__(self) -> None:
        self.typed: list[tuple[float, bytes]] = []
        self.in_flight = b""
        self.channel: PtyChannel | None = None
        self.clock: FakeClock | None = None

    def write(self, data: bytes) -> bool:
        assert self.clock is not None
        self.typed.append((self.clock.monotonic(), data))
        return True

    def close_input(self) -> None:
        return None

    def refresh(self) -> None:
        if self.in_flight and self.channel is not None:
            self.channel.on_output(self.in_flight)
            self.in_flight = b""


class Rig:
    def __init__(self, tmp_path: Path) -> None:
        self.clock = FakeClock()
        self.inbox = InboxStore(tmp_path / "inbox", self.clock)
        provider = dataclasses.replace(PRESETS["aider"], channel="pty")
        meter = RunMeter(tmp_path / "meters.json", self.clock, provider="aider", model="sonnet")
        channel = make_channel(ChannelContext(lane=LANE, attempt=1, provider=provider, inbox=self.inbox,
                                              meters=meter, clock=self.clock))
        assert isinstance(channel, PtyChannel)
        self.channel = channel
        self.term = FakeTerminal()
        self.term.channel, self.term.clock = channel, self.clock
        channel.attach(self.term)

    async def show(self, data: bytes) -> None:
        self.channel.on_output(data)
        self.clock.advance(DEBOUNCE_S)
        await self.channel.tick()

    def only_question(self) -> str:
        [view] = self.inbox.list(LANE)
        return view.question.id


@pytest.fixture()
def rig(tmp_path: Path) -> Rig:
    return Rig(tmp_path)


async def test_prompt_is_asked_once_and_no_is_typed_as_n_then_enter(rig: Rig) -> None:
    await rig.show(b"Editing calc.py\r\n" + PROMPT)
    qid = rig.only_question()
    question = rig.inbox.get(qid).question
    assert (question.kind, question.source) == ("yesno", "pty")
    assert question.correlation["screen_fingerprint"] == rig.channel.screen.fingerprint()
    await rig.channel.tick()
    await rig.channel.tick()
    assert len(rig.inbox.list(LANE)) == 1, "the same screen is asked about once"
    assert rig.term.typed == []
    rig.inbox.answer(qid, "no")
    start = rig.clock.monotonic()
    await rig.channel.tick()
    assert [data for _, data in rig.term.typed] == [b"n", b"\r"]
    assert rig.term.typed[1][0] - start >= 0.1, "a pause between the key and Enter"
    assert rig.inbox.get(qid).state == "delivered"
    # The echo and the newline: the answered prompt is not asked about again.
    await rig.show(b"n\r\n")
    assert len(rig.inbox.list(LANE)) == 1


async def test_prompt_vanishing_before_any_answer_cancels(rig: Rig) -> None:
    await rig.show(PROMPT)
    qid = rig.only_question()
    rig.channel.on_output(b"\x1b[2J\x1b[HRe-reading calc.py\r\n")
    await rig.channel.tick()
    view = rig.inbox.get(qid)
    assert view.state == "cancelled" and "vanished" in (view.reason or "")
    assert rig.term.typed == []


async def test_answer_racing_a_vanished_prompt_types_nothing(rig: Rig) -> None:
    await rig.show(PROMPT)
    qid = rig.only_question()
    # The agent already redrew (bytes in flight, unread) when the lead's answer lands.
    rig.term.in_flight = b"\r\nNever mind, the file changed.\r\n"
    rig.inbox.answer(qid, "yes")
    await rig.channel.tick()
    assert rig.term.typed == [], "the screen was re-read before typing and no longer matched"
    assert rig.inbox.get(qid).state == "cancelled"


async def test_prompt_redrawn_differently_is_cancelled_and_asked_afresh(rig: Rig) -> None:
    await rig.show(b"first\r\n" + PROMPT)
    first = rig.only_question()
    rig.channel.on_output(b"\r\nApply edits to main.py? (Y)es/(N)o [Yes]: ")
    await rig.channel.tick()
    assert rig.inbox.get(first).state == "cancelled"
    rig.clock.advance(DEBOUNCE_S)
    await rig.channel.tick()
    views = rig.inbox.list(LANE, ("open",))
    assert len(views) == 1 and "main.py" in views[0].question.title


async def test_exit_with_an_open_question_orphans_it(rig: Rig) -> None:
    await rig.show(PROMPT)
    qid = rig.only_question()
    rig.channel.close()
    assert rig.inbox.get(qid).state == "orphaned"
    rig.inbox.answer(qid, "yes")  # accepted for the next attempt, never typed into a dead terminal
    await rig.channel.tick()
    assert rig.term.typed == []


async def test_busy_and_unsettled_screens_ask_nothing(rig: Rig) -> None:
    rig.channel.on_output(PROMPT)
    await rig.channel.tick()
    assert rig.inbox.list(LANE) == [], "not still for the debounce yet"
    rig.channel.on_output(b"\r\n")
    rig.clock.advance(DEBOUNCE_S)
    await rig.channel.tick()
    assert rig.inbox.list(LANE) == [], "the program moved past the prompt line"


def test_stdin_prompt_is_typed_with_enter(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.channel.ctx.provider = dataclasses.replace(rig.channel.ctx.provider, prompt="stdin")
    assert rig.channel.stdin_payload("hello") == b"hello\r"
    assert rig.channel.stdin_pipe is False and rig.channel.uses_pty
