"""Best-of-N: the pure ranking, `run --best-of` refusals, and three real sim lanes ranked, one accepted."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.decisions.ranking import LaneFigures, rank_group, rank_reasons
from lanes_tui.engine.lanes.launcher import LaunchRequest, launch_group
from lanes_tui.engine.live.engine import Engine
from lanes_tui.engine.live.queries import group_members
from lanes_tui.engine.state.status import LaneStatus
from tests.conftest import git
from tests.helpers import cli, status, wait_state, write_config

PY = sys.executable


def lane(lane_id: str, *, state: str = "ready", result: str | None = "OK", review: str | None = None,
         cost: float | None = None, took: float | None = 10.0, created: float = 0.0) -> LaneStatus:
    tried = ({"provider": "sim", "duration_s": took},) if took is not None else ()
    return LaneStatus(id=lane_id, state=state, result=result, review=review, cost_usd=cost, providers_tried=tried,
                      group="bo-t-abcdef", created=created)


def order(statuses: list[LaneStatus], figures: dict[str, LaneFigures] | None = None) -> list[tuple[str, int]]:
    return [(r.status.id, r.rank) for r in rank_group(statuses, figures or {})]


def passed(lines: int | None, review: str | None = None) -> LaneFigures:
    return LaneFigures(gates_status="passed", review=review, lines_changed=lines)


# --- the pure ranking ------------------------------------------------------------------------------

def test_failed_gates_rank_last_whatever_their_other_figures() -> None:
    statuses = [lane("failed", state="rejected", cost=0.01, took=1.0), lane("big", cost=5.0),
                lane("exited", state="exited", result="LANE-FAILED"), lane("small", cost=5.0)]
    figures = {"failed": LaneFigures(gates_status="failed", lines_changed=1), "big": passed(400),
               "small": passed(3), "exited": LaneFigures(lines_changed=0)}
    ranked = order(statuses, figures)
    assert ranked[:2] == [("small", 1), ("big", 2)]
    assert {name for name, _ in ranked[2:]} == {"failed", "exited"}  # both below every passed lane


def test_review_verdict_comes_before_size_cost_and_time() -> None:
    statuses = [lane("blocking", state="rejected", review="BLOCKING"), lane("missing"), lane("clean", review="CLEAN")]
    figures = {"blocking": passed(1), "missing": passed(10, "MISSING"), "clean": passed(500)}
    assert order(statuses, figures) == [("clean", 1), ("missing", 2), ("blocking", 3)]


def test_lines_then_cost_then_time_break_the_rest() -> None:
    statuses = [lane("slow", cost=1.0, took=90.0), lane("dear", cost=2.0, took=5.0), lane("fast", cost=1.0, took=30.0),
                lane("long", cost=0.1, took=1.0)]
    figures = {"slow": passed(20), "dear": passed(20), "fast": passed(20), "long": passed(21)}
    assert order(statuses, figures) == [("fast", 1), ("slow", 2), ("dear", 3), ("long", 4)]


def test_equal_figures_share_a_rank_and_an_unknown_never_wins() -> None:
    statuses = [lane("b", created=2.0), lane("a", created=1.0), lane("unknown", created=0.0), lane("c", took=11.0)]
    figures = {"a": passed(5), "b": passed(5), "unknown": passed(None), "c": passed(5)}
    assert order(statuses, figures) == [("a", 1), ("b", 1), ("c", 3), ("unknown", 4)]
    reasons = rank_reasons(rank_group(statuses, figures))
    assert reasons[0].startswith("#1 a: gates passed, review MISSING, 5 lines, cost unknown, 10.0s")
    assert reasons[1].endswith("tied with a")
    assert reasons[2].endswith("below b on time") and reasons[3].endswith("below c on lines changed")


def test_a_group_with_any_lane_still_going_is_not_ranked() -> None:
    for busy in ("running", "queued", "waiting", "checking", "reviewing"):
        assert rank_group([lane("done"), lane("busy", state=busy)], {"done": passed(1)}) == []
    assert rank_group([], {}) == []
    # Accepted and abandoned lanes have ended too: a decided group stays ranked.
    assert order([lane("kept", state="accepted"), lane("dropped", state="abandoned")],
                 {"kept": passed(2), "dropped": passed(1)}) == [("dropped", 1), ("kept", 2)]


# --- `run --best-of` refusals ----------------------------------------------------------------------

def one_line_error(proc: Any, *needles: str) -> None:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode != 0 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("lanes-tui: ") and "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_best_of_refusals_are_one_line_and_start_nothing(repo: Path) -> None:
    write_config(repo, extra='[providers.simB]\nargv = ["{python}", "-m", "lanes_tui.engine.sim"]\n')
    run = ("run", "--prompt", "say hi", "--id", "refused")
    one_line_error(cli(repo, *run, "--best-of", "1"), "--best-of 1 is out of range", "2 to 8")
    one_line_error(cli(repo, *run, "--best-of", "9"), "--best-of 9 is out of range")
    one_line_error(cli(repo, *run, "--best-of", "2", "--providers", "sim,simBB"),
                   "unknown provider 'simBB' in --providers", "did you mean 'simB'?")
    one_line_error(cli(repo, *run, "--best-of", "2", "--providers", "sim,,simB"), "empty name")
    one_line_error(cli(repo, *run, "--best-of", "2", "--lane", "sim"), "--best-of and --lane do not go together")
    one_line_error(cli(repo, *run, "--providers", "sim"), "--providers goes with --best-of")
    one_line_error(cli(repo, *run, "--best-of", "2", "--id", "x" * 57), "too long for --best-of")
    assert status(repo) == []
    assert git(repo, "worktree", "list").count("\n") == 0


def test_providers_round_robin_from_the_chain(repo: Path) -> None:
    """Without --providers the task type's chain is dealt out in turn, each in front of its own chain."""
    write_config(repo, chains='backend = ["sim", "simB"]',
                 extra='[providers.simB]\nargv = ["{python}", "-m", "lanes_tui.engine.sim"]\n')
    launched = launch_group(repo, load_config(repo), LaunchRequest(prompt="say hi", slug="deal"), 3, detach=False)
    assert re.fullmatch(r"bo-deal-[0-9a-f]{6}", launched.group)
    assert [r.id for r in launched.lanes] == ["deal-b1-a1", "deal-b2-a1", "deal-b3-a1"]
    assert [r.chain for r in launched.lanes] == [["sim", "simB"], ["simB", "sim"], ["sim", "simB"]]
    assert {r.group for r in launched.lanes} == {launched.group}
    taken = cli(repo, "run", "--prompt", "say hi", "--id", "deal", "--best-of", "2")
    one_line_error(taken, "lane deal-b1-a1 already exists")
    assert len(status(repo)) == 3  # the refused group started nothing
    for record in launched.lanes:
        assert cli(repo, "abandon", record.id).returncode == 0


