"""The terminal driver, with an input thread that sleeps until there is input.

Textual's `LinuxDriver` reads the terminal in a thread that wakes every 0.1 s, whether or not a key
came: to see whether the app is stopping, and to let its key parser time out a lone Escape (is it the
Escape key, or the first byte of an arrow key's sequence?). That is ten wake-ups a second for as long
as the dashboard is open, 0.14 % of a core measured here (docs/benchmarks.md, B2): as much as a
printing lane's supervisor.

`LeanLinuxDriver` waits on two descriptors instead: the terminal, and a pipe the stop writes to
(`exit_event.set()` wakes the thread at once, so `disable_input` still joins it promptly). It waits
with no timeout unless the parser holds an unfinished sequence, and then only until that sequence's
own deadline, so a lone Escape arrives no later than with Textual's poll. Everything else (reading,
decoding, parsing, delivering) is the parent's: the same parser, the same messages.

Imported only on Linux and macOS (`LinuxDriver` exists only off Windows); `driver_class` is the door.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import threading
from codecs import getincrementaldecoder
from collections.abc import Callable
from typing import Any

from textual import _time
from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver

from lanes_tui.fast.checks import enabled

#: The parent's poll, kept for a parser that does not say when its sequence times out.
FALLBACK_TIMEOUT_S = 0.1
#: Bytes read from the terminal at a time, as the parent reads them.
READ_BYTES = 4096


def input_timeout(parser: Any, now: float) -> float | None:
    """How long the input thread may sleep: until the parser's pending sequence times out, or for ever.

    `_timeout_time` is the parser's own deadline (None while no sequence is open); a parser without
    that field gets the parent's fixed poll, so a newer Textual still times out its Escapes.
    """
    if not hasattr(parser, "_timeout_time"):
        return FALLBACK_TIMEOUT_S
    deadline = parser._timeout_time
    if deadline is None:
        return None
    return max(0.0, float(deadline) - now)


class WakingEvent(threading.Event):
    """A `threading.Event` whose `set` also writes a byte to a pipe, to wake a thread in `select`."""

    def __init__(self, wake_fd: int) -> None:
        super().__init__()
        self._wake_fd = wake_fd

    def set(self) -> None:
        super().set()
        with contextlib.suppress(OSError):  # full (a byte is already waiting) or closed: it wakes anyway
            os.write(self._wake_fd, b"!")

    def detach(self) -> None:
        """The pipe is closing: `set` no longer writes (its number may be reused by another file)."""
        self._wake_fd = -1

    def attach(self, wake_fd: int) -> None:
        """A new pipe (the driver started again after a suspend)."""
        self._wake_fd = wake_fd


class LeanLinuxDriver(LinuxDriver):
    """`LinuxDriver` whose input thread wakes only for input, a parser deadline or the stop."""

    #: The selector class the input thread waits with (a test records its timeouts).
    selector_class: Callable[[], selectors.BaseSelector] = selectors.SelectSelector

    def __init__(self, app: Any, *, debug: bool = False, mouse: bool = True,
                 size: tuple[int, int] | None = None) -> None:
        super().__init__(app, debug=debug, mouse=mouse, size=size)
        self._wake_read = self._wake_write = -1
        self.exit_event: WakingEvent = WakingEvent(-1)
        self.open_wake_pipe()

    def open_wake_pipe(self) -> None:
        """The stop's pipe, made anew if `close` closed it: a suspend (the dashboard's `t`) is
        `stop_application_mode` and `close`, the resume `start_application_mode`."""
        if self._wake_read < 0:
            self._wake_read, self._wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
            self.exit_event.attach(self._wake_write)

    def start_application_mode(self) -> None:
        self.open_wake_pipe()  # before the parent starts the input thread that waits on it
        super().start_application_mode()  # type: ignore[no-untyped-call]  # (Textual leaves it unannotated)

    def close(self) -> None:
        super().close()
        self.exit_event.detach()
        for fd in (self._wake_read, self._wake_write):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._wake_read = self._wake_write = -1

    def run_input_thread(self) -> None:
        """Read the terminal and hand what it says to the parser until `exit_event` is set."""
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        selector = self.selector_class()
        selector.register(self.fileno, selectors.EVENT_READ, "input")
        selector.register(self._wake_read, selectors.EVENT_READ, "wake")
        try:
            while not self.exit_event.is_set():
                ready = selector.select(input_timeout(parser, _time.get_time()))
                for key, _mask in ready:
                    if key.data == "wake":
                        self._drain_wake()
                    elif not self._read_input(parser, decode):
                        selector.unregister(self.fileno)  # end of input (piped stdin): stop waiting on it
                for event in parser.tick():
                    self.process_message(event)
        finally:
            selector.close()
            try:
                for _event in parser.feed(""):  # the end, as the parent ends it: a half sequence is dropped
                    pass
            except (EOFError, ParseError):
                pass

    def _read_input(self, parser: XTermParser, decode: Callable[[bytes], str]) -> bool:
        """Feed one read of the terminal to the parser; False at the end of input."""
        try:
            data = os.read(self.fileno, READ_BYTES)
        except BlockingIOError:
            return True
        if not data:
            return False
        text = decode(data)
        if text:  # (empty: a character cut in two; an empty feed would tell the parser the input ended)
            for event in parser.feed(text):
                self.process_message(event)
        return True

    def _drain_wake(self) -> None:
        with contextlib.suppress(OSError):  # empty (EAGAIN) or closed
            while os.read(self._wake_read, 64):
                pass


def driver_class(default: type[Driver]) -> type[Driver]:
    """The driver the app runs with: `LeanLinuxDriver` where Textual would pick its `LinuxDriver` (and no
    TEXTUAL_DRIVER names another) and the fast path is on; `default` (Textual's choice) otherwise."""
    from textual import constants

    if default is LinuxDriver and constants.DRIVER is None and enabled("driver"):
        return LeanLinuxDriver
    return default
