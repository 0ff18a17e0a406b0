"""Structured API errors end to end: a real supervisor runs real agent processes in a real worktree.

The supervisor runs in the test's own event loop (the lane is created with `launch_lane(detach=False)`)
on a fake clock: the back-off of minutes and the parking until a reset time take no real time, and the
delays the supervisor waited are read off the clock. The agent is a small Python script; what it prints
is read by a test channel (`ErrorChannel`, used for the `flaky` provider only) that turns
`ERROR kind detail [reset_at]` lines into `Channel.report_error`, as the JSON channels do with their
CLI's structured fields: so the tests prove the engine's mapping, not one CLI's parsing.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine.channels import Channel, ChannelContext, make_channel
from lanes_tui.engine.config.provider_facts import RETRY_BACKOFF_S
from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.core.clock import FakeClock
from lanes_tui.engine.lanes.launcher import LaunchRequest, launch_lane
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from lanes_tui.engine.supervisor import main as supervisor_main
from tests.helpers import write_config

#: The agent: run N (counted in a file outside the worktree) prints the N-th line of its plan, or, when
#: the line is `WORK`, writes a file and exits 0. Each plan line is `EXIT-CODE MESSAGE`.
AGENT = r"""
import pathlib, sys
count_file, plan = pathlib.Path(sys.argv[1]), sys.argv[2].split("|")
n = int(count_file.read_text()) if count_file.exists() else 0
count_file.write_text(str(n + 1))
step = plan[min(n, len(plan) - 1)]
if step == "WORK":
    pathlib.Path("work.txt").write_text("done\n")
    print("wrote work.txt")
    raise SystemExit(0)
