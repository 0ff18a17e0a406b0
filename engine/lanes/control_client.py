"""The lead's side of a lane's control socket (`supervisor.control`): find it, ask, read the reply.

Used by `lanes-tui attach / send / peek` and the dashboard's `t` and `T`. The socket's path is in
the lane folder's `control.json` (the socket itself may live under the runtime dir when the lane's
path is too long for a Unix socket). No `control.json`, or nobody listening on it, means the lane
has no live supervisor: every function says so in one line, with the lane's state.

`peek_output` and `conversation` read the lane's files and need no supervisor at all: a lane that
ended can still be peeked at and its conversation read.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lanes_tui.engine.core.atomic import read_json, read_jsonl
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.limits import read_tail
from lanes_tui.engine.state.paths import LanePaths, StatePaths

if TYPE_CHECKING:
    from lanes_tui.engine.channels.transcript import Turn

__all__ = [
    "LOCATOR", "MAX_REPLY_BYTES", "MAX_SEND_BYTES", "PROTOCOL", "Refused", "conversation", "lane_hands", "open_attach",
    "peek_output", "peek_screen", "request", "send_to_lane", "watch_lane",
]

#: The file in the lane folder that says where the socket is.
LOCATOR = "control.json"
PROTOCOL = 1
#: One message from the lead; a longer one belongs in a file the agent is pointed to.
MAX_SEND_BYTES = 64 * 1024
MAX_REPLY_BYTES = 4 * 1024 * 1024
#: How far back `peek` and the conversation read in output.log.
PEEK_WINDOW = 1 << 20
CONVERSATION_WINDOW = 2 << 20
MAX_PEEK_LINES = 10_000


class Refused(LanesError):
    """The supervisor is there and said no (mid-redraw, input closed, …); `refused` is False when
    what it said is that no agent is running now (the command line exits 2 for that, 1 otherwise)."""

    def __init__(self, what: str, fix: str | None = None, *, refused: bool = True) -> None:
        super().__init__(what, fix)
        self.refused = refused


def _lane(repo: Path, lane_id: str) -> LanePaths:
    lane = StatePaths(repo).lane(lane_id)  # refuses an id that is not one (a path, `..`)
    if not lane.record.is_file():
        raise LanesError(f"no such lane {lane_id}", "`lanes-tui status` lists the lanes")
    return lane


def _state(lane: LanePaths) -> str:
    try:
        record = read_json(lane.record)
    except (OSError, ValueError):
        return "unknown"
    return str(record.get("state", "unknown")) if isinstance(record, dict) else "unknown"


def _not_running(lane_id: str, lane: LanePaths) -> LanesError:
    return LanesError(f"lane {lane_id} is not running (state {_state(lane)}): no live supervisor to talk to",
                      f"`lanes-tui peek {lane_id}` shows its output")


def connect(repo: Path, lane_id: str, *, timeout: float = 10.0) -> socket.socket:
    """A connected socket to the lane's supervisor, or LanesError when the lane has none."""
    lane = _lane(repo, lane_id)
    try:
        where = read_json(lane.dir / LOCATOR)
        path = str(where["path"])
    except (OSError, ValueError, KeyError, TypeError):
        raise _not_running(lane_id, lane) from None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except OSError:  # gone (ENOENT), or a supervisor that died without cleaning up (ECONNREFUSED)
        sock.close()
        raise _not_running(lane_id, lane) from None
    return sock


def _read_line(sock: socket.socket, limit: int = MAX_REPLY_BYTES) -> bytes:
    """One reply line, taken exactly up to its newline (peeked first), so what follows it (an attach
    stream) stays in the socket for the caller."""
    line = bytearray()
    while True:
        peeked = sock.recv(65536, socket.MSG_PEEK)
        if not peeked:
            return bytes(line)
        cut = peeked.find(b"\n")
        line += sock.recv(cut + 1 if cut >= 0 else len(peeked))
        if cut >= 0:
            return bytes(line)
        if len(line) > limit:
            raise LanesError("the supervisor's reply is too long", "report this as a bug")


def _reply(sock: socket.socket, lane_id: str) -> dict[str, Any]:
    try:
        raw = _read_line(sock)
    except TimeoutError:
        raise LanesError(f"lane {lane_id}'s supervisor did not answer in time", "try again") from None
    except OSError as exc:
        raise LanesError(f"lane {lane_id}'s supervisor hung up: {exc.strerror or exc}", "try again") from None
    try:
        reply = json.loads(raw)
    except ValueError:
        raise LanesError(f"lane {lane_id}'s supervisor hung up without an answer",
                         "the lane may have just ended: `lanes-tui status` shows it") from None
    if not isinstance(reply, dict):
        raise LanesError(f"lane {lane_id}'s supervisor sent a malformed reply", "report this as a bug")
    if not reply.get("ok"):
        raise Refused(str(reply.get("error") or "refused"), reply.get("fix") or None,
                      refused=not reply.get("not_running"))
    return reply


def _send_request(sock: socket.socket, body: dict[str, Any]) -> None:
    sock.sendall((json.dumps({"protocol": PROTOCOL, **body}, separators=(",", ":")) + "\n").encode("utf-8"))


def request(repo: Path, lane_id: str, body: dict[str, Any], *, timeout: float = 15.0) -> dict[str, Any]:
    """One request, one reply: the reply's fields, or LanesError with the supervisor's refusal."""
    sock = connect(repo, lane_id, timeout=timeout)
    with sock:
        _send_request(sock, body)
        return _reply(sock, lane_id)


