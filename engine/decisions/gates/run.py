"""Gates: the checks a lane's work must pass before it can be accepted.

Each configured command runs in the lane's worktree as an argv list (no shell), in its own process
group with its own timeout, inside a machine-wide heavy slot so parallel lanes do not run five test
suites at once on two cores. A gate that could not get a slot is `not-run`, never `failed`: a busy
machine says nothing about the lane's work. So is a gate run whose machine stayed above `[gates] max_load`
for the whole wait budget; while it waits for a slot or the load, the caller's `on_wait` hears it
(`core.waits`, `decisions.gates.waits`), so a waiting check never looks like a hung one.

A gate runs with the environment `check` builds (`lanes.env`): the base set, `[gates] env` and the
lane's `LANES_*` — never a provider's credentials, since a gate runs code the agent wrote — inside
the project's virtualenv (`decisions.gates.plan`). Each step has its own limit; its progress and its
whole output are kept for the lead to read (`decisions.gates.log`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.gates import GatesConfig
from lanes_tui.engine.core import slots
from lanes_tui.engine.core.atomic import read_json, write_json_atomic
from lanes_tui.engine.core.clock import Clock, RealClock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.waits import OnWait, Wait, holders_text, load_text, span
from lanes_tui.engine.decisions.gates.log import Progress, StepLog, duration_text, gate_log_path, progress_line
from lanes_tui.engine.decisions.gates.no_tests import NOTE_ALLOWED, NOTE_FAILED, recognise
from lanes_tui.engine.decisions.gates.plan import PlannedGate, gate_environment, plan_gates, project_venv
from lanes_tui.engine.lanes.heavy import HEAVY_SLOT_ENV
from lanes_tui.engine.lanes.heavy import limit_of as heavy_limit_of
from lanes_tui.engine.procs.gate_scope import GateScope
from lanes_tui.engine.procs.process import (
    ProcessHandle,
    ProcessRequest,
    ProcKey,
    StopDeadlines,
    chain_preexec,
    stop_group_now,
)
from lanes_tui.engine.state.paths import heavy_slot_dir

log = logging.getLogger(__name__)

TAIL_BYTES = 4000
#: In the lane's folder while its gates run: their commands and the running gate's process. A check
#: killed with -9 leaves it behind, and reconcile stops what it names (`stop_leftover_gates`).
RUNNING_FILE = "gates-running.json"


@dataclass(frozen=True)
class GateResult:
    """One gate's outcome as it goes into the packet."""

    command: str
    status: str  # passed | failed | timeout | not-run
    exit_code: int | None
    output_tail: str
    duration_s: float
    started: float
    #: The step's name (`pytest`, `[gates.steps.NAME]`), the command as it ran (placeholders filled),
    #: its limit, and the file its whole output was kept in ('' when none was).
    name: str = ""
    shown: str = ""
    timeout_s: float = 0.0
    log: str = ""
    #: What held the gate's processes (`cgroup-v2`, `cgroup-v1`, `none`: `procs.gate_scope`), and the
    #: pids it found still running when the gate returned (a daemon it started), all stopped then.
    containment: str = ""
    left_behind: tuple[int, ...] = ()
    #: What the gates waited for before they ran (`waited 42s for the machine: load 5.1 > 4.0`): on the
    #: first step only, since the wait was the whole run's; `check --log` and the Gates tab show it.
    waits: tuple[str, ...] = ()
    #: Why the step ran no tests (`pytest exit 5`: `decisions.gates.no_tests`); '' when it ran some.
    no_tests: str = ""

    @property
    def label(self) -> str:
        """`pytest (/repo/.venv/bin/python -m pytest -q)`, or `pytest (no tests ran)`: what the why column
        and `check` name."""
        name = self.name or self.command
        if self.no_tests and not self.passed:
            return f"{name} (no tests ran)"
        ran = self.shown or self.command
        return name if ran == name else f"{name} ({ran})"

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def to_json(self) -> dict[str, Any]:
        return dict(asdict(self), passed=self.passed)


def _load_limit(gates: GatesConfig) -> float:
    """The load wait's limit as `lanes-tui lock` reads it (`LANES_HEAVY_LOAD`, else `[gates] max_load`,
    else twice the cores, at least 4; 0 = no load wait); an environment value it cannot read falls back
    to the config here: the gates must run either way."""
    try:
        return heavy_limit_of(os.environ, gates.max_load)
    except LanesError:
        return heavy_limit_of({}, gates.max_load)


def gate_argv(command: str, python: str | None = None) -> list[str]:
    """Split a configured gate into argv; `{python}` is `python`, else the interpreter lanes-tui runs on."""
    argv = shlex.split(command)
    return [(python or sys.executable) if part == "{python}" else part for part in argv]


