"""`doctor` and the `[runner]` table (docs/ray.md): where lanes run, and a Ray cluster's own checks.

None of this needs Ray: the local lines, a Ray config with Ray made unimportable in a real process
(the one-line fix and the exit code), and a stand-in Ray runner registered where the doctor finds
its runner (`make_runner`'s `RUNNER_FACTORIES`) for the check lines and the `--json` shape.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from tests.conftest import git
from tests.helpers import cli, write_config

FIX = "pip install -e '.[ray]' in lanes-tui's checkout"


def ray_config(repo: Path, extra: str = "") -> Path:
    """A Ray runner over a bare shared remote, the way docs/ray.md sets one up."""
    remote = repo.parent / "shared.git"
    git(repo.parent, "init", "-q", "--bare", str(remote))
    return write_config(repo, extra=f'[runner]\nkind = "ray"\nremote = "{remote}"\n'
                                    f'lane_slots = 3\nlabels = {{ pool = "big" }}\ncheckpoint_s = 60\n{extra}')


def runner_problems(report: dict[str, object]) -> list[str]:
    problems = report["problems"]
    assert isinstance(problems, list)
    return [p for p in problems if str(p).startswith("runner:")]


def test_local_runner_says_lanes_run_here_and_loads_no_ray(repo: Path, tmp_path: Path) -> None:
    write_config(repo)
    modules = tmp_path / "modules.jsonl"
    text = cli(repo, "doctor", env={**os.environ, "LANESTUI_DEBUG_MODULES": str(modules)})
    assert "Traceback" not in text.stderr, text.stderr
    lines = [line for line in text.stdout.splitlines() if line.startswith("runner")]
    assert lines == ["runner: local — lanes run on this machine, each under its own supervisor "
                     '(a Ray cluster: [runner] kind = "ray", docs/ray.md)']
    report = json.loads(cli(repo, "doctor", "--json").stdout)
    assert report["runner"] == {"kind": "local", "address": "auto", "remote": "", "lane_slots": 2, "labels": {},
                                "checkpoint_s": 300.0, "checks": [], "problem": None}
    assert runner_problems(report) == []
    loaded = [json.loads(line)["modules"] for line in modules.read_text().splitlines()]
    assert loaded and all(m != "ray" and not m.startswith("ray.") for mods in loaded for m in mods)
    assert all("lanes_tui.engine.remote.ray_runner" not in mods for mods in loaded)


def _doctor_without_ray(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`lanes-tui doctor ARGS` in a process where `import ray` fails, as on a machine without the extra."""
    program = ("import sys; sys.modules['ray'] = None\n"
               "from lanes_tui.app.cli.main import main\n"
               "raise SystemExit(main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", program, "doctor", *args], cwd=repo, capture_output=True,
                          text=True, timeout=120, check=False)


def test_ray_config_without_ray_gives_the_one_line_fix(repo: Path) -> None:
    ray_config(repo)
    text = _doctor_without_ray(repo)
    assert text.returncode == 1, text.stdout + text.stderr
    assert "Traceback" not in text.stderr, text.stderr
    remote = repo.parent / "shared.git"
    assert (f"runner: ray at auto, shared remote {remote}, 3 lane slot(s) a node, checkpoint every 60s, "
            "nodes labelled pool=big") in text.stdout.splitlines()
    fixes = [line for line in text.stdout.splitlines() if FIX in line]
    assert len(fixes) == 1, text.stdout
    assert fixes[0].startswith("PROBLEM: runner: ") and "Ray" in fixes[0] and "not installed" in fixes[0]

    shaped = _doctor_without_ray(repo, "--json")
    assert shaped.returncode == 1, shaped.stderr
    report = json.loads(shaped.stdout)
    assert report["runner"]["kind"] == "ray" and report["runner"]["checks"] == []
    assert FIX in report["runner"]["problem"]
    assert runner_problems(report) == [f"runner: {report['runner']['problem']}"]


class FakeRayRunner:
    """Stands in for the Ray runner where `make_runner` finds it: only `doctor` is asked for."""

    kind = "ray"
    checks: list[tuple[str, bool, str]] = [
        ("cluster reachable", True, "auto: 3 nodes alive"),
        ("versions match", True, "ray 2.60.0, python 3.11 on every node"),
        ("lanes-tui on nodes", True, "0.1.0 on every node"),
        ("lane_slot resources", False, "no node has the lane_slot resource — ray start --resources "
                                       "'{\"lane_slot\": 2}'"),
        ("remote reachable", True, "node-2 fetched /srv/shared.git"),
    ]
    seen: list[tuple[Path, str]] = []

    def __init__(self, repo: Path, config: object) -> None:
        self.seen.append((repo, getattr(getattr(config, "runner", None), "remote", "")))

    def doctor(self) -> list[tuple[str, bool, str]]:
        return list(self.checks)