def lane_hands(repo: Path, lane_id: str) -> dict[str, Any]:
    """What the lead can do with the lane now: `mode` (`pty`, `conversation` or `output`), whether
    it takes messages (`input`) and the lane's state; `live` is False without a supervisor."""
    lane = _lane(repo, lane_id)
    try:
        reply = request(repo, lane_id, {"op": "hello"}, timeout=5.0)
    except LanesError as exc:
        return {"live": False, "lane": lane_id, "state": _state(lane), "why": str(exc)}
    return {**reply, "live": True}


def send_to_lane(repo: Path, lane_id: str, text: str) -> dict[str, Any]:
    """Deliver one message from the lead; the reply says how (`via`). LanesError when refused."""
    if not text.strip():
        raise LanesError("nothing to send: the message is empty", "give the text to send")
    if len(text.encode("utf-8", "surrogatepass")) > MAX_SEND_BYTES:
        raise LanesError(f"the message is longer than {MAX_SEND_BYTES // 1024} KiB",
                         "put the detail in a file in the worktree and send a line that points to it")
    return request(repo, lane_id, {"op": "send", "text": text}, timeout=20.0)


def watch_lane(repo: Path, lane_id: str, seconds: float) -> float:
    """Take a watch lease on the lane's output for `seconds` (`lanes.cadence`); returns the seconds
    granted. LanesError when the lane has no supervisor (nothing to speed up) or it refused."""
    return float(request(repo, lane_id, {"op": "watch", "seconds": seconds}, timeout=2.0)["seconds"])


def peek_screen(repo: Path, lane_id: str) -> dict[str, Any]:
    """The live screen of a terminal lane: `lines` (its rows), `rows`, `columns`, `cursor`."""
    return request(repo, lane_id, {"op": "peek", "screen": True})


def peek_output(repo: Path, lane_id: str, count: int = 40, *, readable: bool = False, width: int = 0) -> list[str]:
    """The last `count` lines of the lane's output.log, colour codes removed; no supervisor needed.

    `readable`: a structured lane's JSON lines as the conversation they stand for
    (`channels.readable`), the last `count` of those; other lines as they are. `width` wraps the
    agent's text (0: not wrapped).
    """
    path = _lane(repo, lane_id).output
    if not readable:
        return tail_lines(path, count)
    from lanes_tui.engine.channels.readable import readable_lines

    shown = readable_lines(tail_lines(path, MAX_PEEK_LINES), width=width)
    return shown[-count:] if count > 0 else []


def tail_lines(path: Path, count: int, window: int = PEEK_WINDOW) -> list[str]:
    """The last `count` lines of a file that may be large, read from its end.

    Terminal output is made readable: colour and cursor codes removed, and a line redrawn with `\\r`
    shows its last version.
    """
    # not at the top: a supervisor loads its channel only
    from lanes_tui.engine.core.ansi import strip_ansi, terminal_text

    count = max(0, min(count, MAX_PEEK_LINES))
    data, end = read_tail(path, window)
    if end > len(data):  # the head was cut: its partial first line is not shown
        data = data[data.find(b"\n") + 1:]
    lines = []
    for raw in data.decode("utf-8", "replace").split("\n"):
        line = strip_ansi(raw.rstrip("\r"))
        if "\r" in line:
            line = line.rsplit("\r", 1)[1]
        lines.append(terminal_text(line))
    if lines and lines[-1] == "":
        lines.pop()
    return lines[-count:] if count else []


def open_attach(repo: Path, lane_id: str, *, rows: int, columns: int,
                detach: str = "ctrl+]") -> tuple[socket.socket, dict[str, Any]]:
    """Attach to the lane: the connected socket (blocking, no timeout) and the header the supervisor
    sent. The caller owns the socket; what follows the header is the stream (`supervisor.control`)."""
    sock = connect(repo, lane_id)
    try:
        _send_request(sock, {"op": "attach", "rows": rows, "columns": columns, "detach": detach})
        header = _reply(sock, lane_id)
    except BaseException:
        sock.close()
        raise
    sock.settimeout(None)
    return sock, header


def conversation(repo: Path, lane_id: str) -> list[Turn]:
    """The lane's conversation so far from its files: the task, the agent's turns, the lead's messages.

    Read from the last 2 MiB of output.log; a lane whose output is not stream-json gives its lines
    as `output` turns.
    """
    from lanes_tui.engine.channels.transcript import TranscriptParser, Turn, merge

    lane = _lane(repo, lane_id)
    try:
        record = read_json(lane.record)
        prompt = str(record.get("prompt", "")) if isinstance(record, dict) else ""
    except (OSError, ValueError):
        prompt = ""
    data, end = read_tail(lane.output, CONVERSATION_WINDOW)
    start = end - len(data)
    if start:
        cut = data.find(b"\n") + 1
        start, data = start + cut, data[cut:]
    lines = data.split(b"\n")
    structured = any(line.lstrip().startswith(b'{"type"') for line in lines[:200])
    parser = TranscriptParser(structured=structured)
    offset = start
    for line in lines:
        if not line.startswith(b"=== lanes-tui:"):  # the supervisor's own banner between providers
            parser.feed(line, offset)
        offset += len(line) + 1
    sent = [Turn("user", str(e.get("text", "")), int(e.get("offset") or 0)) for e in read_jsonl(lane.events)
            if isinstance(e, dict) and e.get("type") == "send" and isinstance(e.get("offset", 0), int)]
    turns = merge(parser.turns, [s for s in sent if s.offset >= start])
    return ([Turn("user", prompt, 0)] if prompt and not start else []) + turns
