"""Zero tests is not a pass (issue 30, item 1; docs/gates.md): a gate step that ran no tests fails unless
it may (`allow_no_tests`), pytest is detected from what the project says about itself, and `{python}` is
the project's interpreter, never lanes-tui's own. Real repositories, real interpreters, real gate
processes; the other runners' recognisers are checked on their real output texts."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lanes_tui.engine.config.gates import GatesConfig, GateStep
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.gates.detect import pytest_mark
from lanes_tui.engine.decisions.gates.no_tests import cargo_test, go_test, jest, mocha, recognise, runner_of, unittest
from lanes_tui.engine.decisions.gates.plan import detect_commands, plan_gates, runner_problems
from lanes_tui.engine.decisions.gates.python import path_python, project_python
from lanes_tui.engine.decisions.gates.run import GateResult, run_gates
from tests.conftest import git
from tests.helpers import cli, status, wait_state, write_config

NOTE = "a test suite that runs nothing is not a pass: add tests, fix the collection, or set allow_no_tests = true"


def _site(venv: Path) -> Path:
    return venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"


def _venv(where: Path, *, with_pytest: bool) -> Path:
    """A real venv without pip (fast). `with_pytest`: it sees the suite's site-packages through a .pth
    file, so it imports pytest while being an interpreter of its own (its own sys.prefix)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    if with_pytest:
        (_site(where) / "suite.pth").write_text(str(Path(pytest.__file__).parent.parent) + "\n")
    return where


