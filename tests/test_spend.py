"""Spend caps that pause and ask: the guard against a scripted spend and a real inbox, then a real
sim agent under `AgentRun` whose cost line trips the cap, stopped (really: state T) while the lead
decides, and either resumed to a clean exit or ended OUT-OF-BUDGET."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine.channels import ChannelContext, make_channel
from lanes_tui.engine.config.providers import PRESETS
from lanes_tui.engine.core.clock import RealClock
from lanes_tui.engine.inbox.store import InboxStore
from lanes_tui.engine.lanes.agent_run import AgentRun, RunOutcome, RunSettings
from lanes_tui.engine.lanes.classify import PatternScanner
from lanes_tui.engine.lanes.output_pump import REST_S
from lanes_tui.engine.lanes.spend import SpendGuard, meter_spend
from lanes_tui.engine.lanes.watchdog import Sample
from lanes_tui.engine.procs.pause import TreePauser
from lanes_tui.engine.procs.process import ProcessRequest, StopDeadlines
from lanes_tui.engine.procs.tree import descendant_pids
from lanes_tui.engine.state.meters import RunMeter

LANE = "spend-a1"
SAMPLE = Sample(t=0.0, output_bytes=0, files_changed=False, procs=())


class Spend:
    """A spend source the test moves by hand."""

    def __init__(self) -> None:
        self.tokens = 0
        self.usd: float | None = None

    def __call__(self) -> tuple[int, float | None]:
        return self.tokens, self.usd


class Recorder:
    """Pause / resume calls and events, in order."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.events: list[tuple[str, dict[str, Any]]] = []

    def pause(self) -> None:
        self.calls.append("pause")

    def resume(self) -> None:
        self.calls.append("resume")

    def event(self, kind: str, /, **data: Any) -> None:
        self.events.append((kind, data))


@pytest.fixture()
def inbox(tmp_path: Path) -> InboxStore:
    return InboxStore(tmp_path / "inbox")


def make_guard(inbox: InboxStore | None, spend: Spend, rec: Recorder, *, usd: float = 5.0,
               tokens: int = 0) -> SpendGuard:
    return SpendGuard(LANE, max_cost_usd=usd, max_tokens=tokens, spend=spend, inbox=inbox, events=rec.event,
                      pause=rec.pause, resume=rec.resume)


def test_under_the_cap_nothing_happens(inbox: InboxStore) -> None:
    spend, rec = Spend(), Recorder()
    spend.tokens, spend.usd = 9_000, 4.99
    guard = make_guard(inbox, spend, rec)
    assert guard.check(SAMPLE) is None
    assert rec.calls == [] and inbox.list() == []


def test_no_caps_means_no_limit(inbox: InboxStore) -> None:
    spend, rec = Spend(), Recorder()
    spend.tokens, spend.usd = 10**9, 10_000.0
    assert make_guard(inbox, spend, rec, usd=0, tokens=0).check(SAMPLE) is None
    assert inbox.list() == []


def test_cap_pauses_and_asks_once(inbox: InboxStore) -> None:
    spend, rec = Spend(), Recorder()
    spend.tokens, spend.usd = 12_345, 5.0
    guard = make_guard(inbox, spend, rec)
    for _ in range(3):
        assert guard.check(SAMPLE) is None
    [view] = inbox.list(LANE)
    assert view.state == "open" and view.question.kind == "yesno"
    assert view.question.title == f"lane {LANE} reached $5.00 of $5.00: continue with $5.00 more?"
    assert "yes: raise the cap by $5.00 to $10.00 and resume" in view.question.body
    assert "no: stop the lane; it ends OUT-OF-BUDGET" in view.question.body
    assert rec.calls == ["pause"]
    assert inbox.lane_is_waiting(LANE)  # so the watchdog and the wall clock do not count the pause
    [(kind, data)] = rec.events
    assert kind == "spend-cap"
    assert data["cap"] == "max_cost_usd" and data["limit"] == 5.0 and data["value"] == 5.0
    assert data["tokens"] == 12_345 and data["question"] == view.question.id


def test_yes_raises_the_cap_by_the_original_amount_and_resumes(inbox: InboxStore) -> None:
    spend, rec = Spend(), Recorder()
    spend.tokens, spend.usd = 12_345, 5.2
    guard = make_guard(inbox, spend, rec)
    guard.check(SAMPLE)
    [view] = inbox.list(LANE)
    inbox.answer(view.question.id, "yes")
    assert guard.check(SAMPLE) is None
    assert rec.calls == ["pause", "resume"]
    assert guard.cost_cap == 10.0 and not guard.paused
    assert inbox.get(view.question.id).state == "delivered"
    assert not inbox.lane_is_waiting(LANE)
    assert rec.events[-1][0] == "spend-cap-raised" and rec.events[-1][1]["max_cost_usd"] == 10.0
    spend.usd = 9.99
    assert guard.check(SAMPLE) is None and len(inbox.list(LANE)) == 1  # under the new cap: no question
    spend.usd = 10.0
    assert guard.check(SAMPLE) is None
    second = inbox.open_questions(LANE)
    assert [v.question.title for v in second] == [f"lane {LANE} reached $10.00 of $10.00: continue with $5.00 more?"]