def passes(exit_code: int | None, no_tests: str, *, allow_no_tests: bool = False) -> bool:
    """Exit 0 and some tests ran; a run of no tests (`no_tests`: its reason from `decisions.gates.no_tests`,
    whatever the exit code that runner gives it) only when the step allows it."""
    return allow_no_tests if no_tests else exit_code == 0


async def run_gates(worktree: Path, gates: GatesConfig, *, env: Mapping[str, str], holder: dict[str, Any],
                    clock: Clock | None = None, slot_dir: Path | None = None,
                    load_limit: float | None = None, running_file: Path | None = None,
                    steps: list[PlannedGate] | None = None, venv: Path | None = None,
                    log_dir: Path | None = None, progress: Progress | None = None,
                    scope: GateScope | None = None, preexec: Sequence[Callable[[], None]] = (),
                    on_wait: OnWait | None = None, load: Callable[[], float] | None = None
                    ) -> list[GateResult]:
    """Run every gate in order inside one heavy slot; the first failure does not skip the rest.

    `steps` are the planned steps (`gates.plan.plan_gates`; planned here from `gates` with the
    worktree as the repository when not given), run in `venv`. With `running_file`, the commands and
    each gate's process are noted there while they run; with `log_dir`, each step's whole output is
    kept in `log_dir/gates/NAME.log`; `progress` hears each step start and end.

    `scope` holds the gates' processes (`procs.gate_scope`: the check's cgroup, or the fallback's
    marker; a marker-only scope when none is given) and is closed here: when this returns, nothing
    any gate started is running. `preexec` runs in each gate's child after the cgroup join (a kernel
    ruleset that confines it).

    `on_wait` hears a wait for a slot or for the machine's load start and end (`core.waits`; check.py
    makes it the lane's why, a `gate-wait` event and an output line); `load` samples the load (tests).
    """
    if steps is None:
        steps = plan_gates(worktree, worktree, gates)[0]
        venv = project_venv(worktree, gates, worktree)
    scope = scope or GateScope.create(None, None)
    try:
        if not steps:
            return []
        run = _Run(env, venv, log_dir, progress, scope, tuple(preexec), on_wait, load)
        if running_file is None:
            return await _run_gates(worktree, gates, steps, run, holder, clock, slot_dir, load_limit, None)
        write_json_atomic(running_file, {"commands": [s.command for s in steps], "pid": None,
                                         "scope": scope.to_json()})
        results = await _run_gates(worktree, gates, steps, run, holder, clock, slot_dir, load_limit, running_file)
        running_file.unlink(missing_ok=True)  # kept when the gates did not finish: reconcile reads it
        return results
    finally:
        await asyncio.shield(asyncio.to_thread(scope.close))


@dataclass(frozen=True)
class _Run:
    """What every step of one check shares: the environment, the venv, where logs and progress go."""

    env: Mapping[str, str]
    venv: Path | None
    log_dir: Path | None
    progress: Progress | None
    #: The check's scope (None: a marker-only one per step) and what else runs before each gate's exec.
    scope: GateScope | None = None
    preexec: tuple[Callable[[], None], ...] = ()
    #: Who hears the gates wait for a slot or the load, and the load source (None: the machine's).
    on_wait: OnWait | None = None
    load: Callable[[], float] | None = None


