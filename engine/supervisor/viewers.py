"""What the control socket does to a running agent: type a message, show its screen, let viewers in.

Split from `supervisor.control` (the socket and its requests). Everything here runs on the
supervisor's event loop next to the agent's pump, with no await between reading the agent's state
and acting on it, so a viewer's repaint and the stream that follows it never miss or repeat a byte.
Channel modules are imported only when a lane of theirs needs them (the supervisor's import budget).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from lanes_tui.engine.channels.pty_process import PtyTerminal
    from lanes_tui.engine.channels.screen import Screen
    from lanes_tui.engine.lanes.agent_run import AgentRun

log = logging.getLogger(__name__)

CLAUDE = "claude-stream-json"
#: A viewer that reads this far behind the agent is let go rather than buffered without end.
MAX_BACKLOG = 8 << 20
#: How often a conversation viewer's output.log is read for new turns.
FOLLOW_S = 0.2
BELL = b"\x07"


def _refuse(error: str, fix: str | None = None) -> dict[str, Any]:
    return {"ok": False, "error": error, **({"fix": fix} if fix else {})}


def _encode(value: dict[str, Any]) -> bytes:
    return (json.dumps(value, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")


def mode(run: AgentRun) -> str:
    """`pty` (a terminal to attach to), `conversation` (messages in, turns out) or `output` (pipes)."""
    channel = run.channel
    if channel is not None and channel.uses_pty:
        return "pty"
    return "conversation" if channel is not None and channel.name == CLAUDE else "output"


def takes_input(run: AgentRun) -> bool:
    """Whether a message can reach the agent now."""
    kind = mode(run)
    if kind == "pty":
        return run.terminal is not None and not run.terminal.ended
    return kind == "conversation" and not getattr(run.channel, "result_seen", False)


def screen_reply(run: AgentRun) -> dict[str, Any]:
    """The `peek --screen` reply: the terminal's rows as the prompt detector sees them."""
    from lanes_tui.engine.channels.screen import COLUMNS, ROWS

    if run.terminal is not None:
        run.terminal.refresh()
    screen = cast("Screen", getattr(run.channel, "screen", None))
    row, column, hidden = screen.cursor
    return {"ok": True, "screen": True, "lines": screen.text.split("\n"), "rows": ROWS, "columns": COLUMNS,
            "cursor": [row, column], "cursor_hidden": hidden, "still": screen.still()}


async def deliver(run: AgentRun, text: str, *, settle_s: float, lane_id: str) -> dict[str, Any]:
    """Write one message of the lead's to the agent the way its channel takes input, or refuse."""
    channel = run.channel
    assert channel is not None
    if channel.uses_pty:
        return await _type_line(run, text, settle_s, lane_id)
    if channel.name == CLAUDE:
        if getattr(channel, "result_seen", False):
            return _refuse(f"lane {lane_id}'s agent has given its result and its input is closed",
                           f"relaunch it with the message: `lanes-tui recover {lane_id} --relaunch`")
        from lanes_tui.engine.channels.claude_wire import user_message

        if not channel.io.write(user_message(text)):
            return _refuse(f"lane {lane_id}'s agent no longer reads its input", "it is ending; see `lanes-tui status`")
        return {"ok": True, "via": CLAUDE}
    return _refuse(f"lane {lane_id} takes no messages: its agent (channel {channel.name}) read its prompt and "
                   "its stdin is closed", "only terminal (channel = \"pty\") and claude-stream-json lanes take "
                   "messages; questions it asks are answered with `lanes-tui answer`")


