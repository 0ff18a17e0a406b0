"""Channels and meters without processes: recorded lines in, questions, responses and meters out.

The inbox is the real store on a temp folder; the agent's stdin is a fake that records what would have
been written, so the delivery rules (only a pending request is answered) are checked exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine.channels import CHANNEL_MODULES, Channel, ChannelContext, channel_class, make_channel
from lanes_tui.engine.channels.claude import ClaudeStreamChannel
from lanes_tui.engine.channels.claude_wire import control_response, user_message
from lanes_tui.engine.channels.plain import feed_aider_line, parse_count
from lanes_tui.engine.config.providers import CHANNELS, PRESETS, ProviderConfig
from lanes_tui.engine.core.clock import FakeClock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.inbox.store import InboxStore
from lanes_tui.engine.state.meters import FLUSH_S, PRICES, RunMeter, Usage, estimate_usd, price_for

LANE = "unit-a1"


class FakeIO:
    """Records what a channel writes to the agent."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> bool:
        if self.closed:
            return False
        self.writes.append(data)
        return True

    def close_input(self) -> None:
        self.closed = True

    def refresh(self) -> None:
        return None

    def sent(self) -> list[dict[str, Any]]:
        return [json.loads(w) for w in self.writes]


class Rig:
    def __init__(self, tmp_path: Path, provider: ProviderConfig) -> None:
        self.clock = FakeClock()
        self.inbox = InboxStore(tmp_path / "inbox", self.clock)
        self.meters_path = tmp_path / "lane" / "meters.json"
        self.meter = RunMeter(self.meters_path, self.clock, provider=provider.name, model=provider.model)
        self.sessions: list[str] = []
        self.ctx = ChannelContext(lane=LANE, attempt=1, provider=provider, inbox=self.inbox, meters=self.meter,
                                  clock=self.clock, on_session=self.sessions.append)
        self.channel = make_channel(self.ctx)
        self.io = FakeIO()
        self.channel.attach(self.io)

    def lines(self, *objects: dict[str, Any]) -> None:
        for obj in objects:
            self.clock.advance(0.01)  # questions are listed by creation time
            self.channel.on_line(json.dumps(obj, separators=(",", ":")).encode())

    def meters(self) -> dict[str, Any]:
        self.meter.flush()
        return dict(json.loads(self.meters_path.read_text()))


def test_every_configurable_channel_has_a_class() -> None:
    assert set(CHANNEL_MODULES) == set(CHANNELS)
    for name in CHANNELS:
        cls = channel_class(name)
        assert issubclass(cls, Channel) and cls is not Channel, name


# --- claude-stream-json ----------------------------------------------------------------------------

def _usage(inp: int, read: int, write: int, out: int) -> dict[str, int]:
    return {"input_tokens": inp, "cache_read_input_tokens": read, "cache_creation_input_tokens": write,
            "output_tokens": out}


def _assistant(msg_id: str, usage: dict[str, int]) -> dict[str, Any]:
    return {"type": "assistant", "message": {"id": msg_id, "role": "assistant", "content": [], "usage": usage},
            "session_id": "s1"}


def _can_use_tool(request_id: str, tool: str = "Bash", tool_input: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "control_request", "request_id": request_id,
            "request": {"subtype": "can_use_tool", "tool_name": tool,
                        "input": tool_input if tool_input is not None else {"command": "make clean"}}}


@pytest.fixture()
def claude(tmp_path: Path) -> Rig:
    rig = Rig(tmp_path, PRESETS["claude"])
    assert isinstance(rig.channel, ClaudeStreamChannel)
    return rig


