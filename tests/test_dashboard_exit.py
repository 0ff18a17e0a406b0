"""How the dashboard process ends: `q` exits 0; an error Textual catches exits non-zero with one line.

The dashboard runs as a real process on a real pseudo-terminal (stdin and stderr, where Textual draws,
as in a lead's terminal; stdout a pipe). The failure is forced by the `LANES_TUI_CRASH_AT` test hook
(`core.debug.fail_point`, raised in `Engine.start`, which the App awaits in `on_mount`): Textual
catches it, as it would a bug in a pane's compose or render.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lanes_tui.engine.core.debug import CRASH_ENV
from lanes_tui.engine.state.paths import StatePaths

#: Textual's sequence for leaving the alternate screen: what follows it is what the lead's terminal keeps.
LEAVE_ALT_SCREEN = b"\x1b[?1049l"


class Dashboard:
    """`lanes-tui --repo REPO` on a pseudo-terminal of its own, in its own process group."""

    def __init__(self, repo: Path, env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 110, 0, 0))
        self.proc = subprocess.Popen([sys.executable, "-m", "lanes_tui.app", "--repo", str(repo)], cwd=repo,
                                     stdin=slave, stdout=subprocess.PIPE, stderr=slave, env=env,
                                     start_new_session=True)
        os.close(slave)
        self.screen = b""

    def read_until(self, done: object, timeout: float = 120.0) -> bool:
        """Read what the app draws until `done(screen)` (True) or the terminal closes (False); the
        deadline only guards a hang. Reading is what lets the app go on: a full terminal blocks it."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if callable(done) and done(self.screen):
                return True
            ready, _, _ = select.select([self.master], [], [], 1.0)
            if ready and not self._read():
                return False  # every writer closed the terminal: the process is gone
        raise AssertionError(f"the dashboard never got there; it drew: {self.screen[-2000:]!r}")

    def _read(self) -> bool:
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: the other side is closed
            return False
        self.screen += chunk
        return bool(chunk)

    def finish(self) -> tuple[int, bytes]:
        """The exit code, and what stdout got; everything left on the terminal is read into `screen`."""
        self.read_until(None)
        code = self.proc.wait(120)
        assert self.proc.stdout is not None
        return code, self.proc.stdout.read()

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        os.close(self.master)


@pytest.fixture()
def environment() -> dict[str, str]:
    # Under pytest COLUMNS / LINES would be believed over the terminal's real size.
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", CRASH_ENV)}
    env["TERM"] = "xterm-256color"
    return env


@pytest.fixture()
def dashboards() -> Iterator[list[Dashboard]]:
    started: list[Dashboard] = []
    yield started
    for dashboard in started:
        dashboard.close()


def test_q_quits_with_exit_code_0(repo: Path, environment: dict[str, str], dashboards: list[Dashboard]) -> None:
    dashboard = Dashboard(repo, environment)
    dashboards.append(dashboard)
    dashboard.read_until(lambda screen: b"Lanes" in screen)
    os.write(dashboard.master, b"q")
    code, stdout = dashboard.finish()
    assert code == 0, dashboard.screen[-2000:]
    assert stdout == b""
    assert b"lanes-tui:" not in dashboard.screen.rpartition(LEAVE_ALT_SCREEN)[2]


def test_a_failure_exits_non_zero_with_one_line(repo: Path, environment: dict[str, str],
                                                 dashboards: list[Dashboard]) -> None:
    dashboard = Dashboard(repo, {**environment, CRASH_ENV: "engine:start"})
    dashboards.append(dashboard)
    code, stdout = dashboard.finish()
    log = StatePaths(repo).engine_log
    assert code == 1
    assert stdout == b""
    # After the terminal is restored: one line naming the error and where the traceback went, and no
    # traceback with its locals (hundreds of lines) on the lead's terminal.
    left = dashboard.screen.rpartition(LEAVE_ALT_SCREEN)[2].decode()
    lines = [line for line in left.splitlines() if line.strip()]
    assert len(lines) == 1, left
    assert lines[0].endswith(f"lanes-tui: the dashboard stopped on an error: RuntimeError: test hook: "
                             f"{CRASH_ENV}=engine:start — the full traceback is in {log}"), lines
    assert "Traceback" not in dashboard.screen.decode(errors="replace")
    text = log.read_text()
    assert "the dashboard stopped on an error (exit code 1)" in text
    assert "in start" in text and f"RuntimeError: test hook: {CRASH_ENV}=engine:start" in text
