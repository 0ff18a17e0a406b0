"""The lane's control socket: how the lead peeks at, types into and attaches to a running agent.

The supervisor is the only process that holds the agent's pipes or terminal, so the lead's hands
reach the agent through it: a Unix socket, mode 0600, at `<lane dir>/control.sock`, or, when that
path is too long for a Unix socket (about 107 bytes), at `<runtime dir>/control/<hash>.sock`. Either
way the lane folder's `control.json` (written atomically) names it; clients read that file
(`lanes.control_client`). A client of another user is refused: the folders are the lead's
alone (0700), the socket is 0600, and the peer's uid (SO_PEERCRED) must be ours.

Protocol (version 1): the client writes one JSON request line; the supervisor answers one JSON line,
`{"ok": true, …}` or `{"ok": false, "error": "…", "fix": "…"}`, and then, for `attach`, a stream.

* `{"op": "hello"}` → `mode` (`pty`: a terminal; `conversation`: Claude's stream-json; `output`:
  plain pipes), `input` (whether the agent takes a message now), `state`, `provider`, `watched`
  (a watch lease holds).
* `{"op": "peek", "lines": N}` → `lines`: the last N lines of output.log (as `lanes-tui peek`);
  `{"op": "peek", "screen": true}` → `lines` (the rows of the live terminal), `rows`, `columns`,
  `cursor`, `still` (not redrawn in the last 0.3 s).
* `{"op": "send", "text": T}` → `via`: `claude-stream-json` (written as a stream-json user message;
  refused once the agent's result is in and its input closed) or `pty` (the text, then Enter, after
  the screen has been still as the prompt detector wants it; refused mid-redraw, while a terminal
  prompt waits in the inbox, or for more than one line). A plain lane's stdin was closed after its
  prompt: refused. Every message delivered is a `send` event of the lane, with the size of
  output.log at that moment (`channels.transcript.merge` puts it back in the conversation).
* `{"op": "watch", "seconds": S}` → `seconds` (granted, at most 60): someone shows this lane's
  output live for the next S seconds, so it is read at the live pace (`lanes.cadence`); the
  dashboard renews it while the lane is on screen. Any state, running or not: a lease outlives runs.
* `{"op": "attach", "rows": R, "columns": C, "detach": "ctrl+]"}`, on a terminal lane: the header
  (`mode`, `keyboard`: whether this viewer types into the agent, `rows`, `columns` of the agent's
  terminal), then raw bytes both ways: first the current screen repainted (`Screen.repaint`), then
  everything the agent prints. The first viewer holds the keyboard; later ones are read-only (their
  keys ring the bell) until it leaves. A viewer taller than the agent's terminal gets a status line
  below it, and a scroll region that keeps the agent's lines above it.
  On a conversation lane: the header, then JSON lines `{"turn": {role, text, offset}}` (the
  conversation so far, then each new turn); the client may write `{"op": "send", "text": T}` lines,
  each answered by `{"sent": true, "via": …}` or `{"sent": false, "error": …}`; `{"end": why}` closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lanes_tui.engine.core.atomic import PRIVATE_DIR, read_json, write_json_atomic
from lanes_tui.engine.core.digest import sha256_hex
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.peer import peer_pid
from lanes_tui.engine.core.peer import peer_uid as socket_peer_uid
from lanes_tui.engine.lanes.control_client import LOCATOR, MAX_PEEK_LINES, PROTOCOL, tail_lines
from lanes_tui.engine.state.paths import runtime_dir
from lanes_tui.engine.supervisor import relay, viewers

if TYPE_CHECKING:
    from lanes_tui.engine.lanes.agent_run import AgentRun
    from lanes_tui.engine.lanes.cadence import OutputCadence
    from lanes_tui.engine.state.model import LaneRecord
    from lanes_tui.engine.state.store import LaneStore

log = logging.getLogger(__name__)

SOCKET_NAME = "control.sock"
#: The longest socket path used: Linux allows 107 bytes, macOS 103.
MAX_SOCKET_PATH = 103
#: A request line (a message is at most 64 KiB, and JSON may escape it).
MAX_REQUEST_BYTES = 1 << 20
REQUEST_TIMEOUT_S = 10.0
#: How long `send` waits for a terminal that is redrawing to become still before refusing.
SEND_SETTLE_S = 2.0
#: A socket in the shared folder this old that refuses connections belongs to a killed supervisor.
STALE_SOCKET_S = 60.0


class Host(Protocol):
    """What the control socket needs of the supervisor (`supervisor.main.Supervisor`)."""

    repo: Path
    store: LaneStore
    record: LaneRecord
    current: AgentRun | None
    cadence: OutputCadence


def socket_path(lane_dir: Path) -> Path:
    """`<lane dir>/control.sock`, or a short path named by a hash of the lane folder when that is too long."""
    direct = lane_dir / SOCKET_NAME
    if len(os.fsencode(direct)) <= MAX_SOCKET_PATH:
        return direct
    digest = sha256_hex(os.fsencode(lane_dir.resolve()))[:24]
    candidate = runtime_dir() / "control" / f"{digest}.sock"
    if len(os.fsencode(candidate)) <= MAX_SOCKET_PATH:
        return candidate
    import tempfile  # only for a runtime folder too long as well (tempfile costs a supervisor 1.3 MB)

    candidate = Path(tempfile.gettempdir()) / f"lanes-tui-{os.getuid()}" / f"{digest}.sock"
    if len(os.fsencode(candidate)) <= MAX_SOCKET_PATH:
        return candidate
    raise LanesError(f"no short enough path for the control socket of {lane_dir}",
                     "set XDG_RUNTIME_DIR to a short folder")


def _private_folder(folder: Path) -> None:
    """Create the socket's folder 0700; refuse one that another user owns or others may enter."""
    folder.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise LanesError(f"{folder} is not a folder of this user", "remove it, or set XDG_RUNTIME_DIR")
    if stat.S_IMODE(info.st_mode) & 0o077:
        folder.chmod(PRIVATE_DIR)


