"""The inbox with real lanes: restarts, answers with no dashboard, orphans and the next attempt."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from lanes_tui.engine.lanes.launcher import stop_lane
from lanes_tui.engine.live.engine import Engine
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
        assert [(q.question.id, q.state) for q in engine.questions()] == [(question["id"], "open")]
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
    asyncio.run(stop_lane(repo, lane))  # what `k` in the dashboard does
    wait_state(repo, lane)
    orphaned = json.loads(cli(repo, "inbox", "--json").stdout)[0]
    assert orphaned["state"] == "orphaned"
    offered = cli(repo, "answer", str(question["id"]), "yes")
    assert offered.returncode == 0 and "recover orphan-a1 --relaunch" in offered.stdout
    assert cli(repo, "abandon", lane).returncode == 0


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


def _answer_and_finish(repo: Path, lane: str, value: str | None) -> dict[str, object]:
    question = _open_question(repo)
    assert question["lane"] == lane and question["source"] == "ask-cli"
    if value is not None:
        assert cli(repo, "answer", str(question["id"]), value).returncode == 0
    wait_state(repo, lane)
    return next(q for q in json.loads(cli(repo, "inbox", "--json").stdout) if q["id"] == question["id"])


def test_sim_lane_takes_the_no_branch(repo: Path) -> None:
    write_config(repo)
    lane = run_lane(repo, "ask --yes-no --timeout 120 Deploy?\nif yes write yes.txt y\nif no write no.txt n\n",
                    lane_id="branch-no")
    final = _answer_and_finish(repo, lane, "no")
    worktree = Path(status(repo, lane)["worktree"])
    assert final["state"] == "delivered" and (worktree / "no.txt").exists() and not (worktree / "yes.txt").exists()


def test_sim_lane_gets_a_choice(repo: Path) -> None:
    write_config(repo)
    lane = run_lane(repo, "ask --choice postgres,sqlite --timeout 120 Which database?\n"
                          "if sqlite write db.txt sqlite\n", lane_id="choice")
    final = _answer_and_finish(repo, lane, "sqlite")
    assert final["kind"] == "choice" and final["state"] == "delivered"
    assert (Path(status(repo, lane)["worktree"]) / "db.txt").read_text() == "sqlite\n"


def test_sim_lane_gets_text(repo: Path) -> None:
    write_config(repo)
    lane = run_lane(repo, "ask --text --timeout 120 Name for the flag?\nif use_fast_path write flag.txt ok\n",
                    lane_id="text")
    final = _answer_and_finish(repo, lane, "use_fast_path")
    assert final["kind"] == "text" and final["state"] == "delivered"
    assert (Path(status(repo, lane)["worktree"]) / "flag.txt").exists()


def test_sim_lane_question_expires_to_its_default(repo: Path) -> None:
    write_config(repo)
    lane = run_lane(repo, "ask --yes-no --default no --timeout 1 Proceed?\nif no write defaulted.txt no\n",
                    lane_id="expire")
    wait_state(repo, lane)
    final = json.loads(cli(repo, "inbox", "--json").stdout)[0]
    assert final["state"] == "expired"
    assert (Path(status(repo, lane)["worktree"]) / "defaulted.txt").exists()