def test_no_ends_out_of_budget_naming_the_figures(inbox: InboxStore) -> None:
    spend, rec = Spend(), Recorder()
    spend.tokens, spend.usd = 12_000, 5.0
    guard = make_guard(inbox, spend, rec)
    guard.check(SAMPLE)
    [view] = inbox.list(LANE)
    spend.tokens, spend.usd = 12_345, 5.12  # the last message finished before the pause took hold
    inbox.answer(view.question.id, "no")
    finding = guard.check(SAMPLE)
    assert finding is not None
    assert finding.result == "OUT-OF-BUDGET"
    assert finding.reason == "spend cap reached: $5.12 of $5.00 (12,345 tokens); the lead chose to stop"
    assert finding.detail == {"cap": "max_cost_usd", "limit": 5.0, "value": 5.12, "spent_usd": 5.12,
                              "tokens": 12_345, "answer": "no"}
    assert rec.calls == ["pause"]  # still paused: the run releases it right before it stops the agent
    guard.release()
    assert rec.calls == ["pause", "resume"]
    assert inbox.get(view.question.id).state == "delivered"
    assert rec.events[-1][0] == "spend-cap-stopped"


def test_a_token_cap(inbox: InboxStore) -> None:
    spend, rec = Spend(), Recorder()
    spend.tokens, spend.usd = 100_500, None
    guard = make_guard(inbox, spend, rec, usd=0, tokens=100_000)
    guard.check(SAMPLE)
    [view] = inbox.list(LANE)
    assert view.question.title == f"lane {LANE} reached 100,500 of 100,000 tokens: continue with 100,000 tokens more?"
    inbox.answer(view.question.id, "yes")
    guard.check(SAMPLE)
    assert guard.token_cap == 200_000
    spend.tokens = 200_001
    guard.check(SAMPLE)
    inbox.answer(inbox.open_questions(LANE)[0].question.id, "no")
    finding = guard.check(SAMPLE)
    assert finding is not None
    assert finding.reason == "spend cap reached: 200,001 of 200,000 tokens; the lead chose to stop"


@pytest.mark.parametrize("how", ["cancel", "orphan"])
def test_a_withdrawn_question_ends_the_run(inbox: InboxStore, how: str) -> None:
    spend, rec = Spend(), Recorder()
    spend.tokens, spend.usd = 1, 6.0
    guard = make_guard(inbox, spend, rec)
    guard.check(SAMPLE)
    [view] = inbox.list(LANE)
    if how == "cancel":
        inbox.cancel(view.question.id, "the lead cleared the inbox")
    else:
        inbox.orphan(view.question.id, "supervisor gone")
    finding = guard.check(SAMPLE)
    assert finding is not None and finding.result == "OUT-OF-BUDGET"
    assert ("cancelled (the lead cleared the inbox)" if how == "cancel" else "orphaned") in finding.reason


def test_release_cancels_the_open_question_and_resumes(inbox: InboxStore) -> None:
    spend, rec = Spend(), Recorder()
    spend.tokens, spend.usd = 1, 6.0
    guard = make_guard(inbox, spend, rec)
    guard.check(SAMPLE)
    guard.release()
    guard.release()  # called twice by a run that stops: harmless
    [view] = inbox.list(LANE)
    assert view.state == "cancelled" and "stopped" in (view.reason or "")
    assert rec.calls == ["pause", "resume"]
    assert not inbox.lane_is_waiting(LANE)


def test_without_an_inbox_the_cap_ends_the_run() -> None:
    spend, rec = Spend(), Recorder()
    spend.tokens, spend.usd = 10, 5.5
    finding = make_guard(None, spend, rec).check(SAMPLE)
    assert finding is not None and finding.result == "OUT-OF-BUDGET"
    assert finding.reason == "spend cap reached: $5.50 of $5.00 (10 tokens); no inbox to ask the lead"
    assert rec.calls == []


def test_a_failing_pause_still_asks(inbox: InboxStore) -> None:
    spend, rec = Spend(), Recorder()
    spend.tokens, spend.usd = 1, 6.0

    def broken() -> None:
        raise OSError("no such cgroup")

    guard = SpendGuard(LANE, max_cost_usd=5.0, spend=spend, inbox=inbox, events=rec.event, pause=broken,
                       resume=rec.resume)
    assert guard.check(SAMPLE) is None
    assert len(inbox.open_questions(LANE)) == 1 and not guard.paused
    guard.release()
    assert rec.calls == []  # nothing was paused, nothing to resume


# --- a real sim agent under AgentRun ----------------------------------------------------------------

