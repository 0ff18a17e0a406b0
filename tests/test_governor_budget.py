"""Spend caps and quota parking through the real supervisor: the lane pauses and asks, or parks and wakes.

The spend comes from the sim printing aider's real `Tokens: … Cost: …` line (the plain channel feeds
the meters from it); the lead answers with the real `lanes-tui answer`. The quota provider is a
small script speaking Codex's quota wording ("You've hit your usage limit … try again in 3 hours"):
no test waits for a reset time, the lead wakes the parked lane with `lanes-tui recover`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from tests.helpers import cli, run_lane, status, wait_for, wait_state, write_config

COST_LINE = "say Tokens: 10k sent, 500 received. Cost: $3.00 message, $3.00 session."
# The agent must still run when the guard sees the cost: the output pump of a lane nobody watches may
# rest up to `cadence.UNWATCHED_REST_S` (2 s) before it reads the line, and a sample follows within
# `sample_s`.
SPEND_SCRIPT = f"{COST_LINE}\nsleep 5\nsay after the cap\nwrite spent.txt work\nexit 0\n"

QUOTA = ("[providers.quota]\n"
         "argv = [\"{python}\", \"-c\", \"import pathlib, sys; p = pathlib.Path('ran-once'); "
         "pathlib.Path('prompt-' + str(len(list(pathlib.Path('.').glob('prompt-*'))) + 1)).write_text(sys.argv[-1]); "
         "done = p.exists(); p.write_text('x'); "
         "print('finished the work' if done else \\\"You've hit your usage limit. Try again in 3 hours.\\\"); "
         "sys.exit(0 if done else 1)\"]\n"
         "prompt = \"arg\"\nbudget_patterns = [\"hit your usage limit\"]\n")


def _open_question(repo: Path, lane: str) -> dict[str, Any]:
    rows = json.loads(cli(repo, "inbox", "--json", check=True).stdout)
    found = [q for q in rows if q.get("lane") == lane and q.get("state") in ("open", "delivered")]
    return found[0] if found else {}


def test_spend_cap_pauses_asks_and_no_ends_out_of_budget(repo: Path) -> None:
    write_config(repo, sample_s=0.1)
    lane = run_lane(repo, SPEND_SCRIPT, lane_id="spender", extra=("--max-cost", "2"))
    question = wait_for(lambda: _open_question(repo, lane), timeout=30)
    assert "reached $3.00 of $2.00" in question["title"] and "continue with $2.00 more" in question["title"]
    assert status(repo, lane)["state"] == "waiting"
    cli(repo, "answer", question["id"], "no", check=True)
    wait_state(repo, lane)
    row = status(repo, lane)
    assert row["result"] == "OUT-OF-BUDGET", row
    reason = row["state_reason"]
    assert "spend cap reached: $3.00 of $2.00" in reason and "the lead chose to stop" in reason
    record = LaneStore(StatePaths(repo)).read(lane)
    assert [a.provider for a in record.providers_tried] == ["sim"]  # no fallback after the lead's no
    assert "after the cap" not in (StatePaths(repo).lane(lane).output.read_text())


def test_spend_cap_yes_raises_the_cap_and_the_lane_goes_on(repo: Path) -> None:
    write_config(repo, sample_s=0.1)
    lane = run_lane(repo, SPEND_SCRIPT, lane_id="spender2", extra=("--max-cost", "2"))
    question = wait_for(lambda: _open_question(repo, lane), timeout=30)
    cli(repo, "answer", question["id"], "yes", check=True)
    wait_state(repo, lane)
    row = status(repo, lane)
    assert row["result"] == "OK", row
    assert "after the cap" in StatePaths(repo).lane(lane).output.read_text()
    events = StatePaths(repo).lane(lane).events.read_text()
    assert '"spend-cap-raised"' in events and '"max_cost_usd":4.0' in events


def test_quota_with_a_reset_time_parks_the_lane_and_recover_wakes_it(repo: Path) -> None:
    write_config(repo, sample_s=0.1, chains='backend = ["quota"]', extra=QUOTA)
    lane = run_lane(repo, "finish the task", lane_id="parker")
    wait_state(repo, lane, "waiting")
    row = status(repo, lane)
    assert row["state_reason"].startswith("parked until ") and "recover" in row["state_reason"]
    woke = cli(repo, "recover", lane, check=True)
    assert "was parked; its provider starts again now" in woke.stdout
    wait_state(repo, lane)
    row = status(repo, lane)
    assert row["result"] == "OK", row
    record = LaneStore(StatePaths(repo)).read(lane)
    assert [a.provider for a in record.providers_tried] == ["quota", "quota"]
    second = (Path(record.worktree) / "prompt-2").read_text()
    assert "the provider's quota ran out" in second and "same worktree" in second
    assert "hit your usage limit" in second


def test_quota_without_a_reset_time_ends_out_of_budget(repo: Path) -> None:
    quota = QUOTA.replace(" Try again in 3 hours.", "")
    write_config(repo, sample_s=0.1, chains='backend = ["quota"]', extra=quota)
    lane = run_lane(repo, "finish the task", lane_id="broke")
    wait_state(repo, lane)
    assert status(repo, lane)["result"] == "OUT-OF-BUDGET"


def test_recover_on_a_lane_that_is_not_parked_still_inspects(repo: Path) -> None:
    write_config(repo, sample_s=0.1)
    lane = run_lane(repo, "exit 3", lane_id="plain")
    wait_state(repo, lane)
    out = cli(repo, "recover", lane, check=True).stdout
    assert "was parked" not in out and "relaunch:" in out
