"""Structured API errors first (`channels.base.ERROR_KINDS`), text patterns as the fallback.

One test per row of the mapping, the precedence against our own stop reasons and the text patterns,
the fixes named per provider, the back-off schedule (on a fake clock) and the watchdog's allowance
for a CLI that retries by itself.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine.channels.base import ERROR_KINDS, ProviderError
from lanes_tui.engine.config.provider_errors import error_fix
from lanes_tui.engine.config.providers import PRESETS, ProviderConfig
from lanes_tui.engine.config.settings import ConfigError, load_config
from lanes_tui.engine.core.clock import FakeClock
from lanes_tui.engine.lanes.agent_run import RunOutcome
from lanes_tui.engine.lanes.classify import Classification, PatternScanner, classify
from lanes_tui.engine.lanes.watchdog import Sample, Watchdog
from lanes_tui.engine.state.model import LaneRecord, ProviderAttempt
from lanes_tui.engine.supervisor import retry

CLAUDE = PRESETS["claude"]


def scanner(**hits: str) -> PatternScanner:
    found = PatternScanner.from_patterns((), (), ())
    for kind, line in hits.items():
        setattr(found, f"{kind}_hit", line)
    return found


@pytest.mark.parametrize(("kind", "result", "retry_it", "reason"), [
    ("billing", "OUT-OF-BUDGET", False, "out of credit at claude: boom"),
    ("usage_limit", "OUT-OF-BUDGET", False, "usage limit of claude reached: boom"),
    ("auth", "CONFIG-ERROR", False, "authentication refused (claude): boom; fix: set ANTHROPIC_API_KEY (or run "
                                    "`claude /login`)"),
    ("forbidden", "CONFIG-ERROR", False, "access refused (claude): boom; fix: the key may not use model 'sonnet': "
                                         "choose another `model` in [providers.claude] or another key"),
    ("model", "CONFIG-ERROR", False, "unknown model (claude): boom; fix: claude does not know model 'sonnet': set "
                                     "`model` in [providers.claude]"),
    ("trust", "CONFIG-ERROR", False, "untrusted folder (claude): boom; fix: claude refuses the lane's folder as "
                                     "untrusted: let it trust the worktree (docs/providers.md)"),
    ("rate_limit", "LANE-FAILED", True, "rate limited by claude: boom"),
    ("overloaded", "LANE-FAILED", True, "claude is overloaded: boom"),
    ("server", "LANE-FAILED", True, "server error at claude: boom"),
])
@pytest.mark.parametrize("returncode", [0, 1])
def test_each_error_kind_maps_to_its_result_whatever_the_exit(kind: str, result: str, retry_it: bool, reason: str,
                                                             returncode: int) -> None:
    found = classify(returncode, scanner(), error=ProviderError(kind, "boom"), provider=CLAUDE)
    if retry_it and returncode == 0:  # it retried by itself and finished: the worktree decides (`settle`)
        assert found == Classification("OK", "exit 0")
        return
    assert (found.result, found.retry, found.reason, found.error) == (result, retry_it, reason, kind)


def test_an_exit_0_after_a_rate_limit_is_ok_with_work_done_and_a_retry_without(repo: Path) -> None:
    from tests.conftest import git

    base = git(repo, "rev-parse", "HEAD")

    def settled() -> Classification:
        done = RunOutcome(Classification("OK", "exit 0"), 0, 0.0, 0.0, error=ProviderError("rate_limit", "429"))
        return retry.settle(done, repo, base, CLAUDE).classification

    assert settled() == Classification("LANE-FAILED", "rate limited by claude: 429", retry=True, error="rate_limit")
    (repo / "new.txt").write_text("work\n")
    assert settled() == Classification("OK", "exit 0")
    git(repo, "add", "new.txt")
    git(repo, "commit", "-q", "-m", "work")  # a commit since the base is work too, with a clean tree
    assert settled() == Classification("OK", "exit 0")
    quiet = RunOutcome(Classification("OK", "exit 0"), 0, 0.0, 0.0)
    assert retry.settle(quiet, repo, git(repo, "rev-parse", "HEAD"), CLAUDE).classification == Classification(
        "NO-CHANGES", "exited 0 and changed nothing")


def test_every_error_kind_has_a_row() -> None:
    from lanes_tui.engine.config.provider_facts import BUDGET_KINDS, CONFIG_KINDS, RETRY_KINDS

    assert sorted(ERROR_KINDS) == sorted([*BUDGET_KINDS, *CONFIG_KINDS, *RETRY_KINDS])


def test_usage_limit_carries_its_reset_time_and_billing_none() -> None:
    usage = classify(1, scanner(), error=ProviderError("usage_limit", "x", 1_800_000_000.0), provider=CLAUDE)
    billing = classify(1, scanner(), error=ProviderError("billing", "x", 1_800_000_000.0), provider=CLAUDE)
    assert usage.reset_at == 1_800_000_000.0 and billing.reset_at is None


@pytest.mark.parametrize(("stop", "result"), [
    ({"stalled": True}, "LANE-STALLED"),
    ({"timed_out": 60.0}, "LANE-FAILED"),
    ({"stopped_by_lead": True}, "LANE-FAILED"),
    ({"spawn_error": "cannot start"}, "CONFIG-ERROR"),
])
def test_our_own_stop_reasons_outrank_a_structured_error(stop: dict[str, Any], result: str) -> None:
    found = classify(1, scanner(), error=ProviderError("billing", "no credit"), provider=CLAUDE, **stop)
    assert found.result == result and found.error is None and not found.retry


def test_a_structured_error_outranks_every_text_pattern() -> None:
    hits = scanner(config="SIM-CONFIG-ERROR", budget="SIM-OUT-OF-BUDGET", retry="SIM-RATE-LIMITED",
                   resource="No space left on device")
    assert classify(1, hits, error=ProviderError("rate_limit", "429"), provider=CLAUDE).retry
    assert classify(1, hits, error=ProviderError("auth", "401"), provider=CLAUDE).result == "CONFIG-ERROR"
    assert classify(0, hits, error=ProviderError("billing", "x"), provider=CLAUDE).result == "OUT-OF-BUDGET"


def test_a_retry_line_counts_on_a_failed_exit_only_and_below_config_and_budget() -> None:
    assert classify(1, scanner(retry="429 slow down"), provider=CLAUDE) == Classification(
        "LANE-FAILED", "rate limited by claude: 429 slow down", retry=True)
    assert classify(0, scanner(retry="429 slow down")).result == "OK"  # it retried by itself and finished
    assert classify(1, scanner(retry="r", budget="b")).result == "OUT-OF-BUDGET"
    assert classify(1, scanner(retry="r", config="c")).result == "CONFIG-ERROR"
    assert classify(1, scanner(retry="r", resource="No space left on device")).retry


def test_the_scanner_finds_retry_lines() -> None:
    found = PatternScanner.from_patterns((), (), PRESETS["sim"].retry_patterns)
    found.feed_bytes(b"working\nSIM-RATE-LIMITED: 429 Too Many Requests\nmore\n")
    assert found.retry_hit == "SIM-RATE-LIMITED: 429 Too Many Requests"


def test_auth_fixes_per_provider() -> None:
    assert error_fix(PRESETS["claude"], "auth") == "set ANTHROPIC_API_KEY (or run `claude /login`)"
    assert "OPENAI_API_KEY" in error_fix(PRESETS["codex"], "auth") and "codex login" in error_fix(
        PRESETS["codex"], "auth")
    assert error_fix(PRESETS["gemini"], "auth").startswith("set GEMINI_API_KEY")
    aider = dataclasses.replace(PRESETS["aider"], model="sonnet")
    assert error_fix(aider, "auth") == "set ANTHROPIC_API_KEY, the key of its model 'sonnet'"
    assert error_fix(dataclasses.replace(aider, model="gpt-4o"), "auth").startswith("set OPENAI_API_KEY")
    # A custom provider running claude gets claude's fix; an unknown CLI is told where to let its key through.
    custom = ProviderConfig("work", ("/opt/bin/claude", "-p"), "stdin", "m", "", 1, "plain", (), ())
    assert error_fix(custom, "auth").startswith("set ANTHROPIC_API_KEY")
    stranger = ProviderConfig("odd", ("odd-cli",), "stdin", "m", "", 1, "plain", (), ())
    assert error_fix(stranger, "auth") == "set the API key odd reads and let it through with [providers.odd] env"


def test_retry_patterns_are_a_validated_config_key(repo: Path) -> None:
    config = repo / ".lanes" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[providers.claude]\nretry_patterns = ["Request rejected \\\\(429\\\\)"]\n')
    assert load_config(repo).provider("claude").retry_patterns == (r"Request rejected \(429\)",)
    config.write_text('[providers.claude]\nretry_patterns = ["(unclosed"]\n')
    with pytest.raises(ConfigError, match="retry_patterns"):
        load_config(repo)
    assert PRESETS["sim"].retry_patterns == ("SIM-RATE-LIMITED",)


# --- the watchdog's retry allowance -----------------------------------------------------------------


def test_a_cli_inside_its_announced_back_off_is_active_and_stalls_after() -> None:
    dog = Watchdog(idle_timeout_s=10)
    assert not dog.observe(Sample(0.0, 0, False, ())).stalled
    quiet = [dog.observe(Sample(float(t), 0, False, (), retrying=True)) for t in range(5, 60, 5)]
    assert not any(v.stalled for v in quiet) and all("retrying" in v.reasons for v in quiet)
    assert not dog.observe(Sample(64.0, 0, False, ())).stalled  # the last retrying sample was at 55
    assert dog.observe(Sample(65.0, 0, False, ())).stalled


def test_the_channel_s_retry_until_is_read_on_its_clock() -> None:
    from lanes_tui.engine.channels import ChannelContext
    from lanes_tui.engine.channels.plain import PlainChannel
    from lanes_tui.engine.lanes.agent_run import AgentRun
    from lanes_tui.engine.state.meters import RunMeter

    clock = FakeClock()
    meters = RunMeter(Path("/nonexistent/meters.json"), clock, provider="sim", model="sim")
    ctx = ChannelContext(lane="l", attempt=1, provider=PRESETS["sim"], inbox=None, meters=meters, clock=clock)
    channel = PlainChannel(ctx)
    run = AgentRun.__new__(AgentRun)
    run.channel, run.clock = channel, clock
    assert not run._retrying()
    channel.report_retry(120)
    clock.advance(119)
    assert run._retrying()
    clock.advance(1)
    assert not run._retrying()


# --- the back-off schedule --------------------------------------------------------------------------


class Store:
    """What `retry.in_lane` writes: the events and the states, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.states: list[tuple[str, str]] = []

    def event(self, lane_id: str, kind: str, **data: Any) -> None:
        self.events.append((kind, data))

    def transition(self, record: LaneRecord, state: str, reason: str, **data: Any) -> None:
        self.states.append((state, reason))


