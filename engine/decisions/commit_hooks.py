"""The repository's own pre-commit and commit-msg hooks, run by accept as a developer's commit runs them.

Every git lanes-tui runs has hooks off (`git.harden`: `core.hooksPath` at a file), because the shared
hooks folder is one a lane could write; so accept's own `git commit` would skip the formatters, linters
and secret scanners a team keeps there. Instead accept runs them here, once, between building its
temporary index and its own `git commit --no-verify` (issue 30, item 3):

* **Which hooks: the lead's.** The folder is `core.hooksPath` from `<common>/config` (read with `git
  config --file`, which runs nothing; never a worktree's `config.worktree`), resolved against the lead
  checkout when relative (a tracked `.githooks/`, husky's `.husky/_`: the lead checkout's copy, which a
  contained lane cannot write — never the lane's own copy), else `<common>/hooks`. The config and
  `<common>/hooks` are as the lane found them, or every decision is refused
  (`git_snapshot.refuse_if_changed`). A hook is what git would run: a file that is executable.
* **How: as a gate step** (`gates.run.run_step`: its own process group, a limit, whatever it started swept,
  its output kept in `<lane dir>/gates/hook-NAME.log`), with the gates' environment, the lane's kernel
  fence and TMPDIR (`gates.fence`) and a gate scope. cwd is the worktree; `GIT_DIR`, `GIT_COMMON_DIR`
  and `GIT_WORK_TREE` are the lane's derived ones (`git.harden`); `GIT_INDEX_FILE` is a copy of the
  temporary index (exactly what will be committed) in the hooks' own TMPDIR, where the fence lets a
  hook's git write it. commit-msg gets a file there holding the message; what it leaves is committed.
* **Never unjudged changes.** A hook that rewrites a worktree file or re-stages into its index (a
  formatter) is refused, its changes left in the worktree for `check` to judge: its `git add` wrote
  objects into the lane's private store (`lanes.confine`), which no commit of lanes-tui may name.

A failing hook refuses the accept (`HookRefused`): nothing is committed, the lane stays ready, the
packet keeps the failure (`hook_failure`) so `recover --relaunch` hands its output to the next attempt.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.clock import Clock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.gates.fence import gates_fence
from lanes_tui.engine.decisions.gates.log import append_output
from lanes_tui.engine.decisions.gates.plan import PlannedGate, project_venv
from lanes_tui.engine.decisions.gates.run import GateResult, _Run, run_step
from lanes_tui.engine.decisions.packet import read_packet, write_packet
from lanes_tui.engine.git.commands import run_git
from lanes_tui.engine.git.harden import common_dir, config_entries, register_lane
from lanes_tui.engine.git.worktrees import changed_files, describe_path
from lanes_tui.engine.procs.gate_scope import GateScope
from lanes_tui.engine.state.paths import repo_key
from lanes_tui.engine.state.store import LaneStore

__all__ = ["HOOK_NAMES", "HOOK_TIMEOUT_S", "CommitHooks", "HookRefused", "hooks_folder", "repository_hooks"]

#: The hooks a developer's `git commit` runs that can refuse it, in git's order.
HOOK_NAMES = ("pre-commit", "commit-msg")
#: A commit hook's limit (capped by `[gates] timeout_s`): hooks are meant to take seconds, and an
#: accept is the lead waiting at the keyboard; a hang ends in a refusal with its output, not in silence.
HOOK_TIMEOUT_S = 300.0
#: How much of a failing hook's output the refusal shows (the whole of it is in its log).
SHOWN_LINES = 40

T = TypeVar("T")


class HookRefused(LanesError):
    """A hook refused the commit: `report` is the lead's text (what, the output tail, the fix)."""

    def __init__(self, what: str, fix: str, report: str) -> None:
        super().__init__(what, fix)
        self.report = report


def hooks_folder(repo: Path) -> Path:
    """The lead's hooks folder: `core.hooksPath` of `<common>/config` (a relative one in the lead
    checkout, `repo`; `~` expanded as git does), else `<common>/hooks`."""
    common = common_dir(repo)
    values = [v for k, v in config_entries(common / "config") if k.lower() == "core.hookspath"]
    if not values or not values[-1]:
        return common / "hooks"
    path = Path(os.path.expanduser(values[-1]))
    return path if path.is_absolute() else repo / path


