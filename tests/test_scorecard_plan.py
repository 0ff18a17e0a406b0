"""Scorecard tasks whose work is a plan (`[[tickets]]` in the task file), run with real sim lanes.

`prepare` writes the plan file (named after the run) into the task's repository and launches it;
`record PLAN` scores every ticket: the pass check runs on a scratch clone with the accepted work and
each unaccepted ticket's changes laid over it, and a ticket that never started has not finished.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lanes_tui.engine.plans.supervisor import plan_supervisor_alive
from tests.helpers import cli, wait_for

CHECK = ('check = ["{python}", "-c", "import pathlib as p; '
         "assert p.Path('a.txt').read_text() == 'alpha\\\\n' and p.Path('b.txt').read_text() == 'beta\\\\n'\"]\n")


def _plan_task(folder: Path, name: str, b_text: str = "beta", blockers: str = "") -> Path:
    path = folder / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\n{CHECK}'
        '[files]\n"README.md" = "# two files\\n"\n\n'
        '[[tickets]]\nid = "a"\ntitle = "write a.txt"\nprompt = "write a.txt alpha\\nusage 100 10 0.01"\n'
        'scope = ["a.txt"]\n\n'
        f'[[tickets]]\nid = "b"\ntitle = "write b.txt"\nprompt = "write b.txt {b_text}\\nusage 200 20 0.02"\n'
        f'scope = ["b.txt"]\n{blockers}\n')
    return path


def _prepare(repo: Path, task: Path, work: Path) -> dict[str, Any]:
    started: dict[str, Any] = json.loads(cli(repo, "scorecard", "prepare", str(task), "--work-dir", str(work),
                                             "--json", check=True).stdout)
    return started


def _cancel(task_repo: Path, plan: str) -> None:
    """End the plan's supervisor (the autouse fixture fails the test on a process left running)."""
    cli(task_repo, "plan", "cancel", plan, check=True)
    assert not plan_supervisor_alive(task_repo, plan)


def test_a_plan_task_is_scored_as_one_run(repo: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    good = _prepare(repo, _plan_task(tmp_path, "two-files"), work)
    bad = _prepare(repo, _plan_task(tmp_path, "two-files", b_text="gamma"), work)
    assert (good["plan"], bad["plan"]) == ("two-files-r1", "two-files-r2") and good["lane"] is None
    assert good["id"] == "two-files-r1" and sorted(good["lanes"]) == ["a-a1", "b-a1"]
    for run in (good, bad):
        try:
            for lane in run["lanes"]:
                assert cli(Path(run["repo"]), "wait", lane, "--timeout", "90").returncode == 0
        finally:
            _cancel(Path(run["repo"]), run["plan"])

    entry = json.loads(cli(repo, "scorecard", "record", good["plan"], "--label", "p", "--json", check=True).stdout)
    assert entry["task"] == "two-files" and entry["lane"] == "two-files-r1" and entry["state"] == "plan"
    assert entry["finished"] and entry["passed"] and entry["first_try"], entry
    assert entry["lanes"] == ["a-a1", "b-a1"] and entry["tokens"] == 330 and entry["cost_usd"] == 0.03
    assert [(t["ticket"], t["lane"], t["attempts"]) for t in entry["tickets"]] == [("a", "a-a1", 1),
                                                                                   ("b", "b-a1", 1)]
    cli(repo, "scorecard", "baseline", "p", check=True)
    assert cli(repo, "scorecard", "compare", "p").returncode == 0

    worse = json.loads(cli(repo, "scorecard", "record", bad["plan"], "--label", "q", "--json", check=True).stdout)
    assert worse["finished"] and not worse["passed"] and worse["repo"] == bad["repo"]
    proc = cli(repo, "scorecard", "compare", "p", "--label", "q", "--json")
    assert proc.returncode == 1
    assert [(t["task"], t["regressed"]) for t in json.loads(proc.stdout)["tasks"]] == [("two-files", ["passed"])]


def _ticket(task_repo: Path, plan: str, ticket: str) -> dict[str, Any] | None:
    rows = json.loads(cli(task_repo, "plan", "status", plan, "--json", check=True).stdout)
    return next((r for r in rows if r["id"] == ticket), None)


def test_a_plan_with_a_blocker_counts_the_accepted_work(repo: Path, tmp_path: Path) -> None:
    """Ticket b waits for a to be accepted: before that the plan has not finished; after, the check
    runs on the task's repository with a merged and b's worktree laid over it."""
    run = _prepare(repo, _plan_task(tmp_path, "chain", blockers='blockers = ["a"]'), tmp_path / "work")
    task_repo, plan = Path(run["repo"]), run["plan"]
    try:
        assert run["lanes"] == ["a-a1"]
        assert cli(task_repo, "wait", "a-a1", "--timeout", "90").returncode == 0
        early = json.loads(cli(repo, "scorecard", "record", plan, "--json", check=True).stdout)
        assert not early["finished"] and not early["passed"]
        assert early["tickets"][1] == {"ticket": "b", "lane": None, "state": "not started", "result": None,
                                       "attempts": 0}
        cli(task_repo, "accept", "a-a1", check=True)
        wait_for(lambda: (_ticket(task_repo, plan, "b") or {}).get("lane") == "b-a1", timeout=60)
        assert cli(task_repo, "wait", "b-a1", "--timeout", "90").returncode == 0
    finally:
        _cancel(task_repo, plan)
    entry = json.loads(cli(repo, "scorecard", "record", plan, "--json", check=True).stdout)
    assert entry["finished"] and entry["passed"], entry
    assert [t["state"] for t in entry["tickets"]] == ["accepted", "ready"]
    assert entry["replaces"]["run"] == "chain-r1"  # the early record of the same run and label
