"""`python -m tests.screenshots` — SVG screenshots of the real dashboard on the embedded demo.

Builds the demo repository (`engine.demo.build_demo`), shortens its idle timeout in the demo's own
`.lanes/config.toml` (so the stalling lane stalls within seconds, not twenty), starts the demo
lanes as `lanes-tui --demo` does, and opens the real `LanesApp` at 120×36 with `App.run_test`.
Once the lanes show every interesting state (ready and reviewed, waiting on a question, stalled,
rejected by its gates, rejected by its review), it saves into `screenshots/`:

- `demo.svg`   the dashboard in that state,
- `meters.svg` the Meters pane maximized: the machine, the heavy slots, the caps per lane and what
  enforces each,
- `plan.svg`   the dashboard with the Plan tab open on the demo's plan,
- `gates.svg`  the Gates tab on the broken-gates lane: its steps, and the failing step's output,
- `accept.svg` the accept modal of the ready lane (`a`),
- `help.svg`   the help screen (`?`),
- `compact.svg` the dashboard on an 80×24 terminal (the compact layout), the Inbox tab up (`6`),
- `conversation.svg` the conversation view (`t`) of a real claude stream-json lane: a lane started
  on the demo repository once the other shots are saved, running the fake claude CLI
  (`tests/fakes/fake_claude.py`, `chat` mode, a `[providers.fakeclaude]` added to the demo's config)
  through the real supervisor and channel; the lane is selected in the dashboard, `t` opens the view,
  lines are typed into its message line and sent through the lane's control socket, and the shot is
  saved once the agent's `ack:` of each is on screen. Nothing is staged or parsed by hand.

Every lane (the conversation lane too) is stopped and the demo removed afterwards, whatever happens.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from lanes_tui.engine import lane_hands
from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.lanes.launcher import LaunchRequest, launch_lane, stop_lane
from lanes_tui.engine.sim.demo import Demo, build_demo, start_demo_lanes
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.status import LaneStatus
from tests.fakes import CLAUDE_TABLE

SIZE = (120, 36)
#: The terminal of `compact.svg`: the compact layout's own test size (`tests/test_app_snapshot.py`).
COMPACT_SIZE = (80, 24)
OUT = Path(__file__).resolve().parent.parent / "screenshots"
#: The states the demo screenshot waits for (lane -> states that count), so every pane has something.
WANTED = {"ready-a1": {"ready"}, "question-a1": {"waiting"}, "stall-a1": {"stalled"},
          "broken-gates-a1": {"rejected"}, "fallback-a1": {"ready"}, "busy-cpu-a1": {"running"},
          "review-blocked-a1": {"rejected"}}
IDLE_TIMEOUT_S = 8
#: The conversation lane: the fake claude's `chat` mode (the prompt's last line starts with `chat`)
#: says "ready for messages" and answers each message with `ack: <text>`.
CHAT_PROVIDER = "fakeclaude"
CHAT_PROMPT = "chat with the lead about the calculator's next feature"
CHAT_SLUG = "chat"
CHAT_LINES = ("add a divide function that refuses b == 0", "and a test for it, please")


def configure_demo(demo: Demo, idle_timeout_s: int) -> None:
    """Edit the demo repository's own config (committed there, so its checkout stays clean): a short
    idle timeout, and the fake claude provider the conversation lane runs on."""
    config = demo.repo / ".lanes" / "config.toml"
    text, count = re.subn(r"(?m)^idle_timeout_s = \d+", f"idle_timeout_s = {idle_timeout_s}", config.read_text())
    if count != 1:
        raise RuntimeError(f"no idle_timeout_s line in {config}")
    config.write_text(text.rstrip("\n") + "\n\n" + CLAUDE_TABLE)
    for argv in (["add", str(config)],
                 ["commit", "-q", "-m", "demo: short idle timeout and a fake claude for screenshots"]):
        subprocess.run(["git", *argv], cwd=demo.repo, check=True, capture_output=True)


def start_chat_lane(demo: Demo) -> str:
    """A claude stream-json lane on the fake claude; no idle limit (it waits quietly for the lead)."""
    request = LaunchRequest(prompt=CHAT_PROMPT, lane=CHAT_PROVIDER, slug=CHAT_SLUG, caps={"idle_timeout_s": 0})
    return launch_lane(demo.repo, load_config(demo.repo), request).id


async def shoot(demo: Demo, out: Path, *, timeout_s: float = 120.0) -> list[Path]:
    from textual.widgets import TabbedContent

    from lanes_tui.app.dashboard.app import LanesApp
    from lanes_tui.app.dashboard.screen import DashboardScreen
    from lanes_tui.widgets import ConfirmModal, HelpScreen, LanesTable, MetersPane

    app = LanesApp(demo.repo, demo=True)
    saved = []
    async with app.run_test(size=SIZE) as pilot:
        screen = await _until(lambda: app.screen if isinstance(app.screen, DashboardScreen) else None, 30)
        await _until(lambda: _states_reached(screen.lanes), timeout_s, what=lambda: _states(screen.lanes))
        await asyncio.sleep(2.5)  # a couple of meter samples and a machine poll, so the meters show values
        table = screen.query_one(LanesTable)
        table.move_cursor(row=table.get_row_index("ready-a1"), animate=False)
        await _until(lambda: screen.selected_lane == "ready-a1", 10)
        await pilot.pause(1.0)
        saved.append(Path(app.save_screenshot("demo.svg", str(out))))

        meters = screen.query_one(MetersPane)  # maximized, so every cap and its mechanism is in full
        screen.maximize(meters, container=False)
        await pilot.pause(0.5)
        saved.append(Path(app.save_screenshot("meters.svg", str(out))))
        screen.minimize()
        await pilot.pause(0.3)

        screen.query_one(TabbedContent).active = "tab-plan"  # the demo's plan: a wave done, one to go
        await pilot.pause(3.5)  # the Plan pane refreshes every few seconds
        saved.append(Path(app.save_screenshot("plan.svg", str(out))))

        table.move_cursor(row=table.get_row_index("broken-gates-a1"), animate=False)  # its failed gate
        await _until(lambda: screen.selected_lane == "broken-gates-a1", 10)
        screen.query_one(TabbedContent).active = "tab-gates"
        await pilot.pause(1.5)
        saved.append(Path(app.save_screenshot("gates.svg", str(out))))
        table.move_cursor(row=table.get_row_index("ready-a1"), animate=False)
        await _until(lambda: screen.selected_lane == "ready-a1", 10)
        screen.query_one(TabbedContent).active = "tab-output"
        await pilot.pause(0.3)

        await pilot.press("a")
        modal = await _until(lambda: app.screen if isinstance(app.screen, ConfirmModal) else None, 30)
        await pilot.pause(0.5)
        saved.append(Path(app.save_screenshot("accept.svg", str(out))))
        await pilot.press("escape")  # `n` / escape: nothing is accepted
        await _until(lambda: app.screen is not modal, 10)

        await pilot.press("question_mark")
        await _until(lambda: app.screen if isinstance(app.screen, HelpScreen) else None, 10)
        await pilot.pause(0.5)
        saved.append(Path(app.save_screenshot("help.svg", str(out))))
        await pilot.press("escape")
        await _until(lambda: app.screen is screen, 10)

        saved.append(await _shoot_compact(app, pilot, screen, out))
        saved.append(await _shoot_conversation(demo, app, pilot, screen, out))
    return saved


async def _shoot_compact(app: Any, pilot: Any, screen: Any, out: Path) -> Path:
    """The same dashboard on an 80×24 terminal: the compact layout, with the Inbox tab brought up by
    its key (`6`), then the terminal back to `SIZE`."""
    await pilot.resize_terminal(*COMPACT_SIZE)
    await _until(lambda: screen.has_class("-compact"), 10)
    await pilot.press("6")
    await _until(lambda: screen.has_class("-side-inbox"), 10)
    await pilot.pause(1.0)
    path = Path(app.save_screenshot("compact.svg", str(out)))
    await pilot.press("1")
    await pilot.resize_terminal(*SIZE)
    await _until(lambda: not screen.has_class("-compact"), 10)
    await pilot.pause(0.3)
    return path


async def _shoot_conversation(demo: Demo, app: Any, pilot: Any, screen: Any, out: Path) -> Path:
    """Start the fake claude lane, select it, `t`, type each line and wait for its `ack:`."""
    from lanes_tui.widgets import LanesTable
    from lanes_tui.widgets.conversation import ConversationScreen

    lane = await asyncio.to_thread(start_chat_lane, demo)
    await _until(lambda: lane in screen.lanes, 30, what=lambda: sorted(screen.lanes))

    async def talking() -> bool:  # its supervisor answers on the socket and the agent has spoken
        hands = await asyncio.to_thread(lane_hands, demo.repo, lane)
        log = StatePaths(demo.repo).lane(lane).output
        return bool(hands.get("running") and hands.get("mode") == "conversation" and log.exists()
                    and "ready for messages" in log.read_text(errors="replace"))

    await _until_async(talking, 30, what=lambda: screen.lanes[lane].state)
    table = screen.query_one(LanesTable)
    table.move_cursor(row=table.get_row_index(lane), animate=False)
    await _until(lambda: screen.selected_lane == lane, 10)
    await pilot.press("t")
    view = await _until(lambda: app.screen if isinstance(app.screen, ConversationScreen) else None, 30)
    await _until(lambda: any("ready for messages" in t.text for t in view.turns), 30,
                 what=lambda: [t.text for t in view.turns])
    for line in CHAT_LINES:
        await pilot.press(*line, "enter")
        await _until(lambda line=line: any(t.role == "assistant" and t.text == f"ack: {line}" for t in view.turns),
                     30, what=lambda: [t.text for t in view.turns])
    await pilot.pause(0.5)
    path = Path(app.save_screenshot("conversation.svg", str(out)))
    await pilot.press("escape")
    await _until(lambda: app.screen is screen, 10)
    return path


def _states(lanes: dict[str, LaneStatus]) -> dict[str, str]:
    return {lane_id: status.state for lane_id, status in lanes.items()}


def _states_reached(lanes: dict[str, LaneStatus]) -> bool:
    states = _states(lanes)
    return all(states.get(lane) in wanted for lane, wanted in WANTED.items())


async def _until(predicate: Any, timeout: float, what: Any = None) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0.1)
    raise RuntimeError(f"timed out after {timeout:g}s" + (f": {what()}" if what else ""))


async def _until_async(predicate: Any, timeout: float, what: Any = None) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = await predicate()
        if value:
            return value
        await asyncio.sleep(0.2)
    raise RuntimeError(f"timed out after {timeout:g}s" + (f": {what()}" if what else ""))


async def _stop_all(repo: Path) -> None:
    await asyncio.gather(*(stop_lane(repo, lane) for lane in StatePaths(repo).lane_ids()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.screenshots", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"folder for the SVGs (default {OUT})")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    demo = build_demo()
    try:
        configure_demo(demo, IDLE_TIMEOUT_S)
        start_demo_lanes(demo)
        saved = asyncio.run(shoot(demo, args.out))
    finally:
        asyncio.run(_stop_all(demo.repo))
        demo.remove()
    for path in saved:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
