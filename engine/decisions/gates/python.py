"""The project's interpreter for its gates, and whether it has the runner the project's tests use.

A gate tests the lane's code the way the project tests itself, so `{python}` is never lanes-tui's own
interpreter: lanes-tui's virtualenv has pytest (and textual, …), and a project without them would
pass gates there that fail on every developer's machine. In order:

1. `[gates] venv` (relative to the repository). Named but missing is a problem, never a fallback.
2. The worktree's `.venv/` or `venv/` (a `[lanes] setup` step may make one), then the repository's.
3. The first `python3` on the lead's PATH that is not in lanes-tui's own virtualenv (when lanes-tui
   runs on a plain system interpreter, that interpreter is the system `python3` the project would
   use anyway, so it is not skipped).

With none of these, a `{python}` step fails with the reason and its fix instead of running anywhere.

`runner_problems` is for `doctor` and `run` only: it may start the interpreter once (`import pytest`,
argv list, own session, short timeout, cached per interpreter path and mtime), which a check, the
accept modal and the dashboard never need to do — a gate whose pytest is missing fails with its own
`No module named pytest`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lanes_tui.engine.config.gates import GatesConfig

__all__ = ["ProjectPython", "has_pytest", "path_python", "project_python", "project_venv", "pytest_problem"]

#: How long `python -c "import pytest"` may take (a cold start on a loaded machine is slow).
PROBE_TIMEOUT_S = 20.0
_VENV_NAMES = (".venv", "venv")
_probed: dict[tuple[str, int], bool] = {}


@dataclass(frozen=True)
class ProjectPython:
    """What `{python}` is for a lane's gates: the interpreter, its venv (None for a system one), where it
    came from (for `doctor`), or why there is none (then `path` is None)."""

    path: str | None
    venv: Path | None = None
    source: str = ""
    problem: str = ""


def project_venv(repo: Path, gates: GatesConfig, worktree: Path | None = None) -> Path | None:
    """`[gates] venv`, else the worktree's `.venv`/`venv` (a setup step may make one), else the repository's."""
    if gates.venv:
        candidates = [Path(os.path.expanduser(gates.venv))]
        candidates = [c if c.is_absolute() else repo / c for c in candidates]
    else:
        candidates = [p / name for p in (worktree, repo) if p is not None for name in _VENV_NAMES]
    for venv in candidates:
        if (venv / "bin" / "python").exists():
            return venv.absolute()
    return None


def _own_bins() -> set[Path]:
    """The folders whose `python3` is lanes-tui's own: its virtualenv's `bin/` (none on a system install)."""
    if sys.prefix == sys.base_prefix:
        return set()
    folders = {Path(sys.prefix) / "bin", Path(sys.executable).parent}
    return {_resolved(folder) for folder in folders}


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path.absolute()


def path_python(environ: Mapping[str, str]) -> str | None:
    """The first executable `python3` on `environ`'s PATH outside lanes-tui's own virtualenv."""
    own = _own_bins()
    for folder in environ.get("PATH", os.defpath).split(os.pathsep):
        if not folder:
            continue
        candidate = Path(folder) / "python3"
        if candidate.is_file() and os.access(candidate, os.X_OK) and _resolved(Path(folder)) not in own:
            return str(candidate)
    return None


def project_python(repo: Path, gates: GatesConfig, worktree: Path | None = None,
                   environ: Mapping[str, str] | None = None) -> ProjectPython:
    """The interpreter `{python}` stands for in this lane's gates (the module docstring's order)."""
    environ = os.environ if environ is None else environ
    venv = project_venv(repo, gates, worktree)
    if venv is not None:
        source = "[gates] venv" if gates.venv else ("the worktree's" if worktree and venv.parent == worktree.absolute()
                                                    else "the repository's") + f" {venv.name}"
        return ProjectPython(str(venv / "bin" / "python"), venv, source)
    if gates.venv:
        return ProjectPython(None, problem=(
            f"[gates] venv = {gates.venv!r} has no bin/python: create it (`python3 -m venv {gates.venv}`) "
            "or fix [gates] venv in .lanes/config.toml"))
    found = path_python(environ)
    if found is not None:
        return ProjectPython(found, None, "the first python3 on PATH")
    return ProjectPython(None, problem=(
        "no project interpreter for {python}: no [gates] venv, no .venv or venv/ in the worktree or the "
        "repository, and no python3 on PATH besides lanes-tui's own "
        f"({sys.executable}): create the project's venv (`python3 -m venv .venv`) or set [gates] venv"))


def has_pytest(python: ProjectPython, environ: Mapping[str, str] | None = None) -> bool:
    """Whether pytest is importable by the project's interpreter: a venv's site-packages is looked at
    (nothing runs); a system interpreter is asked once (`python -c "import pytest"`), cached per path
    and mtime. An interpreter that cannot be asked counts as not having it."""
    if python.path is None:
        return False
    if python.venv is not None:
        return any(any(site.glob(pattern)) for site in python.venv.glob("lib/python*/site-packages")
                   for pattern in ("pytest", "pytest-*.dist-info", "pytest.py"))
    try:
        key = (str(_resolved(Path(python.path))), os.stat(python.path).st_mtime_ns)
    except OSError:
        return False
    if key not in _probed:
        env = {k: v for k, v in (os.environ if environ is None else environ).items()
               if k not in ("PYTHONHOME", "PYTHONPATH", "VIRTUAL_ENV")}
        try:
            done = subprocess.run([python.path, "-c", "import pytest"], env=env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=PROBE_TIMEOUT_S,
                                  start_new_session=True, check=False)
            _probed[key] = done.returncode == 0
        except (OSError, subprocess.SubprocessError):
            _probed[key] = False
    return _probed[key]


def pytest_problem(python: ProjectPython, argv: Sequence[str], environ: Mapping[str, str] | None = None
                   ) -> str | None:
    """The line `doctor` and `run` print when a pytest step cannot find pytest, with its fix; None when it can.

    `{python} -m pytest`: the project's interpreter must have it. A bare `pytest`: it must be on the
    gate's PATH (the venv's `bin/` first, then the lead's)."""
    fixes = "or set [gates] venv, or set [gates] commands"
    if tuple(argv[1:3]) == ("-m", "pytest"):
        if python.path is None or argv[0] != python.path or has_pytest(python, environ):
            return None
        if python.venv is not None:
            return (f"this project's tests use pytest, which the venv {python.venv} does not have: install it "
                    f"(`{python.venv / 'bin' / 'pip'} install pytest`), {fixes}")
        return (f"this project's tests use pytest, which {python.path} does not have: create the project's venv "
                f"(`python3 -m venv .venv && .venv/bin/pip install pytest`), {fixes}")
    if argv and argv[0] in ("pytest", "py.test"):
        path = os.pathsep.join(p for p in (str(python.venv / "bin") if python.venv else "",
                                           (os.environ if environ is None else environ).get("PATH", "")) if p)
        if not any(os.access(Path(folder) / argv[0], os.X_OK) for folder in path.split(os.pathsep) if folder):
            return (f"this project's tests run `{argv[0]}`, which is not on the gates' PATH: create the project's "
                    f"venv (`python3 -m venv .venv && .venv/bin/pip install pytest`), {fixes}")
    return None
