"""Starting an agent in a pseudo-terminal, and reading and writing its terminal from the event loop.

The child gets the pty's slave side as stdin, stdout and stderr, starts a new session (so it is still
the leader of its own process group and the escalating stop in `procs` works unchanged) and makes the
pty its controlling terminal, as an interactive CLI expects. The parent keeps only the master side:
bytes read from it go to the pump (output.log, lines) and, synchronously, to the screen renderer, so
`refresh()` can bring the screen up to date right before an answer is typed.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import struct
import subprocess
import termios
import time
from collections.abc import Callable

from lanes_tui.engine.procs.process import ProcessHandle, ProcessRequest

log = logging.getLogger(__name__)

READ_CHUNK = 1 << 16


def _controlling_terminal() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Make stdin (the pty) the controlling terminal of the session the child just started."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def set_window_size(fd: int, rows: int, columns: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))


class PtyTerminal:
    """The master side of an agent's pseudo-terminal, as an `AgentIO` and a stream for the pump."""

    def __init__(self, master_fd: int, on_bytes: Callable[[bytes], None] | None = None) -> None:
        self.fd = master_fd
        self.on_bytes = on_bytes
        #: Lead's viewers of the live terminal (`lanes-tui attach`): each gets every byte read, and b""
        #: once the terminal has ended.
        self.listeners: list[Callable[[bytes], None]] = []
        self.reader = asyncio.StreamReader()
        self._loop = asyncio.get_running_loop()
        self._eof = False
        self._paused = False
        os.set_blocking(master_fd, False)
        self._loop.add_reader(master_fd, self.refresh)

    def pause_reading(self) -> None:
        """Out of the event loop for a while (the pump's rest); never while the lead watches live."""
        if self._eof or self._paused or self.listeners:
            return
        self._paused = True
        self._loop.remove_reader(self.fd)

    def resume_reading(self) -> None:
        if self._paused:
            self._paused = False
            if not self._eof:
                self._loop.add_reader(self.fd, self.refresh)

    def refresh(self) -> None:
        """Read everything the agent has written so far (called by the loop, and before typing)."""
        while not self._eof:
            try:
                data = os.read(self.fd, READ_CHUNK)
            except BlockingIOError:
                return
            except OSError:  # EIO: every slave fd is closed, the agent and its children are gone
                data = b""
            if not data:
                self._finish()
                return
            if self.on_bytes is not None:
                try:
                    self.on_bytes(data)
                except Exception:
                    log.exception("terminal renderer failed")
            self._tell(data)
            self.reader.feed_data(data)

    def write(self, data: bytes) -> bool:
        if self._eof:
            return False
        try:
            view = memoryview(data)
            deadline = time.monotonic() + 1.0
            while view:
                try:
                    written = os.write(self.fd, view)
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        return False
                    time.sleep(0.005)
                    continue
                view = view[written:]
        except OSError as exc:
            log.info("cannot write to the terminal: %s", exc)
            return False
        return True

    def close_input(self) -> None:
        """A terminal has no EOF of its own to send; the agent is stopped by signals instead."""

    def _tell(self, data: bytes) -> None:
        """Copy to the viewers, after the renderer: a viewer's repaint plus this stream is the screen."""
        for listener in list(self.listeners):
            try:
                listener(data)
            except Exception:
                log.exception("terminal viewer failed")

    @property
    def ended(self) -> bool:
        return self._eof

    def _finish(self) -> None:
        if not self._eof:
            self._eof = True
            if not self._paused:
                self._loop.remove_reader(self.fd)
            self.reader.feed_eof()
            self._tell(b"")

    def close(self) -> None:
        self._finish()
        with contextlib.suppress(OSError):
            os.close(self.fd)


def _child_setup(preexec: Callable[[], None] | None) -> Callable[[], None]:
    """Take the terminal, then run the request's own child step (joining the lane's cgroup)."""
    if preexec is None:
        return _controlling_terminal

    def setup() -> None:
        _controlling_terminal()
        preexec()

    return setup


async def start_in_pty(request: ProcessRequest, *, rows: int, columns: int,
                       on_bytes: Callable[[bytes], None] | None = None) -> tuple[ProcessHandle, PtyTerminal]:
    """Start `request` on a new pty of `rows` x `columns`; the caller closes the terminal at the end."""
    master, slave = os.openpty()
    try:
        set_window_size(slave, rows, columns)
        env = dict(request.env)
        if env.get("TERM", "dumb") == "dumb":
            env["TERM"] = "xterm-256color"
        proc = await asyncio.create_subprocess_exec(
            *request.argv, cwd=str(request.cwd), env=env, stdin=slave, stdout=slave, stderr=slave,
            start_new_session=True, preexec_fn=_child_setup(request.preexec),
        )
    except subprocess.SubprocessError as exc:  # the child could not take the terminal (preexec failed)
        os.close(master)
        raise PermissionError(f"cannot give {request.argv[0]!r} a terminal: {exc}") from exc
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
    log.info("started %s in a pty pid=%s argv0=%s", request.name, proc.pid, request.argv[0])
    return ProcessHandle(request, proc, time.monotonic()), PtyTerminal(master, on_bytes)
