"""Start and stop lanes: validate, make the worktree, hand the lane to a detached supervisor.

`launch_lane` checks everything before it creates anything, and undoes what it created if a later
step fails, so a refused `run` leaves no worktree, branch or state folder behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.key_lines import did_you_mean
from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.atomic import private_opener, read_json
from lanes_tui.engine.core.clock import Clock, RealClock
from lanes_tui.engine.core.debug import crash_point
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import MAX_SLUG, branch_for, lane_id_for, slugify, validate_slug
from lanes_tui.engine.core.limits import check_prompt
from lanes_tui.engine.git import git_snapshot, lead_checkout, watch, worktrees
from lanes_tui.engine.git.lane_paths import LaneOrigin, write_origin
from lanes_tui.engine.git.upstream import fetch_base
from lanes_tui.engine.lanes import fork_client
from lanes_tui.engine.lanes.caps import check_capped, lane_caps
from lanes_tui.engine.lanes.confine import check_contained
from lanes_tui.engine.lanes.env import supervisor_environment
from lanes_tui.engine.lanes.load_guard import check_load_wording
from lanes_tui.engine.lanes.preamble import read_rules
from lanes_tui.engine.lanes.worktree_ready import chain_state, copy_into_worktree, exclude_agent_state
from lanes_tui.engine.procs import caps_cgroup, cgroup
from lanes_tui.engine.procs.process import (
    ProcKey,
    StopDeadlines,
    kill_processes,
    kill_processes_now,
    processes_with_env,
    same_process,
)
from lanes_tui.engine.procs.procfs import read_stat
from lanes_tui.engine.state.model import FINAL_STATES, LaneRecord
from lanes_tui.engine.state.paths import StatePaths, repo_key, worktree_path
from lanes_tui.engine.state.store import LaneStore, lane_operation

SUPERVISOR_START_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class LaunchRequest:
    """What the lead asked for with `lanes-tui run` or the dashboard's start form."""

    prompt: str
    task_type: str = "backend"
    lane: str | None = None
    slug: str | None = None
    attempt: int = 1
    base: str | None = None
    #: Allow a prompt that asks to stress or benchmark the machine (`run --allow-load`).
    allow_load: bool = False
    #: Send the prompt alone, without the preamble and `.lanes/rules.md` (`run --raw`).
    raw: bool = False
    #: The lead's caps for this lane over the config's (`[lanes]` keys: cpu, memory, pids, nice,
    #: max_cost_usd, max_tokens, allow_uncapped), e.g. from `run --cpu 150% --memory 4G`.
    caps: dict[str, Any] = field(default_factory=dict)
    #: The files this lane owns (a plan ticket's scope: exact paths and folders ending in `/`);
    #: kept in `LaneRecord.scope`, checked at accept and by the plan scheduler.
    scope: tuple[str, ...] = ()
    #: The plan and ticket this lane works on (`plans.scheduler`); None for a lane started by hand.
    plan: str | None = None
    ticket: str | None = None
    #: The branch to merge into (a plan's `target`); None: `[lanes] target_branch` or the current branch.
    target: str | None = None
    #: The model for the first provider of the chain (a plan ticket's tier); None: the provider's own.
    model: str | None = None
    #: The plan ticket's tier (`[tiers]`): `[review] mode = "cross-heavy"` reviews tier heavy lanes.
    tier: str | None = None
    #: The best-of group this lane belongs to (`launch_group`); None for a lone lane.
    group: str | None = None
    #: A relaunch: the attempt it follows and the session to resume (`LaneRecord.resume_*`).
    resume_from: str | None = None
    resume_provider: str | None = None
    resume_session: str | None = None
    resume_fresh: bool = False
    #: The lead's own findings for a relaunch (`recover --relaunch --note`), kept in `LaneRecord.lead_note`.
    lead_note: str | None = None


