"""The inbox with real lanes: restarts, answers with no dashboard, orphans and the next attempt."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from lanes_tui.engine.engine import Engine
from lanes_tui.engine.launcher import stop_lane
from tests.helpers import cli, run_lane, status, wait_for, wait_state, write_config


def _open_question(repo: Path) -> dict[str, object]:
    rows = wait_for(lambda: [q for q in json.loads(cli(repo, "inbox", "--json").stdout) if q["state"] == "open"])
    return rows[0]


async def test_restarted_engine_shows_the_open_question_and_a_later_answer_is_delivered(repo: Path) -> None:
    write_config(repo)
    lane = run_lane(repo, "ask --yes-no --timeout 120 Ship it?\nif yes write shipped.txt yes\n", lane_id="asker")
    question = _open_question(repo)
    assert (question["lane"], question["source"], question["kind"]) == (lane, "ask-cli", "yesno")
    for _ in range(2):  # a dashboard opens and closes twice: the question is the same each time
        engine = Engine(repo)
        await engine.start()
        await engine.aclose()
        assert [(q["id"], q["state"]) for q in engine.questions()] == [(question["id"], "open")]
    assert status(repo, lane)["state"] == "waiting"
    assert cli(repo, "answer", str(question["id"]), "yes").returncode == 0  # no dashboard runs now
    wait_state(repo, lane)
    assert (Path(status(repo, lane)["worktree"]) / "shipped.txt").exists()
    delivered = json.loads(cli(repo, "inbox", "--json").stdout)[0]
    assert delivered["state"] == "delivered" and delivered["answer"] == "yes"


def test_killed_lane_orphans_its_question_and_the_answer_starts_the_next_attempt(repo: Path) -> None:
    write_config(repo)
    lane = run_lane(repo, "ask --yes-no --timeout 120 Use the new schema?\n", lane_id="orphan")
    question = _open_question(repo)
    killed = cli(repo, "abandon", lane)  # a lead might also press k; abandon stops it for good
    assert killed.returncode == 0, killed.stderr
    orphaned = json.loads(cli(repo, "inbox", "--json").stdout)[0]
    assert orphaned["state"] == "orphaned"
    offered = cli(repo, "answer", str(question["id"]), "yes")
    assert offered.returncode == 0 and "recover orphan-a1 --relaunch" in offered.stdout


def test_answer_relaunch_puts_the_answer_in_the_next_prompt(repo: Path) -> None:
    write_config(repo)
    lane = run_lane(repo, "ask --yes-no --timeout 120 Use the new schema?\nsleep 600\n", lane_id="resume")
    question = _open_question(repo)
    wait_state(repo, lane, "waiting")
    asyncio.run(stop_lane(repo, lane))
    wait_state(repo, lane)
    assert json.loads(cli(repo, "inbox", "--json").stdout)[0]["state"] == "orphaned"
    started = cli(repo, "answer", str(question["id"]), "yes", "--relaunch")
    assert started.returncode == 0, started.stderr
    new = started.stdout.strip().splitlines()[-1]
    assert new == "resume-a2"
    prompt = json.loads((repo / ".lanes/state/lanes/resume-a2/lane.json").read_text())["prompt"]
    assert "The lead answered: 'Use the new schema?' → yes" in prompt
    assert cli(repo, "abandon", new).returncode == 0
