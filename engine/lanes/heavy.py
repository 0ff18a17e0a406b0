"""`lanes-tui lock -- CMD…`: an agent's own heavy run (its test suite, its build) in a heavy slot.

The gates already run inside machine-wide heavy slots (`core.slots`, `state.paths.heavy_slot_dir`);
an agent that starts `pytest -n 32` from its shell did not, so five lanes on two cores ran five
suites at once. `lock` makes the agent's run take the same slots as the gates:

* the slot count is `LANES_HEAVY_SLOTS` if set, else `[gates] slots` of the repository's config
  (inside a lane `LANES_HOME` names it), else cores ÷ 2 (at least 1); `0` turns the lock off;
* it is re-entrant through `LANES_HEAVY_SLOT` (set for CMD, and for gates): a `lock` inside a lock
  — a Makefile target that locks, run by a gate or a locked script — runs at once instead of waiting
  on its own slot;
* each slot has its own TMPDIR, emptied before CMD starts (and after it ends), so a suite never
  reads what another run left behind and temp files do not pile up (a process that may not write the
  slot folder, an agent under a Landlock ruleset, takes its slot on a read-only descriptor and keeps
  its own TMPDIR: `core.slots`);
* the gates' load wait applies too, with the same limit (`LANES_HEAVY_LOAD`, else `[gates] max_load`,
  else twice the cores, at least 4) and the same words on stderr: a free slot on a saturated machine
  still holds back a while (then runs anyway, and says so);
* inside a lane it appends `lock-wait` / `lock-acquired` / `lock-released` / `lock-gave-up` lines
  to the lane's events (`state.lock_events`), never to `lane.json`, whose only writer is the
  supervisor: the lead sees "waiting for a heavy slot, held by lane X since 12:03" and the runs.

CMD is an argv list (never a shell). It stays in the caller's process group and session, so the
stop signals of the agent's tool reach it directly; SIGINT / SIGTERM / SIGHUP sent to `lock` alone
are forwarded, and `lock` waits for CMD and exits with its code.

This module runs in agents' shells: it loads only the standard library, `core`, `state.paths` and
`config.settings` (tomllib) — no psutil, no tomlkit — to start as fast as `ask`.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import FrameType
from typing import Any

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.core import slots
from lanes_tui.engine.core.clock import Clock, RealClock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.relay import confined, relay
from lanes_tui.engine.core.repo import find_repo_root
from lanes_tui.engine.core.waits import START, Wait, default_load_limit, load_text, span
from lanes_tui.engine.state.lock_events import LockJournal, lane_events_path
from lanes_tui.engine.state.paths import StatePaths, heavy_slot_dir

#: Set for CMD to the index of the slot it runs in: the re-entrancy marker.
HEAVY_SLOT_ENV = "LANES_HEAVY_SLOT"
#: Overrides the slot count (`0` = no lock at all).
SLOTS_ENV = "LANES_HEAVY_SLOTS"
#: Overrides the load limit of the load wait (`0` = never wait for the load).
LOAD_ENV = "LANES_HEAVY_LOAD"
#: CMD could not be started (not found, not executable): the shell's own code for it.
EXIT_NOT_STARTED = 127
#: No slot came free within `--wait`: EX_TEMPFAIL, "try again later".
EXIT_NO_SLOT = 75
#: How long the load wait may hold a run that got its slot, when `--wait` set no budget.
DEFAULT_LOAD_WAIT_S = 600.0
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

Say = Callable[[str], None]


def find_repo(environ: Mapping[str, str], cwd: Path, repo: Path | None = None) -> Path | None:
    """The repository whose config sizes the slots: `--repo`, else the lane's (`LANES_HOME` is
    `<repo>/.lanes/state`), else the nearest folder above `cwd` with a `.lanes/config.toml`, else the
    main repository of a linked worktree, when it has one."""
    if repo is not None:
        return repo
    home = environ.get("LANES_HOME", "")
    if home:
        state = Path(home)
        if state.name == "state" and state.parent.name == ".lanes":
            return state.parent.parent
    for folder in (cwd, *cwd.parents):
        if StatePaths(folder).config.is_file():
            return folder
    try:  # a linked worktree outside the main one: the main repository's config (core.repo)
        root = find_repo_root(cwd)
    except LanesError:
        return None
    return root if StatePaths(root).config.is_file() else None


def slot_count(environ: Mapping[str, str], repo: Path | None) -> tuple[int, str]:
    """(how many heavy slots, where that number came from) — `doctor` shows both."""
    raw = environ.get(SLOTS_ENV, "").strip()
    if raw:
        if not raw.isdigit():
            raise LanesError(f"{SLOTS_ENV}={raw!r} is not a whole number",
                             "set it to 0 (no lock), 1, 2, … or unset it")
        return int(raw), SLOTS_ENV
    if repo is not None:
        config = load_config(repo)
        if config.path is not None:
            return config.gates.slots, f"[gates] slots of {config.path}"
    return max(1, (os.cpu_count() or 1) // 2), "cores ÷ 2"


def load_limit(environ: Mapping[str, str], repo: Path | None = None) -> float:
    """The load above which a run holds back: `LANES_HEAVY_LOAD`, else `[gates] max_load` of `repo`'s
    config, else twice the cores (at least 4); 0 = never wait. The gates read the same (`limit_of`)."""
    if environ.get(LOAD_ENV, "").strip() or repo is None:
        return limit_of(environ, None)
    return limit_of(environ, load_config(repo).gates.max_load)


def limit_of(environ: Mapping[str, str], max_load: float | None) -> float:
    """`LANES_HEAVY_LOAD` if set (LanesError when it is not a load figure), else `max_load`, else the default."""
    raw = environ.get(LOAD_ENV, "").strip()
    if not raw:
        return default_load_limit() if max_load is None else max_load
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < math.inf:  # also refuses nan and inf
        raise LanesError(f"{LOAD_ENV}={raw!r} is not a load figure", "set it to e.g. 4 (0 = do not wait) or unset it")
    return value


def slot_tmpdir(folder: Path, index: int) -> Path:
    return folder / f"tmp-{index}"


def empty_dir(path: Path) -> None:
    """Create `path` (private) or empty it; what cannot be removed (a read-only tree) is left."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    for entry in os.scandir(path):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            try:
                os.unlink(entry.path)
            except FileNotFoundError:
                continue


