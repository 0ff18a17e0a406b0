"""Gates that fit the project (docs/gates.md): its venv, detected commands, named steps with their own
limits, output kept and shown, and shared virtualenvs a lane must not change. Real repositories, real
sim lanes, real gate processes."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from lanes_tui.engine.config.gates import GatesConfig, GateStep
from lanes_tui.engine.decisions.gates.log import gate_report
from lanes_tui.engine.decisions.gates.plan import detect_commands, plan_gates, step_name, timeout_variable
from lanes_tui.engine.decisions.gates.run import run_gates
from tests.conftest import git
from tests.helpers import SUITE_VENV, cli, run_lane, status, wait_state, write_config


def _site(venv: Path) -> Path:
    return venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"


def _make_venv(where: Path) -> Path:
    """A real venv without pip (fast), holding a module only it has."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    (_site(where) / "only_here.py").write_text("VALUE = 42\n")
    return where


def test_gate_runs_in_the_projects_venv(repo: Path) -> None:
    venv = _make_venv(repo / ".venv")
    (repo / ".gitignore").write_text(".venv/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore the venv")
    gate = "{python} -c 'import os, only_here; assert os.environ[\"VIRTUAL_ENV\"]; print(only_here.VALUE)'"
    write_config(repo, gates=f"commands = [{json.dumps(gate)}]", gates_venv=None)  # the repository's .venv
    lane = run_lane(repo, "write done.txt yes", lane_id="venv")
    wait_state(repo, lane)
    assert status(repo, lane)["state"] == "ready", status(repo, lane)
    packet = json.loads(cli(repo, "check", lane, "--json").stdout)
    assert packet["gates_status"] == "passed"
    report = cli(repo, "check", lane, "--log")
    assert report.returncode == 0 and str(venv / "bin" / "python") in report.stdout
    # the lane's output.log carries the progress lines
    logs = list(Path(os.environ["XDG_DATA_HOME"]).rglob("output.log")) + list((repo / ".lanes").rglob("output.log"))
    text = "".join(p.read_text(errors="replace") for p in logs)
    assert "[gate] python: start (limit 30m)" in text and "[gate] python: done in" in text
    doctor = cli(repo, "doctor").stdout
    assert f"gates: venv: {venv}" in doctor