class BrokenRayRunner(FakeRayRunner):
    def doctor(self) -> list[tuple[str, bool, str]]:
        raise ConnectionError("could not connect to the cluster at auto")


@pytest.fixture()
def fake_ray(monkeypatch: pytest.MonkeyPatch, repo: Path) -> type[FakeRayRunner]:
    from lanes_tui.engine.decisions.runners import RUNNER_FACTORIES

    FakeRayRunner.seen = []
    monkeypatch.setitem(RUNNER_FACTORIES, "ray", FakeRayRunner)
    monkeypatch.chdir(repo)
    ray_config(repo)
    return FakeRayRunner


def test_ray_checks_print_one_line_each_and_fail_the_doctor(fake_ray: type[FakeRayRunner], repo: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from lanes_tui.app.cli.main import main

    assert main(["doctor"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert fake_ray.seen and fake_ray.seen[0][1] == str(repo.parent / "shared.git")
    checks = [line for line in out if line.startswith("runner ")]
    assert checks == [
        "runner cluster reachable            ok      auto: 3 nodes alive",
        "runner versions match               ok      ray 2.60.0, python 3.11 on every node",
        "runner lanes-tui on nodes           ok      0.1.0 on every node",
        "runner lane_slot resources          FAILED  no node has the lane_slot resource — ray start --resources "
        "'{\"lane_slot\": 2}'",
        "runner remote reachable             ok      node-2 fetched /srv/shared.git",
    ]
    assert ("PROBLEM: runner: lane_slot resources: no node has the lane_slot resource — ray start --resources "
            "'{\"lane_slot\": 2}'") in out


def test_ray_checks_in_json(fake_ray: type[FakeRayRunner], repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lanes_tui.app.cli.main import main

    code = main(["doctor", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    runner = report["runner"]
    assert {k: v for k, v in runner.items() if k != "checks"} == {
        "kind": "ray", "address": "auto", "remote": str(repo.parent / "shared.git"), "lane_slots": 3,
        "labels": {"pool": "big"}, "checkpoint_s": 60.0, "problem": None}
    assert runner["checks"] == [{"check": name, "ok": ok, "detail": detail} for name, ok, detail in fake_ray.checks]
    assert runner_problems(report) == [f"runner: lane_slot resources: {fake_ray.checks[3][2]}"]
    # The agents run on the nodes: a provider CLI missing on the lead's machine is not a problem then.
    assert [p for p in report["problems"] if p.startswith("chain provider")] == []
    assert {p["name"] for p in report["providers"]} >= {"claude", "codex"}  # still shown, as this machine's


def test_all_checks_ok_add_no_problem(fake_ray: type[FakeRayRunner], monkeypatch: pytest.MonkeyPatch,
                                      repo: Path) -> None:
    from lanes_tui.app.cli.config import doctor_report

    monkeypatch.setattr(fake_ray, "checks", [(name, True, detail) for name, _, detail in fake_ray.checks])
    report = doctor_report(repo)
    assert [c["ok"] for c in report["runner"]["checks"]] == [True] * 5
    assert runner_problems(report) == []


def test_a_cluster_that_raises_is_one_problem_not_a_traceback(fake_ray: type[FakeRayRunner], repo: Path,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from lanes_tui.app.cli.main import main
    from lanes_tui.engine.decisions.runners import RUNNER_FACTORIES

    monkeypatch.setitem(RUNNER_FACTORIES, "ray", BrokenRayRunner)
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert [line for line in out if line.startswith("PROBLEM: runner")] == [
        "PROBLEM: runner: the cluster checks stopped: ConnectionError: could not connect to the cluster at auto"]


def _record(repo: Path, lane_id: str, worktree: str, runner: str) -> None:
    record = LaneRecord(id=lane_id, slug=lane_id.rsplit("-a", 1)[0], attempt=1, task_type="backend", prompt="p",
                        chain=["sim"], repo=str(repo), worktree=worktree, branch=f"lane/{lane_id}", base_sha="0" * 40,
                        target_branch="main", state="exited", state_reason="done", runner=runner,
                        node="node-2 (abc123)" if runner == "ray" else None)
    StatePaths(repo).ensure()
    LaneStore(StatePaths(repo)).create(record)


def test_a_ray_lanes_worktree_is_on_its_node_not_missing_here(fake_ray: type[FakeRayRunner], repo: Path) -> None:
    from lanes_tui.app.cli.config import doctor_report

    _record(repo, "cloud-a1", "/home/node/.cache/lanes-tui/ray/x/worktrees/cloud-a1", "ray")
    _record(repo, "here-a1", str(repo.parent / "worktrees" / "here-a1"), "local")
    missing = [p for p in doctor_report(repo)["problems"] if "is missing" in p]
    assert missing == [f"worktree of here-a1 is missing: {repo.parent / 'worktrees' / 'here-a1'}"]
