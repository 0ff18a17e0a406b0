"""`--json` on `review`, `verify`, `plan check`, `plan launch` and `answer` (issue 32, item 5): one JSON
value on stdout that a script parses whole, the same exit code as without it, and a refusal that stays
one stderr line with stdout empty. Real sim lanes, a real reviewer process, real plan files.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from lanes_tui.engine import stop_lane
from lanes_tui.engine.inbox.store import InboxStore
from lanes_tui.engine.state.paths import StatePaths
from tests.conftest import git
from tests.helpers import cli, wait_for, wait_state, write_config

FAKE = Path(__file__).parent / "fakes" / "fake_reviewer.py"
WORK = 'write calc.py "def add(a, b): return a + b  # reviewed"\n'


def reviewer_config(repo: Path, mode: str) -> None:
    """A reviewer of another family than the sim (`tests/fakes/fake_reviewer.py MODE`), run only by hand."""
    argv = json.dumps([sys.executable, str(FAKE), mode])
    write_config(repo, extra=f'[providers.rev]\nargv = {argv}\nprompt = "stdin"\nfamily = "openai"\n\n'
                             '[review]\nmode = "off"\nchain = ["rev"]\ntimeout_s = 60\n')


def parsed(proc: Any, code: int = 0) -> Any:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    return json.loads(proc.stdout)


def refused(proc: Any, *parts: str) -> None:
    assert (proc.returncode, proc.stdout) == (2, ""), (proc.returncode, proc.stdout, proc.stderr)
    assert len(proc.stderr.strip().splitlines()) == 1 and all(p in proc.stderr for p in parts), proc.stderr


def test_review_and_verify_json(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "programme")
    reviewer_config(repo, "blocking")
    lane = cli(repo, "run", "--prompt", WORK, "--id", "rev", check=True).stdout.split()[-1]
    wait_state(repo, lane)
    verified = parsed(cli(repo, "verify", lane, "--evidence", "ran add(2, 2): 4", "--json"))
    assert set(verified) == {"id", "by", "at", "evidence", "diff_digest"}
    assert (verified["id"], verified["by"], verified["evidence"]) == (lane, "Test Lead", "ran add(2, 2): 4")
    assert isinstance(verified["at"], float) and verified["diff_digest"]

    review = parsed(cli(repo, "review", lane, "--json"), 1)  # BLOCKING: exit 1, as without --json
    assert set(review) == {"id", "verdict", "reviewer", "family", "reason", "findings", "tail", "diff_digest"}
    assert (review["id"], review["verdict"], review["reviewer"], review["family"]) == (lane, "BLOCKING", "rev",
                                                                                        "openai")
    first = review["findings"][0]
    assert (first["path"], first["line"]) == ("calc.py", 2) and "divides by zero" in first["text"]
    text = cli(repo, "review", lane)
    assert text.returncode == 1 and "review: BLOCKING by rev" in text.stdout  # the text form is unchanged
    refused(cli(repo, "review", "nosuch-a1", "--json"), "nosuch-a1")
    refused(cli(repo, "verify", "nosuch-a1", "--evidence", "x", "--json"), "nosuch-a1")


def write_plan(path: Path, name: str, tickets: list[dict[str, Any]]) -> Path:
    lines = [f'[plan]\nname = "{name}"\n']
    for ticket in tickets:
        lines += ["[[tickets]]", *(f"{key} = {json.dumps(value)}" for key, value in ticket.items()), ""]
    path.write_text("\n".join(lines))
    return path


def ticket(tid: str, *blockers: str) -> dict[str, Any]:
    return {"id": tid, "title": f"ticket {tid}", "prompt": f"write {tid}.txt made by {tid}\n",
            "scope": [f"{tid}.txt"], "blockers": list(blockers)}


def test_plan_check_and_launch_json(repo: Path, tmp_path: Path) -> None:
    write_config(repo, lanes_extra="protected_branches = []")
    plan = write_plan(tmp_path / "two.toml", "two", [ticket("a"), ticket("b"), ticket("c", "a")])
    checked = parsed(cli(repo, "plan", "check", str(plan), "--json"))
    assert (checked["plan"], checked["target"], checked["waves"]) == ("two", None, [["a", "b"], ["c"]])
    assert [t["id"] for t in checked["tickets"]] == ["a", "b", "c"] and checked["tickets"][2]["blockers"] == ["a"]
    assert checked["lines"] == cli(repo, "plan", "check", str(plan), check=True).stdout.splitlines()
    bad = write_plan(tmp_path / "bad.toml", "bad", [ticket("a", "nosuch")])
    refused(cli(repo, "plan", "check", str(bad), "--json"), "nosuch")

    launched = parsed(cli(repo, "plan", "launch", str(plan), "--no-supervisor", "--json"))
    assert set(launched) == {"plan", "frozen", "started", "tickets", "supervisor_pid", "finished"}
    assert launched["started"] == [{"ticket": "a", "lane": "a-a1"}, {"ticket": "b", "lane": "b-a1"}]
    assert Path(launched["frozen"]) == StatePaths(repo).state / "plans" / "two" and Path(launched["frozen"]).is_dir()
    assert {t["id"]: t["state"] for t in launched["tickets"]}["c"] == "blocked"
    assert (launched["supervisor_pid"], launched["finished"]) == (None, False)
    quiet = cli(repo, "-q", "plan", "launch", str(write_plan(tmp_path / "one.toml", "one", [ticket("d")])),
                "--no-supervisor")
    assert (quiet.returncode, quiet.stdout) == (0, "d-a1\n"), quiet.stderr
    for lane in ("a-a1", "b-a1", "d-a1"):
        wait_state(repo, lane)


def test_answer_json(repo: Path) -> None:
    write_config(repo)
    store = InboxStore(StatePaths(repo).inbox)
    question = store.ask("asker-a1", kind="yesno", title="Deploy?")
    answered = parsed(cli(repo, "answer", question.id, "y", "--json"))
    assert answered == {"qid": question.id, "lane": "asker-a1", "answer": "yes", "state": "answered",
                        "lane_gone": False, "relaunched": None}
    assert store.get(question.id).answer == "yes"
    refused(cli(repo, "answer", question.id, "no", "--json"), question.id)  # answered already
    text = store.ask("asker-a1", kind="text", title="Which database?")
    shown = cli(repo, "answer", text.id, "use", "the", "staging", "one")
    assert (shown.returncode, shown.stdout) == (0, f"answered {text.id} use the staging one\n")


def test_answer_json_names_a_gone_lane_and_its_relaunch(repo: Path) -> None:
    write_config(repo)
    lane = cli(repo, "run", "--prompt", "ask --yes-no --timeout 120 Use the new schema?\nsleep 600\n", "--id",
               "gone", check=True).stdout.split()[-1]
    questions = wait_for(lambda: json.loads(cli(repo, "inbox", "--json", check=True).stdout))
    wait_state(repo, lane, "waiting")
    asyncio.run(stop_lane(repo, lane))
    wait_state(repo, lane)
    answered = parsed(cli(repo, "answer", questions[0]["id"], "yes", "--relaunch", "--json"))
    assert answered == {"qid": questions[0]["id"], "lane": lane, "answer": "yes", "state": "orphaned",
                        "lane_gone": True, "relaunched": "gone-a2"}
    assert cli(repo, "abandon", "gone-a2").returncode == 0
