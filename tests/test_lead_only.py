"""Lead-only commands refuse to run inside a lane (issue 9, item 4).

The main test runs a real lane whose agent (a small provider script) calls the lead's commands from
its own shell, with the environment every lane gets (`LANES_LANE`, `LANES_HOME`, the `lanes-tui` shim
on PATH): it must not answer another lane's question, accept or abandon another lane, or start one,
while `ask`, `status` and `inbox` (its own questions only) keep working.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.app.cli.main import LEAD_ONLY, lane_refusal
from tests.conftest import git
from tests.helpers import cli, output, run_lane, status, wait_for, wait_state, write_config

#: The agent of the rogue lane: runs each `lanes-tui` command of its task (a JSON list, the last line
#: of the prompt it receives after the lane's preamble) and prints one `RESULT {...}` line per command
#: with its exit code and output.
ROGUE = """\
import json, subprocess, sys
for argv in json.loads(sys.argv[-1].strip().splitlines()[-1]):
    proc = subprocess.run(["lanes-tui", *argv], capture_output=True, text=True, timeout=60)
    print("RESULT " + json.dumps({"argv": argv, "rc": proc.returncode, "out": proc.stdout,
                                  "err": proc.stderr}), flush=True)
"""


def _results(repo: Path, lane: str) -> dict[str, dict[str, Any]]:
    found = {}
    for line in output(repo, lane).splitlines():
        if line.startswith("RESULT "):
            item = json.loads(line[len("RESULT "):])
            found[" ".join(item["argv"][:2])] = item
    return found


def test_an_agent_cannot_run_the_leads_commands_from_its_lane(repo: Path, tmp_path: Path) -> None:
    script = tmp_path / "rogue.py"
    script.write_text(ROGUE)
    write_config(repo, extra=f'[providers.rogue]\nargv = ["{{python}}", "{script}"]\nprompt = "arg"\n')
    asker = run_lane(repo, "ask --yes-no --timeout 120 Deploy to staging?\nsay asked", lane_id="asker")
    other = run_lane(repo, "write done.txt done\nsay done", lane_id="other")
    assert wait_state(repo, other) == f"{other} ready OK"

    def open_question() -> Any:
        rows = json.loads(cli(repo, "inbox", "--json", check=True).stdout)
        return next((q for q in rows if q["lane"] == asker and q["state"] == "open"), None)

    qid = wait_for(open_question)["id"]
    commands = [
        ["answer", qid, "yes"], ["accept", other], ["abandon", other, "--force"], ["recover", asker],
        ["check", other], ["finish"], ["run", "--prompt", "say spawned", "--id", "spawned"], ["init", "--force"],
        ["ask", "Rogue question?", "--yes-no", "--timeout", "0", "--default", "no"],
        ["inbox", "--json"], ["inbox", "--lane", asker], ["status", "--json"], ["peek", other],
        ["peek", "rogue-a1"],
    ]
    rogue = run_lane(repo, json.dumps(commands), lane_id="rogue", extra=("--lane", "rogue"))
    wait_state(repo, rogue)
    results = _results(repo, rogue)
    assert len(results) == len(commands), output(repo, rogue)

    for word in ("answer", "accept", "abandon", "recover", "check", "finish", "run", "init"):
        item = next(v for k, v in results.items() if k.split()[0] == word)
        lines = item["err"].strip().splitlines()
        assert item["rc"] == 2 and len(lines) == 1, item
        assert lines[0].startswith(f"lanes-tui: lanes-tui {word} is the lead's command; this shell belongs to "
                                   f"lane {rogue} (LANES_LANE is set)"), lines[0]
    # Nothing the lead owns moved: the question is still open, the other lane still ready and whole.
    assert open_question()["id"] == qid
    assert status(repo, other)["state"] == "ready"
    assert git(repo, "branch", "--list", f"lane/{other}") != ""
    assert not (repo / ".lanes" / "state" / "lanes" / "spawned-a1").exists()

    # What an agent may do: ask (exit 1: the default "no" applied), look at the lanes, list its own inbox.
    asked = results["ask Rogue question?"]
    assert (asked["rc"], asked["out"].strip()) == (1, "no"), asked
    own = json.loads(results["inbox --json"]["out"])
    assert [q["lane"] for q in own] == [rogue] and own[0]["title"] == "Rogue question?"
    assert results["status --json"]["rc"] == 0
    assert {row["id"] for row in json.loads(results["status --json"]["out"])} >= {asker, other, rogue}
    refused = results["inbox --lane"]
    assert refused["rc"] == 2 and "its inbox lists only that lane's questions" in refused["err"], refused
    # Another lane's output is the lead's to read: refused in one line, nothing of it shown; its own is fine.
    peeked = results[f"peek {other}"]
    assert (peeked["rc"], peeked["out"]) == (2, ""), peeked
    assert peeked["err"].strip() == (f"lanes-tui: this shell belongs to lane {rogue}: peek shows only that lane's "
                                     f"output, not {other}'s — peek your own: `lanes-tui peek {rogue}`")
    assert results["peek rogue-a1"]["rc"] == 0 and "starting" in results["peek rogue-a1"]["out"]

    # The lead (no LANES_LANE) answers; the asker hears it.
    answered = cli(repo, "answer", qid, "yes")
    assert answered.returncode == 0, answered.stderr
    wait_state(repo, asker)
    assert 'asked "Deploy to staging?" -> yes' in output(repo, asker)


def lanes_tui(repo: Path, *args: str, lane: str = "probe-a1") -> subprocess.CompletedProcess[str]:
    """`lanes-tui ARGS` with the variables a lane's environment has."""
    env = {**os.environ, "LANES_LANE": lane, "LANES_HOME": str(repo / ".lanes" / "state")}
    return subprocess.run([sys.executable, "-m", "lanes_tui.app", *args], cwd=repo, capture_output=True,
                          text=True, env=env, timeout=60, check=False)


