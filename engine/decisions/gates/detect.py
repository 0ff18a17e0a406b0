"""Which Python test runner a project uses, read from its files: pytest's marks, else unittest.

A pytest-style project (a `conftest.py`, bare `def test_…` functions) run with `python -m unittest`
runs nothing and exits 0, so the runner is chosen from what the project says about itself, never from
what happens to be installed: any of pytest's marks below means pytest, installed or not (a missing
pytest is then said by `doctor` and `run`: `gates.python.runner_problems`). Only file reads, bounded in
number and size, so `doctor`, the accept modal and every check can afford it.
"""

from __future__ import annotations

import configparser
import os
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["pytest_mark", "python_test_files"]

#: At most this many test files are looked at, and this much of each: detection stays cheap.
MAX_TEST_FILES = 200
MAX_READ = 64 * 1024
_TEST_DIRS = ("tests", "test")
_SKIP_DIRS = {"node_modules", "__pycache__", "site-packages", ".venv", "venv", ".tox", ".nox", "build", "dist"}
_IMPORTS_PYTEST = re.compile(r"^\s*(import pytest\b|from pytest\b|from _pytest\b)", re.MULTILINE)
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _read(path: Path) -> str:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            return handle.read(MAX_READ)
    except OSError:
        return ""


def _is_test_file(name: str) -> bool:
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def python_test_files(folder: Path) -> Iterator[Path]:
    """`test_*.py` / `*_test.py` at the top and under `tests/` or `test/` (hidden and build folders skipped),
    at most MAX_TEST_FILES of them."""
    count = 0
    try:
        top = sorted(p for p in folder.iterdir() if p.is_file() and _is_test_file(p.name))
    except OSError:
        top = []
    for path in top:
        yield path
        count += 1
        if count >= MAX_TEST_FILES:
            return
    for name in _TEST_DIRS:
        for root, dirs, files in os.walk(folder / name):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
            for file in sorted(files):
                if _is_test_file(file):
                    yield Path(root) / file
                    count += 1
                    if count >= MAX_TEST_FILES:
                        return


def _names_pytest(requirement: object) -> bool:
    """`pytest>=8`, `pytest-cov` (a plugin means pytest runs the tests), not `pytestify`."""
    found = _REQUIREMENT.match(requirement) if isinstance(requirement, str) else None
    name = found.group(1).lower().replace("_", "-") if found else ""
    return name == "pytest" or name.startswith("pytest-") or name == "py.test"


def _pyproject_mark(pyproject: Path) -> str | None:
    text = _read(pyproject)
    if not text:
        return None
    if "[tool.pytest" in text:
        return "[tool.pytest] in pyproject.toml"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    tool = data.get("tool")
    lists: list[Any] = [_get(data, "project", "dependencies")]
    for table in (_get(data, "project", "optional-dependencies"), data.get("dependency-groups"),
                  _get(tool, "pdm", "dev-dependencies")):
        lists += list(table.values()) if isinstance(table, dict) else []
    lists.append(_get(tool, "uv", "dev-dependencies"))
    poetry = _get(tool, "poetry")
    groups = _get(poetry, "group")
    tables = [_get(poetry, "dependencies"), _get(poetry, "dev-dependencies")]
    tables += [_get(group, "dependencies") for group in (groups.values() if isinstance(groups, dict) else ())]
    lists += [list(table) for table in tables if isinstance(table, dict)]
    if any(_names_pytest(item) for entries in lists if isinstance(entries, list) for item in entries):
        return "pytest in pyproject.toml's dependencies"
    return None


def _get(table: object, *keys: str) -> Any:
    for key in keys:
        table = table.get(key) if isinstance(table, dict) else None
    return table


def _ini_section(path: Path, section: str) -> bool:
    text = _read(path)
    if f"[{section}]" not in text:
        return False
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return True  # the header is there; a parse error elsewhere does not unsay it
    return parser.has_section(section)


def _requirements(folder: Path) -> Iterator[Path]:
    yield from sorted(folder.glob("requirements*.txt"))
    yield from sorted((folder / "requirements").glob("*.txt"))


def pytest_mark(folder: Path) -> str | None:
    """What says this project uses pytest (`conftest.py`, `import pytest in tests/test_x.py`, …), or None."""
    for conftest in (folder / "conftest.py", folder / "tests" / "conftest.py", folder / "test" / "conftest.py"):
        if conftest.is_file():
            return str(conftest.relative_to(folder))
    if (folder / "pytest.ini").is_file():
        return "pytest.ini"
    mark = _pyproject_mark(folder / "pyproject.toml")
    if mark:
        return mark
    if _ini_section(folder / "tox.ini", "pytest"):
        return "[pytest] in tox.ini"
    if _ini_section(folder / "setup.cfg", "tool:pytest"):
        return "[tool:pytest] in setup.cfg"
    for path in _requirements(folder):
        if any(_names_pytest(line) for line in _read(path).splitlines()):
            return f"pytest in {path.relative_to(folder)}"
    for path in python_test_files(folder):
        if _IMPORTS_PYTEST.search(_read(path)):
            return f"import pytest in {path.relative_to(folder)}"
    return None
