"""The gates a lane actually runs: its steps with placeholders filled, in the project's environment.

A gate must test the lane's code the way the project tests itself, so `{python}` is the project's
interpreter (`gates.python.project_python`: `[gates] venv`, the worktree's or the repository's `.venv`,
else the first `python3` on PATH that is not lanes-tui's own), with a venv's `bin/` first on PATH and
`VIRTUAL_ENV` set; never lanes-tui's own virtualenv. Without a `commands` key the command is detected
from the worktree's files (`gates.detect`: no subprocess, no network), so `doctor`, the accept modal and
the gates agree on what runs.

Named variables come from the lead's environment; one that is unset is a warning, never an error,
and nothing that is not named reaches a gate (the rest of the environment is `lanes.env`'s allow-list).
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lanes_tui.engine.config.gates import GatesConfig
from lanes_tui.engine.decisions.gates.detect import pytest_mark, python_test_files
from lanes_tui.engine.decisions.gates.python import ProjectPython, project_python, project_venv, pytest_problem

__all__ = ["PlannedGate", "describe_gates", "detect_commands", "gate_environment", "plan_gates", "project_venv",
           "runner_problems", "step_name", "timeout_variable"]

#: A pytest step's faulthandler fires this long before the step's limit, so a hang leaves a stack.
FAULTHANDLER_MARGIN_S = 30
#: npm's placeholder `test` script: no tests at all, and it fails on purpose.
_NPM_PLACEHOLDER = "no test specified"


@dataclass(frozen=True)
class PlannedGate:
    """One step as it runs: its name, its configured command and argv with placeholders filled."""

    name: str
    command: str
    argv: tuple[str, ...]
    timeout_s: float
    #: Variables named for this step (on top of `[gates] env`), resolved from the lead's environment.
    env: Mapping[str, str] = field(default_factory=dict)
    #: Why argv could not be built (an unbalanced quote, no project interpreter): the step then fails so.
    problem: str = ""
    #: A run of no tests passes (`allow_no_tests`): otherwise it fails (`decisions.gates.no_tests`).
    allow_no_tests: bool = False

    @property
    def shown(self) -> str:
        """The command as it runs, for the why column and the Gates tab."""
        return shlex.join(self.argv) if self.argv else self.command

    @property
    def is_pytest(self) -> bool:
        return is_pytest(self.argv)


def is_pytest(argv: tuple[str, ...] | list[str]) -> bool:
    """True for `pytest …`, `python -m pytest …` and `…/bin/pytest`."""
    return any(Path(part).name in ("pytest", "py.test") for part in argv[:3])


def step_name(command: str) -> str:
    """A shorthand command's name: `pytest`, `unittest`, the module of `-m`, else the first word."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    if not words:
        return "gate"
    word = words[words.index("-m") + 1] if "-m" in words[:-1] else Path(words[0]).name.strip("{}")
    name = re.sub(r"[^A-Za-z0-9_-]", "-", word)[:64]
    return "pytest" if name == "py-test" else (name or "gate")


def timeout_variable(name: str) -> str:
    """`LANES_GATE_TIMEOUT_<NAME>`: the name uppercased, anything not a letter or digit turned to `_`."""
    return "LANES_GATE_TIMEOUT_" + re.sub(r"[^A-Z0-9]", "_", name.upper())


def faulthandler_timeout(timeout_s: float) -> float:
    """When pytest dumps every thread's stack: 30s before the limit, or halfway through one under a
    minute (pytest's start and collection eat into a short limit, and the stack must come before the kill)."""
    return round(max(timeout_s - FAULTHANDLER_MARGIN_S, timeout_s / 2), 1)


def _python_commands(folder: Path) -> list[str]:
    """pytest when anything in the project says so (`gates.detect.pytest_mark`), installed or not; else
    unittest when there are Python test files; else nothing (a Python project without tests has no
    test command to run, and `unittest` would run 0 tests)."""
    if pytest_mark(folder):
        return ["{python} -m pytest -q"]
    return ["{python} -m unittest -q"] if next(python_test_files(folder), None) is not None else []


