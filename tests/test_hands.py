"""The lead's hands on a running lane: the control socket, `send`, `peek`, attach, the conversation view.

Real lanes under real detached supervisors: a terminal (pty) sim lane that echoes what it reads, a
fake claude that acknowledges each user message, a plain sim lane that takes none. The commands
run as real processes; the socket is also driven directly where the command line cannot show it
(two viewers and the keyboard, the conversation stream). Waits are on events, never on sleeps.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyte
import pytest
from textual.app import App, ComposeResult
from textual.widgets import Input, Static

from lanes_tui.app.attach_client import detach_byte, format_turn
from lanes_tui.engine import LanesError, conversation, open_attach
from lanes_tui.engine.channels.screen import PromptPatterns, Screen
from lanes_tui.engine.channels.transcript import TranscriptParser, Turn, merge
from lanes_tui.engine.core.clock import RealClock
from lanes_tui.engine.lanes.cadence import OutputCadence
from lanes_tui.engine.lanes.launcher import stop_lane
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.supervisor.control import MAX_SOCKET_PATH, socket_path, sweep
from lanes_tui.widgets.conversation import ConversationScreen
from tests.fakes import CLAUDE_TABLE
from tests.helpers import cli, output, run_lane, status, wait_for, wait_state, write_config

SIMPTY = ('[providers.simpty]\nargv = ["{python}", "-m", "lanes_tui.engine.sim", "--prompt", "{prompt}"]\n'
          'prompt = "arg"\nchannel = "pty"\nfamily = "sim"\n')
ECHO = "say ready\necho-input 120\nsay bye"


def setup_lanes(repo: Path) -> None:
    write_config(repo, chains='backend = ["simpty"]', extra=SIMPTY + CLAUDE_TABLE)


def printed(repo: Path, lane: str) -> str:
    """What the lane's agent printed so far; "" before its output.log exists."""
    try:
        return output(repo, lane)
    except FileNotFoundError:
        return ""


def screen_text(repo: Path, lane: str) -> str:
    proc = cli(repo, "peek", lane, "--screen", "--json")
    return "\n".join(json.loads(proc.stdout)["lines"]) if proc.returncode == 0 else ""


def events(repo: Path, lane: str, kind: str) -> list[dict[str, Any]]:
    path = repo / ".lanes/state/lanes" / lane / "events.jsonl"
    return [e for e in map(json.loads, path.read_text().splitlines()) if e.get("type") == kind]


def stop(repo: Path, lane: str) -> None:
    asyncio.run(stop_lane(repo, lane))
    wait_state(repo, lane)