def proc_state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        return handle.read().rsplit(b")", 1)[-1].split()[0].decode()


SCRIPT = ("say Tokens: 10k sent, 500 received. Cost: $0.50 message, $3.00 session.\n"
          "print 40 --rate 40 --text ticking\n"
          "say finished\n")


async def run_sim(tmp_path: Path, answer: str) -> tuple[RunOutcome, Recorder, str]:
    """Run the sim with a $2 cap; when the question opens, check the sim is stopped, then answer."""
    inbox = InboxStore(tmp_path / "inbox")
    clock = RealClock()
    meter = RunMeter(tmp_path / "meters.json", clock, provider="sim", model="sim")
    channel = make_channel(ChannelContext(lane=LANE, attempt=1, provider=PRESETS["sim"], inbox=inbox,
                                          meters=meter, clock=clock))
    worktree = tmp_path / "wt"
    worktree.mkdir()
    request = ProcessRequest([sys.executable, "-m", "lanes_tui.engine.sim", "--prompt", SCRIPT], worktree,
                             dict(os.environ), stdin_pipe=False, name=f"{LANE}:sim")
    settings = RunSettings(timeout_s=60, idle_timeout_s=30, sample_s=0.05,
                           deadlines=StopDeadlines(eof=0.5, sigint=1.0, sigterm=1.0, sigkill=2.0))
    rec = Recorder()
    runs: list[AgentRun] = []

    def tree() -> list[int]:
        handle = runs[0].handle if runs else None
        return [handle.pid, *descendant_pids(handle.pid)] if handle else []

    pauser = TreePauser(None, tree)
    guard = SpendGuard(LANE, max_cost_usd=2.0, spend=meter_spend(meter), inbox=inbox, events=rec.event,
                       pause=pauser.pause, resume=pauser.resume)
    output = tmp_path / "output.log"
    with open(output, "wb") as out:
        run = AgentRun(request, stdin_data=None, keep_stdin_open=False, output=out,
                       samples_path=tmp_path / "samples.jsonl", scanner=PatternScanner.from_patterns([], []),
                       settings=settings, clock=clock, files_changed=lambda: False,
                       is_waiting=lambda: inbox.lane_is_waiting(LANE), on_waiting=lambda w: None,
                       channel=channel, guards=[guard])
        runs.append(run)
        task = asyncio.create_task(run.run())
        try:
            deadline = time.monotonic() + 30
            while not inbox.open_questions(LANE):
                assert not task.done(), f"the run ended before the cap was reached: {output.read_text()}"
                assert time.monotonic() < deadline, "no spend question within 30 s"
                await asyncio.sleep(0.02)
            [view] = inbox.open_questions(LANE)
            assert view.question.title == f"lane {LANE} reached $3.00 of $2.00: continue with $2.00 more?"
            assert run.handle is not None
            pid = run.handle.pid
            assert proc_state(pid) == "T", "the sim must really be stopped while the lead decides"
            size = await _drained_size(output)  # lines already in the pipe when it stopped still land
            await asyncio.sleep(0.3)  # 40 lines a second if it were running
            assert output.stat().st_size == size and proc_state(pid) == "T"
            inbox.answer(view.question.id, answer)
            outcome = await asyncio.wait_for(task, 30)
        finally:
            if not task.done():
                run.stop_requested.set()
                await asyncio.wait_for(task, 30)
    return outcome, rec, output.read_text()


async def _drained_size(output: Path) -> int:
    """The output's size once the pump has written what the pipe held (two reads agree, longer apart
    than the pump's rest between two reads of a trickle)."""
    size = output.stat().st_size
    for _ in range(50):
        await asyncio.sleep(0.1 + REST_S)
        now = output.stat().st_size
        if now == size:
            return size
        size = now
    return size


async def test_sim_over_its_cap_stops_when_the_lead_says_no(tmp_path: Path) -> None:
    outcome, rec, text = await run_sim(tmp_path, "no")
    assert outcome.classification.result == "OUT-OF-BUDGET"
    assert outcome.classification.reason == (
        "spend cap reached: $3.00 of $2.00 (10,500 tokens); the lead chose to stop")
    assert outcome.finding is not None and outcome.finding.detail["spent_usd"] == 3.0
    assert "finished" not in text
    assert [kind for kind, _ in rec.events] == ["spend-cap", "spend-cap-stopped"]


async def test_sim_over_its_cap_carries_on_when_the_lead_says_yes(tmp_path: Path) -> None:
    outcome, rec, text = await run_sim(tmp_path, "yes")
    assert outcome.classification.result == "OK", outcome.classification.reason
    assert outcome.returncode == 0 and outcome.finding is None
    assert "line 40: ticking" in text and "finished" in text
    assert [kind for kind, _ in rec.events] == ["spend-cap", "spend-cap-raised"]
    assert rec.events[-1][1]["max_cost_usd"] == 4.0
