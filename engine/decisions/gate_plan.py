"""The gates a lane actually runs: its steps with placeholders filled, in the project's environment.

A gate must test the lane's code the way the project tests itself, so `{python}` is the project's
virtualenv (`[gates] venv`, else the worktree's or the repository's `.venv`) with its `bin/` first on
PATH and `VIRTUAL_ENV` set; lanes-tui's own interpreter is the fallback only when there is none.
Without a `commands` key the command is detected from the worktree's files (no subprocess, no
network), so `doctor`, the accept modal and the gates agree on what runs.

Named variables come from the lead's environment; one that is unset is a warning, never an error,
and nothing that is not named reaches a gate (the rest of the environment is `lanes.env`'s allow-list).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lanes_tui.engine.config.gates import GatesConfig

__all__ = ["PlannedGate", "describe_gates", "detect_commands", "gate_environment", "plan_gates", "project_venv",
           "step_name", "timeout_variable"]

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
    #: Why argv could not be built (an unbalanced quote): the step then fails with this reason.
    problem: str = ""

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


def project_venv(repo: Path, gates: GatesConfig, worktree: Path | None = None) -> Path | None:
    """`[gates] venv`, else the worktree's `.venv` (a setup step may make one), else the repository's."""
    if gates.venv:
        candidates = [Path(os.path.expanduser(gates.venv))]
        candidates = [c if c.is_absolute() else repo / c for c in candidates]
    else:
        candidates = [p / ".venv" for p in (worktree, repo) if p is not None]
    for venv in candidates:
        if (venv / "bin" / "python").exists():
            return venv.absolute()
    return None


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


def _has_pytest(venv: Path | None) -> bool:
    if venv is None:
        return importlib.util.find_spec("pytest") is not None
    return any(any(site.glob(pattern)) for site in venv.glob("lib/python*/site-packages")
               for pattern in ("pytest", "pytest-*.dist-info"))


def _python_commands(folder: Path, venv: Path | None) -> list[str]:
    pyproject = folder / "pyproject.toml"
    text = ""
    if pyproject.is_file():
        try:
            text = pyproject.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
    tests = folder / "tests"
    has_tests = tests.is_dir() and any(tests.glob("test_*.py"))
    if "[tool.pytest" in text or (folder / "pytest.ini").is_file() or (has_tests and _has_pytest(venv)):
        return ["{python} -m pytest -q"]
    python = (pyproject.is_file() or (folder / "setup.py").is_file() or (folder / "setup.cfg").is_file()
              or has_tests or any(folder.glob("test_*.py")))
    return ["{python} -m unittest -q"] if python else []


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


def detect_commands(folder: Path, venv: Path | None = None) -> list[str]:
    """The test commands a project of this shape runs: one per ecosystem found, `make test` as the
    fallback when none is (a Makefile often wraps the others, which would then run twice)."""
    commands = _python_commands(folder, venv)
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
    venv = project_venv(repo, gates, worktree)
    warnings: list[str] = []
    _resolve(tuple(p for p in gates.env if not p.endswith("*")), environ, warnings, "[gates] env")
    configured: list[tuple[str, str, float | None, tuple[str, ...]]] = []
    commands = detect_commands(worktree, venv) if gates.detect else list(gates.commands or ())
    taken: set[str] = {step.name for step in gates.steps}
    for command in commands:
        name = base = step_name(command)
        counter = 2
        while name in taken:
            name, counter = f"{base}-{counter}", counter + 1
        taken.add(name)
        configured.append((name, command, None, ()))
    configured += [(s.name, s.command, s.timeout_s, s.env) for s in gates.steps]
    python = str(venv / "bin" / "python") if venv else sys.executable
    planned: list[PlannedGate] = []
    for name, command, own_timeout, env_names in configured:
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
            argv = [python if part == "{python}" else part for part in shlex.split(command)]
        except ValueError as exc:
            planned.append(PlannedGate(name, command, (), timeout, env, f"cannot parse the gate command: {exc}"))
            continue
        if is_pytest(argv) and not any("faulthandler_timeout" in part for part in argv):
            argv += ["-o", f"faulthandler_timeout={faulthandler_timeout(timeout):g}"]
        planned.append(PlannedGate(name, command, tuple(argv), timeout, env, "" if argv else "empty gate command"))
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
    venv = project_venv(repo, gates, worktree)
    steps, warnings = plan_gates(repo, where, gates)
    lines = [f"venv: {venv}" if venv else f"venv: none (gates run on {sys.executable})"]
    how = "detected" if gates.detect else "configured"
    if not steps:
        lines.append("no gates configured" if not gates.detect else "no test command detected: no gates")
    lines += [f"{s.name} ({how if s.name not in {g.name for g in gates.steps} else 'step'}): {s.shown} "
              f"(limit {s.timeout_s:g}s)" for s in steps]
    return lines + [f"warning: {w}" for w in warnings]
