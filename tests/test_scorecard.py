"""The scorecard (issue 15, item 5): the three shipped sim tasks prepared, run, recorded and compared.

Everything runs offline: each task's repository is built from text in its task file and its agent is
the sim. `compare` must pass against its own baseline and fail once a task regresses (a run whose
sim script does the wrong work, so its pass check fails).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from lanes_tui.app.cli import LEAD_ONLY
from lanes_tui.engine.plans.scorecard import builtin_tasks, load_task
from lanes_tui.engine.plans.scorecard_compare import compare, latest, records_path
from tests.helpers import cli

TASKS = ("add-function", "doc-line", "fix-test")


def _run_task(repo: Path, work: Path, task: str, *extra: str) -> str:
    """Prepare the task, wait for its lane to settle; returns the lane id."""
    started = json.loads(cli(repo, "scorecard", "prepare", task, "--work-dir", str(work), "--json",
                             *extra, check=True).stdout)
    assert started["task"] == task and len(started["commit"]) == 40
    waited = cli(Path(started["repo"]), "wait", started["lane"], "--timeout", "90")
    assert waited.returncode == 0, waited.stderr
    return str(started["lane"])


def test_the_shipped_tasks_parse() -> None:
    assert tuple(builtin_tasks()) == TASKS
    for name in TASKS:
        task = load_task(name)
        assert task.files and task.check and task.prompt.strip()


def test_three_sim_tasks_pass_their_baseline_and_a_regression_fails(repo: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    for task in TASKS:
        lane = _run_task(repo, work, task)
        entry = json.loads(cli(repo, "scorecard", "record", lane, "--label", "base", "--json", check=True).stdout)
        assert entry["task"] == task and entry["label"] == "base"
        assert entry["finished"] and entry["passed"] and entry["first_try"], entry
        assert entry["tokens"] > 0 and entry["cost_usd"] > 0
        assert entry["interventions"] == {"answers": 0, "sends": 0, "relaunches": 0}
        assert entry["review_rounds"] == 0
    assert "baseline base:" in cli(repo, "scorecard", "baseline", "base", check=True).stdout
    same = cli(repo, "scorecard", "compare", "base", "--json")
    assert same.returncode == 0, same.stdout
    assert json.loads(same.stdout)["ok"] is True

    # A worse run: the agent writes the wrong function, so the pass check fails.
    lane = _run_task(repo, work, "add-function", "--prompt", 'append calc.py "def mul(a, b): return a + b"')
    worse = json.loads(cli(repo, "scorecard", "record", lane, "--label", "now", "--json", check=True).stdout)
    assert worse["finished"] and not worse["passed"] and not worse["first_try"]
    regressed = cli(repo, "scorecard", "compare", "base", "--json")
    assert regressed.returncode == 1
    report = json.loads(regressed.stdout)
    bad = [t for t in report["tasks"] if not t["ok"]]
    assert [t["task"] for t in bad] == ["add-function"]
    assert "fails now" in bad[0]["problems"][0]
    text = cli(repo, "scorecard", "compare", "base")
    assert text.returncode == 1 and "add-function: REGRESSED" in text.stdout
    # Only the records labelled `base` are still as good as the baseline.
    assert cli(repo, "scorecard", "compare", "base", "--label", "base").returncode == 0


def test_compare_fails_when_cost_grows_past_the_factor(repo: Path) -> None:
    rows = [{"label": "b", "task": "t", "passed": True, "cost_usd": 1.0, "wall_minutes": 1.0},
            {"label": "n", "task": "t", "passed": True, "cost_usd": 2.0, "wall_minutes": 1.0}]
    path = records_path(repo)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:1]))
    assert cli(repo, "scorecard", "baseline", "b").returncode == 0
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert latest(repo)["t"]["cost_usd"] == 2.0
    report = compare(repo, "b")
    assert not report["ok"] and "cost" in report["tasks"][0]["problems"][0]
    assert compare(repo, "b", factor=2.5)["ok"]


def test_scorecard_is_refused_inside_a_lane(repo: Path) -> None:
    assert "scorecard" in LEAD_ONLY
    refused = cli(repo, "scorecard", "tasks", env={**os.environ, "LANES_LANE": "some-lane-a1"})
    assert refused.returncode == 2 and "lead's command" in refused.stderr


def test_a_bad_task_is_one_line(repo: Path, tmp_path: Path) -> None:
    task = tmp_path / "bad.toml"
    task.write_text('name = "bad"\nprompt = "say hi"\ncheck = "true"\n[files]\n"a.txt" = "a"\n')
    proc = cli(repo, "scorecard", "prepare", str(task))
    assert proc.returncode == 2 and "argv" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert cli(repo, "scorecard", "prepare", "nosuch").returncode == 2