@pytest.fixture(scope="module")
def interpreters(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two project interpreters that are not lanes-tui's: one with pytest, one without (bin folders)."""
    root = tmp_path_factory.mktemp("interpreters")
    return {"with": _venv(root / "with-pytest", with_pytest=True) / "bin",
            "without": _venv(root / "without-pytest", with_pytest=False) / "bin"}


def _lead_env(first: Path) -> dict[str, str]:
    """The lead's environment with `first` (a folder holding `python3`) first on PATH."""
    return {**os.environ, "PATH": f"{first}{os.pathsep}{os.environ['PATH']}"}


def _gates(project: Path, tmp_path: Path, gates: GatesConfig, environ: dict[str, str]) -> list[GateResult]:
    """The gates as a check runs them: planned for the project (its interpreter), run for real."""
    steps, _ = plan_gates(project, project, gates, environ)
    env = {"PATH": environ["PATH"], "HOME": str(tmp_path)}
    return asyncio.run(run_gates(project, gates, env=env, holder={"lane": "zero"}, slot_dir=tmp_path / "slots",
                                 load_limit=0, steps=steps))


def _project(where: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_text(text)
    return where


# --- running gates: zero tests fails, unless allowed ---------------------------------------------------

def test_pytest_exit_5_fails_with_no_tests_ran(tmp_path: Path, interpreters: dict[str, Path]) -> None:
    project = _project(tmp_path / "p", {"conftest.py": "", "tests/helpers.py": "X = 1\n"})
    results = _gates(project, tmp_path, GatesConfig(), _lead_env(interpreters["with"]))
    (result,) = results
    assert result.name == "pytest" and result.exit_code == 5 and result.status == "failed"
    assert result.no_tests == "pytest exit 5" and result.label == "pytest (no tests ran)"
    assert result.output_tail.endswith(f"[lanes-tui: no tests ran (pytest exit 5); {NOTE}]")
    assert result.shown.startswith(str(interpreters["with"] / "python3") + " -m pytest -q")


def test_allow_no_tests_in_gates_and_in_a_step(tmp_path: Path, interpreters: dict[str, Path]) -> None:
    project = _project(tmp_path / "p", {"conftest.py": ""})
    environ = _lead_env(interpreters["with"])
    (allowed,) = _gates(project, tmp_path, GatesConfig(allow_no_tests=True), environ)
    assert allowed.status == "passed" and allowed.exit_code == 5 and allowed.no_tests == "pytest exit 5"
    assert "passed because allow_no_tests = true" in allowed.output_tail
    steps = (GateStep("unit", "{python} -m pytest -q", allow_no_tests=True),
             GateStep("strict", "{python} -m pytest -q"))
    unit, strict = _gates(project, tmp_path, GatesConfig(steps=steps), environ)
    assert unit.status == "passed" and strict.status == "failed" and strict.label == "strict (no tests ran)"
    # a step may refuse what [gates] allows
    (refused,) = _gates(project, tmp_path, GatesConfig(allow_no_tests=True, steps=(
        GateStep("unit", "{python} -m pytest -q", allow_no_tests=False),)), environ)
    assert refused.status == "failed"


def test_unittest_that_ran_0_tests_fails(tmp_path: Path, interpreters: dict[str, Path]) -> None:
    """pytest-style functions run by unittest: 3.11 says `Ran 0 tests … OK` and exits 0; 3.12+ exits 5."""
    project = _project(tmp_path / "p", {"test_calc.py": "def test_add():\n    assert 1 + 1 == 3\n"})
    gates = GatesConfig(commands=("{python} -m unittest -q",))
    (result,) = _gates(project, tmp_path, gates, _lead_env(interpreters["without"]))
    assert result.status == "failed" and result.exit_code in (0, 5)
    assert "Ran 0 tests" in result.output_tail and result.no_tests == "unittest: Ran 0 tests"
    assert result.label == "unittest (no tests ran)"


def test_pytest_missing_for_the_interpreter_is_a_fail(tmp_path: Path, interpreters: dict[str, Path]) -> None:
    project = _project(tmp_path / "p", {"conftest.py": "", "test_x.py": "def test_x():\n    pass\n"})
    (result,) = _gates(project, tmp_path, GatesConfig(), _lead_env(interpreters["without"]))
    assert result.status == "failed" and "No module named pytest" in result.output_tail and not result.no_tests


# --- the project's interpreter --------------------------------------------------------------------------

def test_the_project_interpreter_is_never_lanes_tuis_own(tmp_path: Path, interpreters: dict[str, Path]) -> None:
    own = Path(sys.prefix) / "bin"
    assert sys.prefix != sys.base_prefix, "the suite runs in a virtualenv (lanes-tui's own)"
    # lanes-tui's own venv first on PATH is skipped; the next python3 is the project's
    environ = {"PATH": f"{own}{os.pathsep}{interpreters['without']}"}
    assert path_python(environ) == str(interpreters["without"] / "python3")
    python = project_python(tmp_path, GatesConfig(), tmp_path, environ)
    assert python.path == str(interpreters["without"] / "python3") and python.venv is None
    # nothing but lanes-tui's own: no interpreter, said with the fix, and a {python} step fails with it
    alone = {"PATH": str(own)}
    python = project_python(tmp_path, GatesConfig(), tmp_path, alone)
    assert python.path is None and "no project interpreter" in python.problem and "[gates] venv" in python.problem
    (step,) = plan_gates(tmp_path, tmp_path, GatesConfig(commands=("{python} -m pytest -q",)), alone)[0]
    assert step.argv == () and "no project interpreter" in step.problem
    (result,) = _gates(tmp_path, tmp_path, GatesConfig(commands=("{python} -m pytest -q",)), alone)
    assert result.status == "failed" and "no project interpreter" in result.output_tail


def test_venv_and_dot_venv_and_a_missing_gates_venv(tmp_path: Path, interpreters: dict[str, Path]) -> None:
    environ = _lead_env(interpreters["with"])
    repo = tmp_path / "repo"
    repo.mkdir()
    _venv(repo / "venv", with_pytest=False)
    python = project_python(repo, GatesConfig(), repo, environ)
    assert python.venv == repo / "venv" and python.path == str(repo / "venv" / "bin" / "python")
    missing = project_python(repo, GatesConfig(venv="envs/gone"), repo, environ)
    assert missing.path is None and "[gates] venv = 'envs/gone' has no bin/python" in missing.problem


# --- detection --------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("files", "mark"), [
    ({"conftest.py": ""}, "conftest.py"),
    ({"tests/conftest.py": ""}, "tests/conftest.py"),
    ({"pytest.ini": "[pytest]\n"}, "pytest.ini"),
    ({"pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-q'\n"}, "[tool.pytest] in pyproject.toml"),
    ({"tox.ini": "[tox]\nenvlist = py311\n\n[pytest]\naddopts = -q\n"}, "[pytest] in tox.ini"),
    ({"setup.cfg": "[metadata]\nname = x\n\n[tool:pytest]\ntestpaths = tests\n"}, "[tool:pytest] in setup.cfg"),
    ({"pyproject.toml": "[project]\nname = 'x'\ndependencies = ['requests', 'pytest>=8']\n"},
     "pytest in pyproject.toml's dependencies"),
    ({"pyproject.toml": "[project]\nname = 'x'\n[project.optional-dependencies]\ntest = ['pytest-cov']\n"},
     "pytest in pyproject.toml's dependencies"),
    ({"pyproject.toml": "[dependency-groups]\ndev = [{include-group = 'x'}, 'pytest ~= 8.0']\n"},
     "pytest in pyproject.toml's dependencies"),
    ({"pyproject.toml": "[tool.poetry.group.dev.dependencies]\npytest = '^8'\n"},
     "pytest in pyproject.toml's dependencies"),
    ({"requirements-dev.txt": "# tools\nruff==0.5\nPyTest==8.2 ; python_version >= '3.9'\n"},
     "pytest in requirements-dev.txt"),
    ({"requirements/test.txt": "-r base.txt\npytest\n"}, "pytest in requirements/test.txt"),
    ({"tests/unit/test_calc.py": "from pytest import raises\n\ndef test_x():\n    pass\n"},
     "import pytest in tests/unit/test_calc.py"),
])
def test_pytest_is_detected_from_the_projects_own_files(tmp_path: Path, files: dict[str, str], mark: str) -> None:
    project = _project(tmp_path, files)
    assert pytest_mark(project) == mark
    assert detect_commands(project) == ["{python} -m pytest -q"]


