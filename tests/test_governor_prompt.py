"""The governor's prompt items (issue 10, items 4 and 7): the load wording guard and the preamble.

Real lanes through the real command line: the sim, and a tiny provider that prints what it read on
stdin, show what an agent actually receives; lane.json shows what the record keeps.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.lanes.caps import LaneCaps, lane_caps
from lanes_tui.engine.lanes.load_guard import check_load_wording, find_load_wording
from lanes_tui.engine.lanes.preamble import MAX_RULES_BYTES, PREAMBLE, agent_prompt, read_rules
from lanes_tui.engine.sim.script import parse_script
from tests.helpers import cli, output, run_lane, status, wait_state, write_config

DOCS = Path(__file__).resolve().parent.parent / "docs"

#: A provider that prints its whole stdin: what the agent was handed, byte for byte.
ECHO = ("[providers.echo]\nargv = [\"{python}\", \"-c\", \"import sys; sys.stdout.write(sys.stdin.read())\"]\n"
        "prompt = \"stdin\"\nchannel = \"plain\"\n")

#: Rules whose lines start with sim step words: quoted, none of them may become a step.
RULES = "# House rules\nwrite tests first\nexit early when blocked\nsay what you did\n\nask before deleting files\n"


def wrapped(repo: Path, prompt: str, rules: str | None) -> str:
    """What the supervisor hands the agent of a lane of `repo` with the config's caps (no `run --cpu …`)."""
    lanes = load_config(repo).lanes
    return agent_prompt(prompt, rules, False, lane_caps(lanes), lanes.timeout_s)


def lane_json(repo: Path, lane: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((repo / ".lanes" / "state" / "lanes" / lane / "lane.json").read_text())
    return data


def refused(repo: Path, *args: str) -> str:
    """Run `lanes-tui run ARGS`, which must refuse with one line; returns that line."""
    proc = cli(repo, "run", *args)
    assert proc.returncode != 0, proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


# --- the wording --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("prompt", "found"), [
    ("stress test the parser", ("stress test", 1)),
    ("Fix it.\n\nThen STRESS-TEST it", ("STRESS-TEST", 3)),
    ("run a load test against the API", ("load test", 1)),
    ("load-testing the queue", ("load-testing", 1)),
    ("Saturate the disk", ("Saturate", 1)),
    ("write a benchmark.", ("benchmark", 1)),
    ("benchmarking the cache", ("benchmarking", 1)),
    ("start a fork bomb", ("fork bomb", 1)),
    ("burn all cores for a minute", ("burn all cores", 1)),
    ("max out the CPU", ("max out the CPU", 1)),
])
def test_load_wording_is_found_with_its_line(prompt: str, found: tuple[str, int]) -> None:
    assert find_load_wording(prompt) == found


@pytest.mark.parametrize("prompt", [
    "update benchmarks.md with the new figures",  # a file name
    "see docs/benchmark/README and tests/load-test/",  # paths
    "the distressed parser",  # a word inside another
    "unloaded test data", "overload testing is someone else's job",
    "burn 5",  # the sim's step: CPU for 5 s, not a request to load the machine
    "> Gate 'pytest' failed; output tail:\n> benchmark: 3.2s",  # recover's quoted findings
])
def test_whole_words_only(prompt: str) -> None:
    assert find_load_wording(prompt) is None
    check_load_wording(prompt, allow_load=False)


def test_allow_load_skips_the_check() -> None:
    with pytest.raises(LanesError, match=r'\("benchmark" in line 1\)'):
        check_load_wording("benchmark it", allow_load=False)
    check_load_wording("benchmark it", allow_load=True)


def test_run_refuses_load_wording_with_words_and_line(repo: Path) -> None:
    write_config(repo)
    line = refused(repo, "--prompt", "Fix the parser.\nsay hi\nstress test the parser", "--id", "loady")
    assert line == ('lanes-tui: the prompt asks to load the machine ("stress test" in line 3) — '
                    "run it with --allow-load if that is what you want")
    assert status(repo) == []  # refused before anything was created
    assert not (repo.parent / "worktrees").exists() or not any((repo.parent / "worktrees").rglob("loady*"))
    task = repo / "task.md"
    task.write_text("# Task\nPlease benchmark the cache\n")
    assert '("benchmark" in line 2)' in refused(repo, "--prompt-file", str(task))


def test_allow_load_runs_the_sim_and_recover_keeps_it(repo: Path) -> None:
    write_config(repo)
    lane = run_lane(repo, "stress test the parser\nsay allowed\nexit 1", lane_id="loady", extra=("--allow-load",))
    wait_state(repo, lane)
    assert "allowed" in output(repo, lane)
    record = lane_json(repo, lane)
    assert record["allow_load"] is True and record["raw"] is False
    assert record["prompt"] == "stress test the parser\nsay allowed\nexit 1"  # as the lead wrote it
    proc = cli(repo, "recover", lane, "--relaunch", check=True)
    again = proc.stdout.strip().splitlines()[-1]
    wait_state(repo, again)
    relaunched = lane_json(repo, again)
    assert relaunched["allow_load"] is True
    assert relaunched["prompt"].startswith("stress test the parser\nsay allowed\nexit 1\n\n## Findings from attempt 1")
    assert PREAMBLE not in relaunched["prompt"]  # the preamble never goes into the record
    assert "allowed" in output(repo, again)