code, message = step.split(" ", 1)
print(message, flush=True)
raise SystemExit(int(code))
"""


class ErrorChannel(Channel):
    """`ERROR kind detail [@reset_at]` → report_error; `RETRYING seconds` → report_retry."""

    name = "test-errors"

    def on_line(self, line: bytes) -> None:
        text = line.decode("utf-8", "replace").strip()
        if text.startswith("ERROR "):
            _, kind, rest = text.split(" ", 2)
            detail, _, reset = rest.partition(" @")
            self.report_error(kind, detail, float(reset) if reset else None)
        elif text.startswith("RETRYING "):
            self.report_retry(float(text.split()[1]))


@pytest.fixture()
def error_channel(monkeypatch: pytest.MonkeyPatch) -> None:
    def make(ctx: ChannelContext) -> Channel:
        return ErrorChannel(ctx) if ctx.provider.name == "flaky" else make_channel(ctx)

    monkeypatch.setattr(supervisor_main, "make_channel", make)


def configure(repo: Path, tmp_path: Path, plan: list[str], *, chain: str = '["flaky", "sim"]',
              extra: str = "", agent: str = AGENT, **lanes: Any) -> None:
    script = tmp_path / "agent.py"
    script.write_text(agent)
    counter = tmp_path / "counter" / "runs"
    counter.parent.mkdir()
    argv = json.dumps([sys.executable, str(script), str(counter), "|".join(plan)])
    write_config(repo, chains=f"backend = {chain}", allow_uncontained=True, **lanes, extra=(
        f"[providers.flaky]\nargv = {argv}\nprompt = \"stdin\"\nwritable = [\"{counter.parent}/\"]\n"
        "retry_patterns = [\"TEXT-RATE-LIMIT\"]\n" + extra))


def run_supervised(repo: Path, prompt: str, clock: FakeClock) -> tuple[Any, list[dict[str, Any]]]:
    """Create the lane, run its supervisor to the end here; its record and events."""
    config = load_config(repo)
    record = launch_lane(repo, config, LaunchRequest(prompt=prompt, slug="retry"), detach=False)
    supervisor = supervisor_main.Supervisor(repo, record.id, config=config, clock=clock)
    asyncio.run(asyncio.wait_for(supervisor.run(), timeout=240))
    store = LaneStore(StatePaths(repo))
    events = [json.loads(line) for line in store.lane_paths(record.id).events.read_text().splitlines()]
    return store.read(record.id), events


def runs(record: Any) -> list[tuple[str, str | None]]:
    return [(a.provider, a.result) for a in record.providers_tried]


def test_a_rate_limit_is_retried_in_the_lane_after_the_back_off(repo: Path, tmp_path: Path,
                                                              error_channel: None) -> None:
    configure(repo, tmp_path, ["1 ERROR rate_limit 429 Too Many Requests", "WORK"])
    clock = FakeClock()
    start = clock.monotonic()
    record, events = run_supervised(repo, "write work.txt", clock)
    assert runs(record) == [("flaky", "LANE-FAILED"), ("flaky", "OK")]
    assert record.providers_tried[0].error == "rate_limit"
    assert "rate limited by flaky: 429 Too Many Requests" in record.providers_tried[0].reason
    assert record.result == "OK" and record.state == "ready"
    retries = [e for e in events if e["type"] == "retry"]
    assert [(e["retry"], e["delay_s"]) for e in retries] == [(1, RETRY_BACKOFF_S[0])]
    waiting = [e["reason"] for e in events if e["type"] == "state" and e["state"] == "waiting"]
    assert waiting and waiting[0].startswith("rate limited by flaky: retrying in 30s (retry 1 of 3")
    assert not [e for e in events if e["type"] == "fallback"]  # the same provider, not the next one
    assert clock.monotonic() - start >= RETRY_BACKOFF_S[0]  # the fake clock waited the back-off


def test_retries_exhausted_fall_back_to_the_next_provider(repo: Path, tmp_path: Path, error_channel: None) -> None:
    configure(repo, tmp_path, ["1 ERROR overloaded 529 Overloaded"])
    clock = FakeClock()
    start = clock.monotonic()
    record, events = run_supervised(repo, "write from-sim.txt the fallback did it\n", clock)
    assert runs(record) == [("flaky", "LANE-FAILED")] * (len(RETRY_BACKOFF_S) + 1) + [("sim", "OK")]
    assert [e["delay_s"] for e in events if e["type"] == "retry"] == list(RETRY_BACKOFF_S)
    assert clock.monotonic() - start >= sum(RETRY_BACKOFF_S)
    fallback = [e for e in events if e["type"] == "fallback"]
    assert len(fallback) == 1 and fallback[0]["provider"] == "flaky"
    assert "flaky is overloaded: 529 Overloaded (still after 3 retries)" in fallback[0]["reason"]
    assert record.state == "ready"


def test_the_last_provider_rate_limited_ends_lane_failed(repo: Path, tmp_path: Path, error_channel: None) -> None:
    configure(repo, tmp_path, ["1 ERROR server 500 Internal Server Error"], chain='["flaky"]')
    record, _ = run_supervised(repo, "go", FakeClock())
    assert record.result == "LANE-FAILED" and record.state == "exited"
    assert record.state_reason.startswith("server error at flaky: 500 Internal Server Error (still after 3")


def test_a_text_retry_line_is_retried_too(repo: Path, tmp_path: Path, error_channel: None) -> None:
    configure(repo, tmp_path, ["1 TEXT-RATE-LIMIT: slow down", "WORK"])
    record, events = run_supervised(repo, "go", FakeClock())
    assert runs(record) == [("flaky", "LANE-FAILED"), ("flaky", "OK")]
    assert record.providers_tried[0].error is None  # from text, not a structured field
    assert [e["delay_s"] for e in events if e["type"] == "retry"] == [RETRY_BACKOFF_S[0]]


def test_billing_with_exit_0_is_out_of_budget_and_falls_back(repo: Path, tmp_path: Path,
                                                             error_channel: None) -> None:
    configure(repo, tmp_path, ["0 ERROR billing Credit balance is too low"])
    record, events = run_supervised(repo, "write from-sim.txt fallback\n", FakeClock())
    assert runs(record) == [("flaky", "OUT-OF-BUDGET"), ("sim", "OK")]
    assert record.providers_tried[0].reason == "out of credit at flaky: Credit balance is too low"
    assert [e["provider"] for e in events if e["type"] == "fallback"] == ["flaky"]


def test_auth_is_a_config_error_that_names_the_fix_and_doctor_says_it(repo: Path, tmp_path: Path,
                                                                     error_channel: None) -> None:
    # argv[0] is python, so the fix comes from the model's family: a claude model needs ANTHROPIC_API_KEY.
    configure(repo, tmp_path, ["1 ERROR auth Invalid API key"], extra='model = "claude-sonnet-4-5"\n')
    record, events = run_supervised(repo, "write from-sim.txt never\n", FakeClock())
    assert runs(record) == [("flaky", "CONFIG-ERROR")]  # the chain stops: no fallback
    assert record.result == "CONFIG-ERROR"
    assert record.state_reason == ("authentication refused (flaky): Invalid API key; fix: set ANTHROPIC_API_KEY, "
                                   "the key of its model 'claude-sonnet-4-5'")
    assert not [e for e in events if e["type"] in ("fallback", "retry")]
    from lanes_tui.app.cli.config import doctor_report

    problems = doctor_report(repo)["problems"]
    assert any("provider flaky: its last run" in p and "set ANTHROPIC_API_KEY" in p for p in problems), problems


def test_usage_limit_parks_until_its_reset_at(repo: Path, tmp_path: Path, error_channel: None) -> None:
    clock = FakeClock()
    reset = clock.time() + 3 * 3600
    configure(repo, tmp_path, [f"1 ERROR usage_limit 5-hour limit reached @{reset}", "WORK"], chain='["flaky"]')
    record, events = run_supervised(repo, "go", clock)
    parked = [e for e in events if e["type"] == "state" and e.get("parked_until") is not None]
    assert parked and parked[0]["parked_until"] == pytest.approx(reset)
    assert runs(record) == [("flaky", "OUT-OF-BUDGET"), ("flaky", "OK")]
    assert record.state == "ready"
    assert clock.time() >= reset


@pytest.mark.parametrize(("announce", "result"), [("RETRYING 600", "NO-CHANGES"), ("", "LANE-STALLED")])
def test_a_cli_retrying_by_itself_is_not_stalled(repo: Path, tmp_path: Path, error_channel: None,
                                                 announce: str, result: str) -> None:
    """The CLI says it retries in 600 s and goes silent: the watchdog (idle limit 1 s) lets it be, where
    the same silence without the announcement is a stall."""
    agent = f"import time\nprint({announce!r}, flush=True)\ntime.sleep(4)\n"
    configure(repo, tmp_path, ["0 unused"], chain='["flaky"]', agent=agent, idle_timeout_s=1, sample_s=0.1)

    class Ticking(FakeClock):
        """Monotonic time is real (the watchdog must see the silence last); wall time stands still, so
        the back-off the CLI announced (600 s on the channel's clock) has not run out."""

        def monotonic(self) -> float:
            return time.monotonic()

    record, _ = run_supervised(repo, "go", Ticking())
    assert record.result == result, record.state_reason