class Resumer:
    def __init__(self) -> None:
        self.again_calls: list[tuple[str, str | None, str]] = []

    def again(self, provider: str, session: str | None, reason: str) -> None:
        self.again_calls.append((provider, session, reason))


def outcome(classification: Classification) -> RunOutcome:
    return RunOutcome(classification, 1, 0.0, 0.0)


RATE = Classification("LANE-FAILED", "rate limited by claude: 429", retry=True, error="rate_limit")


Scheduled = tuple[RunOutcome, FakeClock, Store, Resumer, list[float]]


def schedule(results: list[Classification], tmp_path: Path, *, stop_after: int | None = None,
             delays: tuple[float, ...] = (30.0, 120.0, 300.0)) -> Scheduled:
    clock, store, resumer = FakeClock(), Store(), Resumer()
    record = LaneRecord(id="l-a1", slug="l", attempt=1, task_type="backend", prompt="p", chain=["claude"], repo="",
                        worktree="", branch="", base_sha="", target_branch="main",
                        providers_tried=[ProviderAttempt("claude", session_id="sess-1")])
    stop = asyncio.Event()
    started: list[float] = []
    queue = list(results)

    async def run_again() -> RunOutcome:
        started.append(clock.monotonic())
        if stop_after is not None and len(started) >= stop_after:
            stop.set()
        return outcome(queue.pop(0))

    async def go() -> RunOutcome:
        return await retry.in_lane(outcome(RATE), CLAUDE, run_again, store=store, record=record,  # type: ignore[arg-type]
                                   resumer=resumer, stop=stop, clock=clock, lane_dir=tmp_path, delays=delays)

    return asyncio.run(go()), clock, store, resumer, started