def launch_lane(repo: Path, config: Config, request: LaunchRequest, *, clock: Clock | None = None,
                detach: bool = True) -> LaneRecord:
    """Create the lane (record, origin, then worktree and branch) and start its supervisor; returns the record."""
    chain = config.chain_for(request.task_type, request.lane)
    if not request.prompt.strip():
        raise LanesError("the prompt is empty", "give --prompt TEXT, --prompt-file F or --plan F --phase N")
    check_prompt(request.prompt)  # 1 MB at most, stored once (the dashboard's start form comes here too)
    check_load_wording(request.prompt, allow_load=request.allow_load)  # one line naming the words and line
    caps = lane_caps(config.lanes, request.caps)
    check_capped(caps)  # refuse to run uncapped unless the lead said so
    check_contained(caps.allow_uncontained)  # and unconfined by the kernel (no Landlock) likewise
    if not request.raw:
        read_rules(repo)  # a rules file the supervisor could not use is refused now, not inside the lane
    slug = validate_slug(request.slug) if request.slug is not None else slugify(request.prompt)
    lane_id = lane_id_for(slug, request.attempt)
    paths = StatePaths(repo)
    store = LaneStore(paths, clock or RealClock())
    if store.taken(lane_id):  # a lane, or a folder with more than a leftover lock in it
        raise LanesError(f"lane {lane_id} already exists", _taken_fix(store, lane_id))
    root = config.lanes.worktree_root.expanduser().resolve()  # this lane's own root, from now on
    worktrees.check_worktree_root(repo, root)
    target = request.target or config.lanes.target_branch or worktrees.current_branch(repo)
    if target is None:
        raise LanesError("the repository has no branch checked out (detached HEAD)",
                         "check out the branch lanes should merge into, or set lanes.target_branch")
    crash_point("run:validated")  # tests kill -9 `run` at each step (LANES_TUI_CRASH_AT)
    paths.ensure()
    # A cold fork server imports the supervisor while the git work below runs (B5): asked for in `spawn_supervisor`.
    early = fork_client.prestart(repo, supervisor_environment(os.environ, [])) if detach else None
    try:
        return _create_and_start(repo, config, request, store, lane_id, slug, chain, root, target, detach, early)
    except BaseException:
        fork_client.release(repo, early)  # the server started early leaves at once instead of waiting
        raise


def _create_and_start(repo: Path, config: Config, request: LaunchRequest, store: LaneStore, lane_id: str,
                      slug: str, chain: list[str], root: Path, target: str, detach: bool,
                      early: subprocess.Popen[bytes] | None) -> LaneRecord:
    """`launch_lane` once the request is valid: the record, origin, worktree and branch, then the supervisor."""
    paths = store.paths
    lead = lead_checkout.snapshot(repo)  # compared by check and accept: did an agent write outside its worktree?
    fetched = fetch_base(repo, target)  # capped; offline or slow: the last fetched state, and a notice below
    base_sha = worktrees.rev_parse(repo, request.base or target)
    path, branch = worktree_path(root, repo, lane_id), branch_for(lane_id)  # where create_worktree puts it
    record = LaneRecord(
        id=lane_id, slug=slug, attempt=request.attempt, task_type=request.task_type,
        prompt=request.prompt, chain=chain, repo=str(repo), worktree=str(path),
        branch=branch, base_sha=base_sha, target_branch=target,
        state="queued", state_reason="waiting for its supervisor", worktree_root=str(root),
        allow_load=request.allow_load, raw=request.raw, caps=dict(request.caps),
        scope=list(request.scope), plan=request.plan, ticket=request.ticket, model=request.model, tier=request.tier,
        group=request.group, resume_from=request.resume_from, resume_provider=request.resume_provider,
        resume_session=request.resume_session, resume_fresh=request.resume_fresh, lead_note=request.lead_note,
        max_attempts=config.lanes.attempts if request.plan is None else 0,  # a plan counts its ticket's own
    )
    info: worktrees.WorktreeInfo | None = None
    try:  # the record and origin first: a `run` killed at any later step leaves a lane abandon can clean
        store.create(record)
        for notice in fetched.notices:
            store.event(lane_id, "notice", text=notice)
        with lane_operation(paths, lane_id, "run"):  # reconcile leaves it alone until its supervisor is up
            crash_point("run:record")
            write_origin(paths.lane(lane_id), LaneOrigin(
                id=lane_id, repo=str(repo.resolve()), worktree_root=str(root), worktree=str(path),
                branch=branch, created=record.created, lead_checkout=lead))
            watch.record_lane_start(repo, target)  # the target's commit and the remotes, once (git.watch)
            crash_point("run:origin")
            info = worktrees.create_worktree(repo, root, lane_id, base_sha)
            copy_into_worktree(repo, info.path, config.lanes.copy, store, lane_id)  # never committed
            exclude_agent_state(repo, info.path, chain_state(config.providers, record.chain))  # aider's .aider*
            # The shared git config, hooks, attributes, compared at every decision: taken once lanes-tui's
            # own writes (the worktree's excludes, `extensions.worktreeConfig`) are done, before any agent.
            git_snapshot.write_lane_snapshot(repo, lane_id, git_snapshot.snapshot(repo, lane_id))
            crash_point("run:worktree")
            if detach:
                spawn_supervisor(repo, lane_id, config, early=early)
    except BaseException:
        if info is not None:  # never a branch or folder that was there before (create_worktree refuses those)
            with contextlib.suppress(LanesError, OSError):
                worktrees.remove_worktree(repo, root, info.path, info.branch)
        shutil.rmtree(paths.lane(lane_id).dir, ignore_errors=True)
        raise
    crash_point("run:spawned")
    return store.read(lane_id)


