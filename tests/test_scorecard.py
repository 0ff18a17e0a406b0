"""The scorecard (issue 15, item 5): the three shipped sim tasks prepared, run, recorded and compared.

Everything runs offline: each task's repository is built from text in its task file and its agent is
the sim. `compare` must pass against its own baseline and fail once a task regresses (a run whose
sim script does the wrong work, so its pass check fails).
"""

from __future__ import annotations

import json
from pathlib import Path

from lanes_tui.engine.plans.scorecard import builtin_tasks, load_task
from lanes_tui.engine.plans.scorecard_compare import compare, latest, records_path
from tests.helpers import cli

TASKS = ("add-function", "doc-line", "fix-test")


def _run_task(repo: Path, work: Path, task: str, *extra: str) -> str:
    """Prepare the task, wait for its lane to settle; returns the lane id."""
    started = json.loads(cli(repo, "scorecard", "prepare", task, "--work-dir", str(work), "--json",
                             *extra, check=True).stdout)
    assert started["task"] == task and len(started["commit"]) == 40 and started["id"] == started["lane"]
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
    assert bad[0]["regressed"] == ["passed"] and "passed in the baseline, not now" in bad[0]["problems"]
    text = cli(repo, "scorecard", "compare", "base")
    assert text.returncode == 1 and "add-function: REGRESSED (passed)" in text.stdout
    # Only the records labelled `base` are still as good as the baseline.
    assert cli(repo, "scorecard", "compare", "base", "--label", "base").returncode == 0


def test_compare_fails_when_cost_or_tokens_grow_past_the_factor(repo: Path) -> None:
    rows = [{"label": "b", "task": "t", "passed": True, "cost_usd": 1.0, "wall_minutes": 1.0, "tokens": 1000},
            {"label": "n", "task": "t", "passed": True, "cost_usd": 2.0, "wall_minutes": 1.0, "tokens": 3000}]
    path = records_path(repo)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:1]))
    assert cli(repo, "scorecard", "baseline", "b").returncode == 0
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert latest(repo)["t"]["cost_usd"] == 2.0
    report = compare(repo, "b")
    assert not report["ok"] and report["tasks"][0]["regressed"] == ["tokens", "cost_usd"]
    assert compare(repo, "b", factor=2.5)["ok"]
    assert cli(repo, "scorecard", "compare", "b", "--factor", "0.5").returncode == 2


def _prepare(repo: Path, work: Path, task: str, *extra: str) -> dict[str, str]:
    started: dict[str, str] = json.loads(cli(repo, "scorecard", "prepare", task, "--work-dir", str(work), "--json",
                                             *extra, check=True).stdout)
    return started


def test_two_runs_of_one_task_have_their_own_repository_lane_and_record(repo: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    good = _prepare(repo, work, "add-function")
    bad = _prepare(repo, work, "add-function", "--prompt", 'append calc.py "def mul(a, b): return a - b"')
    other = _prepare(repo, work, "doc-line")
    assert (good["run"], bad["run"], other["run"]) == ("add-function-r1", "add-function-r2", "doc-line-r1")
    assert (good["lane"], bad["lane"]) == ("add-function-r1-a1", "add-function-r2-a1")
    assert len({good["repo"], bad["repo"], other["repo"]}) == 3
    for run in (good, bad, other):
        assert cli(Path(run["repo"]), "wait", run["lane"], "--timeout", "90").returncode == 0

    # Each id scores its own run: the second run's worktree holds the wrong mul.
    first = json.loads(cli(repo, "scorecard", "record", good["lane"], "--label", "x", "--json", check=True).stdout)
    assert first["passed"] and first["run"] == "add-function-r1" and first["repo"] == good["repo"]
    assert first["replaces"] is None
    second = cli(repo, "scorecard", "record", bad["lane"], "--label", "x", check=True).stdout
    assert "add-function: FAILED" in second
    assert "note: replaces the record of add-function under label x (lane add-function-r1-a1)" in second
    rows = [json.loads(line) for line in records_path(repo).read_text().splitlines()]
    assert [(r["lane"], r["passed"]) for r in rows] == [("add-function-r1-a1", True), ("add-function-r2-a1", False)]
    assert rows[1]["replaces"]["lane"] == "add-function-r1-a1"
    assert latest(repo, "x")["add-function"]["lane"] == "add-function-r2-a1"  # the newer record counts
    # A run can be named by its run id too.
    assert json.loads(cli(repo, "scorecard", "record", "doc-line-r1", "--json", check=True).stdout)["passed"]


def test_compare_fails_on_more_interventions_and_tokens(repo: Path, tmp_path: Path) -> None:
    """A run that passes but needed the lead (an answered question) and burnt more tokens regresses."""
    work = tmp_path / "work"
    base = _prepare(repo, work, "add-function")
    assert cli(Path(base["repo"]), "wait", base["lane"], "--timeout", "90").returncode == 0
    cli(repo, "scorecard", "record", base["lane"], "--label", "good", check=True)
    cli(repo, "scorecard", "baseline", "good", check=True)

    script = ('ask --yes-no --timeout 120 "Add mul next to add?"\n'
              'append calc.py "def mul(a, b): return a * b"\nusage 9000 300 0.02\n')
    needy = _prepare(repo, work, "add-function", "--prompt", script)
    task_repo = Path(needy["repo"])
    assert cli(task_repo, "wait", needy["lane"], "--until", "waiting", "--timeout", "90").returncode == 0
    (question,) = json.loads(cli(task_repo, "inbox", "--json", check=True).stdout)
    cli(task_repo, "answer", question["id"], "yes", check=True)
    assert cli(task_repo, "wait", needy["lane"], "--timeout", "90").returncode == 0
    now = json.loads(cli(repo, "scorecard", "record", needy["lane"], "--label", "now", "--json", check=True).stdout)
    assert now["passed"] and now["interventions"] == {"answers": 1, "sends": 0, "relaunches": 0}
    assert now["tokens"] == 9300

    proc = cli(repo, "scorecard", "compare", "good", "--label", "now", "--json")
    assert proc.returncode == 1, proc.stdout
    (task,) = json.loads(proc.stdout)["tasks"]
    assert task["task"] == "add-function" and not task["ok"]
    assert task["regressed"] == ["interventions", "tokens"], task["problems"]
    assert "answers 0 → 1" in task["problems"][0]
    assert cli(repo, "scorecard", "compare", "good", "--label", "good").returncode == 0


def test_a_lead_relaunch_is_an_intervention_and_its_last_attempt_the_outcome(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "fail-now"
    marker.write_text("x")  # the first attempt stops at once (exit 3); the relaunch, with it gone, works
    script = f'fail-if-exists {marker}\nappend calc.py "def mul(a, b): return a * b"\nusage 100 10 0.01\n'
    run = _prepare(repo, tmp_path / "work", "add-function", "--prompt", script)
    task_repo, lane = Path(run["repo"]), run["lane"]
    assert cli(task_repo, "wait", lane, "--timeout", "90").returncode == 0
    marker.unlink()
    again = json.loads(cli(task_repo, "recover", lane, "--relaunch", "--json", check=True).stdout)
    assert again["new_id"] == "add-function-r1-a2"
    assert cli(task_repo, "wait", again["new_id"], "--timeout", "90").returncode == 0
    entry = json.loads(cli(repo, "scorecard", "record", lane, "--json", check=True).stdout)
    assert entry["lanes"] == [lane, "add-function-r1-a2"] and entry["attempt"] == 2
    assert entry["passed"] and entry["finished"] and not entry["first_try"], entry
    assert entry["interventions"] == {"answers": 0, "sends": 0, "relaunches": 1}
