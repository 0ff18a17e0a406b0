"""The agent's stdin pipe as its channel's way back (`channels.base.AgentIO`): writes that never raise,
and an end of input that is said once. Split from `lanes.agent_run`, which owns the run around it.
"""

from __future__ import annotations

import contextlib

from lanes_tui.engine.procs.process import ProcessHandle

__all__ = ["PipeIO"]


class PipeIO:
    """The agent's stdin pipe as the channel's way back (`AgentIO`)."""

    def __init__(self, handle: ProcessHandle) -> None:
        self.handle = handle

    def write(self, data: bytes) -> bool:
        stdin = self.handle.proc.stdin
        if stdin is None or stdin.is_closing():
            return False
        try:
            stdin.write(data)
        except (OSError, RuntimeError):
            return False
        return True

    def close_input(self) -> None:
        stdin = self.handle.proc.stdin
        if stdin is not None and not stdin.is_closing():
            with contextlib.suppress(OSError, RuntimeError):
                stdin.close()

    def refresh(self) -> None:
        return None