class Stream:
    """A raw attach connection read with a bound: what has arrived so far, waited for by content."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.data = b""
        sock.settimeout(0.2)

    def until(self, needle: bytes, timeout: float = 30.0) -> bytes:
        end = time.monotonic() + timeout
        while needle not in self.data:
            if time.monotonic() > end:
                raise AssertionError(f"{needle!r} never arrived; got {self.data[-2000:]!r}")
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                continue
            if not chunk:
                raise AssertionError(f"the stream ended before {needle!r}; got {self.data[-2000:]!r}")
            self.data += chunk
        return self.data


# --- pure parts ---------------------------------------------------------------------------------


def test_socket_path_is_the_lane_folder_or_a_short_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = Path(tempfile.mkdtemp(prefix="r", dir="/tmp"))  # a runtime dir short enough for the hashed name
    try:
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
        short = tmp_path / "lane"
        assert socket_path(short) == short / "control.sock"
        deep = tmp_path / ("x" * 120) / "lane"
        path = socket_path(deep)
        assert path.parent == run / "lanes-tui" / "control"
        assert len(os.fsencode(path)) <= MAX_SOCKET_PATH
        assert socket_path(deep) == path, "the same lane folder always gets the same socket"
        assert socket_path(tmp_path / ("y" * 120) / "lane") != path
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / ("z" * 90)))  # too long too: the temp folder
        assert socket_path(deep).parent == Path(tempfile.gettempdir()) / f"lanes-tui-{os.getuid()}"
        # Sockets of killed supervisors (nobody listens) are swept once old; live and new ones stay.
        folder = run / "sockets"
        folder.mkdir()
        socks = []
        for name, listen in (("dead-old", False), ("dead-new", False), ("live-old", True)):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.bind(str(folder / f"{name}.sock"))
            if listen:
                sock.listen()
                socks.append(sock)
            else:
                sock.close()
        for name in ("dead-old", "live-old"):
            os.utime(folder / f"{name}.sock", (time.time() - 3600, time.time() - 3600))
        sweep(folder)
        assert sorted(p.name for p in folder.iterdir()) == ["dead-new.sock", "live-old.sock"]
        for sock in socks:
            sock.close()
    finally:
        shutil.rmtree(run)


async def test_the_socket_is_the_leads_alone_and_says_when_no_agent_runs(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from lanes_tui.engine.supervisor import control

    paths = StatePaths(tmp_path)
    paths.lane("x-a1").dir.mkdir(parents=True)
    record = SimpleNamespace(id="x-a1", state="queued", state_reason="waiting for a slot", provider="sim")
    now = [100.0]
    cadence = OutputCadence(clock=lambda: now[0])
    host = SimpleNamespace(repo=tmp_path, store=SimpleNamespace(lane_paths=paths.lane), record=record, current=None,
                           cadence=cadence)
    server = await control.ControlServer.open(host)  # type: ignore[arg-type]
    assert server is not None

    async def ask(body: bytes) -> dict[str, Any]:
        reader, writer = await asyncio.open_unix_connection(str(server.path))
        writer.write(body + b"\n")
        reply = json.loads(await reader.readline())
        writer.close()
        return dict(reply)

    try:
        assert stat.S_IMODE(server.path.stat().st_mode) == 0o600
        real = control.peer_uid
        monkeypatch.setattr(control, "peer_uid", lambda writer: os.getuid() + 1)
        assert await ask(b'{"op": "hello"}') == {"ok": False,
                                                 "error": "only the lead's user may use this lane's control socket"}
        monkeypatch.setattr(control, "peer_uid", real)
        hello = await ask(b'{"op": "hello"}')
        assert hello["ok"] and hello["running"] is False and hello["state"] == "queued" and hello["watched"] is False
        idle = await ask(b'{"op": "send", "text": "hi"}')
        assert idle["not_running"] and "no agent running right now (state queued" in idle["error"]
        assert "JSON" in (await ask(b"not json"))["error"]
        assert "unknown request" in (await ask(b'{"op": "reboot"}'))["error"]
        # A watch lease holds in any state (a lane between runs too), is bounded, and a bad one is refused.
        assert not cadence.watched
        assert await ask(b'{"op": "watch", "seconds": 15}') == {"ok": True, "seconds": 15.0}
        assert cadence.watched and cadence.watched_until == 115.0
        assert (await ask(b'{"op": "hello"}'))["watched"] is True
        now[0] = 116.0
        assert not cadence.watched, "a lease nobody renews lapses"
        assert (await ask(b'{"op": "watch", "seconds": 100000}'))["seconds"] == 60.0
        for bad in (b'"x"', b"-1", b"0", b"true", b"NaN", b"null"):
            reply = await ask(b'{"op": "watch", "seconds": ' + bad + b"}")
            assert reply["ok"] is False and "positive number" in reply["error"], bad
    finally:
        await server.close()
    assert not server.path.exists() and not (paths.lane("x-a1").dir / "control.json").exists()


def test_transcript_turns_replace_grown_messages_and_merge_the_leads() -> None:
    lines = [
        {"type": "system", "subtype": "init", "session_id": "s"},
        {"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": "Let me"}]}},
        {"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": "Let me look"},
                                                                  {"type": "tool_use", "name": "Bash",
                                                                   "input": {"command": "ls  -la"}}]}},
        {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "content": "x"}]}},
        {"type": "assistant", "message": {"id": "m2", "content": [{"type": "text", "text": "ack: hi"}]}},
        {"type": "result", "subtype": "success", "result": "all done"},
    ]
    parser = TranscriptParser()
    offset = 0
    offsets = []
    for value in lines:
        raw = json.dumps(value).encode()
        offsets.append(offset)
        parser.feed(raw, offset)
        offset += len(raw) + 1
    parser.feed(b"not json at all", offset)
    assert [(t.role, t.text) for t in parser.turns] == [
        ("assistant", "Let me look"), ("tool", "Bash: ls -la"), ("assistant", "ack: hi"), ("result", "all done")]
    sent = [Turn("user", "hi", offsets[4])]
    merged = merge(parser.turns, sent)
    assert [t.text for t in merged] == ["Let me look", "Bash: ls -la", "hi", "ack: hi", "all done"]
    plain = TranscriptParser(structured=False)
    plain.feed(b"line one\r\n")
    plain.feed(b"   ")
    assert [(t.role, t.text) for t in plain.turns] == [("output", "line one")]
    assert format_turn({"role": "assistant", "text": "two\nlines"}) == "agent:  two\n        lines"


def test_repaint_draws_the_same_screen_on_a_fresh_terminal() -> None:
    screen = Screen(PromptPatterns.compile([]), RealClock(), columns=40, rows=6)
    screen.feed(b"plain \x1b[1;31mbold red\x1b[0m \x1b[38;5;120mcolour\x1b[0m\r\n"
                b"\x1b[7mreversed\x1b[0m \xe4\xb8\xad\r\n\x1b[4;10Hwhere\x1b[?25l")
    fresh = pyte.Screen(40, 6)
    pyte.ByteStream(fresh).feed(screen.repaint())
    assert "\n".join(line.rstrip() for line in fresh.display) == screen.text
    assert fresh.buffer[0][6].fg == "red" and fresh.buffer[0][6].bold
    assert fresh.buffer[1][0].reverse
    assert (fresh.cursor.y, fresh.cursor.x, fresh.cursor.hidden) == (3, 14, True)


def test_detach_keys() -> None:
    assert detach_byte("ctrl+]") == 0x1D
    assert detach_byte("ctrl+right_square_bracket") == 0x1D
    assert detach_byte("ctrl+g") == 7
    assert detach_byte("C-a") == 1
    with pytest.raises(LanesError, match="not a detach key"):
        detach_byte("alt+x")


def test_sim_echo_input_echoes_each_line_until_eof() -> None:
    proc = subprocess.run([sys.executable, "-m", "lanes_tui.engine.sim", "--prompt", "echo-input 30\nsay after"],
                          input="first\nsecond line\nno newline", capture_output=True, text=True, timeout=60,
                          check=True)
    assert proc.stdout.splitlines()[1:] == ["sim: echoing input for 30s", "echo: first", "echo: second line",
                                            "echo: no newline", "sim: input ended", "after", "sim: done"]
    bad = subprocess.run([sys.executable, "-m", "lanes_tui.engine.sim", "--prompt", "echo-input soon"],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False)
    assert "line 1 is not a valid step" in bad.stderr


# --- a terminal lane ------------------------------------------------------------------------------


def test_terminal_lane_send_peek_and_viewers(repo: Path, tmp_path: Path) -> None:
    # A repository deep enough that <lane dir>/control.sock is too long for a Unix socket.
    deep = tmp_path / ("deep-" * 16) / "project"
    shutil.copytree(repo, deep, symlinks=True)
    repo = deep
    setup_lanes(repo)
    lane = run_lane(repo, ECHO, lane_id="echo", extra=("--raw",))
    try:
        wait_for(lambda: "sim: echoing input" in screen_text(repo, lane))
        where = json.loads((repo / ".lanes/state/lanes" / lane / "control.json").read_text())["path"]
        assert not where.startswith(str(repo)), "the lane folder's path is too long: a short one is used"
        assert stat.S_IMODE(os.stat(where).st_mode) == 0o600

        sent = cli(repo, "send", lane, "hello pty")
        assert sent.returncode == 0, sent.stderr
        assert sent.stdout.strip() == f"sent to {lane} (pty)"
        wait_for(lambda: "echo: hello pty" in screen_text(repo, lane))
        as_json = json.loads(cli(repo, "send", lane, "second", "--json").stdout)
        assert as_json == {"lane": lane, "sent": True, "via": "pty"}
        peeked = json.loads(cli(repo, "peek", lane, "--screen", "--json", check=True).stdout)
        assert peeked["source"] == "screen" and peeked["rows"] == 40 and peeked["columns"] == 120
        wait_for(lambda: "echo: second" in cli(repo, "peek", lane, "--lines", "3").stdout)
        out = json.loads(cli(repo, "peek", lane, "--json", check=True).stdout)
        assert out["source"] == "output" and "echo: hello pty" in out["lines"]
        assert [e["text"] for e in events(repo, lane, "send")] == ["hello pty", "second"]

        refused = cli(repo, "send", lane, "two\nlines")
        assert refused.returncode == 1 and "one line at a time" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1

        # Two viewers: the first holds the keyboard, the second watches (its keys ring the bell).
        first_sock, first = open_attach(repo, lane, rows=45, columns=130)
        second_sock, second = open_attach(repo, lane, rows=45, columns=130)
        with first_sock, second_sock:
            assert first["keyboard"] is True and second["keyboard"] is False
            one, two = Stream(first_sock), Stream(second_sock)
            assert b"echo: hello pty" in one.until(b"you hold the keyboard"), "the screen is repainted first"
            two.until(b"read-only: another viewer holds the keyboard")
            second_sock.sendall(b"ignored\r")
            two.until(b"\x07")
            first_sock.sendall(b"from viewer\r")
            one.until(b"echo: from viewer")
            two.until(b"echo: from viewer")
            first_sock.close()
            two.until(b"you hold the keyboard")
            second_sock.sendall(b"heir\r")
            two.until(b"echo: heir")
        assert "echo: ignored" not in output(repo, lane)
        wait_for(lambda: len(events(repo, lane, "detach")) == 2)
        assert status(repo, lane)["state"] == "running", "viewers come and go, the lane runs on"
    finally:
        stop(repo, lane)
    assert not (repo / ".lanes/state/lanes" / lane / "control.json").exists()
    assert not Path(where).exists()
    gone = cli(repo, "send", lane, "late")
    assert gone.returncode == 2 and "is not running" in gone.stderr
    assert cli(repo, "peek", lane, "--screen").returncode == 2
    assert "echo: heir" in cli(repo, "peek", lane, check=True).stdout, "peek reads output.log without a supervisor"


# --- a claude lane, and the dashboard ------------------------------------------------------------


class ConversationHost(App[None]):
    def __init__(self, screen: ConversationScreen) -> None:
        super().__init__()
        self.conversation = screen

    def compose(self) -> ComposeResult:
        yield Static("dashboard")

    def on_mount(self) -> None:
        self.push_screen(self.conversation)


async def test_conversation_screen_shows_turns_and_sends() -> None:
    turns = [Turn("user", "the task"), Turn("assistant", "[b]not markup[/b]", 10)]
    sent: list[str] = []

    async def load() -> list[Turn]:
        return list(turns)

    async def send(text: str) -> str:
        if text == "refuse me":
            raise LanesError("the lane said no", "try later")
        sent.append(text)
        turns.append(Turn("user", text, 20))
        return "sent (pty)"

    app = ConversationHost(ConversationScreen("demo-a1", load=load, send=send, every_s=0.05))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ConversationScreen)
        await pilot.press(*"hello", "enter")
        await pilot.pause(0.3)
        assert sent == ["hello"]
        texts = [str(s.render()) for s in screen.query(".turn").results(Static)]
        assert texts == ["lead: the task", "agent: [b]not markup[/b]", "lead: hello"]
        await pilot.press(*"refuse me", "enter")
        await pilot.pause(0.2)
        status = screen.query_one("#conversation-status", Static)
        assert "not sent: the lane said no" in str(status.render()) and status.has_class("refused")
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ConversationScreen)

    read_only = ConversationHost(ConversationScreen("old-a1", load=load, send=None))
    async with read_only.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert read_only.screen.query_one("#message", Input).disabled


def _read_events(stream: Stream, count_turns: int) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.data.split(b"\n")[1:] if line.strip()][:count_turns]


async def test_claude_lane_send_attach_and_the_dashboard(repo: Path) -> None:
    from lanes_tui.app.dashboard.app import LanesApp
    from tests.fake_engine import FakeEngine
    from tests.fake_engine import lane as fake_lane

    setup_lanes(repo)
    lane = run_lane(repo, "chat", lane_id="chat", extra=("--lane", "fakeclaude", "--raw"))
    try:
        wait_for(lambda: "ready for messages" in printed(repo, lane))
        sent = cli(repo, "send", lane, "hello agent", "--json")
        assert sent.returncode == 0, sent.stdout
        assert json.loads(sent.stdout) == {"lane": lane, "sent": True, "via": "claude-stream-json"}
        wait_for(lambda: "ack: hello agent" in output(repo, lane))
        turns = [(t.role, t.text) for t in conversation(repo, lane)]
        assert turns == [("user", "chat"), ("assistant", "ready for messages"), ("user", "hello agent"),
                         ("assistant", "ack: hello agent")]
        no_screen = cli(repo, "peek", lane, "--screen")
        assert no_screen.returncode == 2 and "not a terminal lane" in no_screen.stderr

        # The socket's conversation stream: the turns so far, then a message sent on it and its ack.
        sock, header = open_attach(repo, lane, rows=40, columns=120)
        with sock:
            assert header["mode"] == "conversation" and header["input"] is True
            stream = Stream(sock)
            stream.until(b"ack: hello agent")
            sock.sendall(b'{"op": "send", "text": "via the socket"}\n')
            stream.until(b'"sent":true')
            stream.until(b"ack: via the socket")

        # The dashboard: `t` opens the conversation view, a line typed there reaches the agent; `T` sends one.
        engine = FakeEngine(repo, [fake_lane(lane, "running")])
        app = LanesApp(repo, engine=engine, flush_s=0.01)  # type: ignore[arg-type]
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.pause()
            await pilot.press("t")
            for _ in range(100):
                await pilot.pause(0.05)
                if isinstance(app.screen, ConversationScreen):
                    break
            view = app.screen
            assert isinstance(view, ConversationScreen)
            await pilot.press(*"from the dashboard", "enter")
            for _ in range(200):
                await pilot.pause(0.05)
                if any("ack: from the dashboard" in str(s.render()) for s in view.query(".turn").results(Static)):
                    break
            else:
                raise AssertionError("the agent's ack never showed in the conversation view")
            await pilot.press("escape")
            await pilot.pause()
            await pilot.press("T")
            await pilot.pause()
            await pilot.press(*"one line", "enter")
            for _ in range(100):
                await pilot.pause(0.05)
                if any("one line" in n.message for n in app._notifications):
                    break
            assert any(n.title == "Sent (claude-stream-json)" for n in app._notifications)
        wait_for(lambda: "ack: one line" in output(repo, lane))

        done = cli(repo, "send", lane, "done")
        assert done.returncode == 0, done.stderr
        wait_state(repo, lane)
        after = cli(repo, "send", lane, "too late", "--json")
        assert after.returncode == 2
        assert json.loads(after.stdout)["sent"] is False and "is not running" in json.loads(after.stdout)["error"]
        assert "ack: done" in cli(repo, "peek", lane, check=True).stdout
        assert [e["via"] for e in events(repo, lane, "send")] == ["claude-stream-json"] * 5
    finally:
        await stop_lane(repo, lane)
        wait_state(repo, lane)


# --- refusals --------------------------------------------------------------------------------------


def test_plain_lane_and_unknown_lane_refuse_clearly(repo: Path) -> None:
    setup_lanes(repo)
    lane = run_lane(repo, "say started\nsleep 60", lane_id="plain", extra=("--lane", "sim"))
    busy = run_lane(repo, "print 2000 --rate 20", lane_id="busy", extra=("--raw",))
    try:
        wait_for(lambda: "line 3:" in printed(repo, busy))
        redrawing = cli(repo, "send", busy, "now")
        assert redrawing.returncode == 1 and "mid-redraw" in redrawing.stderr, redrawing.stderr
        assert events(repo, busy, "send") == []
        wait_for(lambda: "started" in printed(repo, lane))
        refused = cli(repo, "send", lane, "hello")
        assert refused.returncode == 1
        assert "takes no messages" in refused.stderr and "stdin is closed" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
        attach = cli(repo, "attach", lane)
        assert attach.returncode == 2 and "runs on pipes" in attach.stderr
        assert "not a terminal lane" in cli(repo, "peek", lane, "--screen").stderr
        assert "started" in cli(repo, "peek", lane, "--lines", "2", check=True).stdout
        assert events(repo, lane, "send") == []
    finally:
        stop(repo, lane)
        stop(repo, busy)
    for args in (("send", "nope-a1", "hi"), ("peek", "nope-a1"), ("attach", "nope-a1")):
        proc = cli(repo, *args)
        assert proc.returncode == 2 and "no such lane nope-a1" in proc.stderr, (args, proc.stderr)
    inside = cli(repo, "send", lane, "hi", env={**os.environ, "LANES_LANE": "other-a1"})
    assert inside.returncode == 2 and "lead's command" in inside.stderr