async def _run_gates(worktree: Path, gates: GatesConfig, steps: list[PlannedGate], run: _Run,
                     holder: dict[str, Any], clock: Clock | None, slot_dir: Path | None,
                     load_limit: float | None, running_file: Path | None) -> list[GateResult]:
    clk = clock or RealClock()
    folder = slot_dir or heavy_slot_dir()
    heard: list[Wait] = []

    def listen(wait: Wait) -> None:  # kept for the packet; the caller's listener never fails the gates
        heard.append(wait)
        if run.on_wait is not None:
            with contextlib.suppress(OSError):
                run.on_wait(wait)

    waited_from = clk.monotonic()
    slot = await slots.acquire(folder, gates.slots, holder, budget_s=gates.slot_wait_s, clock=clk, on_wait=listen)
    reason = ""
    if slot is None:
        waited = clk.monotonic() - waited_from
        reason = f"not run: every heavy slot ({gates.slots}) stayed busy for {span(waited)}"
        holders = slots.holders(folder)
        if holders:
            reason += f" (held by {holders_text(holders)})"
    else:
        remaining = max(0.0, gates.slot_wait_s - (clk.monotonic() - waited_from))
        limit = load_limit if load_limit is not None else _load_limit(gates)
        # 0: the lead (or a test run, whose own load is not the lanes') turned the wait off. A load that
        # stays high past the budget is `not-run`, as a busy slot is: a suite started on a machine that
        # busy runs slowly enough to time out, a false red, and makes every lane's agent slower with it.
        try:
            calm = await slots.wait_for_load(limit, remaining, clk, load=run.load, on_wait=listen)
        except BaseException:  # stopped while waiting: the slot goes now, not when this process ends
            slot.release()
            raise
        if not calm:
            slot.release()
            slot = None
            last = heard[-1] if heard else None
            reason = (f"not run: the machine stayed busy for {span(clk.monotonic() - waited_from)} "
                      f"({load_text(last.load if last else None, limit)}); raise [gates] max_load "
                      "(0 = never wait for the load) if this machine is always that busy")
    waits = tuple(w.ended for w in heard if w.phase == "end")
    if slot is None:
        return [GateResult(s.command, "not-run", None, reason, 0.0, clk.time(), s.name, s.shown, s.timeout_s,
                           waits=waits if i == 0 else ()) for i, s in enumerate(steps)]
    # A gate that runs `lanes-tui lock -- …` (a Makefile target, a script) is already inside this
    # slot: the marker makes that lock re-entrant instead of waiting on its own gate.
    env = {**run.env, HEAVY_SLOT_ENV: str(slot.index)}
    commands = [s.command for s in steps]
    with slot:
        results = [await run_step(worktree, step, run=dataclasses.replace(run, env=env), clock=clk,
                                  running_file=running_file, commands=commands)
                   for step in steps]
    return [dataclasses.replace(results[0], waits=waits), *results[1:]] if waits else results


def stop_leftover_gates(lane_dir: Path, repo_key: str | None = None) -> tuple[list[str], list[int]]:
    """After a check died: (the commands it was running, the pids of the gate processes stopped).

    Gates run in their own process group, so killing the check leaves them running; the running
    file names the gate's leader by (pid, create time), so a recycled pid is never signalled, and
    the check's scope (its gate cgroup, checked against its derived shape, and its marker), so a
    daemon a gate started is stopped too. The file is removed once its gates are gone.
    """
    path = lane_dir / RUNNING_FILE
    try:
        data = read_json(path)
    except (FileNotFoundError, ValueError):
        return [], []
    data = data if isinstance(data, dict) else {}
    commands = [c for c in data.get("commands") or [] if isinstance(c, str)]
    stopped: list[int] = []
    with contextlib.suppress(KeyError, TypeError, ValueError):
        stopped = stop_group_now(ProcKey(int(data["pid"]), float(data["create_time"])))
    scope = GateScope.from_json(data.get("scope"), repo_key, lane_dir.name)
    if scope is not None:
        stopped += scope.sweep(None).pids
        scope.close()
    path.unlink(missing_ok=True)
    return commands, sorted(set(stopped))


async def run_gate(worktree: Path, command: str, *, env: Mapping[str, str], timeout_s: float,
                   clock: Clock, running_file: Path | None = None, commands: tuple[str, ...] | list[str] = ()
                   ) -> GateResult:
    """One configured command with lanes-tui's interpreter as `{python}` (the older, unnamed form)."""
    try:
        argv = tuple(gate_argv(command))
        problem = "" if argv else "empty gate command"
    except ValueError as exc:
        argv, problem = (), f"cannot parse the gate command: {exc}"
    step = PlannedGate(command, command, argv, timeout_s, {}, problem)
    scope = GateScope.create(None, None)
    try:
        return await run_step(worktree, step, run=_Run(env, None, None, None, scope), clock=clock,
                              running_file=running_file, commands=commands)
    finally:
        scope.close()


