"""End to end, as a lead would use it: `lanes-tui --demo` in tmux, keys typed, the screen read back."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from lanes_tui.engine.lanes.launcher import stop_lane, supervisor_alive
from lanes_tui.engine.state.paths import StatePaths

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")


class Tmux:
    def __init__(self, session: str, socket: str) -> None:
        self.session = session
        self.socket = socket

    def run(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True,
                              check=False).stdout

    def start(self, command: list[str], cwd: Path, size: tuple[int, int] = (120, 36)) -> None:
        # The size must be right before the app starts: a detached session is born at default-size.
        width, height = str(size[0]), str(size[1])
        subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", "start-server", ";",
                        "set-option", "-g", "default-size", f"{width}x{height}", ";",
                        "new-session", "-d", "-s", self.session, "-x", width, "-y", height, "-c", str(cwd),
                        # Under pytest the pane's shell environment carries COLUMNS=80 LINES=24, which
                        # Textual would believe over the real pane size.
                        "env", "-u", "COLUMNS", "-u", "LINES", *command], check=True)

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.session)

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.session, *keys)

    def alive(self) -> bool:
        return subprocess.run(["tmux", "-L", self.socket, "has-session", "-t", self.session],
                              capture_output=True, check=False).returncode == 0

    def wait_screen(self, predicate: object, timeout: float = 60.0) -> str:
        end = time.monotonic() + timeout
        text = ""
        while time.monotonic() < end:
            text = self.screen()
            if callable(predicate) and predicate(text):
                return text
            time.sleep(0.2)
        raise AssertionError(f"screen never matched; last screen:\n{text}")

    def kill(self) -> None:
        self.run("kill-server")


@pytest.fixture()
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    term = Tmux("lanes", f"lanes-test-{uuid.uuid4().hex[:8]}")
    yield term
    term.kill()


def _lanes_cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lanes_tui.app", *args], cwd=repo, capture_output=True,
                          text=True, timeout=60, check=False)


def test_demo_as_a_lead_uses_it(tmux: Tmux, tmp_path: Path) -> None:
    cli = [sys.executable, "-m", "lanes_tui.app"]
    tmux.start([*cli, "--demo", "--keep", "--demo-dir", str(tmp_path)], tmp_path)
    try:
        tmux.wait_screen(lambda s: "question-a1" in s and "Deploy the calculator" in s)
        repo = next(tmp_path.glob("lanes-demo-*/calculator"))
        dashboard = next(p for p in psutil.process_iter() if _safe(p) and str(tmp_path) in " ".join(p.cmdline())
                         and "lanes_tui.app" in " ".join(p.cmdline()))
        screen = tmux.wait_screen(lambda s: row_state(s, "ready-a1") == "ready")
        assert "Inbox" in screen and "Meters" in screen and "Stalls" in screen

        # The open question is the only one: `y` answers it and the lane moves on.
        tmux.keys("y")
        tmux.wait_screen(lambda s: "→ yes" in s or "Answered" in s, timeout=15)
        worktree = Path(json.loads((repo / ".lanes/state/lanes/question-a1/lane.json").read_text())["worktree"])
        deadline = time.monotonic() + 60
        while not (worktree / "DEPLOYED.txt").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert (worktree / "DEPLOYED.txt").read_text() == "staging\n"

        # The first row is ready-a1: `a` asks to accept it; a lone Escape (the terminal driver's
        # parser must time it out) closes the question; `a` again, `y` confirms.
        tmux.keys("a")
        screen = tmux.wait_screen(lambda s: "Accept ready-a1?" in s or "Refused" in s, timeout=15)
        assert "Accept ready-a1?" in screen, screen
        tmux.keys("Escape")
        tmux.wait_screen(lambda s: "Accept ready-a1?" not in s, timeout=15)
        assert row_state(tmux.screen(), "ready-a1") == "ready", "Escape closed the question without accepting"
        tmux.keys("a")
        tmux.wait_screen(lambda s: "Accept ready-a1?" in s, timeout=15)
        tmux.keys("y")
        deadline = time.monotonic() + 60
        log = ""
        while "lane ready-a1" not in log and time.monotonic() < deadline:
            log = subprocess.run(["git", "log", "--format=%s", "programme"], cwd=repo, capture_output=True,
                                 text=True, check=True).stdout
            time.sleep(0.2)
        assert "lane ready-a1: Add a subtract function." in log
        tmux.wait_screen(lambda s: row_state(s, "ready-a1") == "accepted", timeout=15)

        tmux.keys("q")
        dashboard.wait(20)  # not our child: psutil cannot tell its exit code, only that it ended
        assert not dashboard.is_running(), "q quits the dashboard"
        still = [lane for lane in StatePaths(repo).lane_ids() if supervisor_alive(repo, lane)]
        assert "busy-cpu-a1" in still or "question-a1" in still, f"supervisors died with the dashboard: {still}"

        # Started again on the same repository: every lane is there, as it is.
        tmux.kill()
        tmux2 = Tmux("again", tmux.socket + "b")
        try:
            tmux2.start([*cli, "--repo", str(repo)], repo)
            screen = tmux2.wait_screen(lambda s: all(f"{name}-a1" in s for name in
                                                     ("ready", "question", "stall", "fallback", "busy-cpu")))
            assert row_state(screen, "ready-a1") == "accepted"
            tmux2.keys("q")
        finally:
            tmux2.kill()
    finally:
        for demo_repo in tmp_path.glob("lanes-demo-*/calculator"):
            asyncio.run(_stop_all(demo_repo))


@pytest.mark.parametrize("how", ["SIGHUP", "SIGTERM"])
def test_a_demo_ended_by_a_hangup_or_sigterm_cleans_up_as_q_does(tmux: Tmux, tmp_path: Path, how: str) -> None:
    """Issue 32: a demo whose terminal went (SIGHUP: here tmux's own, as the session is killed) or that was
    sent SIGTERM left its lanes running and its repository behind. Now nothing of it is left."""
    tmux.start([sys.executable, "-m", "lanes_tui.app", "--demo", "--demo-dir", str(tmp_path)], tmp_path)
    try:
        tmux.wait_screen(lambda s: "question-a1" in s and "busy-cpu-a1" in s)
        repo = next(tmp_path.glob("lanes-demo-*/calculator"))
        dashboard = next(p for p in psutil.process_iter() if _safe(p) and str(tmp_path) in " ".join(p.cmdline())
                         and "lanes_tui.app" in " ".join(p.cmdline()) and "tmux" not in p.cmdline()[0])  # (its server's
        # command line names the dashboard's too)
        assert [lane for lane in StatePaths(repo).lane_ids() if supervisor_alive(repo, lane)], "lanes are running"
        if how == "SIGHUP":
            tmux.kill()  # the terminal goes: tmux hangs up on the pane's processes
        else:
            dashboard.send_signal(signal.SIGTERM)
        dashboard.wait(90)  # not our child: psutil says only that it ended
        assert not list(tmp_path.glob("lanes-demo-*")), "the demo's repository and worktrees are removed"
        assert _processes_under(tmp_path) == [], "no process of the demo is left"
    finally:
        for demo_repo in tmp_path.glob("lanes-demo-*/calculator"):
            asyncio.run(_stop_all(demo_repo))


#: The attention bar's words for the oldest open question: its lane, its age, its title.
WAITS = re.compile(r"question-a1 waits (\d+[smhd]\S*): Deploy the calculator")


def test_at_80x24_the_open_question_and_its_age_are_on_screen_and_the_age_moves(tmux: Tmux, tmp_path: Path) -> None:
    """Issue 32's acceptance: readable within 10 s of the question appearing, and the age moves."""
    tmux.start([sys.executable, "-m", "lanes_tui.app", "--demo", "--keep", "--demo-dir", str(tmp_path)], tmp_path,
               size=(80, 24))
    try:
        tmux.wait_screen(lambda s: "Lanes" in s and "Output" in s)  # the dashboard is drawn
        asked = _question_file(tmp_path)  # the demo's lane asks: from now, the lead has 10 s to see it
        first = tmux.wait_screen(lambda s: WAITS.search(s) is not None, timeout=10)
        age = _age(first)
        assert asked.exists() and age is not None, first
        # The age moves without anything else happening: a later screen shows another age.
        later = tmux.wait_screen(lambda s: _age(s) not in (None, age), timeout=15)
        assert _age(later) != age
        assert all(len(line) <= 80 for line in later.splitlines())
        tmux.keys("q")
        end = time.monotonic() + 30
        while tmux.alive() and time.monotonic() < end:  # the session ends with the dashboard
            time.sleep(0.2)
        assert not tmux.alive(), "q quits the dashboard"
    finally:
        for demo_repo in tmp_path.glob("lanes-demo-*/calculator"):
            asyncio.run(_stop_all(demo_repo))


def test_a_notification_leaves_no_column_behind(tmux: Tmux, repo: Path) -> None:
    """Issue 32: in tmux, a column stayed where a notification had been. It was the Output pane's empty
    scrollbar tracks, dark (`$scrollbar-background`) at its right edge and bottom while it had nothing to
    scroll, beside where the toast's edge had been. After a toast comes and goes, every cell inside the
    Output pane has the pane's own background, as tmux holds the screen."""
    import pyte

    tmux.start([sys.executable, "-m", "lanes_tui.app", "--repo", str(repo)], repo)
    try:
        tmux.wait_screen(lambda s: "palette" in s and "Output" in s)
        tmux.keys("k")  # no lane to kill: a warning toast over the bottom right, the Output pane's edge included
        tmux.wait_screen(lambda s: "select a lane first" in s, timeout=15)
        tmux.wait_screen(lambda s: "select a lane first" not in s, timeout=30)
        screen = pyte.Screen(120, 36)
        pyte.Stream(screen).feed(tmux.run("capture-pane", "-e", "-p", "-t", tmux.session).replace("\n", "\r\n"))
        rows = ["".join(screen.buffer[y][x].data for x in range(120)) for y in range(36)]
        top = next(y for y, row in enumerate(rows) if row.startswith("╭─ Output"))
        right = rows[top].index("╮")
        bottom = next(y for y in range(top + 1, 36) if rows[y].startswith("╰"))
        inside = {screen.buffer[y][x].bg for y in range(top + 1, bottom) for x in range(1, right)}
        assert len(inside) == 1, f"the Output pane's inside has several backgrounds: {inside}"
        tmux.keys("q")
    finally:
        tmux.kill()


def _processes_under(folder: Path) -> list[str]:
    """The processes that run from `folder` or name it: a lane's supervisor, agent or gate."""
    found = []
    for proc in psutil.process_iter():
        try:
            if str(folder) in " ".join(proc.cmdline()) or proc.cwd().startswith(str(folder)):
                found.append(f"{proc.pid} {' '.join(proc.cmdline())}")
        except psutil.Error:  # gone, a zombie, or not ours to read
            continue
    return found


def _question_file(demo_dir: Path, timeout: float = 120.0) -> Path:
    """The demo question's file, once the lane has written it (polled: it comes when the lane asks)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        found = [p for p in demo_dir.glob("lanes-demo-*/calculator/.lanes/state/inbox/question-a1/q_*.json")
                 if p.name.count(".") == 1]
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError("the demo's question-a1 never asked its question")


def _age(screen: str) -> str | None:
    match = WAITS.search(screen)
    return match.group(1) if match else None


def row_state(screen: str, lane: str) -> str | None:
    """The state column of a lane's row in the Lanes table (lane, task, provider, state, …)."""
    for line in screen.splitlines():
        cells = line.strip("│ ").split()
        if cells and cells[0] == lane and len(cells) > 3:
            return cells[3]
    return None


def _safe(proc: psutil.Process) -> bool:
    try:
        proc.cmdline()
    except psutil.Error:
        return False
    return True


async def _stop_all(repo: Path) -> None:
    await asyncio.gather(*(stop_lane(repo, lane) for lane in StatePaths(repo).lane_ids()))