def _taken_fix(store: LaneStore, lane_id: str) -> str:
    """What to do about a taken id: a decided lane's id is never reused (recover and abandon refuse it)."""
    with contextlib.suppress(LanesError):
        state = store.read(lane_id).state
        if state in FINAL_STATES:
            return f"it is {state} and lane ids are never reused: pick another --id"
    return "pick another --id, or `lanes-tui recover` / `abandon` the existing lane"


#: How many lanes `run --best-of N` may start on one task.
BEST_OF_MIN, BEST_OF_MAX = 2, 8


@dataclass(frozen=True)
class GroupLaunch:
    """The lanes `launch_group` started, in member order, under their group id."""

    group: str
    lanes: tuple[LaneRecord, ...]


def launch_group(repo: Path, config: Config, request: LaunchRequest, count: int, providers: Sequence[str] = (),
                 *, clock: Clock | None = None, detach: bool = True) -> GroupLaunch:
    """`run --best-of N`: N lanes on one task under one group id (`bo-<slug>-<6 hex>`).

    Member i is `<slug>-b<i>-a<attempt>` and gets the i-th of `providers` (or of the task type's
    chain), round-robin, in front of its chain: the point is N different attempts. What can be
    checked is checked before the first lane starts; a lane that then fails to start leaves the
    started ones running, named in the error with how to drop them. `decisions.ranking` ranks the
    group once every lane has ended.
    """
    if not BEST_OF_MIN <= count <= BEST_OF_MAX:
        raise LanesError(f"--best-of {count} is out of range", f"run {BEST_OF_MIN} to {BEST_OF_MAX} lanes on one task")
    if request.lane is not None:
        raise LanesError("--best-of and --lane do not go together", "name the lanes' providers with --providers a,b,c")
    for name in providers:
        if name not in config.providers:
            raise LanesError(f"unknown provider {name!r} in --providers", did_you_mean(name, list(config.providers)))
    order = list(providers) or config.chain_for(request.task_type)
    if not order:
        raise LanesError(f"the chain of {request.task_type!r} names no provider", "give them with --providers a,b,c")
    base = validate_slug(request.slug) if request.slug is not None else slugify(request.prompt)
    suffix = f"-b{count}"
    if len(base) + len(suffix) > MAX_SLUG:
        raise LanesError(f"task id {base!r} is too long for --best-of",
                         f"use at most {MAX_SLUG - len(suffix)} characters with --id")
    slugs = [f"{base}-b{i}" for i in range(1, count + 1)]
    store = LaneStore(StatePaths(repo))
    for slug in slugs:
        if store.taken(lane_id_for(slug, request.attempt)):
            raise LanesError(f"lane {lane_id_for(slug, request.attempt)} already exists",
                             "lane ids are never reused: pick another task id with --id")
    group = f"bo-{base[:40].rstrip('-_') or 'task'}-{os.urandom(3).hex()}"
    started: list[LaneRecord] = []
    for i, slug in enumerate(slugs):
        member = replace(request, slug=slug, lane=order[i % len(order)], group=group)
        try:
            started.append(launch_lane(repo, config, member, clock=clock, detach=detach))
        except LanesError as exc:
            if not started:
                raise
            ids = " ".join(r.id for r in started)
            raise LanesError(f"best-of {group}: lane {i + 1} of {count} did not start: {exc.what}",
                             (f"{exc.fix}; " if exc.fix else "") + f"these run on: {ids} "
                             "(`lanes-tui abandon ID` drops one)") from exc
    return GroupLaunch(group, tuple(started))