async def _type_line(run: AgentRun, text: str, settle_s: float, lane_id: str) -> dict[str, Any]:
    """The text, a pause, then Enter, typed once the screen is still (as the prompt detector wants it)."""
    from lanes_tui.engine.channels.pty import ENTER, KEY_PAUSE_S

    line = text.rstrip("\r\n")
    if "\n" in line or "\r" in line:
        return _refuse("a terminal lane takes one line at a time", "send each line on its own")
    terminal, screen = run.terminal, getattr(run.channel, "screen", None)
    if terminal is None or terminal.ended or screen is None:
        return _refuse(f"lane {lane_id}'s terminal is not open", "see `lanes-tui status`")
    waiting = getattr(run.channel, "open", None)
    if waiting is not None:
        return _refuse(f"lane {lane_id} is at a terminal prompt that waits in the inbox ({waiting.qid}); "
                       "typing now would answer it", f"answer it: `lanes-tui answer {waiting.qid} yes|no`")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + settle_s
    while True:
        terminal.refresh()
        if screen.still():
            break
        if loop.time() >= deadline:
            return _refuse(f"lane {lane_id}'s agent is mid-redraw: its screen kept changing for {settle_s:g}s, "
                           "so the text could land anywhere", f"try again in a moment, or `lanes-tui attach {lane_id}`")
        await asyncio.sleep(0.05)
    if not terminal.write(line.encode("utf-8")):
        return _refuse(f"lane {lane_id}'s terminal could not be written to", "see `lanes-tui status`")
    await asyncio.sleep(KEY_PAUSE_S)
    terminal.write(ENTER)
    return {"ok": True, "via": "pty"}


class _Viewer:
    """One attached terminal client."""

    def __init__(self, writer: asyncio.StreamWriter, *, keyboard: bool, tall: bool, columns: int,
                 detach: str) -> None:
        self.writer = writer
        self.keyboard = keyboard
        self.tall = tall
        self.columns = columns
        self.detach = detach
        self.closed = False

    def write(self, data: bytes) -> None:
        if self.closed:
            return
        if self.writer.transport.get_write_buffer_size() > MAX_BACKLOG:
            log.info("a viewer fell %d bytes behind: letting it go", MAX_BACKLOG)
            self.close()
            return
        self.writer.write(data)

    def status(self, lane_id: str, rows: int) -> bytes:
        """The line below the agent's terminal (only for a viewer taller than it), cursor kept."""
        if not self.tall:
            return b""
        who = "you hold the keyboard" if self.keyboard else "read-only: another viewer holds the keyboard"
        text = f" lanes-tui · lane {lane_id} · {who} · {self.detach} detaches "[: max(1, self.columns)]
        return f"\x1b7\x1b[{rows + 1};1H\x1b[0;7m{text}\x1b[0m\x1b[K\x1b8".encode()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.writer.close()