def test_back_off_waits_each_delay_on_the_clock_then_gives_up(tmp_path: Path) -> None:
    done, _, store, resumer, started = schedule([RATE, RATE, RATE], tmp_path)
    assert [round(t - 1000.0) for t in started] == [30, 150, 450]  # 30 s, then 120 s more, then 300 s more
    assert [data["delay_s"] for kind, data in store.events if kind == "retry"] == [30.0, 120.0, 300.0]
    assert [reason.split(" (")[0] for _, reason in store.states] == [
        "rate limited by claude: retrying in 30s", "rate limited by claude: retrying in 2m",
        "rate limited by claude: retrying in 5m"]
    assert all(state == "waiting" for state, _ in store.states)
    assert resumer.again_calls == [("claude", "sess-1", "rate limited by claude: 429")] * 3
    assert done.classification.retry and done.classification.reason.endswith("(still after 3 retries)")


def test_back_off_ends_at_the_first_run_that_does_not_ask_for_one(tmp_path: Path) -> None:
    done, _, store, _, started = schedule([Classification("OK", "exit 0")], tmp_path)
    assert len(started) == 1 and done.classification.result == "OK"
    assert [kind for kind, _ in store.events] == ["retry"]


def test_back_off_stops_with_the_lead(tmp_path: Path) -> None:
    done, _, _, _, started = schedule([RATE, RATE, RATE], tmp_path, stop_after=1)
    assert len(started) == 1 and done.classification.retry


