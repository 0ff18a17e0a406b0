"""The real-CLI tier: each test drives one real agent CLI (installed by `python -m tests.real_cli.install`,
versions in `versions.py`) as a lane through lanes-tui, against the scripted model server.

A CLI that is not installed skips its tests with the command that installs it; `.ci/run` installs them
first and says plainly when it could not.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.real_cli.install import cache_dir, executable, tier_path
from tests.real_cli.model_server.script import Script
from tests.real_cli.model_server.server import ModelServer


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.real_cli)


def require_cli(name: str) -> Path:
    """The installed CLI `name`, or the test skips saying how to install it."""
    path = executable(name)
    if path is None:
        pytest.skip(f"{name} is not installed in {cache_dir()}: python -m tests.real_cli.install --only {name}")
    return path


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    with ModelServer(Script()) as server:
        yield server


@pytest.fixture(autouse=True)
def tier_node_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The npm CLIs' scripts start with `env node`: the tier's pinned Node comes first on PATH."""
    monkeypatch.setenv("PATH", tier_path())