class PtyRoom:
    """The viewers of one agent terminal: the first holds the keyboard, the rest watch."""

    def __init__(self, terminal: PtyTerminal, screen: Screen, lane_id: str, on_empty: Callable[[], object]) -> None:
        self.terminal = terminal
        self.screen = screen
        self.lane_id = lane_id
        self.on_empty = on_empty
        self.viewers: list[_Viewer] = []
        terminal.listeners.append(self._broadcast)

    def _broadcast(self, data: bytes) -> None:
        if not data:
            self.end("the agent's terminal closed")
            return
        for viewer in list(self.viewers):
            viewer.write(data)

    def end(self, why: str) -> None:
        log.info("closing %d viewer(s): %s", len(self.viewers), why)
        for viewer in list(self.viewers):
            viewer.close()
        self._leave()

    def _leave(self) -> None:
        with contextlib.suppress(ValueError):
            self.terminal.listeners.remove(self._broadcast)
        self.on_empty()

    async def serve(self, body: dict[str, Any], reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        from lanes_tui.engine.channels.screen import COLUMNS, ROWS

        rows, columns = body.get("rows"), body.get("columns")
        rows = rows if isinstance(rows, int) else ROWS
        columns = columns if isinstance(columns, int) else COLUMNS
        detach = str(body.get("detach") or "ctrl+]")[:20]
        viewer = _Viewer(writer, keyboard=not any(v.keyboard for v in self.viewers), tall=rows > ROWS,
                         columns=columns, detach=detach)
        self.terminal.refresh()  # the screen takes in everything printed so far before it is painted
        writer.write(_encode({"ok": True, "mode": "pty", "keyboard": viewer.keyboard, "rows": ROWS,
                              "columns": COLUMNS, "viewers": len(self.viewers) + 1}))
        region = f"\x1b[1;{ROWS}r".encode() if viewer.tall else b""  # the agent's lines scroll above the status
        writer.write(region + self.screen.repaint() + viewer.status(self.lane_id, ROWS))
        self.viewers.append(viewer)  # from here on it gets every byte: no await since the repaint
        try:
            while not viewer.closed:
                data = await reader.read(65536)
                if not data:
                    break
                if viewer.keyboard:
                    self.terminal.write(data)
                else:
                    viewer.write(BELL)
        finally:
            with contextlib.suppress(ValueError):
                self.viewers.remove(viewer)
            viewer.close()
            if viewer.keyboard and self.viewers:
                heir = self.viewers[0]
                heir.keyboard = True
                heir.write(heir.status(self.lane_id, ROWS))
            if not self.viewers:
                self._leave()


class Conversation:
    """One viewer of a structured lane: the turns so far, each new turn, and its messages sent."""

    def __init__(self, repo: Path, lane_id: str, output: Path, run: AgentRun, live: Callable[[], bool],
                 send: Callable[[str], Awaitable[dict[str, Any]]]) -> None:
        from lanes_tui.engine.channels.transcript import TranscriptParser

        self.repo = repo
        self.lane_id = lane_id
        self.output = output
        self.run = run
        self.live = live
        self.send = send
        self.parser = TranscriptParser()
        self.writer: asyncio.StreamWriter | None = None
        self._shown: dict[tuple[str, int], str] = {}
        #: How far output.log has been read, and the partial line after that.
        self.offset = 0
        self.pending = b""

    def _emit(self, value: dict[str, Any]) -> None:
        if self.writer is not None and not self.writer.is_closing():
            self.writer.write(_encode(value))

    def _turn(self, turn: Any) -> None:
        key = (turn.role, turn.offset)
        if self._shown.get(key) == turn.text:
            return  # a grown message printed again with the same text
        self._shown[key] = turn.text
        self._emit({"turn": turn.to_json()})

    def lead_said(self, text: str, offset: int) -> None:
        self._emit({"turn": {"role": "user", "text": text, "offset": offset}})

    def end(self, why: str) -> None:
        """The last turns (the agent's final words come right before its exit), then the end."""
        if self.writer is None or self.writer.is_closing():
            return
        self._follow()
        self._emit({"end": why})
        self.writer.close()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        from lanes_tui.engine.lanes.control_client import conversation

        self.writer = writer
        try:
            self.offset = self.output.stat().st_size
        except OSError:
            self.offset = 0
        so_far = conversation(self.repo, self.lane_id)  # no await since the size: nothing printed between
        writer.write(_encode({"ok": True, "mode": "conversation", "input": takes_input(self.run),
                              "turns": len(so_far)}))
        for turn in so_far:
            self._turn(turn)
        asked: asyncio.Task[bytes] = asyncio.ensure_future(reader.readline())
        try:
            while self.live() and not writer.is_closing():
                done, _ = await asyncio.wait({asked}, timeout=FOLLOW_S)
                if asked in done:
                    line = asked.result()
                    if not line:
                        return  # the viewer left
                    await self._request(line)
                    asked = asyncio.ensure_future(reader.readline())
                self._follow()
            self.end("the agent exited")
        finally:
            asked.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asked

    async def _request(self, line: bytes) -> None:
        try:
            body = json.loads(line)
        except ValueError:
            body = None
        if not isinstance(body, dict) or body.get("op") != "send" or not isinstance(body.get("text"), str):
            self._emit({"sent": False, "error": "write {\"op\": \"send\", \"text\": …} lines"})
            return
        reply = await self.send(body["text"])
        if reply.get("ok"):
            self._emit({"sent": True, "via": reply.get("via")})
        else:
            self._emit({"sent": False, "error": reply.get("error"), "fix": reply.get("fix")})

    def _follow(self) -> None:
        """New complete lines of output.log since `offset`, as turns; the partial last line is kept."""
        try:
            with open(self.output, "rb") as handle:
                handle.seek(self.offset + len(self.pending))
                data = self.pending + handle.read(4 << 20)
        except OSError:
            return
        while (cut := data.find(b"\n")) >= 0:
            for turn in self.parser.feed(data[:cut], self.offset):
                self._turn(turn)
            self.offset += cut + 1
            data = data[cut + 1:]
        self.pending = data