def test_no_retry_for_anything_else(tmp_path: Path) -> None:
    clock, store = FakeClock(), Store()
    failed = outcome(Classification("LANE-FAILED", "exit 1"))

    async def never() -> RunOutcome:
        raise AssertionError("not run again")

    got = asyncio.run(retry.in_lane(failed, CLAUDE, never, store=store, record=None, resumer=None,  # type: ignore[arg-type]
                                    stop=asyncio.Event(), clock=clock, lane_dir=tmp_path))
    assert got is failed and not store.events


@pytest.mark.parametrize(("seconds", "shown"), [(30, "30s"), (120, "2m"), (300, "5m"), (90, "1m30s"), (0, "0s")])
def test_retry_in(seconds: float, shown: str) -> None:
    assert retry.retry_in(seconds) == shown


def test_a_retry_resumes_the_provider_s_own_session_in_the_same_worktree(repo: Path, tmp_path: Path) -> None:
    from lanes_tui.engine.state.paths import StatePaths
    from lanes_tui.engine.state.store import LaneStore
    from lanes_tui.engine.supervisor.resume import Resumer as RealResumer

    store = LaneStore(StatePaths(repo))
    record = LaneRecord(id="r-a1", slug="r", attempt=1, task_type="backend", prompt="the task", chain=["claude"],
                        repo=str(repo), worktree=str(tmp_path), branch="lane/r-a1", base_sha="", target_branch="main")
    store.lane_paths(record.id).dir.mkdir(parents=True)
    resumer = RealResumer(repo, load_config(repo), store, record, tmp_path / "output.log")
    task = "fix the flaky parser"
    reason = "rate limited by claude: 429"
    resumer.again("claude", "sess-1", reason)
    turn = resumer.turn(PRESETS["claude"], task, tmp_path)
    assert turn.session == "sess-1" and turn.argv(["claude", "-p"]) == ["claude", "-p", "--resume", "sess-1"]
    assert reason in turn.prompt and task not in turn.prompt and "do not start over" in turn.prompt
    assert resumer.turn(PRESETS["claude"], "the task", tmp_path).session is None  # once only
    resumer.again("sim", None, "rate limited by sim: SIM-RATE-LIMITED")  # no session: the task, and a note
    fresh = resumer.turn(PRESETS["sim"], "write a.txt x", tmp_path)
    assert fresh.session is None and fresh.prompt.startswith("write a.txt x\n\n## The provider's API refused")
    events = store.lane_paths(record.id).events.read_text()
    assert '"resumed":true' in events and "resumed session sess-1 after: rate limited by claude: 429" in events


@pytest.mark.parametrize(("code", "meaning"), [(55, "the folder is not trusted"), (41, "no usable authentication")])
def test_gemini_s_config_exit_codes_are_config_errors_without_its_message(code: int, meaning: str) -> None:
    """Gemini prints why it exits 55 or 41; a run whose message was lost is still CONFIG-ERROR by its code,
    and the same code from another CLI is an ordinary failure."""
    found = classify(code, scanner(), provider=PRESETS["gemini"])
    assert (found.result, found.reason) == ("CONFIG-ERROR", f"exit {code}: {meaning}")
    assert classify(code, scanner(), provider=CLAUDE).result == "LANE-FAILED"
    assert classify(127, scanner(), provider=CLAUDE).reason == "exit 127: command not found"