def describe_slots(environ: Mapping[str, str], cwd: Path, repo: Path | None = None) -> str:
    """`doctor`'s line: `2 (cores ÷ 2), used by lane a since 12:03 (pytest -q)` or `…, all free`, then
    each damaged slot file it rebuilt (`; slot-0.lock was a directory: rebuilt`)."""
    count, source = slot_count(environ, find_repo(environ, cwd, repo))
    if count == 0:
        return f"off ({SLOTS_ENV}=0): lanes-tui lock runs commands at once"
    folder = heavy_slot_dir()
    try:
        rebuilt = slots.ensure_slots(folder, count)
    except OSError as exc:
        raise LanesError(f"the slot files in {folder} cannot be checked or rebuilt: {exc.strerror or exc}",
                         f"remove {folder} (lanes-tui makes it again)") from None
    held = slots.holders(folder)
    used = ", ".join(slots.describe_holder(h) for h in held)
    return f"{count} ({source}), " + (f"used by {used}" if used else "all free") + "".join(f"; {r}" for r in rebuilt)


def holders_line(folder: Path) -> str:
    """`lane a since 12:03 (pytest), lane b since 12:04 (gates)`, or `?` while they change hands."""
    return ", ".join(slots.describe_holder(h) for h in slots.holders(folder)) or "?"


async def take_slot(folder: Path, count: int, holder: dict[str, Any], *, wait_s: float | None,
                    load: float, say: Say, journal: LockJournal | None = None, clock: Clock | None = None,
                    sample: Callable[[], float] | None = None) -> slots.Slot | None:
    """A slot (None if `wait_s` passed first), then the load wait with what is left of the budget.

    Says once that it waits, and for whom or for what load: an agent whose suite seems to hang sees
    why, and so does the lead (the `journal` puts the same wait into the lane's events). A load that
    stays high past the budget does not stop the run (an agent's command is not the gates: nothing
    would run it later), but it is said. `clock` and `sample` (the load source) are for tests.
    """
    journal = journal or LockJournal(None)
    clock = clock or RealClock()
    start = clock.monotonic()
    slot = slots.try_acquire(folder, count, holder)
    if slot is None:
        held = slots.holders(folder)
        say(f"waiting for a heavy slot, held by {', '.join(slots.describe_holder(h) for h in held) or '?'}")
        journal.wait_for_slot(held)
        slot = await slots.acquire(folder, count, holder, budget_s=wait_s, clock=clock)
        if slot is None:
            return None
    if load > 0:
        def heard(wait: Wait) -> None:  # the gates' words (`core.waits`), on stderr and in the lane's events
            if wait.phase == START:
                say(wait.reason)
                journal.wait_for_load(wait.load or 0.0, load)
            elif not wait.ok:
                say(f"the machine stayed busy for {span(wait.waited_s)} ({load_text(wait.load, load)}): "
                    "running anyway")

        left = DEFAULT_LOAD_WAIT_S if wait_s is None else max(0.0, wait_s - (clock.monotonic() - start))
        await slots.wait_for_load(load, left, clock, load=sample, on_wait=heard)
    return slot


