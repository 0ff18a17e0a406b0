"""The dashboard's terminal driver: its input thread sleeps until input, a parser deadline or the stop.

The driver reads a real pipe in a real thread; a recording selector notes every timeout the thread
waits with, which is the proof that an idle dashboard does not poll (Textual's own thread waits 0.1 s
at a time). Nothing here sleeps: each step waits for the thread to say it is waiting again.
"""

from __future__ import annotations

import asyncio
import os
import queue
import selectors
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual import constants, events
from textual._xterm_parser import XTermParser

from lanes_tui.app.dashboard.app import LanesApp
from lanes_tui.fast.driver import FALLBACK_TIMEOUT_S, LeanLinuxDriver, input_timeout

STEP_S = 10.0  # the most any step may take on a loaded machine (a hang fails the test, it does not pass)


class RecordingSelector(selectors.SelectSelector):
    """A select selector that records each timeout and says when the thread is about to wait."""

    def __init__(self) -> None:
        super().__init__()
        self.timeouts: list[float | None] = []
        self.waiting = threading.Event()

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        self.timeouts.append(timeout)
        self.waiting.set()
        return super().select(timeout)


class RecordingDriver(LeanLinuxDriver):
    """Delivers parsed events to a queue instead of an app."""

    def __init__(self) -> None:
        super().__init__(None)
        self.received: queue.Queue[Any] = queue.Queue()
        self.selector = RecordingSelector()

    def selector_class(self) -> RecordingSelector:  # type: ignore[override]
        return self.selector

    def process_message(self, message: Any) -> None:
        self.received.put(message)


@pytest.fixture
def driver() -> Iterator[tuple[RecordingDriver, int, threading.Thread]]:
    """A driver reading a pipe in its thread; yields (driver, the pipe's write end, the thread)."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTSTP, signal.SIGCONT)}
    read_fd, write_fd = os.pipe()
    try:
        made = _in_loop(RecordingDriver)  # a driver needs a running event loop to be made
        made.fileno = read_fd
        thread = threading.Thread(target=made.run_input_thread, name="test-input")
        thread.start()
        try:
            yield made, write_fd, thread
        finally:
            made.exit_event.set()
            thread.join(STEP_S)
            made.close()
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
        os.close(read_fd)
        os.close(write_fd)


def _in_loop(factory: Any) -> Any:
    async def make() -> Any:
        return factory()

    return asyncio.run(make())


def _next_wait(made: RecordingDriver) -> float | None:
    """Wait until the thread waits again; the timeout it waits with."""
    assert made.selector.waiting.wait(STEP_S), "the input thread never waited"
    made.selector.waiting.clear()
    return made.selector.timeouts[-1]


def _ready(made: RecordingDriver) -> RecordingSelector:
    """The selector, once the thread waits for the first time (with no timeout)."""
    assert _next_wait(made) is None
    return made.selector


def test_an_idle_input_thread_waits_without_a_timeout_and_a_key_arrives(driver: Any) -> None:
    made, write_fd, _thread = driver
    selector = _ready(made)
    os.write(write_fd, b"a")
    key = made.received.get(timeout=STEP_S)
    assert isinstance(key, events.Key) and key.key == "a"
    assert _next_wait(made) is None, "after a key the thread sleeps until the next one, no poll"
    assert selector.timeouts == [None, None]


def test_a_lone_escape_times_out_at_the_parser_deadline(driver: Any) -> None:
    made, write_fd, _thread = driver
    _ready(made)
    os.write(write_fd, b"\x1b")  # Escape, or the start of an arrow key: the parser waits to see
    timeout = _next_wait(made)
    assert timeout is not None and 0.0 <= timeout <= constants.ESCAPE_DELAY
    key = made.received.get(timeout=STEP_S)
    assert isinstance(key, events.Key) and key.key == "escape"
    assert _next_wait(made) is None, "the sequence is over: back to sleeping without a timeout"


def test_an_arrow_key_sequence_is_one_key(driver: Any) -> None:
    made, write_fd, _thread = driver
    _ready(made)
    os.write(write_fd, b"\x1b[A")
    key = made.received.get(timeout=STEP_S)
    assert isinstance(key, events.Key) and key.key == "up"
    assert made.received.empty()


def test_the_stop_wakes_the_thread_at_once(driver: Any) -> None:
    made, _write_fd, thread = driver
    selector = _ready(made)
    made.exit_event.set()  # what `disable_input` does before it joins the thread
    thread.join(STEP_S)
    assert not thread.is_alive(), "the stop did not wake the input thread"
    assert selector.timeouts == [None], "it never polled: one wait, ended by the stop"
    made.exit_event.clear()  # as `disable_input` does; the driver can be started again


def test_the_end_of_input_is_not_a_busy_loop(driver: Any) -> None:
    made, write_fd, _thread = driver
    selector = _ready(made)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, write_fd)  # the pipe's only write end closes (the fixture closes /dev/null later)
    os.close(null)
    # The pipe reads as ended: the thread stops watching it and waits for the stop alone, without
    # a timeout (not select saying "readable" for ever, a loop at full speed).
    assert _next_wait(made) is None
    assert made.fileno not in selector.get_map()
    assert made.received.empty()


def test_input_timeout_follows_the_parser() -> None:
    parser = XTermParser()
    assert input_timeout(parser, now=100.0) is None
    parser._timeout_time = 100.05  # type: ignore[attr-defined]
    assert input_timeout(parser, now=100.0) == pytest.approx(0.05)
    assert input_timeout(parser, now=101.0) == 0.0
    assert input_timeout(object(), now=100.0) == FALLBACK_TIMEOUT_S  # a parser without the field polls


@pytest.mark.skipif(sys.platform == "win32", reason="the lean driver replaces the Linux / macOS driver")
def test_the_dashboard_uses_the_lean_driver(tmp_path: Path) -> None:
    if constants.DRIVER is not None:
        pytest.skip("TEXTUAL_DRIVER names a driver: the app leaves it as it is")
    app = LanesApp.__new__(LanesApp)  # (get_driver_class reads nothing of the instance)
    assert LanesApp.get_driver_class(app) is LeanLinuxDriver


def test_after_a_suspend_the_input_thread_reads_again(driver: Any) -> None:
    """The dashboard's `t` suspends the app: `stop_application_mode` (the stop), `close` (the pipe
    goes), then `start_application_mode` (a new pipe, a new input thread). Keys must work after it."""
    made, write_fd, thread = driver
    _ready(made)
    made.exit_event.set()
    thread.join(STEP_S)
    assert not thread.is_alive()
    made.exit_event.clear()
    made.close()  # Driver.suspend_application_mode closes the driver after stopping it
    made.open_wake_pipe()  # what start_application_mode does before its input thread starts
    made.selector = RecordingSelector()  # (the old thread closed its selector, as each thread does)
    again = threading.Thread(target=made.run_input_thread, name="test-input-again")
    again.start()
    try:
        assert _next_wait(made) is None
        os.write(write_fd, b"q")
        key = made.received.get(timeout=STEP_S)
        assert isinstance(key, events.Key) and key.key == "q"
    finally:
        made.exit_event.set()
        again.join(STEP_S)
    assert not again.is_alive(), "the stop did not wake the new input thread"
