"""Issue 30, items 6 and 7: `[lanes] attempts` caps the relaunches of a task started by hand, the lead's
own notes reach the next attempt's prompt, and the preamble carries the secrets and foreground rules
and the lane's caps in numbers.

Real lanes through the real command line: the sim fails on purpose (`exit 1`), and a tiny provider
that prints its stdin shows byte for byte what the next attempt's agent was handed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.core.errors import ConfigError
from lanes_tui.engine.decisions.lead_note import MAX_NOTE_BYTES
from lanes_tui.engine.decisions.packet import next_step
from lanes_tui.engine.decisions.recover import attempts_refusal
from lanes_tui.engine.lanes.caps import LaneCaps
from lanes_tui.engine.lanes.preamble import PREAMBLE, agent_prompt, limits_line
from lanes_tui.engine.sim.script import parse_script
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from tests.conftest import git
from tests.helpers import cli, output, run_lane, status, wait_state, write_config

#: A provider that prints its whole stdin (what the agent was handed) and changes nothing: NO-CHANGES.
ECHO = ("[providers.echo]\nargv = [\"{python}\", \"-c\", \"import sys; sys.stdout.write(sys.stdin.read())\"]\n"
        "prompt = \"stdin\"\nchannel = \"plain\"\n")


def lane_dir(repo: Path, lane: str) -> Path:
    return repo / ".lanes" / "state" / "lanes" / lane


def lane_json(repo: Path, lane: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((lane_dir(repo, lane) / "lane.json").read_text())
    return data


def packet_next(repo: Path, lane: str) -> str:
    return str(json.loads((lane_dir(repo, lane) / "packet.json").read_text())["next"])


def relaunched(repo: Path, lane: str, *args: str) -> str:
    """`recover LANE --relaunch ARGS`, which must succeed; the new lane's id, once it has ended."""
    proc = cli(repo, "recover", lane, "--relaunch", *args, check=True)
    new = proc.stdout.strip().splitlines()[-1]
    wait_state(repo, new)
    return new


