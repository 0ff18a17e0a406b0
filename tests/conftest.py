"""Shared fixtures: a marker in every child's environment, and a check that no test leaves one behind."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

MARKER = "LANESTEST_MARKER"


def _marked(token: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["pid"]):
        if proc.pid == os.getpid():
            continue
        try:
            if proc.environ().get(MARKER) == token:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found



def pytest_configure(config: pytest.Config) -> None:
    """A suite started in the background of a non-interactive shell (`cmd &`, as a CI script may) has
    SIGINT ignored, and every process it starts inherits that: a test that interrupts a `lanes-tui`
    command with SIGINT then waits for nothing (seen: `check` ran its 60 s gate on). A Python handler
    is reset to the default at exec, so the children get the SIGINT a terminal would give them."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)

@pytest.fixture(autouse=True)
def no_leftover_processes(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Every process a test starts inherits a unique marker; any still alive afterwards fails the test.

    Detached supervisors are re-parented away from the test process, so the check goes by the
    marker in the environment, not by parentage.
    """
    token = uuid.uuid4().hex
    monkeypatch.setenv(MARKER, token)
    yield token
    deadline = time.monotonic() + 5.0
    left = _marked(token)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    if left:
        described = []
        for proc in left:
            try:
                described.append(f"{proc.pid} {' '.join(proc.cmdline())[:120]}")
                proc.kill()
            except psutil.Error:
                continue
        if described:
            pytest.fail("test left processes behind: " + "; ".join(described))


@pytest.fixture(autouse=True)
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lead's own `~/.config/lanes-tui/config.toml` (config.layers) never reaches a test: every
    test, and every process it starts, reads an empty config folder unless it sets one itself."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.delenv("LANES_TUI_CONFIG", raising=False)
    monkeypatch.delenv("LANES_TUI_LOG", raising=False)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture()
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A real git repository with one commit on `main`, and a worktree root outside it."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "xdg-run"))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test Lead")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "lead@example.invalid")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test Lead")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "lead@example.invalid")
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("# project\n")
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    return root


@pytest.fixture(autouse=True)
def no_load_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gates and `lanes-tui lock` hold back while the machine's load is over twice its cores; in a test
    run that load is the suite's own (and a CI neighbour's), not what a test is about, so the wait is
    off (`LANES_HEAVY_LOAD=0`). A test of the load wait sets its own value."""
    monkeypatch.setenv("LANES_HEAVY_LOAD", "0")