def test_claude_argv_prompt_and_stdin_stay_open(claude: Rig, tmp_path: Path) -> None:
    argv = claude.channel.render_argv("do {model} things", tmp_path)
    assert argv[:2] == ["claude", "-p"]
    assert argv[-4:] == ["--input-format", "stream-json", "--permission-prompt-tool", "stdio"]
    assert "do {model} things" not in argv
    assert claude.channel.stdin_pipe and claude.channel.keep_stdin_open
    assert claude.channel.stdin_payload("hi") == (
        b'{"type":"user","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}\n')
    expected = '{"type":"user","message":{"role":"user","content":[{"type":"text","text":"é"}]}}\n'
    assert user_message("é") == expected.encode()


def test_claude_flags_are_not_added_twice(tmp_path: Path) -> None:
    provider = ProviderConfig("c", ("claude", "-p", "--input-format", "stream-json"), "stdin", "m", "", 1,
                              "claude-stream-json", (), ())
    rig = Rig(tmp_path, provider)
    argv = rig.channel.render_argv("x", tmp_path)
    assert argv.count("--input-format") == 1 and argv.count("--permission-prompt-tool") == 1


def test_claude_usage_is_replaced_per_message_not_summed(claude: Rig) -> None:
    claude.lines({"type": "system", "subtype": "init", "session_id": "sess-1", "model": "claude-sonnet-4-5"})
    claude.lines(_assistant("m1", _usage(10, 100, 20, 5)), _assistant("m1", _usage(10, 100, 20, 50)))
    claude.lines(_assistant("m2", _usage(1, 0, 0, 2)))
    meters = claude.meters()
    assert meters["tokens"] == {"total": 183, "input": 131, "cached_input": 100, "cache_write": 20, "output": 52}
    assert meters["cost_estimated"] is True, "no result yet: estimated from the price table"
    assert claude.sessions == ["sess-1"] and meters["session_id"] == "sess-1"
    claude.lines({"type": "result", "subtype": "success", "session_id": "sess-1", "total_cost_usd": 0.5,
                  "usage": _usage(11, 100, 20, 52)})
    meters = claude.meters()
    assert meters["cost_usd"] == 0.5 and meters["cost_estimated"] is False and meters["usd_source"] == "reported"
    assert meters["tokens"]["total"] == 183
    assert claude.io.closed, "stdin is closed once the result line arrived"
    assert claude.sessions == ["sess-1"], "the same session is reported once"


async def test_claude_permission_is_answered_once_then_delivered(claude: Rig) -> None:
    claude.lines(_can_use_tool("r1"))
    [view] = claude.inbox.list(LANE)
    question = view.question
    assert (question.kind, question.source, question.title) == ("permission", "claude-stdio", "Allow Bash: make clean")
    assert dict(question.correlation) == {"request_id": "r1", "tool_name": "Bash", "subject": "make clean"}
    await claude.channel.tick()
    assert claude.io.writes == [], "nothing is written before the lead answers"
    claude.inbox.answer(question.id, "yes")
    await claude.channel.tick()
    await claude.channel.tick()
    assert claude.io.sent() == [{"type": "control_response", "response": {
        "subtype": "success", "request_id": "r1",
        "response": {"behavior": "allow", "updatedInput": {"command": "make clean"}}}}]
    assert claude.inbox.get(question.id).state == "delivered"


async def test_claude_answer_to_a_withdrawn_request_is_never_written(claude: Rig) -> None:
    claude.lines(_can_use_tool("r1"))
    qid = claude.inbox.list(LANE)[0].question.id
    claude.inbox.answer(qid, "no")  # the lead answers ...
    claude.lines({"type": "control_cancel_request", "request_id": "r1"})  # ... as the agent withdraws
    await claude.channel.tick()
    assert claude.io.writes == []
    assert claude.inbox.get(qid).state == "cancelled"
    claude.lines(_can_use_tool("r2"))
    qid2 = claude.inbox.list(LANE, ("open",))[0].question.id
    claude.lines({"type": "control_cancel_request", "request_id": "r2"})
    with pytest.raises(LanesError, match="cancelled"):
        claude.inbox.answer(qid2, "yes")
    await claude.channel.tick()
    assert claude.io.writes == []


