"""The plan supervisor: a small detached process that ticks one plan until it is done or cancelled.

Started as `python -m lanes_tui.engine.plans --repo R --plan NAME --detach` (`spawn_plan_supervisor`,
by `plan launch` and `plan resume`), in its own session, so a plan advances with no dashboard open:
every few seconds it runs `plans.scheduler.advance`, which starts what can start. It forks once, as a
lane's supervisor does, so the command that started it returns once it holds its lock.

One per plan: it holds the `supervisor-lock/` slot of the plan for its whole life (the kernel frees it
when the process dies, however it dies), and a second one started meanwhile exits at once, saying so.
It owns no lane: the lanes it starts run under their own supervisors, so stopping it (SIGTERM, then
SIGKILL after a deadline: `stop_plan_supervisor`) stops only the scheduling. It exits by itself when
the plan is done or cancelled, or its state folder is gone (a demo removed).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

from lanes_tui.engine.config.settings import Config, load_config
from lanes_tui.engine.core import slots
from lanes_tui.engine.core.atomic import private_opener, read_json, write_json_atomic
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.plans.scheduler import advance
from lanes_tui.engine.plans.state import PlanStore
from lanes_tui.engine.procs.process import ProcKey, kill_processes, kill_processes_now, process_create_time

__all__ = [
    "STOP_KILL_S", "STOP_TERM_S", "TICK_S", "main", "plan_supervisor_alive", "plan_supervisor_key",
    "spawn_plan_supervisor", "stop_plan_supervisor", "stop_plan_supervisor_now",
]

log = logging.getLogger("lanes_tui.plan_supervisor")

#: Seconds between two ticks of the scheduler.
TICK_S = 2.0
START_TIMEOUT_S = 30.0
#: SIGTERM, then this long for the tick in progress to end (it may be starting a lane, which waits
#: for that lane's supervisor), then SIGKILL and this long for it to be gone.
STOP_TERM_S = 40.0
STOP_KILL_S = 5.0
#: What the forked child tells the command that started it.
_STARTED, _ALREADY = b"1", b"2"


def plan_supervisor_key(repo: Path, name: str) -> ProcKey | None:
    """The plan supervisor's identity from `supervisor.json`, or None (never one, or nonsense in it)."""
    try:
        data = read_json(PlanStore(repo, name).paths.supervisor)
        pid, created = int(data["pid"]), float(data["create_time"])
    except (OSError, ValueError, KeyError, TypeError, OverflowError):
        return None
    if not 0 < pid < 2**22 or not math.isfinite(created):
        return None
    return ProcKey(pid, created)


def plan_supervisor_alive(repo: Path, name: str) -> bool:
    key = plan_supervisor_key(repo, name)
    return key is not None and key.alive()