def _npm_test(folder: Path) -> bool:
    try:
        data = json.loads((folder / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    scripts = data.get("scripts") if isinstance(data, dict) else None
    script = scripts.get("test") if isinstance(scripts, dict) else None
    return isinstance(script, str) and bool(script.strip()) and _NPM_PLACEHOLDER not in script


def _make_test(folder: Path) -> bool:
    for name in ("GNUmakefile", "makefile", "Makefile"):
        try:
            text = (folder / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        return re.search(r"^test\s*:", text, re.MULTILINE) is not None
    return False


def detect_commands(folder: Path) -> list[str]:
    """The test commands a project of this shape runs: one per ecosystem found, `make test` as the
    fallback when none is (a Makefile often wraps the others, which would then run twice)."""
    commands = _python_commands(folder)
    if _npm_test(folder):
        commands.append("npm test")
    if (folder / "go.mod").is_file():
        commands.append("go test ./...")
    if (folder / "Cargo.toml").is_file():
        commands.append("cargo test")
    if not commands and _make_test(folder):
        commands.append("make test")
    return commands


def _resolve(patterns: tuple[str, ...], environ: Mapping[str, str], warnings: list[str], where: str) -> dict[str, str]:
    """Named variables from the lead's environment; an unset exact name is a warning."""
    found: dict[str, str] = {}
    for pattern in patterns:
        if pattern.endswith("*"):
            found.update({k: v for k, v in environ.items() if k.startswith(pattern[:-1])})
        elif pattern in environ:
            found[pattern] = environ[pattern]
        else:
            warnings.append(f"gate variable {pattern} ({where}) is not set in the lead's environment")
    return found


def plan_gates(repo: Path, worktree: Path, gates: GatesConfig, environ: Mapping[str, str] | None = None
               ) -> tuple[list[PlannedGate], list[str]]:
    """(the steps to run in order, warnings): `commands` then `[gates.steps]`, or the detected commands."""
    environ = os.environ if environ is None else environ
    python = project_python(repo, gates, worktree, environ)
    warnings: list[str] = []
    _resolve(tuple(p for p in gates.env if not p.endswith("*")), environ, warnings, "[gates] env")
    configured: list[tuple[str, str, float | None, tuple[str, ...], bool | None]] = []
    commands = detect_commands(worktree) if gates.detect else list(gates.commands or ())
    taken: set[str] = {step.name for step in gates.steps}
    for command in commands:
        name = base = step_name(command)
        counter = 2
        while name in taken:
            name, counter = f"{base}-{counter}", counter + 1
        taken.add(name)
        configured.append((name, command, None, (), None))
    configured += [(s.name, s.command, s.timeout_s, s.env, s.allow_no_tests) for s in gates.steps]
    planned: list[PlannedGate] = []
    for name, command, own_timeout, env_names, own_allow in configured:
        allow = gates.allow_no_tests if own_allow is None else own_allow
        timeout = own_timeout or gates.timeout_s
        variable = timeout_variable(name)
        if variable in environ:
            try:
                timeout = float(environ[variable])
                if not timeout > 0:
                    raise ValueError
            except ValueError:
                warnings.append(f"{variable}={environ[variable]!r} is not a positive number of seconds: "
                                f"{name} keeps {own_timeout or gates.timeout_s:g}s")
                timeout = own_timeout or gates.timeout_s
        env = _resolve(env_names, environ, warnings, f"step {name}")
        try:
            words = shlex.split(command)
        except ValueError as exc:
            planned.append(PlannedGate(name, command, (), timeout, env, f"cannot parse the gate command: {exc}", allow))
            continue
        if "{python}" in words and python.path is None:  # never lanes-tui's own interpreter instead
            planned.append(PlannedGate(name, command, (), timeout, env, python.problem, allow))
            continue
        argv = [python.path if part == "{python}" and python.path else part for part in words]
        if is_pytest(argv) and not any("faulthandler_timeout" in part for part in argv):
            argv += ["-o", f"faulthandler_timeout={faulthandler_timeout(timeout):g}"]
        planned.append(PlannedGate(name, command, tuple(argv), timeout, env, "" if argv else "empty gate command",
                                   allow))
    return planned, warnings


def gate_environment(env: Mapping[str, str], venv: Path | None) -> dict[str, str]:
    """The lane's gate environment inside the project's venv: its `bin/` first, `VIRTUAL_ENV` set."""
    result = dict(env)
    result.pop("PYTHONHOME", None)
    if venv is None:
        result.pop("VIRTUAL_ENV", None)
        return result
    result["VIRTUAL_ENV"] = str(venv)
    result["PATH"] = os.pathsep.join(p for p in (str(venv / "bin"), env.get("PATH", os.defpath)) if p)
    return result


def describe_gates(repo: Path, gates: GatesConfig, worktree: Path | None = None) -> list[str]:
    """The effective gates as lines for `doctor` and the accept modal: the venv, then each step."""
    where = worktree or repo
    python = project_python(repo, gates, worktree)
    steps, warnings = plan_gates(repo, where, gates)
    lines = [_describe_python(python)]
    how = "detected" if gates.detect else "configured"
    if not steps:
        lines.append("no gates configured" if not gates.detect else "no test command detected: no gates")
    lines += [f"{s.name} ({how if s.name not in {g.name for g in gates.steps} else 'step'}): {s.shown} "
              f"(limit {s.timeout_s:g}s)" for s in steps]
    return lines + [f"warning: {w}" for w in warnings]


def _describe_python(python: ProjectPython) -> str:
    """`venv: /repo/.venv`, or `venv: none; python: /usr/bin/python3 (the first python3 on PATH)`."""
    if python.venv is not None:
        return f"venv: {python.venv}"
    if python.path is not None:
        return f"venv: none; python: {python.path} ({python.source})"
    return f"venv: none; {python.problem}"


def runner_problems(repo: Path, gates: GatesConfig, worktree: Path | None = None,
                    environ: Mapping[str, str] | None = None) -> list[str]:
    """For `doctor` and `run` only (it may start the interpreter once): a step that cannot run as the
    project needs — no project interpreter, or pytest missing for it — each with its fix."""
    environ = os.environ if environ is None else environ
    python = project_python(repo, gates, worktree, environ)
    steps, _ = plan_gates(repo, worktree or repo, gates, environ)
    problems: list[str] = []
    for step in steps:
        problem = step.problem if not step.argv else pytest_problem(python, step.argv, environ)
        if problem and f"{step.name}: {problem}" not in problems:
            problems.append(f"{step.name}: {problem}")
    return problems