def repository_hooks(repo: Path, worktree: Path) -> list[tuple[str, Path]]:
    """(name, path) of each of `HOOK_NAMES` the lead's folder holds as an executable file, in order.

    Refuses a folder inside the lane's own worktree: its hooks would be the lane's to choose.
    """
    folder = hooks_folder(repo)
    with contextlib.suppress(OSError, ValueError):
        if folder.resolve().is_relative_to(worktree.resolve()):
            raise LanesError(f"core.hooksPath points into the lane's own worktree ({folder})",
                             "point it at a folder of the lead checkout or the git dir, or accept with "
                             "--no-verify REASON")
    found = []
    for name in HOOK_NAMES:
        path = folder / name
        if path.is_file() and os.access(path, os.X_OK):  # git's rule: not executable, not a hook
            found.append((name, path))
    return found


def _blocking(factory: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to its end from synchronous code: here when no loop runs, else on a fresh loop in a
    worker thread (accept commits synchronously from inside its own loop, which waits as it does for git)."""
    async def main() -> T:
        return await factory()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="lanes-hooks") as pool:
        return pool.submit(asyncio.run, main()).result()


@dataclass
class CommitHooks:
    """The hooks of one accept; called by `git.accept_steps.commit_worktree` with its index and message."""

    repo: Path
    config: Config
    store: LaneStore
    lane_id: str
    worktree: Path
    clock: Clock

    def __call__(self, index_file: Path, message: str) -> str:
        """Run the lead's hooks on `index_file`; the message to commit, or HookRefused."""
        try:
            hooks = repository_hooks(self.repo, self.worktree)
            if not hooks:
                return message
            return _blocking(lambda: self._run(hooks, index_file, message))
        except HookRefused:
            raise
        except LanesError as exc:  # no fence for the hooks, a folder the lane chose: refused like a failure
            what = f"accept {self.lane_id} refused: the repository's hooks cannot run: {exc.what}"
            fix = exc.fix or "accept with --no-verify REASON"
            raise HookRefused(what, fix, f"{what}\n{fix}") from exc

    async def _run(self, hooks: list[tuple[str, Path]], index_file: Path, message: str) -> str:
        record = self.store.read(self.lane_id)
        lane = self.store.lane_paths(self.lane_id)
        env, fence = gates_fence(self.repo, self.config, record, self.worktree, kind="hooks")
        self.store.event(self.lane_id, "confinement", of="hooks", **fence.record())
        scope = GateScope.create(repo_key(self.repo), self.lane_id)
        try:
            tmp = fence.tmpdir or Path(env["TMPDIR"])
            index, msg_file = tmp / "index", tmp / "COMMIT_EDITMSG"
            shutil.copyfile(index_file, index)  # the hook's own copy: ours is never written by a lane's program
            msg_file.write_text(message.rstrip("\n") + "\n", encoding="utf-8")
            dirs = register_lane(self.repo, self.lane_id, self.worktree)
            env.update(GIT_DIR=str(dirs.git_dir), GIT_COMMON_DIR=str(dirs.common), GIT_WORK_TREE=str(self.worktree),
                       GIT_INDEX_FILE=str(index), GIT_EDITOR=":")  # as git exports them to a commit's hooks
            restrict = fence.preexec()  # the kernel's fence, after the cgroup join (run_step chains them)
            run = _Run(env, project_venv(self.repo, self.config.gates, self.worktree), lane.dir,
                       lambda line, _fields: append_output(lane.output, line), scope,
                       (restrict,) if restrict else ())
            before = self._state(index)
            timeout = min(HOOK_TIMEOUT_S, self.config.gates.timeout_s)
            for name, path in hooks:
                argv = (str(path),) if name == "pre-commit" else (str(path), str(msg_file))
                step = PlannedGate(f"hook-{name}", f"the {name} hook", argv, timeout)
                result = await run_step(self.worktree, step, run=run, clock=self.clock)
                self._judge(name, result)
                changed = _changes(before, self._state(index, before[1]))
                if changed:
                    self._refuse_changes(name, changed)
            text = msg_file.read_text(encoding="utf-8", errors="replace").rstrip()
        finally:
            await asyncio.to_thread(scope.close)
            fence.close()
        if not text.strip():
            raise self._refusal("commit-msg", None, "left an empty commit message", "")
        return text

    def _state(self, index: Path,
               also: dict[str, tuple[str, bytes]] | None = None) -> tuple[dict[str, str], dict[str, tuple[str, bytes]]]:
        """(the hook's index entries, each changed worktree path's kind and content digest)."""
        files = set(changed_files(self.worktree, "HEAD")) | set(also or {})
        tree = {name: describe_path(self.worktree, self.worktree / name) for name in sorted(files)}
        return _index_entries(self.worktree, index), tree

    def _judge(self, name: str, result: GateResult) -> None:
        """Record the hook's outcome; refuse unless it exited 0."""
        ok = result.status == "passed" and result.exit_code == 0  # exit 5 is no pass for a hook, pytest or not
        tail = result.output_tail
        self.store.event(self.lane_id, "hook", hook=name, status="passed" if ok else result.status,
                         exit=result.exit_code, duration_s=result.duration_s, log=result.log,
                         **({} if ok else {"output_tail": tail[-2000:]}))
        if ok:
            return
        how = f"timed out after {result.timeout_s:g}s" if result.status == "timeout" else \
            f"failed (exit {result.exit_code})"
        packet = read_packet(self.store.lane_paths(self.lane_id)) or {}
        packet["hook_failure"] = {"command": f"{name} hook", "status": "failed", "exit_code": result.exit_code,
                                  "output_tail": tail, "log": result.log, "at": self.clock.time()}
        write_packet(self.store.lane_paths(self.lane_id), packet)
        raise self._refusal(name, result, how, tail)

    def _refusal(self, name: str, result: GateResult | None, how: str, tail: str) -> HookRefused:
        what = f"accept {self.lane_id} refused: the {name} hook {how}; nothing was committed or merged"
        fix = (f"fix it in the lane (`lanes-tui recover {self.lane_id} --relaunch` gives the agent this output), "
               "or accept with --no-verify REASON")
        lines = tail.rstrip("\n").splitlines()[-SHOWN_LINES:]
        where = f" (all of it: {result.log})" if result is not None and result.log else ""
        shown = [f"--- output of the {name} hook{where} ---", *lines, "---"] if lines else []
        return HookRefused(what, fix, "\n".join([what, *shown, fix]))

    def _refuse_changes(self, name: str, changed: list[str]) -> None:
        listed = ", ".join(changed[:10]) + (f" and {len(changed) - 10} more" if len(changed) > 10 else "")
        self.store.event(self.lane_id, "hook", hook=name, status="changed-files", files=changed[:100])
        what = (f"accept {self.lane_id} refused: the {name} hook changed files: {listed}; nothing was committed "
                "or merged")
        fix = (f"the changes are left in the worktree: run `lanes-tui check {self.lane_id}` to judge them, "
               "then accept again")
        raise HookRefused(what, fix, f"{what}\n{fix}")


def _index_entries(worktree: Path, index: Path) -> dict[str, str]:
    """`path → "mode sha stage"` of an index (`ls-files -s` reads no object)."""
    out = run_git(worktree, "ls-files", "-s", "-z", extra_env={"GIT_INDEX_FILE": str(index)}).stdout
    entries: dict[str, str] = {}
    for item in out.split(b"\0"):
        meta, tab, path = item.partition(b"\t")
        if tab:
            entries[os.fsdecode(path)] = meta.decode("ascii", "replace")
    return entries


def _changes(before: tuple[dict[str, str], dict[str, Any]], after: tuple[dict[str, str], dict[str, Any]]) -> list[str]:
    """The paths whose index entry or worktree content differs between two states."""
    found = {p for p in before[0].keys() | after[0].keys() if before[0].get(p) != after[0].get(p)}
    found |= {p for p in before[1].keys() | after[1].keys() if before[1].get(p) != after[1].get(p)}
    return sorted(found)