async def test_claude_denial_and_end_of_run(claude: Rig) -> None:
    claude.lines(_can_use_tool("r1"), _can_use_tool("r1"))  # a duplicate request asks once
    assert len(claude.inbox.list(LANE)) == 1
    claude.inbox.answer(claude.inbox.list(LANE)[0].question.id, "deny")
    await claude.channel.tick()
    assert claude.io.sent()[0]["response"]["response"] == {"behavior": "deny", "message": "The lead denied this."}
    claude.lines(_can_use_tool("r2"))
    claude.lines({"type": "result", "subtype": "success", "usage": _usage(1, 0, 0, 1)})
    assert [v.state for v in claude.inbox.list(LANE)] == ["delivered", "cancelled"]
    claude.lines(_can_use_tool("r3"))
    claude.channel.close()
    assert claude.inbox.list(LANE)[-1].state == "orphaned", "the agent died with the question open"
    assert len(claude.io.writes) == 1


async def test_claude_ask_user_question_and_other_requests(claude: Rig) -> None:
    questions = [{"question": "Which database?", "header": "DB", "multiSelect": False,
                  "options": [{"label": "Postgres 16", "description": "server"}, {"label": "sqlite"}]},
                 {"question": "Name the flag", "header": "Flag", "options": []}]
    claude.lines(_can_use_tool("r1", "AskUserQuestion", {"questions": questions}))
    choice, text = sorted((v.question for v in claude.inbox.list(LANE)),
                          key=lambda q: q.correlation["question_index"])
    assert choice.kind == "choice" and [o.label for o in choice.options] == ["Postgres 16", "sqlite"]
    assert "Postgres 16: server" in choice.body
    assert text.kind == "text" and text.title == "Name the flag"
    claude.inbox.answer(choice.id, "postgres 16")
    await claude.channel.tick()
    assert claude.io.writes == [], "every question of the request must be answered first"
    claude.inbox.answer(text.id, "fast-path")
    await claude.channel.tick()
    response = claude.io.sent()[0]["response"]["response"]
    assert response["updatedInput"]["answers"] == {"Which database?": "Postgres 16", "Name the flag": "fast-path"}
    assert response["updatedInput"]["questions"] == questions
    claude.lines({"type": "control_request", "request_id": "h1", "request": {"subtype": "hook_callback"}})
    assert claude.io.sent()[-1]["response"]["subtype"] == "error"


def test_claude_ignores_noise_and_hostile_lines(claude: Rig) -> None:
    for line in (b"", b"not json", b"[1,2]", b"{broken", b'{"type":"assistant","message":"x"}',
                 b'{"type":"control_request","request_id":5}', b'{"type":"result","total_cost_usd":"lots"}',
                 b"{" * 100_000):
        claude.channel.on_line(line)
    assert claude.inbox.list(LANE) == []
    long_command = "echo " + "x" * 100_000
    claude.lines(_can_use_tool("r9", "Bash", {"command": long_command}))
    question = claude.inbox.list(LANE)[0].question
    assert len(question.title) <= 200 and len(question.body) <= 16_000


def test_control_response_bytes() -> None:
    assert control_response("r", {"behavior": "deny", "message": "no"}) == (
        b'{"type":"control_response","response":{"subtype":"success","request_id":"r",'
        b'"response":{"behavior":"deny","message":"no"}}}\n')


# --- codex-json, gemini-stream-json, plain (aider) -------------------------------------------------

def test_codex_turns_add_up_and_cost_is_estimated(tmp_path: Path) -> None:
    rig = Rig(tmp_path, PRESETS["codex"])
    rig.lines({"type": "thread.started", "thread_id": "th-1"}, {"type": "turn.started"})
    for _ in range(2):
        rig.lines({"type": "turn.completed",
                   "usage": {"input_tokens": 1000, "cached_input_tokens": 600, "output_tokens": 100}})
    meters = rig.meters()
    assert meters["tokens"] == {"total": 2200, "input": 2000, "cached_input": 1200, "cache_write": 0, "output": 200}
    assert meters["cost_usd"] == pytest.approx(2 * 0.001575) and meters["cost_estimated"] is True
    assert rig.sessions == ["th-1"]