async def run_step(worktree: Path, step: PlannedGate, *, run: _Run, clock: Clock, running_file: Path | None = None,
                   commands: tuple[str, ...] | list[str] = ()) -> GateResult:
    """One step: started, watched against its own limit, its output kept, its outcome a GateResult."""
    command, timeout_s = step.command, step.timeout_s
    started_wall = clock.time()
    started = time.monotonic()
    argv = list(step.argv)

    scope = run.scope or GateScope.create(None, None)
    swept = None

    def result(status: str, code: int | None, text: str, log: str = "", empty: str = "") -> GateResult:
        return GateResult(command, status, code, text, round(time.monotonic() - started, 3), started_wall,
                          step.name, step.shown, timeout_s, log, scope.mechanism,
                          tuple(swept.pids) if swept is not None else (), no_tests=empty)

    if step.problem or not argv:
        return result("failed", None, step.problem or "empty gate command")
    env = {**gate_environment({**run.env, **step.env}, run.venv), **scope.env()}
    _say(run, step.name, f"start (limit {duration_text(timeout_s)})", status="start", limit_s=timeout_s)
    try:
        request = ProcessRequest(argv, worktree, env, stdin_pipe=False, name=f"gate {argv[0]}",
                                 preexec=chain_preexec(scope.preexec(), *run.preexec))  # the join first
        handle = await ProcessHandle.start(request)
    except (OSError, subprocess.SubprocessError) as exc:  # SubprocessError: its confinement failed
        _say(run, step.name, "could not start", status="failed")
        return result("failed", 127, f"cannot start {argv[0]!r}: {getattr(exc, 'strerror', None) or exc}")
    kept = None
    if run.log_dir is not None:
        with contextlib.suppress(OSError):  # a full disk loses the log, never the gate
            kept = StepLog(gate_log_path(run.log_dir, step.name), f"$ {step.shown}")
    if running_file is not None:
        try:
            write_json_atomic(running_file, {"commands": list(commands), "command": command,
                                             "pid": handle.pid, "create_time": handle.key.create_time,
                                             "scope": scope.to_json()})
        except BaseException:  # a gate nobody could find again must not run on
            await asyncio.shield(handle.stop(StopDeadlines(steps=("sigterm", "sigkill"))))
            scope.sweep(handle.pgid)
            raise
    tail = bytearray()
    seen = [0]  # bytes read in all: the tail holds the whole output while it equals len(tail)

    async def collect(stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        while chunk := await stream.read(65536):
            if kept is not None:
                with contextlib.suppress(OSError):
                    kept.write(chunk)
            seen[0] += len(chunk)
            tail.extend(chunk)
            if len(tail) > 4 * TAIL_BYTES:
                del tail[: len(tail) - TAIL_BYTES]

    readers = asyncio.gather(collect(handle.proc.stdout), collect(handle.proc.stderr))
    try:
        code = await handle.wait(timeout_s)
    except asyncio.CancelledError:  # the lane was stopped mid-check: never leave the gate running
        await asyncio.shield(handle.stop(StopDeadlines(steps=("sigterm", "sigkill"))))
        scope.sweep(handle.pgid)  # and nothing it started
        readers.cancel()
        if kept is not None:
            kept.close("[lanes-tui: stopped by the lead]")
        raise
    status = "passed"
    if code is None:
        await handle.stop(StopDeadlines(steps=("sigterm", "sigkill"), sigterm=5.0, sigkill=5.0))
        status = "timeout"
    # Whatever the gate started is stopped now, daemons included (before its output is drained: a
    # daemon holding the gate's stdout open would keep the pipe from ending).
    swept = await asyncio.to_thread(scope.sweep, handle.pgid)
    await asyncio.wait_for(readers, 10.0)
    text = bytes(tail[-TAIL_BYTES:]).decode("utf-8", errors="replace")
    empty = note = ""
    if status != "timeout":  # a run of no tests is no pass unless the step says it may be
        whole = bytes(tail).decode("utf-8", errors="replace")
        empty = recognise(argv, code, whole, complete=seen[0] == len(tail)) or ""
        status = "passed" if passes(code, empty, allow_no_tests=step.allow_no_tests) else "failed"
        if empty:
            note = (NOTE_ALLOWED if status == "passed" else NOTE_FAILED).format(reason=empty)
            text += "\n" + note
    else:
        text += f"\n[lanes-tui: gate timed out after {timeout_s:g}s and was stopped]"
    log.info("gate %r in %s: %s (exit %s)", command, worktree, status, code)
    exit_code = handle.proc.returncode if status != "timeout" else None
    took = duration_text(time.monotonic() - started)
    ending = f"timed out after {took}" if status == "timeout" else f"done in {took} (exit {exit_code})"
    ending += f"; {swept.describe()}"
    if empty and status == "failed":
        ending += "; no tests ran"
    if kept is not None:
        with contextlib.suppress(OSError):
            kept.close(f"[lanes-tui: {step.name} {ending}]" + (f"\n{note}" if note else ""))
    _say(run, step.name, ending, status=status, exit=exit_code, duration_s=round(time.monotonic() - started, 3))
    return result(status, exit_code, text, str(kept.path) if kept is not None else "", empty)


def _say(run: _Run, name: str, what: str, **fields: object) -> None:
    """A progress line; a listener that fails (a full disk) never fails the gate."""
    if run.progress is not None:
        with contextlib.suppress(OSError):
            run.progress(progress_line(name, what), {"step": name, **fields})


def summarise(results: list[GateResult]) -> str:
    """`passed`, `failed`, `not-run` or `none` for the whole set."""
    if not results:
        return "none"
    if any(r.status == "not-run" for r in results):
        return "not-run"
    return "passed" if all(r.passed for r in results) else "failed"