def test_unittest_only_for_python_test_files_without_a_pytest_mark(tmp_path: Path) -> None:
    project = _project(tmp_path, {"pyproject.toml": "[project]\nname = 'x'\ndependencies = ['pytestify']\n",
                                  "requirements.txt": "requests\n"})
    assert pytest_mark(project) is None and detect_commands(project) == []  # no tests: nothing to run
    _project(tmp_path, {"tests/test_calc.py": "import unittest\n\nclass T(unittest.TestCase):\n    pass\n"})
    assert detect_commands(project) == ["{python} -m unittest -q"]


# --- doctor and run say what is missing -------------------------------------------------------------------

def _pytest_repo(repo: Path, test: str) -> None:
    (repo / "conftest.py").write_text("")
    (repo / "test_calc.py").write_text(f"from calc import add\n\n\ndef test_add():\n    {test}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "pytest-style tests")
    write_config(repo, gates="")  # no `commands`: detected


def test_doctor_and_run_name_a_missing_pytest(repo: Path, interpreters: dict[str, Path]) -> None:
    _pytest_repo(repo, "assert add(1, 2) == 3")
    env = _lead_env(interpreters["without"])
    python = interpreters["without"] / "python3"
    doctor = cli(repo, "doctor", env=env)
    assert doctor.returncode == 1
    fix = (f"gates: pytest: this project's tests use pytest, which {python} does not have: create the project's "
           "venv (`python3 -m venv .venv && .venv/bin/pip install pytest`), or set [gates] venv, or set "
           "[gates] commands")
    assert fix in doctor.stdout, doctor.stdout
    assert f"gates: venv: none; python: {python} (the first python3 on PATH)" in doctor.stdout
    assert fix not in cli(repo, "doctor", env=_lead_env(interpreters["with"])).stdout
    # a project venv without pytest: looked at, not run
    _venv(repo / ".venv", with_pytest=False)
    (repo / ".git" / "info" / "exclude").write_text(".venv/\n")
    report = json.loads(cli(repo, "doctor", "--json", env=env).stdout)
    assert any(f"which the venv {repo / '.venv'} does not have" in p and "pip install pytest" in p
               for p in report["problems"]), report["problems"]
    assert runner_problems(repo, GatesConfig(venv=sys.prefix)) == []  # the suite's venv has pytest installed
    # `run` warns (on stderr: the id stays the last line) and starts the lane anyway
    started = cli(repo, "run", "--prompt", "write notes.txt hi", "--id", "warned", env=env, check=True)
    assert "lanes-tui: WARNING: gates: pytest: this project's tests use pytest" in started.stderr
    wait_state(repo, started.stdout.strip().splitlines()[-1])


# --- real lanes -------------------------------------------------------------------------------------------

def test_pytest_project_without_a_venv_and_a_failing_test_is_not_ready(repo: Path,
                                                                       interpreters: dict[str, Path]) -> None:
    """The issue's false green: conftest.py and a bare `def test_` (no venv, no pytest config) used to get
    `python -m unittest` on lanes-tui's interpreter, run 0 tests and show `ready`."""
    _pytest_repo(repo, "assert add(1, 2) == 4")
    env = _lead_env(interpreters["with"])
    lane = cli(repo, "run", "--prompt", "write notes.txt hi", "--id", "red", env=env, check=True).stdout.split()[-1]
    wait_state(repo, lane)
    row = status(repo, lane)
    assert row["state"] == "rejected", row
    ran = f"{interpreters['with'] / 'python3'} -m pytest -q"
    assert row["state_reason"].startswith(f"gate failed: pytest ({ran}"), row["state_reason"]
    assert sys.executable not in row["state_reason"]
    log = cli(repo, "check", lane, "--log", env=env)
    assert log.returncode == 1 and "1 failed" in log.stdout and "assert 3 == 4" in log.stdout


def test_a_lane_whose_pytest_collects_nothing_is_rejected_until_allowed(repo: Path,
                                                                         interpreters: dict[str, Path]) -> None:
    (repo / "tests").mkdir()
    (repo / "tests" / "conftest.py").write_text("")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a test folder with nothing in it")
    write_config(repo, gates="")
    env = _lead_env(interpreters["with"])
    lane = cli(repo, "run", "--prompt", "write notes.txt hi", "--id", "empty", env=env, check=True).stdout.split()[-1]
    wait_state(repo, lane)
    row = status(repo, lane)
    assert row["state"] == "rejected" and row["state_reason"] == "gate failed: pytest (no tests ran)", row
    log = cli(repo, "check", lane, "--log", env=env)
    assert log.returncode == 1 and f"[lanes-tui: no tests ran (pytest exit 5); {NOTE}]" in log.stdout
    write_config(repo, gates="allow_no_tests = true")
    assert cli(repo, "check", lane, env=env).returncode == 0
    assert status(repo, lane)["state"] == "ready"


# --- config -----------------------------------------------------------------------------------------------

def test_config_reads_allow_no_tests_and_refuses_a_string(repo: Path) -> None:
    from lanes_tui.engine import load_config
    write_config(repo, gates='allow_no_tests = true\n\n[gates.steps.unit]\ncommand = "make test"\n'
                             'allow_no_tests = false\n')
    gates = load_config(repo).gates
    assert gates.allow_no_tests is True and gates.steps == (GateStep("unit", "make test", allow_no_tests=False),)
    write_config(repo, gates='allow_no_tests = "yes"')
    with pytest.raises(LanesError, match=r"gates\.allow_no_tests.*must be true or false"):
        load_config(repo)
    write_config(repo, gates='[gates.steps.unit]\ncommand = "make test"\nallow_zero = true\n')
    with pytest.raises(LanesError, match="allow_zero"):
        load_config(repo)


# --- the other runners, on their real output --------------------------------------------------------------

GO_NO_FILES = "?   \texample.com/calc\t[no test files]\n?   \texample.com/calc/cmd/calc\t[no test files]\n"
GO_NO_TESTS = "ok  \texample.com/calc\t0.002s [no tests to run]\n?   \texample.com/calc/cmd/calc\t[no test files]\n"
GO_CACHED = "ok  \texample.com/calc\t(cached) [no tests to run]\n"
GO_RAN = "ok  \texample.com/calc\t0.002s\n?   \texample.com/calc/cmd/calc\t[no test files]\n"
GO_FAILED = ("--- FAIL: TestAdd (0.00s)\n    calc_test.go:8: add(1, 2) = 4, want 3\nFAIL\n"
             "FAIL\texample.com/calc\t0.002s\nFAIL\n")
GO_NO_PACKAGES = 'go: warning: "./..." matched no packages\nno packages to test\n'


def test_go_test(tmp_path: Path) -> None:
    assert go_test(0, GO_NO_FILES) == "go test: every package had no tests"
    assert go_test(0, GO_NO_TESTS) and go_test(0, GO_CACHED)
    assert go_test(1, GO_NO_PACKAGES) == "go test: no packages to test"
    assert go_test(0, GO_RAN) is None and go_test(1, GO_FAILED) is None
    assert go_test(0, GO_NO_FILES, complete=False) is None  # a cut tail may hide the packages that ran
    assert recognise(["go", "test", "./..."], 0, GO_NO_FILES) and not recognise(["make", "test"], 0, GO_NO_FILES)


CARGO_EMPTY = """   Compiling calc v0.1.0 (/tmp/calc)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.41s
     Running unittests src/lib.rs (target/debug/deps/calc-5c0e2f1a8d4b9e3c)

running 0 tests

test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

   Doc-tests calc

running 0 tests

test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

"""
CARGO_RAN = """     Running unittests src/lib.rs (target/debug/deps/calc-5c0e2f1a8d4b9e3c)

running 2 tests
test tests::adds ... ok
test tests::subtracts ... ok

test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

   Doc-tests calc

running 0 tests

test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

"""


def test_cargo_test() -> None:
    assert cargo_test(0, CARGO_EMPTY) == "cargo test: running 0 tests"
    assert cargo_test(0, CARGO_RAN) is None
    assert cargo_test(0, CARGO_RAN.split("   Doc-tests")[1], complete=False) is None  # only the doc-tests' tail
    assert cargo_test(101, CARGO_EMPTY) is None  # a failed build is its own failure
    assert recognise(["cargo", "test"], 0, CARGO_EMPTY)


JEST_EMPTY = """
> app@1.0.0 test
> jest

No tests found, exiting with code 1
Run with `--passWithNoTests` to exit with code 0
In /tmp/app
  2 files checked.
  testMatch: **/__tests__/**/*.[jt]s?(x), **/?(*.)+(spec|test).[tj]s?(x) - 0 matches
  testPathIgnorePatterns: /node_modules/ - 2 matches
  testRegex:  - 0 matches
Pattern:  - 0 matches
"""
JEST_RAN = "PASS ./calc.test.js\n  ✓ adds (2 ms)\n\nTest Suites: 1 passed, 1 total\nTests:       1 passed, 1 total\n"


def test_jest() -> None:
    assert jest(1, JEST_EMPTY) == "jest: No tests found"
    assert jest(0, JEST_EMPTY.replace("exiting with code 1", "exiting with code 0"))
    assert jest(0, JEST_RAN) is None
    assert recognise(["npm", "test"], 1, JEST_EMPTY) and recognise(["npx", "jest"], 1, JEST_EMPTY)


MOCHA_EMPTY = "\n\n\n  0 passing (1ms)\n\n"
MOCHA_RAN = "\n\n  calc\n    ✔ adds\n\n\n  1 passing (3ms)\n\n"
MOCHA_FAILED = ("\n\n  calc\n    1) adds\n\n\n  0 passing (4ms)\n  1 failing\n\n  1) calc\n       adds:\n"
                "     AssertionError\n")
MOCHA_NO_FILES = 'Error: No test files found: "test"\n'


def test_mocha() -> None:
    assert mocha(0, MOCHA_EMPTY) == "mocha: 0 passing"
    assert mocha(0, MOCHA_RAN) is None and mocha(1, MOCHA_FAILED) is None
    assert mocha(1, MOCHA_NO_FILES) == "mocha: No test files found"
    assert recognise(["npx", "mocha"], 0, MOCHA_EMPTY) and recognise(["yarn", "test"], 0, MOCHA_EMPTY)


UNITTEST_311 = "\n----------------------------------------------------------------------\nRan 0 tests in 0.000s\n\nOK\n"
UNITTEST_312 = ("\n----------------------------------------------------------------------\nRan 0 tests in 0.000s\n\n"
                "NO TESTS RAN\n")
UNITTEST_RAN = ("F\n======================================================================\n"
                "FAIL: test_x (test_a.T.test_x)\n"
                "----------------------------------------------------------------------\nRan 1 test in 0.001s\n\n"
                "FAILED (failures=1)\n")


def test_unittest_and_which_runner() -> None:
    assert unittest(0, UNITTEST_311) and unittest(5, UNITTEST_312) and unittest(1, UNITTEST_RAN) is None
    assert runner_of(["/p/.venv/bin/python", "-m", "pytest", "-q"]) == "pytest"
    assert runner_of(["/usr/bin/python3.12", "-m", "unittest"]) == "unittest"
    assert runner_of(["uv", "run", "pytest"]) == "pytest" and runner_of(["poetry", "run", "pytest"]) == "pytest"
    assert runner_of(["make", "test"]) is None and runner_of(["./run-tests.sh"]) is None
    assert recognise(["pytest"], 5, "") == "pytest exit 5" and recognise(["pytest"], 1, "") is None
    assert recognise(["make", "test"], 0, UNITTEST_311) is None  # a wrapper's output is never guessed at