def test_gemini_result_stats_and_model_from_init(tmp_path: Path) -> None:
    rig = Rig(tmp_path, PRESETS["gemini"])
    rig.lines({"type": "init", "timestamp": "2025-10-10T12:00:00.000Z", "session_id": "g-1",
               "model": "gemini-2.5-flash"},
              {"type": "message", "role": "assistant", "content": "hi", "delta": True},
              {"type": "result", "status": "success",
               "stats": {"total_tokens": 250, "input_tokens": 200, "output_tokens": 50, "cached": 80,
                         "duration_ms": 3000, "tool_calls": 1}})
    meters = rig.meters()
    assert meters["tokens"] == {"total": 250, "input": 200, "cached_input": 80, "cache_write": 0, "output": 50}
    usage = Usage(input=200, cached_input=80, output=50)
    assert meters["cost_usd"] == pytest.approx(PRICES["gemini-2.5-flash"].cost(usage))
    assert meters["runs"][0]["model"] == "gemini-2.5-flash" and rig.sessions == ["g-1"]


@pytest.mark.parametrize(("line", "usage", "usd"), [
    ("Tokens: 12k sent, 345 received. Cost: $0.05 message, $0.12 session.", Usage(12000, 0, 0, 345), 0.12),
    ("Tokens: 4.3k sent, 1.1k cache write, 2.5k cache hit, 1.2k received. Cost: $0.0123 message, $1.50 session.",
     Usage(4300, 2500, 1100, 1200), 1.50),
    ("\x1b[2mTokens: 1,234 sent, 56 received.\x1b[0m", Usage(1234, 0, 0, 56), None),
])
def test_aider_token_line(tmp_path: Path, line: str, usage: Usage, usd: float | None) -> None:
    meter = RunMeter(tmp_path / "m.json", FakeClock(), provider="aider", model="unknown-model")
    assert feed_aider_line(meter, line)
    assert meter.usage() == usage
    assert meter.cost() == ((usd, "reported") if usd is not None else (None, None))


def test_aider_lines_add_tokens_and_replace_session_cost(tmp_path: Path) -> None:
    rig = Rig(tmp_path, PRESETS["aider"])
    assert type(rig.channel) is not Channel and rig.channel.name == "plain"
    rig.channel.on_line(b"Tokens: 1k sent, 10 received. Cost: $0.01 message, $0.01 session.")
    rig.channel.on_line(b"Tokens: 2k sent, 20 received. Cost: $0.02 message, $0.03 session.")
    rig.channel.on_line(b"Tokens: maybe later")
    meters = rig.meters()
    assert meters["tokens"]["total"] == 3030 and meters["cost_usd"] == 0.03
    assert parse_count("3.4M") == 3_400_000 and parse_count("12k") == 12_000 and parse_count("x") == 0


# --- meters ---------------------------------------------------------------------------------------

def test_meters_write_at_most_every_flush_s_and_not_for_nothing(tmp_path: Path) -> None:
    clock = FakeClock()
    path = tmp_path / "meters.json"
    meter = RunMeter(path, clock, provider="sim", model="sim")
    meter.maybe_flush()
    meter.flush()
    assert not path.exists(), "a run without figures leaves no file"
    meter.add_turn(Usage(input=10, output=1))
    meter.maybe_flush()
    assert json.loads(path.read_text())["tokens"]["total"] == 11
    meter.add_turn(Usage(input=10, output=1))
    meter.maybe_flush()
    assert json.loads(path.read_text())["tokens"]["total"] == 11, "throttled"
    clock.advance(FLUSH_S - 0.1)
    meter.maybe_flush()
    assert json.loads(path.read_text())["tokens"]["total"] == 11, "still throttled"
    clock.advance(0.1)
    meter.maybe_flush()
    assert json.loads(path.read_text())["tokens"]["total"] == 22
    assert json.loads(path.read_text())["cost_usd"] is None, "no price for `sim`"