def test_whole_word_prompt_runs(repo: Path) -> None:
    write_config(repo)
    lane = run_lane(repo, "Update benchmarks.md for the distressed parser\nsay fine\nwrite words.txt fine",
                    lane_id="words")
    assert wait_state(repo, lane).split()[-1] == "OK"
    assert "fine" in output(repo, lane)


# --- the preamble -------------------------------------------------------------------------------------


def test_preamble_and_rules_are_prose_to_the_sim() -> None:
    caps = LaneCaps(cpu=200, memory=4 << 30, pids=256, nice=10)  # the limits line too (issue 30, item 7)
    for text in (PREAMBLE, agent_prompt("", RULES, False), agent_prompt("Fix it.", RULES, False),
                 agent_prompt("Fix it.", RULES, False, caps, 3600)):
        steps, notes = parse_script(text)
        assert steps == [] and notes == [], text
    wrapped = agent_prompt("say hello\nprint 3", RULES, False)
    assert [n for n, _ in parse_script(wrapped)[0]] == [len(wrapped.splitlines()) - 1, len(wrapped.splitlines())]


def test_agent_prompt_pure() -> None:
    assert agent_prompt("Fix it.", "rules", True) == "Fix it."
    assert agent_prompt("Fix it.", None, False) == PREAMBLE + "\n# Your task\nFix it."
    assert "\n> rules\n" in agent_prompt("Fix it.", "rules\n", False)
    assert "Rules of this repository" not in agent_prompt("Fix it.", "  \n", False)


def test_preamble_is_shown_in_the_docs() -> None:
    assert PREAMBLE in (DOCS / "lanes.md").read_text()


def test_agent_receives_preamble_and_rules_record_keeps_prompt(repo: Path) -> None:
    write_config(repo, chains='backend = ["echo"]', extra=ECHO)
    (repo / ".lanes" / "rules.md").write_text(RULES)
    prompt = "Fix the flaky login test.\nThen tell me."
    lane = run_lane(repo, prompt, lane_id="echoed")
    assert wait_state(repo, lane).split()[-1] == "NO-CHANGES"  # it only echoes: it ran to exit 0, changing nothing
    out = output(repo, lane)
    assert wrapped(repo, prompt, RULES) in out
    assert "> write tests first\n" in out and out.index(PREAMBLE) < out.index("# Your task\n" + prompt)
    assert lane_json(repo, lane)["prompt"] == prompt
    assert status(repo, lane)["id"] == lane


def test_raw_sends_the_prompt_alone(repo: Path) -> None:
    write_config(repo, chains='backend = ["echo"]', extra=ECHO)
    (repo / ".lanes" / "rules.md").write_text(RULES)
    lane = run_lane(repo, "Only this.", lane_id="raw", extra=("--raw",))
    wait_state(repo, lane)
    out = output(repo, lane)
    assert "Only this." in out and "Working in this lane" not in out and "write tests first" not in out
    assert lane_json(repo, lane)["raw"] is True


def test_sim_runs_a_wrapped_script_as_before(repo: Path) -> None:
    write_config(repo)
    (repo / ".lanes" / "rules.md").write_text(RULES)
    script = "Say hello.\nsay hello\nprint 3\nwrite hello.txt hi"
    lane = run_lane(repo, script, lane_id="hello")
    assert wait_state(repo, lane).split()[-1] == "OK"
    out = output(repo, lane)
    lines = len(wrapped(repo, script, RULES).splitlines())
    assert f"sim: reading prompt ({lines} lines)" in out
    assert "\nhello\n" in out and "line 3: simulated output" in out and "sim: done" in out
    assert "not a valid step" not in out
    worktree = Path(status(repo, lane)["worktree"])
    assert (worktree / "hello.txt").read_text() == "hi\n"
    assert not (worktree / "tests").exists()  # "write tests first" in the rules stayed prose


def test_rules_file_over_64_kb_is_refused(repo: Path) -> None:
    write_config(repo)
    rules = repo / ".lanes" / "rules.md"
    rules.write_bytes(b"x" * (MAX_RULES_BYTES + 1))
    line = refused(repo, "--prompt", "say hi", "--id", "big")
    assert "rules.md is larger than 64 KiB (65,536 bytes)" in line and "shorten it" in line
    assert status(repo) == []
    lane = run_lane(repo, "say hi", lane_id="big", extra=("--raw",))  # raw sends no rules: not read at all
    wait_state(repo, lane)
    rules.write_bytes(b"x" * MAX_RULES_BYTES)
    assert read_rules(repo) == "x" * MAX_RULES_BYTES