@pytest.mark.parametrize("argv", [
    ["answer", "q_20250101T000000_abcdef", "yes"], ["accept", "x-a1"], ["abandon", "x-a1"], ["recover", "x-a1"],
    ["finish"], ["run", "--prompt", "hi"], ["init"], ["check", "x-a1"], ["stop", "x-a1"], ["stop", "--all"],
    ["--repo", ".", "accept", "x-a1"],  # a global option first does not hide the command word
    [],  # the dashboard accepts and answers too
])
def test_each_leads_command_is_refused_with_one_line(repo: Path, argv: list[str]) -> None:
    write_config(repo)
    before = sorted(p.name for p in repo.iterdir())
    proc = lanes_tui(repo, *argv)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "is the lead's command; this shell belongs to lane probe-a1 (LANES_LANE is set)" in lines[0]
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert sorted(p.name for p in repo.iterdir()) == before
    assert not (repo / ".lanes" / "state").exists()


def test_looking_and_asking_stay_available_in_a_lane(repo: Path) -> None:
    write_config(repo)
    assert lanes_tui(repo, "status").returncode == 0
    assert lanes_tui(repo, "--help").returncode == 0
    assert lanes_tui(repo, "answer", "--help").returncode == 2  # refused before any parsing
    (repo / ".lanes" / "state").mkdir(parents=True)
    asked = lanes_tui(repo, "ask", "Mine?", "--yes-no", "--timeout", "0", "--default", "yes")
    assert (asked.returncode, asked.stdout.strip()) == (0, "yes"), asked.stderr
    lanes_tui(repo, "ask", "Theirs?", "--yes-no", "--timeout", "0", "--default", "no", lane="other-a1")
    mine = json.loads(lanes_tui(repo, "inbox", "--json").stdout)
    assert [q["title"] for q in mine] == ["Mine?"]
    assert len(json.loads(cli(repo, "inbox", "--json", check=True).stdout)) == 2  # the lead sees both
    assert "no questions" in lanes_tui(repo, "inbox", lane="third-a1").stdout


def test_the_refusal_rules() -> None:
    assert {"answer", "accept", "abandon", "recover", "finish", "run", "init", "check", "review", "verify",
            "stop"} <= LEAD_ONLY
    for word in ("ask", "status", "inbox", "wait", "doctor", "lock"):  # lock: the agent's heavy runs
        assert lane_refusal(word, [word], {"LANES_LANE": "a-a1"}) is None
    assert lane_refusal("accept", ["accept", "x"], {}) is None
    assert lane_refusal("accept", ["accept", "x"], {"LANES_LANE": ""}) is None  # empty: not a lane
    assert lane_refusal(None, ["--demo"], {"LANES_LANE": "a-a1"}) is None
    odd = lane_refusal("run", ["run"], {"LANES_LANE": "x\x1b[31m" + "y" * 100})
    assert odd is not None and "\x1b" not in odd and "…" in odd