def test_meters_accumulate_over_runs_and_mark_any_estimate(tmp_path: Path) -> None:
    clock = FakeClock()
    path = tmp_path / "meters.json"
    first = RunMeter(path, clock, provider="claude", model="sonnet")
    first.add_turn(Usage(input=100, output=10))
    first.set_cost(0.25)
    first.set_session("s-1")
    first.flush()
    second = RunMeter(path, clock, provider="codex", model="gpt-5-codex")
    second.add_turn(Usage(input=1000, cached_input=600, output=100))
    second.flush()
    data = json.loads(path.read_text())
    assert data["tokens"]["total"] == 1210
    assert data["cost_usd"] == pytest.approx(0.25 + 0.001575)
    assert data["cost_estimated"] is True and data["usd_source"] == "estimated"
    assert data["session_id"] == "s-1"
    assert [r["provider"] for r in data["runs"]] == ["claude", "codex"]


def test_price_lookup() -> None:
    assert price_for("gpt-5-codex") == PRICES["gpt-5-codex"]
    assert price_for("claude-sonnet-4-5-20250929") == PRICES["claude-sonnet"]
    assert price_for("gemini-2.5-flash-lite-preview") == PRICES["gemini-2.5-flash-lite"]
    assert price_for("") is None and estimate_usd("who-knows", Usage(1, 0, 0, 1)) is None
    # Claude's cache writes are dearer than input, cache reads cheaper.
    assert PRICES["sonnet"].cost(Usage(input=1_000_000, cache_write=1_000_000)) == pytest.approx(3.75)
    assert PRICES["sonnet"].cost(Usage(input=1_000_000, cached_input=1_000_000)) == pytest.approx(0.30)


def test_channels_import_no_ui_and_no_pyte_until_a_terminal_is_used() -> None:
    """The import-hygiene test globs engine/*.py only; the channels subpackage is checked here."""
    import subprocess
    import sys

    modules = sorted(p.stem for p in (Path(__file__).resolve().parent.parent / "engine" / "channels").glob("*.py"))
    assert {"claude", "pty", "screen", "base"} <= set(modules)
    code = ("import sys\n" + "".join(f"import lanes_tui.engine.channels.{m}\n" for m in modules if m != "__init__")
            + "import lanes_tui.engine.supervisor.main\n"
            "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich', 'pyte'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == ""


def test_one_ansi_stripper_for_the_engine_and_the_panes(tmp_path: Path) -> None:
    """Issue 17 item 5: the channels, `peek`, the review prompt and the Output pane strip with one
    expression: colour, cursor, OSC titles (ended, or cut off by a chunk), 8-bit CSI."""
    import inspect

    from lanes_tui import engine
    from lanes_tui.engine.channels import plain
    from lanes_tui.engine.core.ansi import strip_ansi
    from lanes_tui.widgets._format import clean_text

    assert engine.strip_ansi is strip_ansi and plain.strip_ansi is strip_ansi
    line = "\x1b[1;32mTokens:\x1b[0m 2k sent, 1k received.\x1b]0;title\x07 \x9b2Kdone\x1b]8;;http://x\x1b\\ \x1bMx"
    assert strip_ansi(line) == "Tokens: 2k sent, 1k received. done x"
    assert strip_ansi("cut \x1b]0;a title without its end") == "cut "
    assert clean_text("\x1b[31mred\x1b[0m\x9b1m!") == "red!"
    meter = RunMeter(tmp_path / "m.json", FakeClock(), provider="aider", model="unknown-model")
    assert feed_aider_line(meter, "\x1b[2mTokens: 2k sent, 1k received. Cost: $0.01 message, $0.02 session.\x1b[0m")
    assert "_ANSI_RE" not in inspect.getsource(inspect.getmodule(clean_text))  # type: ignore[arg-type]