def test_detection_picks_pytest_npm_and_the_rest(tmp_path: Path) -> None:
    py = tmp_path / "py"
    py.mkdir()
    (py / "pyproject.toml").write_text("[project]\nname = 'x'\n\n[tool.pytest.ini_options]\naddopts = '-q'\n")
    assert detect_commands(py) == ["{python} -m pytest -q"]
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "setup.py").write_text("")
    assert detect_commands(plain) == []  # no test files: unittest would run nothing
    (plain / "test_plain.py").write_text("import unittest\n\nclass T(unittest.TestCase):\n    def test_x(self): pass\n")
    assert detect_commands(plain) == ["{python} -m unittest -q"]
    node = tmp_path / "node"
    node.mkdir()
    (node / "package.json").write_text(json.dumps({"scripts": {"test": "jest"}}))
    assert detect_commands(node) == ["npm test"]
    (node / "package.json").write_text(json.dumps({"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}))
    assert detect_commands(node) == []
    other = tmp_path / "other"
    other.mkdir()
    (other / "go.mod").write_text("module x\n")
    (other / "Cargo.toml").write_text("[package]\n")
    assert detect_commands(other) == ["go test ./...", "cargo test"]
    make = tmp_path / "make"
    make.mkdir()
    (make / "Makefile").write_text("all:\n\ttrue\ntest: all\n\ttrue\n")
    assert detect_commands(make) == ["make test"]
    # No `commands` key: detected; `commands = []`: no gates at all.
    steps, _ = plan_gates(py, py, GatesConfig())
    assert [s.name for s in steps] == ["pytest"] and "faulthandler_timeout=1770" in steps[0].shown
    assert plan_gates(py, py, GatesConfig(commands=()))[0] == []


def test_named_steps_timeouts_env_and_warnings(tmp_path: Path) -> None:
    gates = GatesConfig(commands=("ruff check .",),
                        steps=(GateStep("unit-tests", "{python} -m pytest", 60, ("API_URL",)),
                               GateStep("lint", "true", None, ("MISSING_ONE",))), venv=SUITE_VENV)
    environ = {"API_URL": "http://x", "SECRET_TOKEN": "no", "LANES_GATE_TIMEOUT_UNIT_TESTS": "90"}
    steps, warnings = plan_gates(tmp_path, tmp_path, gates, environ)
    assert [s.name for s in steps] == ["ruff", "unit-tests", "lint"]
    assert steps[1].timeout_s == 90 and steps[1].argv[-2:] == ("-o", "faulthandler_timeout=60")
    assert steps[1].env == {"API_URL": "http://x"} and steps[2].env == {}
    assert steps[2].timeout_s == 1800
    assert any("MISSING_ONE" in w for w in warnings) and not any("SECRET" in w for w in warnings)
    assert timeout_variable("unit-tests") == "LANES_GATE_TIMEOUT_UNIT_TESTS"
    assert step_name("{python} -m unittest -q") == "unittest" and step_name("npm test") == "npm"


def test_config_reads_gate_steps(repo: Path) -> None:
    from lanes_tui.engine import load_config
    write_config(repo, gates='venv = "envs/main"\nshared_venvs = ["/opt/shared"]\n\n[gates.steps.unit]'
                             '\ncommand = "{python} -m pytest -q"\ntimeout_s = 120\nenv = ["API_URL"]\n')
    gates = load_config(repo).gates
    assert gates.commands is None and not gates.detect
    assert gates.steps == (GateStep("unit", "{python} -m pytest -q", 120, ("API_URL",)),)
    assert gates.venv == "envs/main" and gates.shared_venvs == ("/opt/shared",)


def test_hanging_pytest_step_times_out_with_a_stack(tmp_path: Path) -> None:
    project = tmp_path / "hang"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_hang.py").write_text("import time\n\ndef test_hangs():\n    time.sleep(120)\n")
    gates = GatesConfig(steps=(GateStep("pytest", "{python} -m pytest -q -p no:cacheprovider tests", 8),),
                        venv=SUITE_VENV)
    steps, _ = plan_gates(project, project, gates)
    lane_dir = tmp_path / "lane"
    lane_dir.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    results = asyncio.run(run_gates(project, gates, env=env, holder={"lane": "hang"}, slot_dir=tmp_path / "slots",
                                    load_limit=0, steps=steps, log_dir=lane_dir))
    assert results[0].status == "timeout" and results[0].name == "pytest"
    log = Path(results[0].log)
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    text = log.read_text()
    assert "Timeout (0:00:04)!" in text and 'test_hang.py", line 4 in test_hangs' in text  # faulthandler's stack
    report = gate_report({"gates": [r.to_json() for r in results]})
    assert report.failing == "pytest" and "test_hang.py" in report.output


def _pip_lane(repo: Path, tmp_path: Path, *extra: str) -> tuple[str, Path, Path]:
    """A lane whose agent installs `foo` into a shared venv outside its worktree: (lane, venv, its site)."""
    shared = tmp_path / "shared-venv"
    site = _site(shared)
    (site / "requests-2.0.dist-info").mkdir(parents=True)
    script = (f"import os; os.makedirs({str(site / 'foo-1.0.dist-info')!r}); "
              "open('work.txt', 'w').write('x')")
    provider = f'[providers.pipper]\nargv = ["{{python}}", "-c", {json.dumps(script)}]\nprompt = "arg"\n'
    write_config(repo, chains='backend = ["pipper"]', extra=provider,
                 gates=f'commands = []\nshared_venvs = [{json.dumps(str(shared))}]')
    lane = run_lane(repo, "install foo", lane_id="pip", extra=extra)
    wait_state(repo, lane)
    return lane, shared, site


def test_a_confined_lane_cannot_install_into_a_shared_venv(repo: Path, tmp_path: Path) -> None:
    """Under the kernel's confinement (issue 28) the shared venv is not writable at all: the install fails."""
    lane, _, site = _pip_lane(repo, tmp_path)
    assert not (site / "foo-1.0.dist-info").exists()
    assert status(repo, lane)["result"] == "LANE-FAILED"  # its makedirs was refused: PermissionError


def test_lane_that_installs_into_a_shared_venv_is_rejected(repo: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the kernel's confinement (an uncontained lane the lead allowed), the change is still seen."""
    monkeypatch.setenv("LANES_TUI_LANDLOCK", "off")
    lane, shared, _ = _pip_lane(repo, tmp_path, "--allow-uncontained")
    assert status(repo, lane)["state"] == "rejected", status(repo, lane)
    reason = status(repo, lane)["state_reason"]
    assert f"the agent changed the shared environment {shared}" in reason and "added foo-1.0" in reason


def test_demo_broken_gates_lane_shows_its_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The `--demo` lane that breaks a test: rejected, the why column names the step with its command as
    it ran, and the Gates tab's report holds the failing test's output."""
    from lanes_tui.engine import load_config
    from lanes_tui.engine.decisions.check import lane_gate_report
    from lanes_tui.engine.sim.demo import build_demo, start_demo_lanes
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "xdg-run"))
    demo = build_demo(tmp_path)
    (lane,) = start_demo_lanes(demo, ["broken-gates"])
    wait_state(demo.repo, lane, timeout=120)
    row = status(demo.repo, lane)
    assert row["state"] == "rejected", row
    assert row["state_reason"].startswith("gate failed: unittest (") and "{python}" not in row["state_reason"]
    report = lane_gate_report(demo.repo, load_config(demo.repo), lane)
    assert report.failing == "unittest" and "FAILED" in report.output
