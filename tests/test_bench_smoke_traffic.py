"""Real traffic in the benchmarks at tiny sizes: the recordings, the replay agent, `--traffic` of B1, B3, B8
and B10. Never a speed threshold here; the figures are in docs/benchmarks.md ("Real traffic")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lanes_tui.engine.channels import ChannelContext, make_channel
from lanes_tui.engine.channels.claude_wire import user_message
from lanes_tui.engine.channels.readable import readable_lines
from lanes_tui.engine.config.providers import PRESETS
from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.core.clock import FakeClock
from lanes_tui.engine.state.meters import RunMeter
from tests.bench import b3, b8, b10, replay_agent, traffic
from tests.bench.__main__ import parse, run

REAL = ("claude", "codex", "gemini")


def _replay(*args: str, stdin: bytes = b"") -> list[bytes]:
    proc = subprocess.run([sys.executable, str(traffic.REPLAY_AGENT), *args], input=stdin, capture_output=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


@pytest.mark.parametrize("name", REAL)
def test_each_recording_is_the_clis_json_with_large_tool_results(name: str) -> None:
    path = traffic.HERE / f"{name}.jsonl"
    assert path.stat().st_size < 300_000  # "a few hundred KB at most"
    lines = path.read_bytes().splitlines()
    assert all(isinstance(json.loads(line).get("type"), str) for line in lines)
    assert max(map(len, lines)) > 15_000  # a large tool result inline


@pytest.mark.parametrize("name", REAL)
def test_the_channel_and_the_conversation_view_read_each_recording(tmp_path: Path, name: str) -> None:
    clock = FakeClock()
    meter = RunMeter(tmp_path / "meters.json", clock, provider=name, model=PRESETS[name].model)
    channel = make_channel(ChannelContext(lane="t", attempt=1, provider=PRESETS[name], inbox=None, meters=meter,
                                          clock=clock))
    text = (traffic.HERE / f"{name}.jsonl").read_bytes()
    channel.on_block(text.rstrip(b"\n"))
    channel.close()
    meters = json.loads((tmp_path / "meters.json").read_text())
    assert meters["session_id"] and meters["tokens"]["input"] > 0, meters
    shown = readable_lines(text.decode().splitlines())
    assert shown and not any(line.startswith("{") for line in shown)  # no JSON line is ever shown raw


def test_the_replay_agent_plays_the_sims_script_between_the_first_and_last_line() -> None:
    first, body, last = replay_agent.load(replay_agent.recording_path("codex"))
    out = _replay("--recording", "codex", stdin=b"Benchmark lane.\nprint 30 --rate 400 --text x\n")
    assert out == [first.rstrip(b"\n"), *[replay_agent.line_at(body, i).rstrip(b"\n") for i in range(30)],
                   last.rstrip(b"\n")]
    item = 2  # codex's first `item.started`, which has an id (the one before, `turn.started`, has none)
    assert out[item] == body[1].rstrip(b"\n") and out[item + len(body)] != out[item]  # the second loop's ids
    assert replay_agent.untagged(out[item + len(body)]) == out[item]
    # As Claude's channel sends the prompt (stdin left open), with the flags the channel adds.
    out = _replay("--recording", "claude", "--input-format", "stream-json", "--permission-prompt-tool", "stdio",
                  stdin=user_message("print 3\n"))
    assert len(out) == 5
    assert len(_replay("--recording", "gemini", "--prompt", "sleep 0.1\nprint 2", "--rate", "1000")) == 4


def test_traffic_names_and_rates() -> None:
    assert traffic.parse("claude@2") == ("claude", 2.0) and traffic.parse("plain") == ("plain", None)
    for bad in ("aider", "plain@3", "claude@fast"):
        with pytest.raises(ValueError):
            traffic.parse(bad)
    assert traffic.argv("gemini@2")[-4:] == ["--rate", "2", "--prompt", "{prompt}"]
    assert b10.parse(["--traffic", "codex"]).traffic == "codex"


@pytest.mark.parametrize("name", ["plain", *REAL])
def test_b3_runs_its_lanes_on_the_traffics_preset(tmp_path: Path, name: str) -> None:
    config = load_config(b3._repo(tmp_path, 1, name))
    chain = config.chains["backend"]
    assert list(chain) == [traffic.provider(name)]
    if name != "plain":
        provider = config.providers[name]
        assert provider.channel == PRESETS[name].channel and str(traffic.REPLAY_AGENT) in provider.argv


@pytest.mark.slow
@pytest.mark.parametrize("name", REAL)
def test_b8_smoke_replays_without_loss(name: str) -> None:
    result = b8.measure(lines=400, presses=0, with_b1=False, traffic=name)
    assert result["lost"] == 0 and result["duplicated_or_reordered"] == 0
    assert result["lines_seen"] == 400 and result["log_bytes"] > 2**20


@pytest.mark.slow
def test_b1_smoke_on_claude_traffic(tmp_path: Path) -> None:
    records = run(parse(["b1", "--traffic", "claude", "--sizes", "2", "--runs", "1", "--presses", "4",
                         "--warmup-presses", "2", "--settle", "0.5", "--out", str(tmp_path)]), command="smoke")
    (result,) = records["b1"]["results"]
    assert records["b1"]["params"]["traffic"] == "claude"
    assert result["runs"][0]["cursor_ms"], "no press was ever seen on screen"