def spawn_plan_supervisor(repo: Path, name: str, *, tick_s: float | None = None) -> ProcKey:
    """Start the plan's supervisor (or find the one running) and return its identity."""
    store = PlanStore(repo, name)
    if not store.exists():
        raise LanesError(f"no launched plan {name!r}", "launch it first: `lanes-tui plan launch FILE`")
    argv = [sys.executable, "-m", "lanes_tui.engine.plans", "--repo", str(repo), "--plan", name, "--detach"]
    if tick_s is not None:
        argv += ["--tick", str(tick_s)]
    with open(store.paths.supervisor_log, "ab", opener=private_opener) as output:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=output, stderr=output,
                                start_new_session=True, close_fds=True, cwd=str(repo))
    try:
        code = proc.wait(START_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise LanesError(f"the plan supervisor of {name} did not start within {START_TIMEOUT_S:g}s",
                         f"see {store.paths.supervisor_log}") from None
    key = plan_supervisor_key(repo, name)
    if code != 0 or key is None or not key.alive():
        raise LanesError(f"the plan supervisor of {name} failed to start", f"see {store.paths.supervisor_log}")
    return key


async def stop_plan_supervisor(repo: Path, name: str, *, term_s: float = STOP_TERM_S,
                               kill_s: float = STOP_KILL_S) -> int | None:
    """SIGTERM the plan supervisor, SIGKILL it after `term_s`; the pid that was running, or None."""
    key = plan_supervisor_key(repo, name)
    if key is None or not key.alive():
        return None
    await kill_processes([key], term_s=term_s, kill_s=kill_s)
    return key.pid


def stop_plan_supervisor_now(repo: Path, name: str, *, term_s: float = STOP_TERM_S,
                             kill_s: float = STOP_KILL_S) -> int | None:
    """`stop_plan_supervisor` for code that is not async."""
    key = plan_supervisor_key(repo, name)
    if key is None or not key.alive():
        return None
    kill_processes_now([key], term_s=term_s, kill_s=kill_s)
    return key.pid


class PlanSupervisor:
    """Ticks one plan's scheduler until the plan is finished or a stop is asked for."""

    def __init__(self, repo: Path, name: str, *, tick_s: float = TICK_S) -> None:
        self.repo = repo
        self.store = PlanStore(repo, name)
        self.tick_s = tick_s
        self.stop = asyncio.Event()
        self.who = f"plan supervisor (pid {os.getpid()})"

    async def run(self) -> int:
        config: Config | None = None
        while not self.stop.is_set():
            try:
                config = load_config(self.repo)
            except LanesError as exc:  # keep the config it had; the lead sees it in the log
                log.warning("config: %s", exc)
            if not self.store.exists():
                log.info("plan %s is gone: stopping", self.store.name)
                return 0
            if config is not None:
                try:
                    decision = await advance(self.repo, config, self.store.name, who=self.who)
                except LanesError as exc:
                    log.warning("tick: %s", exc)
                except Exception:  # a bug must not stop the plan for good: log it, tick again
                    log.exception("tick failed")
                else:
                    if decision.finished:
                        log.info("plan %s is %s: stopping", self.store.name,
                                 "done" if decision.done else decision.state)
                        return 0
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), self.tick_s)
        log.info("stop asked: stopping")
        return 0


def _detach() -> int:
    """Fork: the parent waits for the child's word (running, or another one runs) and exits."""
    read_fd, write_fd = os.pipe()
    if os.fork() > 0:
        os.close(write_fd)
        word = os.read(read_fd, 1)
        os._exit(0 if word in (_STARTED, _ALREADY) else 1)
    os.close(read_fd)
    os.setsid()  # its own session, apart from the command that started it
    return write_fd


def _tell(fd: int | None, word: bytes) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.write(fd, word)
            os.close(fd)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lanes-tui-plan-supervisor")
    parser.add_argument("--repo", required=True, type=Path)
    parser.add_argument("--plan", required=True)
    parser.add_argument("--detach", action="store_true")
    parser.add_argument("--tick", type=float, default=TICK_S)
    args = parser.parse_args(argv)
    if not math.isfinite(args.tick) or not 0.05 <= args.tick <= 3600:
        parser.error("--tick must be 0.05 to 3600 seconds")
    store = PlanStore(args.repo, args.plan)  # refuses an invalid name before anything is made
    if not store.exists():
        print(f"no launched plan {args.plan!r} in {args.repo}", file=sys.stderr)
        return 2
    ready = _detach() if args.detach else None
    with contextlib.suppress(OSError):
        open(store.paths.supervisor_log, "ab", opener=private_opener).close()  # 0600 before logging opens it
    logging.basicConfig(filename=str(store.paths.supervisor_log), level=logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    slot = slots.try_acquire(store.paths.supervisor_lock, 1, {"lane": f"plan {args.plan}", "command": "supervisor"})
    if slot is None:
        log.info("another plan supervisor runs plan %s: exiting", args.plan)
        _tell(ready, _ALREADY)
        return 0
    try:
        write_json_atomic(store.paths.supervisor, {"pid": os.getpid(),
                                                   "create_time": process_create_time(os.getpid())})
        log.info("plan supervisor of %s started (pid %s, tick %ss)", args.plan, os.getpid(), args.tick)
        return asyncio.run(_amain(args.repo, args.plan, args.tick, ready))
    finally:
        slot.release()


async def _amain(repo: Path, name: str, tick_s: float, ready: int | None) -> int:
    supervisor = PlanSupervisor(repo, name, tick_s=tick_s)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, supervisor.stop.set)
    _tell(ready, _STARTED)
    return await supervisor.run()