def spawn_supervisor(repo: Path, lane_id: str, config: Config,
                     early: subprocess.Popen[bytes] | None = None) -> None:
    """Start the supervisor in a new session and return once it says it is running.

    It gets an allow-listed environment (`lanes.env.supervisor_environment`): the lead's secrets
    that none of the lane's providers or gates is allowed never enter the lane's process tree.
    `early`: the fork server `fork_client.prestart` started for this launch.
    """
    paths = StatePaths(repo)
    log_path = paths.lane(lane_id).supervisor_log
    env = supervisor_env(config, LaneStore(paths).read(lane_id).chain)
    if fork_client.enabled():  # forked from the repository's warm fork server: shared pages (B10)
        try:
            fork_client.start_supervisor(repo, lane_id, env, supervisor_environment(os.environ, []),
                                         SUPERVISOR_START_TIMEOUT_S, early=early)
            return
        except fork_client.StartFailed as exc:
            raise LanesError(f"the supervisor of {lane_id} failed to start: {_last_line(log_path, str(exc))}",
                             f"see {log_path}") from None
        except fork_client.Unavailable:
            pass  # nothing was forked: start it as a fresh interpreter
    with open(log_path, "ab", opener=private_opener) as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "lanes_tui.engine.supervisor", "--repo", str(repo), "--lane", lane_id,
             "--detach"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True,
            cwd=str(repo), env=env,
        )
    try:
        code = proc.wait(SUPERVISOR_START_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise LanesError(f"the supervisor of {lane_id} did not start within "
                         f"{SUPERVISOR_START_TIMEOUT_S:g}s", f"see {log_path}") from None
    if code != 0:
        raise LanesError(f"the supervisor of {lane_id} failed to start: {_last_line(log_path, 'no output')}",
                         f"see {log_path}")


def _last_line(log_path: Path, otherwise: str) -> str:
    """The last line of the supervisor's log (what it said as it failed), or `otherwise`."""
    try:
        lines = log_path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return otherwise
    return lines[-1] if lines else otherwise


def supervisor_env(config: Config, chain: Sequence[str]) -> dict[str, str]:
    """The supervisor's environment for a lane of `chain`: what its providers, its reviewers (the
    lane's review runs in it too) and its gates may get (`lanes.env.supervisor_environment`)."""
    reviewers = config.review.chain if config.review.mode != "off" else ()
    allow = [p for name in [*chain, *reviewers] if name in config.providers for p in config.providers[name].env]
    return supervisor_environment(os.environ, [*allow, *config.gates.env])


def supervisor_key(repo: Path, lane_id: str) -> ProcKey | None:
    """The supervisor's identity from `supervisor.json`, or None if it never wrote one."""
    try:
        data = read_json(StatePaths(repo).lane(lane_id).supervisor)
        pid, created = int(data["pid"]), float(data["create_time"])
    except (OSError, ValueError, KeyError, TypeError, OverflowError):  # missing, or edited into nonsense
        return None
    if not 0 < pid < 2**22 or not math.isfinite(created):
        return None
    return ProcKey(pid, created)


def supervisor_alive(repo: Path, lane_id: str) -> bool:
    key = supervisor_key(repo, lane_id)
    return key is not None and same_process(key.pid, key.create_time)


def supervisor_condition(repo: Path, lane_id: str) -> str:
    """`running`, `stopped` or `gone`. Stopped is state T or t in `/proc/PID/stat` (SIGSTOP, SIGTSTP,
    a tracer): the process lives, so `supervisor_alive` is True, yet it can enforce nothing, neither
    the wall-clock limit nor the watchdog. An agent can stop its supervisor (same user, and its
    parent's pid is one `getppid` away), so only the engine's own look can tell."""
    key = supervisor_key(repo, lane_id)
    if key is None or not key.alive():
        return "gone"
    stat = read_stat(key.pid)
    if stat is None or stat.zombie:
        return "gone"
    return "stopped" if stat.state in ("T", "t") else "running"


def stop_leftovers_now(repo: Path, lane_id: str) -> list[int]:
    """What a lane whose supervisor is gone (or was killed for it) left running: its cgroup (every
    process it started, however it escaped) and every process with the lane's environment marker.
    Synchronous, for reconcile and `check`; the pids stopped."""
    lane_dir = StatePaths(repo).lane(lane_id).dir
    killed = cgroup.kill_recorded(lane_dir, repo_key(repo), lane_id)
    left = leftover_processes(repo, lane_id)
    signalled = kill_processes_now(left) if left else []
    caps_cgroup.remove_lane_folders(repo_key(repo), lane_id)
    return sorted({*killed, *signalled})


#: How long a stopped supervisor gets to run its own stop sequence (EOF, SIGINT, SIGTERM, SIGKILL on
#: the agent's group, each with its deadline, then its cgroup) before it is killed itself: longer
#: than that sequence, so a lane is never cut off half-way through stopping its agent.
SUPERVISOR_STOP_GRACE_S = StopDeadlines().total_s + 6.0


async def stop_lane(repo: Path, lane_id: str, *, grace_s: float = SUPERVISOR_STOP_GRACE_S) -> list[int]:
    """Stop the lane's supervisor (it stops its agent), then whatever is left of the lane: its
    cgroup (every process it started, however it escaped) and any process with the lane's env.

    Returns the pids that had to be stopped by force after the supervisor was gone.
    """
    key = supervisor_key(repo, lane_id)
    if key is not None and key.alive():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(key.pid, 15)
            # A supervisor its agent stopped (SIGSTOP) would sit on the SIGTERM for the whole grace:
            # let it run its own stop sequence instead (a stop again is met by the SIGKILL below).
            os.kill(key.pid, signal.SIGCONT)
        await _wait_gone(key, grace_s)
        if key.alive():
            await kill_processes([key], term_s=0.0, kill_s=3.0)
    lane_dir = StatePaths(repo).lane(lane_id).dir
    killed = await asyncio.to_thread(cgroup.kill_recorded, lane_dir, repo_key(repo), lane_id)
    left = leftover_processes(repo, lane_id)
    if left:
        await kill_processes(left, term_s=3.0, kill_s=3.0)
    caps_cgroup.remove_lane_folders(repo_key(repo), lane_id)  # a supervisor killed hard left them
    return sorted({*killed, *(k.pid for k in left)})


def leftover_processes(repo: Path, lane_id: str) -> list[ProcKey]:
    """Processes of this lane (by its environment), other than a live supervisor."""
    paths = StatePaths(repo)
    return processes_with_env("LANES_LANE", lane_id, also={"LANES_HOME": str(paths.state)})


async def _wait_gone(key: ProcKey, timeout: float) -> None:
    end = time.monotonic() + timeout
    while key.alive() and time.monotonic() < end:
        await asyncio.sleep(0.05)