def run_locked(argv: list[str], *, environ: Mapping[str, str], cwd: Path, say: Say,
               repo: Path | None = None, wait_s: float | None = None,
               slot_dir: Path | None = None) -> int:
    """Run `argv` inside a heavy slot and return its exit code (see the module docstring).

    Refusals (bad settings, a broken config) raise LanesError; everything else is an exit code:
    CMD's own, 128+N if a signal N ended it, 127 if it could not start, 75 if no slot came free.
    """
    if not argv:
        raise LanesError("lock needs a command to run", "put it after `--`: lanes-tui lock -- pytest -q")
    env = dict(environ)
    if env.get(HEAVY_SLOT_ENV, "").strip().isdigit():  # already inside a slot: do not wait on ourselves
        return run_child(argv, env, cwd, say)
    settings_repo = find_repo(environ, cwd, repo)
    count, _ = slot_count(environ, settings_repo)
    if count == 0:  # the lead turned the lock off
        return run_child(argv, env, cwd, say)
    folder = slot_dir or heavy_slot_dir()
    holder = {"lane": environ.get("LANES_LANE") or "lead", "kind": "lock",
              "command": shlex.join(argv)[:200], "cwd": str(cwd)}
    limit = load_limit(environ, settings_repo)
    journal = _journal(environ)
    start = time.monotonic()
    try:
        with _exit_on_stop_signals():
            slot = asyncio.run(take_slot(folder, count, holder, wait_s=wait_s, load=limit, say=say, journal=journal))
    except BaseException:  # stopped while waiting: the lane's wait must not stay open
        journal.gave_up(time.monotonic() - start, "stopped while waiting")
        raise
    if slot is None:
        journal.gave_up(time.monotonic() - start, f"no slot within {wait_s:g}s")
        say(f"no heavy slot came free within {wait_s:g}s (held by {holders_line(folder)}) "
            "— try again later, or raise --wait")
        return EXIT_NO_SLOT
    journal.acquired(slot.index, time.monotonic() - start)
    began = time.monotonic()
    code: int | None = None
    with slot:
        # Confined by the kernel (`lanes.confine`), a lane writes only its own TMPDIR: the slot's lives there.
        wanted = (Path(env["TMPDIR"]) / f"heavy-slot-{slot.index}" if confined(environ) and env.get("TMPDIR")
                  else slot_tmpdir(folder, slot.index))
        tmp: Path | None = wanted
        try:
            empty_dir(wanted)
        except OSError:  # the slot folder is read-only to this process: it keeps the TMPDIR it has
            tmp = None
        env[HEAVY_SLOT_ENV] = str(slot.index)
        if tmp is not None:
            env["TMPDIR"] = str(tmp)
        try:
            code = run_child(argv, env, cwd, say)
            return code
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    empty_dir(tmp)
            journal.released(slot.index, time.monotonic() - began, code)


def _journal(environ: Mapping[str, str]) -> LockJournal:
    """Where this run's `lock-*` lines go: the lane's events, through its supervisor when confined."""
    if confined(environ) and environ.get("LANES_HOME") and environ.get("LANES_LANE"):
        home, lane = Path(environ["LANES_HOME"]), environ["LANES_LANE"]
        return LockJournal(None, relay=lambda line: relay(home, lane, {"op": "lock-event", "line": line}, timeout=5))
    return LockJournal(lane_events_path(environ))


@contextlib.contextmanager
def _exit_on_stop_signals() -> Iterator[None]:
    """While `lock` waits, a stop signal ends it as SystemExit(128+N) instead of killing it outright,
    so the wait is closed in the lane's events (SIGKILL still cannot be: `lock_events` then checks
    that the waiting pid lives)."""
    def stop(signum: int, _frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous = {sig: signal.signal(sig, stop) for sig in FORWARDED}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_child(argv: list[str], env: Mapping[str, str], cwd: Path, say: Say) -> int:
    """Start CMD in the caller's process group and session, forward the stop signals sent to us alone, wait for it.

    The handlers go in before the start: a signal that arrives in between is delivered once CMD
    exists rather than killing `lock` and leaving CMD behind.
    """
    child: list[subprocess.Popen[bytes]] = []
    pending: list[int] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        if child:
            with contextlib.suppress(ProcessLookupError):
                child[0].send_signal(signum)
        else:
            pending.append(signum)

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    try:
        try:
            child.append(subprocess.Popen(argv, cwd=cwd, env=dict(env)))
        except OSError as exc:
            say(f"cannot start {argv[0]!r}: {exc.strerror or exc} — check the command and PATH")
            return EXIT_NOT_STARTED
        for signum in pending:
            child[0].send_signal(signum)
        code = child[0].wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 128 - code if code < 0 else code