def sweep(folder: Path, *, older_than_s: float = STALE_SOCKET_S) -> None:
    """Remove the sockets of supervisors that were killed (nobody listens) from a shared folder.

    Only old ones: a socket that was just bound may not listen yet, and must not be taken for dead.
    """
    now = time.time()
    for path in folder.glob("*.sock"):
        try:
            if now - path.lstat().st_mtime < older_than_s:
                continue
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                probe.settimeout(1.0)
                probe.connect(str(path))
        except ConnectionRefusedError:
            with contextlib.suppress(OSError):
                path.unlink()
        except OSError:
            continue


def peer_uid(writer: asyncio.StreamWriter) -> int | None:
    """The connecting process's uid (`core.peer`); None where the platform cannot tell."""
    sock = writer.get_extra_info("socket")
    return None if sock is None else socket_peer_uid(sock)


def _channel(run: AgentRun) -> str:
    return run.channel.name if run.channel is not None else "none"


def encode(reply: dict[str, Any]) -> bytes:
    return (json.dumps(reply, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")


def refusal(error: str, fix: str | None = None) -> dict[str, Any]:
    return {"ok": False, "error": error, **({"fix": fix} if fix else {})}


class ControlServer:
    """The socket, served on the supervisor's loop while the supervisor lives."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.lane_id = host.record.id
        self.lane = host.store.lane_paths(self.lane_id)
        self.path = socket_path(self.lane.dir)
        self.server: asyncio.AbstractServer | None = None
        self.rooms: dict[int, viewers.PtyRoom] = {}
        self.followers: set[viewers.Conversation] = set()
        self.tasks: set[asyncio.Task[None]] = set()
        self._send_lock = asyncio.Lock()

    @classmethod
    async def open(cls, host: Host) -> ControlServer | None:
        """Start serving; None (logged) when the socket cannot be made: the lane runs on without it."""
        try:
            server = cls(host)
            await server.start()
        except (OSError, LanesError) as exc:
            log.warning("no control socket for this lane: %s", exc)
            return None
        return server

    async def start(self) -> None:
        if self.path.parent != self.lane.dir:
            _private_folder(self.path.parent)
            sweep(self.path.parent)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # left by a supervisor that was killed
        self.server = await asyncio.start_unix_server(self._serve, path=str(self.path), limit=MAX_REQUEST_BYTES)
        os.chmod(self.path, 0o600)
        write_json_atomic(self.lane.dir / LOCATOR, {"path": str(self.path), "pid": os.getpid(),
                                                    "lane": self.lane_id, "protocol": PROTOCOL})

    async def close(self) -> None:
        """Stop serving: viewers are told and let go, the socket and `control.json` removed."""
        if self.server is not None:
            self.server.close()
        for room in list(self.rooms.values()):
            room.end("the lane's supervisor is finishing")
        for follower in list(self.followers):
            follower.end("the lane's supervisor is finishing")
        for task in list(self.tasks):
            task.cancel()
        for task in list(self.tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        with contextlib.suppress(OSError, ValueError, TypeError):
            if read_json(self.lane.dir / LOCATOR).get("pid") == os.getpid():
                (self.lane.dir / LOCATOR).unlink()
        with contextlib.suppress(OSError):
            self.path.unlink()

    # --- one connection ----------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self.tasks.add(task)
        try:
            await self._handle(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            pass
        except Exception:
            log.exception("control request failed")
            with contextlib.suppress(Exception):
                writer.write(encode(refusal("the supervisor failed on this request; its log has why")))
        finally:
            if task is not None:
                self.tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        uid = peer_uid(writer)
        if uid is not None and uid != os.getuid():
            log.warning("refused a control connection from uid %s", uid)
            writer.write(encode(refusal("only the lead's user may use this lane's control socket")))
            return
        try:
            line = await asyncio.wait_for(reader.readline(), REQUEST_TIMEOUT_S)
            body = json.loads(line)
        except ValueError:
            writer.write(encode(refusal("a request is one JSON line", "use lanes-tui attach, send or peek")))
            return
        if not isinstance(body, dict) or not isinstance(body.get("op"), str):
            writer.write(encode(refusal("a request is a JSON object with an `op`")))
            return
        op = body["op"]
        if op == "attach":
            await self._attach(body, reader, writer)
            return
        if op == "hello":
            reply = self.hello()
        elif op == "peek":
            reply = self.peek(body)
        elif op == "send":
            text = body.get("text")
            reply = await self.send(text) if isinstance(text, str) else refusal("send needs a `text`")
        elif op == "watch":
            reply = self.watch(body.get("seconds"))
        elif op in ("inbox-write", "lock-event"):  # a confined lane's writes (`supervisor.relay`)
            reply = self.relayed(op, body, writer)
        else:
            reply = refusal(f"unknown request {op[:40]!r}",
                            "this supervisor knows hello, peek, send, watch and attach")
        writer.write(encode(reply))
        await writer.drain()

    # --- the requests ------------------------------------------------------------------------------

    def relayed(self, op: str, body: dict[str, Any], writer: asyncio.StreamWriter) -> dict[str, Any]:
        """Write for one of this lane's own confined processes what the kernel keeps it from writing."""
        sock = writer.get_extra_info("socket")
        if not relay.descends_from(None if sock is None else peer_pid(sock), os.getpid()):
            return refusal(f"only lane {self.lane_id}'s own processes may ask its supervisor to write")
        if op == "inbox-write":
            return relay.inbox_write(self.host.store.paths.inbox / self.lane_id, self.lane_id, body)
        return relay.lock_event(self.lane.events, body)

    def _run(self) -> AgentRun | None:
        run = self.host.current
        return run if run is not None and run.handle is not None and run.channel is not None else None

    def _idle(self) -> dict[str, Any]:
        record = self.host.record
        return {**refusal(f"lane {self.lane_id} has no agent running right now (state {record.state}: "
                          f"{record.state_reason})", f"`lanes-tui peek {self.lane_id}` shows its output"),
                "not_running": True}

    def hello(self) -> dict[str, Any]:
        run = self._run()
        record = self.host.record
        reply: dict[str, Any] = {"ok": True, "lane": self.lane_id, "state": record.state,
                                 "provider": record.provider, "running": run is not None,
                                 "watched": self.host.cadence.watched}
        if run is not None:
            reply["mode"] = viewers.mode(run)
            reply["input"] = viewers.takes_input(run)
        return reply

    def watch(self, seconds: object) -> dict[str, Any]:
        """A watch lease: this lane's output is read at the live pace for `seconds` (`lanes.cadence`)."""
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 < seconds < float("inf"):
            return refusal("watch needs `seconds`, a positive number", 'e.g. {"op": "watch", "seconds": 15}')
        return {"ok": True, "seconds": self.host.cadence.watch(seconds)}

    def peek(self, body: dict[str, Any]) -> dict[str, Any]:
        if not body.get("screen"):
            count = body.get("lines", 40)
            count = count if isinstance(count, int) and not isinstance(count, bool) else 40
            return {"ok": True, "lines": tail_lines(self.lane.output, max(0, min(count, MAX_PEEK_LINES)))}
        run = self._run()
        if run is None:
            return self._idle()
        if viewers.mode(run) != "pty":
            return refusal(f"lane {self.lane_id} is not a terminal lane (channel {_channel(run)}): it has no "
                           "screen", f"`lanes-tui peek {self.lane_id}` shows its output lines")
        return viewers.screen_reply(run)

    async def send(self, text: str) -> dict[str, Any]:
        run = self._run()
        if run is None:
            return self._idle()
        async with self._send_lock:  # two messages typed at once would interleave their keys
            offset = self._output_size()  # before the agent can print anything in reply (or echo it)
            reply = await viewers.deliver(run, text, settle_s=SEND_SETTLE_S, lane_id=self.lane_id)
        if reply.get("ok"):
            self.host.store.event(self.lane_id, "send", text=text, via=reply["via"], offset=offset, by="lead")
            for follower in list(self.followers):
                follower.lead_said(text, offset)
        return reply

    def _output_size(self) -> int:
        try:
            return self.lane.output.stat().st_size
        except OSError:
            return 0

    async def _attach(self, body: dict[str, Any], reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        run = self._run()
        if run is None:
            writer.write(encode(self._idle()))
            return
        kind = viewers.mode(run)
        if kind == "pty":
            terminal = run.terminal
            screen = getattr(run.channel, "screen", None)
            if terminal is None or terminal.ended or screen is None:
                writer.write(encode(refusal(f"lane {self.lane_id}'s terminal is not open (yet)", "try again")))
                return
            room = self.rooms.get(id(terminal))
            if room is None:
                room = self.rooms[id(terminal)] = viewers.PtyRoom(terminal, screen, self.lane_id,
                                                                  lambda: self.rooms.pop(id(terminal), None))
            self.host.store.event(self.lane_id, "attach", mode="pty", viewers=len(room.viewers) + 1)
            try:
                await room.serve(body, reader, writer)
            finally:
                self.host.store.event(self.lane_id, "detach", mode="pty")
            return
        if kind != "conversation":
            writer.write(encode(refusal(
                f"lane {self.lane_id} runs on pipes (channel {_channel(run)}): there is no terminal or "
                "conversation to attach to", f"`lanes-tui peek {self.lane_id}` shows its output")))
            return
        follower = viewers.Conversation(self.host.repo, self.lane_id, self.lane.output, run,
                                        lambda: self.host.current is run, self.send)
        self.followers.add(follower)
        self.host.store.event(self.lane_id, "attach", mode="conversation")
        try:
            await follower.serve(reader, writer)
        finally:
            self.followers.discard(follower)
            self.host.store.event(self.lane_id, "detach", mode="conversation")