# --- the acceptance: three sim lanes, one fails its gate --------------------------------------------

def sim_provider(name: str, extra_steps: str = "") -> str:
    """A sim provider that runs the task, then steps of its own: the lanes differ by their provider."""
    if not extra_steps:
        return f'[providers.{name}]\nargv = ["{{python}}", "-m", "lanes_tui.engine.sim"]\n'
    arg = json.dumps("--prompt={prompt}\n" + extra_steps)
    return f'[providers.{name}]\nargv = ["{{python}}", "-m", "lanes_tui.engine.sim", {arg}]\nprompt = "arg"\n'


def test_best_of_three_ranks_the_failing_lane_last_and_accepting_the_winner_leaves_one_commit(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "programme")  # main is protected by default
    gate = json.dumps(f"{PY} -c \"import os,sys; sys.exit(1 if os.path.exists('bad.txt') else 0)\"")
    providers = (sim_provider("simA") + sim_provider("simB", "write notes.txt more work\nappend notes.txt and more")
                 + sim_provider("simC", "write bad.txt breaks the gate"))
    write_config(repo, chains='backend = ["simA"]', gates=f"commands = [{gate}]", extra=providers)
    base = git(repo, "rev-parse", "programme")

    started = cli(repo, "run", "--prompt", "write answer.txt forty-two\n", "--id", "pick", "--best-of", "3",
                  "--providers", "simA,simB,simC", check=True)
    match = re.fullmatch(r"best-of group (bo-pick-[0-9a-f]{6}): (.*)", started.stdout.strip().splitlines()[-1])
    assert match, started.stdout
    group, lanes = match.group(1), match.group(2).split()
    assert lanes == ["pick-b1-a1", "pick-b2-a1", "pick-b3-a1"]
    for lane_id in lanes:
        wait_state(repo, lane_id)

    rows = {row["id"]: row for row in status(repo)}
    assert [rows[i]["state"] for i in lanes] == ["ready", "ready", "rejected"]
    assert [rows[i]["chain"][0] for i in lanes] == ["simA", "simB", "simC"]
    assert {rows[i]["group"] for i in lanes} == {group}
    assert [rows[i]["rank"] for i in lanes] == [1, 2, 3]  # one line beats three; the failed gate is last
    assert status(repo, "pick-b3-a1")["rank"] == 3  # ranked over the whole group when one lane is asked for
    table = cli(repo, "status", check=True).stdout
    assert re.search(r"pick-b1-a1 .* g:bo-pick-[0-9a-f]{6} #1", table), table
    assert [s.id for s in group_members(repo, group)] == lanes

    async def dashboard_ranks() -> list[int | None]:
        async with Engine(repo) as engine:
            return [s.rank for s in engine.lanes()]

    assert asyncio.run(dashboard_ranks()) == [1, 2, 3]

    accepted = cli(repo, "accept", "pick-b1-a1")
    assert accepted.returncode == 0, accepted.stderr
    out = accepted.stdout
    assert f"best-of group {group}: 2 other lanes still open" in out
    for other in lanes[1:]:
        assert rows[other]["worktree"] in out and f"lanes-tui abandon {other}\n" in out
    assert status(repo, "pick-b2-a1")["state"] == "ready"  # the CLI never abandons by itself
    for other in lanes[1:]:
        assert cli(repo, "abandon", other).returncode == 0

    assert git(repo, "rev-list", "--count", f"{base}..programme") == "1"
    assert (repo / "answer.txt").read_text() == "forty-two\n" and not (repo / "bad.txt").exists()
    assert git(repo, "worktree", "list").count("\n") == 0  # the main checkout alone
    assert git(repo, "branch", "--list", "lane/*") == ""
    rows = {row["id"]: row for row in status(repo)}
    assert [(rows[i]["state"], rows[i]["rank"]) for i in lanes] == [("accepted", 1), ("abandoned", 2),
                                                                     ("abandoned", 3)]