def refused(repo: Path, *args: str) -> str:
    """`lanes-tui ARGS`, which must refuse (exit 2) with one line and no traceback; that line."""
    proc = cli(repo, *args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


# --- item 6: the attempts cap -------------------------------------------------------------------------


def test_a_hand_started_task_gets_three_attempts_then_takeover(repo: Path) -> None:
    write_config(repo)
    first = run_lane(repo, "Fix it.\nsay trying\nexit 1", lane_id="fix")
    assert wait_state(repo, first).split()[-1] == "LANE-FAILED"
    assert packet_next(repo, first) == "redo"
    second = relaunched(repo, first)
    third = relaunched(repo, second)
    assert (second, third) == ("fix-a2", "fix-a3")
    assert lane_json(repo, third)["max_attempts"] == 3
    assert packet_next(repo, third) == "takeover"  # the last attempt: its packet says so, not "redo"

    line = refused(repo, "recover", third, "--relaunch")
    assert line.startswith("lanes-tui: fix-a3 is attempt 3 of 3 ([lanes] attempts) — take it over: ")
    assert "`lanes-tui check fix-a3`" in line and "`lanes-tui accept fix-a3`" in line
    assert "raise [lanes] attempts" in line and str(lane_json(repo, third)["worktree"]) in line
    # an older lane of the task counts the task's attempts, not its own
    older = refused(repo, "recover", first, "--relaunch")
    assert "task fix is at attempt 3 of 3 ([lanes] attempts; its newest lane is fix-a3)" in older
    assert "fix-a4" not in {row["id"] for row in status(repo)}  # nothing was started
    shown = cli(repo, "recover", third, check=True).stdout
    assert "relaunch: refused, fix-a3 is attempt 3 of 3" in shown
    as_json = json.loads(cli(repo, "recover", third, "--json", check=True).stdout)
    assert as_json["findings"]["relaunch_refused"][0] == "fix-a3 is attempt 3 of 3 ([lanes] attempts)"

    write_config(repo, lanes_extra="attempts = 5")  # the fix the refusal names
    assert relaunched(repo, third) == "fix-a4"


@pytest.mark.parametrize(("value", "says"), [
    ("0", "must be at least 1, got 0"),
    ('"3"', 'must be a whole number, got string "3"'),
    ("100", "must be at most 99, got 100"),
    ("2.5", "must be a whole number"),
])
def test_a_bad_attempts_value_is_a_config_error(repo: Path, value: str, says: str) -> None:
    write_config(repo, lanes_extra=f"attempts = {value}")
    with pytest.raises(ConfigError) as caught:
        load_config(repo)
    assert "lanes.attempts" in str(caught.value) and says in str(caught.value)
    line = refused(repo, "run", "--prompt", "say hi", "--id", "bad")
    assert "attempts" in line and says in line


def test_plan_lanes_are_counted_by_their_plan(tmp_path: Path, repo: Path) -> None:
    """The plan counts its ticket and relaunches it itself; the lead's relaunch is its takeover path."""
    write_config(repo, lanes_extra="attempts = 2")
    config = load_config(repo)
    record = LaneRecord(id="wire-a4", slug="wire", attempt=4, task_type="backend", prompt="p", chain=["sim"],
                        repo=str(repo), worktree=str(tmp_path / "wt"), branch="lane/wire-a4", base_sha="0" * 40,
                        target_branch="main", plan="health", ticket="wire")
    assert attempts_refusal(StatePaths(repo), config, record) is None
    record.plan = record.ticket = None
    refusal = attempts_refusal(StatePaths(repo), config, record)
    assert refusal is not None and refusal[0] == "wire-a4 is attempt 4 of 2 ([lanes] attempts)"


def test_next_step_says_takeover_only_on_the_last_attempt() -> None:
    assert next_step("LANE-FAILED", "none") == "redo"
    assert next_step("LANE-FAILED", "none", last_attempt=True) == "takeover"
    assert next_step("OK", "failed", last_attempt=True) == "takeover"
    assert next_step("OK", "passed", last_attempt=True) == "review"  # passed work is reviewed, whatever the count
    assert next_step("CONFIG-ERROR", "none", last_attempt=True) == "stop"


# --- item 6: the lead's notes -------------------------------------------------------------------------


def test_note_and_note_file_reach_the_next_attempts_prompt(repo: Path) -> None:
    write_config(repo, extra=ECHO)
    first = run_lane(repo, "Tidy the parser.", lane_id="tidy", extra=("--lane", "echo"))
    assert wait_state(repo, first).split()[-1] == "NO-CHANGES"
    note = "the bug is in parse_date, not in the test\nwrite evil.txt boom"
    second = relaunched(repo, first, "--note", note, "--fresh")
    got = output(repo, second)  # what the echo agent was handed
    assert ("> The lead's notes:\n> the bug is in parse_date, not in the test\n> write evil.txt boom\n") in got
    assert got.index("## Findings from attempt 1") < got.index("> The lead's notes:")
    assert lane_json(repo, second)["lead_note"] == note
    assert status(repo, second)["lead_note"] == note  # `status --json` shows it
    events = [json.loads(line) for line in (lane_dir(repo, first) / "events.jsonl").read_text().splitlines()]
    assert any(e.get("type") == "relaunched" and e.get("next") == second and e.get("note") == note for e in events)

    notes = repo / "notes.md"
    long_line = "é" * 3000  # UTF-8, and longer than the event keeps
    notes.write_text(f"Use the fixture in tests/data.\n\n  keep the API as it is\n{long_line}\n", encoding="utf-8")
    third = relaunched(repo, second, "--note-file", str(notes), "--fresh")
    got = output(repo, third)
    assert ("> The lead's notes:\n> Use the fixture in tests/data.\n> \n>   keep the API as it is\n"
            f"> {long_line}\n") in got
    assert "parse_date" not in got  # the findings (and notes) of earlier attempts are not carried over
    assert lane_json(repo, third)["lead_note"].endswith(long_line)  # the record keeps it whole
    events = [json.loads(line) for line in (lane_dir(repo, second) / "events.jsonl").read_text().splitlines()]
    cut = next(e for e in events if e.get("type") == "relaunched")
    assert cut["next"] == third and cut["note_cut"] is True and len(cut["note"]) == 2000


def test_an_accepted_lane_is_relaunched_as_a_follow_up_with_the_ci_findings(repo: Path) -> None:
    """What `lanes-tui ci` prints after a failed check: `recover ACCEPTED --relaunch --note-file F`."""
    git(repo, "checkout", "-q", "-b", "programme")
    write_config(repo)
    first = run_lane(repo, "write fix.txt fixed\n", lane_id="shipped")
    wait_state(repo, first)
    cli(repo, "accept", first, check=True)
    target = status(repo, first)["target_branch"]
    findings = repo.parent / "PR-7.md"
    findings.write_text("CI / test failed:\nAssertionError: fix.txt is not checked by a test\n", encoding="utf-8")
    assert "nothing to recover" in refused(repo, "recover", first, "--recheck")  # only a relaunch follows up
    second = relaunched(repo, first, "--note-file", str(findings))
    record = lane_json(repo, second)
    assert second == "shipped-a2" and record["lead_note"].startswith("CI / test failed:")
    assert "> The lead's notes:\n> CI / test failed:\n> AssertionError" in record["prompt"]
    assert record["base_sha"] == git(repo, "rev-parse", target)  # from the target, which holds the merged work
    assert status(repo, first)["state"] == "accepted"  # the accepted lane stays what it was


def test_a_note_is_prose_to_the_sim(repo: Path) -> None:
    write_config(repo)
    first = run_lane(repo, "Fix it.\nsay trying", lane_id="quoted")
    assert wait_state(repo, first).split()[-1] == "NO-CHANGES"
    second = relaunched(repo, first, "--note", "write evil.txt boom\nexit 3")
    # a step of the note would have written the file (OK) or exited 3 (LANE-FAILED): its own script ran alone
    assert wait_state(repo, second).split()[-1] == "NO-CHANGES"
    worktree = Path(status(repo, second)["worktree"])
    assert not (worktree / "evil.txt").exists()
    assert "trying" in output(repo, second) and "not a valid step" not in output(repo, second)


def test_bad_notes_are_refused_before_anything_starts(repo: Path, tmp_path: Path) -> None:
    write_config(repo)
    first = run_lane(repo, "Fix it.\nexit 1", lane_id="noted")
    wait_state(repo, first)
    big = tmp_path / "big.md"
    big.write_bytes(b"x" * (MAX_NOTE_BYTES + 1))
    latin = tmp_path / "latin.md"
    latin.write_bytes("caf\xe9".encode("latin-1"))
    for args, says in [
        (("--note-file", str(tmp_path / "missing.md")), "does not exist"),
        (("--note-file", str(tmp_path)), "is a folder"),
        (("--note-file", str(big)), "is larger than 64 KiB (65,536 bytes)"),
        (("--note-file", str(latin)), "is not UTF-8 text — save it as UTF-8"),
        (("--note", "   "), "the note (--note) is empty"),
        (("--note", "x" * (MAX_NOTE_BYTES + 1)), "more than 65,536"),
    ]:
        assert says in refused(repo, "recover", first, "--relaunch", *args)
    assert "go with --relaunch" in refused(repo, "recover", first, "--note", "hi")
    assert "not allowed with argument" in cli(repo, "recover", first, "--relaunch", "--note", "a",
                                              "--note-file", str(big)).stderr
    assert [row["id"] for row in status(repo)] == [first]  # no attempt was started
    assert lane_json(repo, first)["superseded_by"] is None


# --- item 7: the preamble -----------------------------------------------------------------------------


def test_agent_is_told_the_secrets_and_foreground_rules_and_its_caps(repo: Path) -> None:
    write_config(repo, extra=ECHO)  # timeout_s = 600 in the suite's config
    lane = run_lane(repo, "Tidy the parser.", lane_id="capped",
                    extra=("--lane", "echo", "--cpu", "200%", "--memory", "4G", "--pids", "256"))
    wait_state(repo, lane)
    got = output(repo, lane)
    assert "- Never read .env files or other secrets (keys, tokens, credentials), and never print a secret.\n" in got
    assert "- Only foreground commands: leave no background process, daemon or dev server running" in got
    assert "- Your limits: 2 CPUs, 4 GiB memory, 256 processes, 10 min.\n" in got
    assert got.index("- Your limits:") < got.index("# Your task\nTidy the parser.")
    assert "Your limits" not in lane_json(repo, lane)["prompt"]  # the record keeps the lead's prompt


def test_limits_name_only_the_caps_that_are_set() -> None:
    assert limits_line(None) is None
    assert limits_line(LaneCaps(cpu=0, memory=0, pids=0, nice=10)) is None
    assert limits_line(LaneCaps(cpu=150, memory=512 << 20, pids=0, nice=10)) == \
        "- Your limits: 1.5 CPUs, 512 MiB memory."
    assert limits_line(LaneCaps(cpu=100, memory=0, pids=64, nice=0), 90) == "- Your limits: 1 CPU, 64 processes, 90 s."
    assert limits_line(None, 3600) == "- Your limits: 60 min."
    caps = LaneCaps(cpu=200, memory=4 << 30, pids=256, nice=10)
    assert agent_prompt("Fix it.", None, False, caps, 3600) == (
        PREAMBLE + "- Your limits: 2 CPUs, 4 GiB memory, 256 processes, 60 min.\n\n# Your task\nFix it.")
    assert agent_prompt("Fix it.", None, True, caps, 3600) == "Fix it."  # raw: the prompt alone


def test_new_preamble_lines_are_in_the_preamble() -> None:
    """The sim reads them as prose: tests/test_governor_prompt.py parses the wrapped prompt, limits included."""
    assert "Never read .env files or other secrets" in PREAMBLE and "dev server" in PREAMBLE
    caps = LaneCaps(cpu=200, memory=4 << 30, pids=256, nice=10)
    assert parse_script(agent_prompt("", "rules", False, caps, 3600)) == ([], [])
