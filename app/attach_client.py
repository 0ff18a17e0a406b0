"""The lead's terminal joined to a lane: `lanes-tui attach ID`, and the dashboard's `t` on a terminal lane.

A terminal (pty) lane: the tty goes raw, the supervisor repaints the agent's screen, then bytes go
both ways untouched, so every key (ctrl+c included) reaches the agent, until the detach key
(`ctrl+]` by default). A conversation (claude stream-json) lane: the conversation so far is
printed, then each new turn; a line typed and sent with Enter goes to the agent as a user message.
Either way the terminal is given back as it was, whatever happened (alternate screen left, modes
the agent switched on switched off, the tty's settings restored), and the lane runs on.

Standard library and the engine's door only: the command line loads no Textual for it.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import os
import selectors
import socket
import sys
import termios
import tty
from pathlib import Path
from typing import Any

from lanes_tui.engine import LanesError, lane_hands, open_attach

DEFAULT_DETACH = "ctrl+]"
#: Keys whose byte a terminal sends with ctrl held, by the names a lead writes (and Textual's).
_NAMED = {"]": 0x1D, "right_square_bracket": 0x1D, "\\": 0x1C, "backslash": 0x1C, "^": 0x1E,
          "circumflex_accent": 0x1E, "_": 0x1F, "underscore": 0x1F, "@": 0x00, "space": 0x00}
#: Back to the lead's own screen: scroll region, colours, cursor, mouse and paste modes the agent
#: may have switched on, keypad mode, then the alternate screen left.
RESTORE = (b"\x1b[r\x1b[0m\x1b[?25h\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?2004l"
           b"\x1b[?1l\x1b>\x1b[?1049l")
ALT_SCREEN = b"\x1b[?1049h"


def detach_byte(name: str) -> int:
    """`ctrl+]`, `ctrl+a` … `ctrl+z`, `ctrl+\\`, `ctrl+^`, `ctrl+_` (or Textual's names for them) as a byte."""
    key = name.strip().lower()
    if key.startswith(("ctrl+", "ctrl-", "c-")):
        rest = key.split("+", 1)[1] if "+" in key else key.split("-", 1)[1]
        if len(rest) == 1 and "a" <= rest <= "z":
            return ord(rest) - ord("a") + 1
        if rest in _NAMED:
            return _NAMED[rest]
    raise LanesError(f"{name!r} is not a detach key this terminal can send",
                     "give ctrl+ and a letter, or ctrl+], ctrl+\\, ctrl+^, ctrl+_ (default ctrl+])")


def attach(repo: Path, lane_id: str, *, detach: str = DEFAULT_DETACH) -> str:
    """Attach this process's terminal to the lane until the detach key; then one line saying how it
    ended (`detached: lane X is running`). LanesError when the lane refuses or is not running."""
    key = detach_byte(detach)
    try:
        columns, rows = os.get_terminal_size(sys.stdout.fileno())
    except OSError:
        columns, rows = 120, 41
    sock, header = open_attach(repo, lane_id, rows=rows, columns=columns, detach=detach)
    with sock:
        if header.get("mode") == "pty":
            why = _terminal(sock, key, sys.stdin.fileno(), sys.stdout.fileno())
            note = "" if header.get("keyboard") else " (read-only: another viewer held the keyboard)"
            small = rows < int(header.get("rows", 40)) or columns < int(header.get("columns", 120))
            size = (f"; the agent's terminal is {header.get('columns')}x{header.get('rows')}, this one "
                    f"{columns}x{rows}" if small else "")
        else:
            why = _conversation(sock, key, sys.stdin.fileno(), lane_id)
            note, size = "", ""
    return f"{why}: lane {lane_id} is {_state(repo, lane_id)}{note}{size}"


def _state(repo: Path, lane_id: str) -> str:
    with contextlib.suppress(LanesError, OSError):
        return str(lane_hands(repo, lane_id).get("state", "unknown"))
    return "unknown"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


@contextlib.contextmanager
def _tty_mode(fd: int, mode: str) -> Any:
    """The tty in raw or cbreak mode for the block, its settings restored whatever happens."""
    saved = termios.tcgetattr(fd) if os.isatty(fd) else None
    try:
        if saved is not None:
            (tty.setraw if mode == "raw" else tty.setcbreak)(fd)
        yield saved is not None
    finally:
        if saved is not None:
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _terminal(sock: socket.socket, key: int, stdin: int, stdout: int) -> str:
    """Raw bytes both ways until the detach key, EOF on stdin, or the supervisor hanging up."""
    detach = bytes([key])
    _write_all(stdout, ALT_SCREEN)
    try:
        with _tty_mode(stdin, "raw"), selectors.DefaultSelector() as selector:
            selector.register(sock, selectors.EVENT_READ)
            selector.register(stdin, selectors.EVENT_READ)
            while True:
                for ready, _ in selector.select():
                    if ready.fileobj is sock:
                        data = sock.recv(65536)
                        if not data:
                            return "the agent's terminal closed"
                        _write_all(stdout, data)
                        continue
                    keys = os.read(stdin, 4096)
                    cut = keys.find(detach)
                    if cut >= 0 or not keys:
                        with contextlib.suppress(OSError):
                            sock.sendall(keys[:max(cut, 0)])
                        return "detached"
                    try:
                        sock.sendall(keys)
                    except OSError:
                        return "the agent's terminal closed"
    finally:
        _write_all(stdout, RESTORE)


def format_turn(turn: dict[str, Any]) -> str:
    """One turn as lines for a terminal: who, then the text (continuation lines indented)."""
    who = {"user": "lead", "assistant": "agent", "tool": "tool", "result": "result"}.get(str(turn.get("role")), "")
    text = "".join(ch if ch.isprintable() or ch in "\n\t" else "?" for ch in str(turn.get("text", "")))
    head, *rest = text.split("\n") or [""]
    return "\n".join([f"{who + ':':8}{head}" if who else head, *(" " * 8 + line for line in rest)])


class _Prompt:
    """The line the lead types, kept at the bottom while turns print above it (cbreak mode)."""

    def __init__(self, echo: bool) -> None:
        self.echo = echo
        self.text = ""
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def show(self) -> None:
        if self.echo:
            sys.stdout.write(f"\r\x1b[K> {self.text}")
            sys.stdout.flush()

    def above(self, line: str) -> None:
        sys.stdout.write(("\r\x1b[K" if self.echo else "") + line.replace("\n", "\r\n" if self.echo else "\n")
                         + ("\r\n" if self.echo else "\n"))
        self.show()

    def feed(self, data: bytes) -> list[str]:
        """Keys in; the lines finished with Enter out."""
        done: list[str] = []
        for ch in self.decoder.decode(data):
            if ch in "\r\n":
                if self.text.strip():
                    done.append(self.text)
                self.text = ""
            elif ch in "\x7f\b":
                self.text = self.text[:-1]
            elif ch.isprintable() or ch == "\t":
                self.text += ch
        self.show()
        return done


def _conversation(sock: socket.socket, key: int, stdin: int, lane_id: str) -> str:
    """Turns printed as they come; each line typed is sent as the lead's message."""
    with _tty_mode(stdin, "cbreak") as is_tty, selectors.DefaultSelector() as selector:
        prompt = _Prompt(echo=is_tty)
        prompt.above(f"— lane {lane_id}: type a message and press Enter; ctrl+] or ctrl+d detaches —")
        selector.register(sock, selectors.EVENT_READ)
        selector.register(stdin, selectors.EVENT_READ)
        try:
            return _converse(sock, key, stdin, prompt, selector)
        finally:
            if is_tty:
                sys.stdout.write("\r\x1b[K")
                sys.stdout.flush()


def _converse(sock: socket.socket, key: int, stdin: int, prompt: _Prompt, selector: selectors.BaseSelector) -> str:
    """The loop of `_conversation`: the stream's JSON lines in, the lead's lines out."""
    pending = b""
    while True:
        for ready, _ in selector.select():
            if ready.fileobj is sock:
                data = sock.recv(65536)
                if not data:
                    return "the supervisor hung up"
                *lines, pending = (pending + data).split(b"\n")
                for line in lines:
                    why = _show(prompt, _event(line))
                    if why is not None:
                        return why
                continue
            keys = os.read(stdin, 4096)
            if not keys or bytes([key]) in keys or (prompt.echo and b"\x04" in keys):
                return "detached"
            for text in prompt.feed(keys):
                sock.sendall((json.dumps({"op": "send", "text": text}) + "\n").encode("utf-8"))


def _show(prompt: _Prompt, event: dict[str, Any]) -> str | None:
    """Print one event of the stream; the reason to stop when it is the end."""
    if isinstance(event.get("turn"), dict):
        prompt.above(format_turn(event["turn"]))
    elif event.get("sent") is False:
        prompt.above(f"refused: {event.get('error')}" + (f" — {event['fix']}" if event.get("fix") else ""))
    elif "end" in event:
        return str(event["end"])
    return None


def _event(line: bytes) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
