"""`[lanes] setup`: the commands that make a new worktree ready (`uv sync`, `npm ci`), before the agent.

Run by the supervisor once it holds the lane's parallel slot and its caps (`containment.enter`), so a
dependency install is capped like the agent it prepares for: the same cgroup and nice value through
the governor's `preexec`, the lane's allow-listed environment (`[gates] env`, as gates get: a setup
step is the project's own command, not the agent's), argv split with shlex and never a shell, each
child in its own session. The output goes to the lane's `output.log` under a header, so the lead reads
a failed `npm ci` where the agent's output would be. A step that fails or outruns
`[lanes] setup_timeout_s` ends the lane CONFIG-ERROR naming the step: the agent never starts in a
worktree that is not ready, and a retry would fail the same way until the lead fixes the config.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import sys
import time
from pathlib import Path
from typing import BinaryIO

from lanes_tui.engine.config import aider_model
from lanes_tui.engine.config.settings import Config, ProviderConfig
from lanes_tui.engine.core.atomic import private_opener
from lanes_tui.engine.decisions.gates.shared_envs import record_before
from lanes_tui.engine.lanes.env import ensure_cli_shim, lane_environment
from lanes_tui.engine.procs.process import ProcessHandle, ProcessRequest, StopDeadlines
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from lanes_tui.engine.supervisor.containment import Hold

__all__ = ["ready_for", "run_setup", "setup_argv"]

#: How a setup step is stopped (timeout, or the lead's stop): its whole session, TERM then KILL.
STOP = StopDeadlines(steps=("sigterm", "sigkill"), sigterm=5.0, sigkill=5.0)


def setup_argv(command: str) -> list[str]:
    """The argv of a setup step; `{python}` is the interpreter lanes-tui runs on (a setup step may make the
    project's venv with it; gates then run on that venv: `decisions.gates.python`)."""
    return [sys.executable if part == "{python}" else part for part in shlex.split(command)]


async def run_setup(config: Config, store: LaneStore, record: LaneRecord, paths: StatePaths, worktree: Path,
                    hold: Hold | None, stop: asyncio.Event) -> tuple[str, str] | None:
    """Run every setup step in order, then record the shared environments as the agent finds them
    (`decisions.gates.shared_envs`: what setup installs is the lead's, not the agent's); None when all
    passed, else the lane's (result, reason)."""
    failed = await _run_steps(config, store, record, paths, worktree, hold, stop)
    if failed is None:
        record_before(paths.repo, config, paths.lane(record.id).dir)  # compared after the agent (after_run)
    return failed


async def _run_steps(config: Config, store: LaneStore, record: LaneRecord, paths: StatePaths, worktree: Path,
                     hold: Hold | None, stop: asyncio.Event) -> tuple[str, str] | None:
    steps = config.lanes.setup
    if not steps:
        return None
    env = lane_environment(os.environ, lane_id=record.id, attempt=record.attempt, state_dir=paths.state,
                           worktree=worktree, bin_dir=ensure_cli_shim(paths.bin).parent, allow=config.gates.env)
    timeout_s = config.lanes.setup_timeout_s
    with open(paths.lane(record.id).output, "ab", opener=private_opener) as output:
        for command in steps:
            store.transition(record, "launching", f"setup: {command}")
            store.event(record.id, "setup-start", command=command, timeout_s=timeout_s)
            output.write(f"\n=== lanes-tui: setup: {command} ===\n".encode())
            output.flush()
            started = time.monotonic()
            code, why, last = await _run_step(command, worktree, env, hold, output, timeout_s, stop)
            duration = round(time.monotonic() - started, 3)
            store.event(record.id, "setup-done", command=command, returncode=code, duration_s=duration,
                        **({"problem": why} if why else {}))
            if stop.is_set():
                return "LANE-FAILED", f"stopped by the lead during setup step `{command}`"
            if why is not None:
                return "CONFIG-ERROR", f"setup step `{command}` failed ({why})" + (f": {last}" if last else "")
    return None


async def _run_step(command: str, worktree: Path, env: dict[str, str], hold: Hold | None, output: BinaryIO,
                    timeout_s: float, stop: asyncio.Event) -> tuple[int | None, str | None, str]:
    """(exit code, None, …) when the step passed; else (code or None, why (`exit 1`), its last stderr line)."""
    argv = setup_argv(command)  # the parser split it already: it cannot fail here
    request = ProcessRequest(argv, worktree, env, stdin_pipe=False, name=f"setup {argv[0]}",
                             preexec=hold.governor.preexec() if hold else None)
    try:
        handle = await ProcessHandle.start(request)
    except OSError as exc:
        return 127, "exit 127", f"cannot start {argv[0]!r}: {exc.strerror or exc}"
    last_err: list[str] = []

    async def copy(stream: asyncio.StreamReader | None, is_err: bool) -> None:
        if stream is None:
            return
        while line := await stream.readline():
            output.write(line)
            if is_err and line.strip():
                last_err[:] = [line.decode("utf-8", "replace").strip()[:200]]

    readers = asyncio.gather(copy(handle.proc.stdout, False), copy(handle.proc.stderr, True))
    waiter = asyncio.ensure_future(handle.wait(timeout_s))
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:  # the supervisor itself is going: never leave the step running
        await asyncio.shield(handle.stop(STOP))
        readers.cancel()
        raise
    finally:
        stopper.cancel()
    code = waiter.result() if waiter.done() else None
    if not waiter.done():
        waiter.cancel()
    if code is None:
        await handle.stop(STOP)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(readers, 10.0)
    output.flush()
    last = last_err[0] if last_err else ""
    if code is None:
        return None, ("stopped by the lead" if stop.is_set() else f"timed out after {timeout_s:g}s"), last
    return code, (f"exit {code}" if code != 0 else None), last


def ready_for(worktree: Path, provider: ProviderConfig) -> ProviderConfig:
    """The provider as it runs in `worktree`: the model aider will run, read where aider reads it
    (`config.aider_model`), so the lane's label, cost and review family are the model's."""
    return aider_model.resolved(provider, os.environ, worktree)
