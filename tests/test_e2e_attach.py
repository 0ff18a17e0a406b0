"""Attach end to end, as a lead would: `lanes-tui attach` and the dashboard's `t` in tmux, keys typed.

A terminal sim lane echoes what it reads (`echo-input`): a line typed through attach comes back on the
agent's screen, ctrl+] detaches and the lane runs on. A fake claude lane acknowledges each user
message: a line typed in the conversation client comes back as `ack: …`.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lanes_tui.engine.lanes.launcher import stop_lane
from tests.helpers import cli, run_lane, status, wait_for, wait_state
from tests.test_e2e_tmux import Tmux
from tests.test_hands import ECHO, printed, setup_lanes

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")


def _start(tmux: Tmux, repo: Path, *args: str) -> None:
    """`lanes-tui ARGS` in a window taller and wider than the agent's 120x40 terminal (room for the
    status line), born at that size so the client reads it at once."""
    subprocess.run(["tmux", "-L", tmux.socket, "-f", "/dev/null", "start-server", ";",
                    "set-option", "-g", "default-size", "130x45", ";",
                    "new-session", "-d", "-s", tmux.session, "-x", "130", "-y", "45", "-c", str(repo),
                    "env", "-u", "COLUMNS", "-u", "LINES", sys.executable, "-m", "lanes_tui.app", *args],
                   check=True)


def test_attach_to_a_terminal_lane_type_see_the_echo_detach(repo: Path, tmp_path: Path) -> None:
    setup_lanes(repo)
    lane = run_lane(repo, ECHO, lane_id="echo", extra=("--raw",))
    tmux = Tmux("attach", f"lanes-attach-{tmp_path.name[-8:]}")
    try:
        wait_for(lambda: "sim: echoing input" in printed(repo, lane))
        _start(tmux, repo, "attach", lane)
        screen = tmux.wait_screen(lambda s: "sim: echoing input" in s, timeout=30)
        assert "ready" in screen
        tmux.keys("hello from tmux", "Enter")
        tmux.wait_screen(lambda s: "echo: hello from tmux" in s, timeout=30)
        tmux.keys("C-]")
        tmux.wait_screen(lambda s: not tmux.alive() or "detached" in s, timeout=30)
        assert status(repo, lane)["state"] == "running", "detaching leaves the lane running"

        # The dashboard's `t`: it steps aside for the terminal, and comes back on ctrl+].
        dashboard = Tmux("dash", tmux.socket + "d")
        try:
            _start(dashboard, repo, "--repo", str(repo))
            dashboard.wait_screen(lambda s: lane in s and "Lanes" in s)
            dashboard.keys("t")
            dashboard.wait_screen(lambda s: "echo: hello from tmux" in s and "you hold the keyboard" in s)
            dashboard.keys("again from the dashboard", "Enter")
            dashboard.wait_screen(lambda s: "echo: again from the dashboard" in s)
            dashboard.keys("C-]")
            dashboard.wait_screen(lambda s: "Lanes" in s and "Detached" in s)
            # Back from the suspend, the dashboard reads keys again (its input thread was started anew).
            dashboard.keys("?")
            dashboard.wait_screen(lambda s: "escape / q / ? close" in s, timeout=30)
            dashboard.keys("q")
        finally:
            dashboard.kill()
        assert status(repo, lane)["state"] == "running"
    finally:
        tmux.kill()
        asyncio.run(stop_lane(repo, lane))
        wait_state(repo, lane)


def test_attach_to_a_claude_lane_and_send_a_message(repo: Path, tmp_path: Path) -> None:
    setup_lanes(repo)
    lane = run_lane(repo, "chat", lane_id="chat", extra=("--lane", "fakeclaude", "--raw"))
    tmux = Tmux("chat", f"lanes-chat-{tmp_path.name[-8:]}")
    try:
        wait_for(lambda: "ready for messages" in printed(repo, lane))
        _start(tmux, repo, "attach", lane)
        tmux.wait_screen(lambda s: "agent:  ready for messages" in s, timeout=30)
        tmux.keys("hello claude", "Enter")
        screen = tmux.wait_screen(lambda s: "agent:  ack: hello claude" in s, timeout=30)
        assert "lead:   hello claude" in screen
        tmux.keys("C-]")
        tmux.wait_screen(lambda s: not tmux.alive() or "detached" in s, timeout=30)
        assert status(repo, lane)["state"] == "running"
        assert cli(repo, "send", lane, "done").returncode == 0
        wait_state(repo, lane)
        assert status(repo, lane)["result"] == "OK"
    finally:
        tmux.kill()
        asyncio.run(stop_lane(repo, lane))
        wait_state(repo, lane)
