"""A lane on a cluster node, as the node runs it: the ordinary lane code in a clone of the shared remote,
the supervisor under the reaper shim, and every answer the lead asks for read from there. No Ray.

The Ray actor (`remote.ray_runner`) holds one `NodeLane` and calls its synchronous methods in its own
process on the node; tests call them directly. What the node does is exactly what the lead's machine
does for a local lane (`launch_lane`, the supervisor, `check_lane`, the control socket), only in a
clone (`remote.node_git`): so a lane behaves the same wherever it runs, and the lead gets its work
back through the remote (`publish`, `checkpoint`), never through the node's disk.

The supervisor runs in the foreground under `procs.reaper_shim`, the shim a child of this process:
when the actor's worker dies (`ray.kill`, a crash, the node's raylet going away), the kernel tells
the shim (PDEATHSIG), and the shim takes the supervisor, the agent and everything they started down
with it. So `start` must be called from a thread that lives as long as the lane (PDEATHSIG follows
the thread that started the shim); a Ray actor's method threads do.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from lanes_tui.engine.config.settings import Config, load_config
from lanes_tui.engine.core.atomic import private_opener, read_json, write_json_atomic
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import branch_for, lane_id_for, split_lane_id, validate_lane_id
from lanes_tui.engine.git.commands import refuse_option
from lanes_tui.engine.git.lane_paths import git_witness, locate_lane, remove_lane_worktree, working_tree
from lanes_tui.engine.git.worktrees import changed_files, rev_parse
from lanes_tui.engine.lanes.launcher import (
    SUPERVISOR_START_TIMEOUT_S,
    SUPERVISOR_STOP_GRACE_S,
    LaunchRequest,
    launch_lane,
    stop_lane,
    supervisor_alive,
    supervisor_env,
)
from lanes_tui.engine.lanes.runner import read_output
from lanes_tui.engine.remote import inbox_relay, node_git
from lanes_tui.engine.remote.spec import WIP_REF, NodeLaneSpec
from lanes_tui.engine.state.model import LIVE_STATES, LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore

log = logging.getLogger(__name__)
T = TypeVar("T")

#: After the shim's own grace (it SIGKILLs what is left then), how long it may take to sweep and exit.
SHIM_EXIT_MARGIN_S = 10.0
#: The most output one `output` call returns: the actor sends it over the cluster in one message.
MAX_OUTPUT_BYTES = 8 * 1024 * 1024


class NodeLane:
    """One lane on this node, made from the lead's `NodeLaneSpec` (see the module docstring)."""

    def __init__(self, spec: NodeLaneSpec, *, stop_grace_s: float = SUPERVISOR_STOP_GRACE_S) -> None:
        self.spec = spec
        self.lane_id = validate_lane_id(spec.lane_id)
        refuse_option(spec.remote.strip(), "shared remote")
        refuse_option(spec.start_commit, "start commit")
        refuse_option(spec.target_branch, "target branch")
        self.paths = node_git.NodePaths.of(spec.work_root, spec.repo_key)
        self.clone = self.paths.clone(self.lane_id)
        self.hostname = socket.gethostname()
        #: How long the shim lets the supervisor stop before it kills the lane's tree.
        self.stop_grace_s = stop_grace_s
        self._shim: subprocess.Popen[bytes] | None = None
        self._closed = False

    # --- Making the lane ----------------------------------------------------------------------

    def prepare(self) -> dict[str, Any]:
        """The node's mirror (shared, under its lock), the lane's clone with its base, checkpoint and
        target fetched, and the lead's config with this node's worktree root in it."""
        spec = self.spec
        try:
            self.paths.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LanesError(f"cannot create {self.paths.root} on {self.hostname}: {exc.strerror}",
                             "give the node a writable work_root (or $XDG_CACHE_HOME)") from None
        node_git.update_mirror(self.paths, spec.remote)
        clone = node_git.clone_lane(self.paths, self.lane_id, spec.remote)
        node_git.fetch_lane_refs(clone, spec.remote, self.lane_id, [spec.start_commit, spec.base_sha],
                                 spec.target_branch)
        node_git.ensure_target_branch(clone, spec.target_branch, spec.base_sha)
        node_git.ensure_identity(clone, self.hostname)
        node_git.exclude_state(clone)
        self.paths.worktree_root.mkdir(parents=True, exist_ok=True)
        node_git.write_node_config(clone, spec.config_text, self.paths.worktree_root)
        load_config(clone)  # a config this node cannot use is refused now, in one line, not in the supervisor
        log.info("lane %s prepared in %s", self.lane_id, clone)
        return {"hostname": self.hostname, "clone": str(clone), "worktree_root": str(self.paths.worktree_root)}

    def start(self) -> dict[str, Any]:
        """Create the lane in the clone (`launch_lane`, without its detached supervisor), then run the
        supervisor in the foreground under the reaper shim; returns the record once it is alive."""
        if self._shim is not None and self._shim.poll() is None:
            raise LanesError(f"lane {self.lane_id} is already running on {self.hostname}",
                             "stop it first, or ask for its status")
        if not StatePaths(self.clone).config.is_file():
            raise LanesError(f"lane {self.lane_id} is not prepared on {self.hostname}", "call prepare() first")
        config = load_config(self.clone)
        record = launch_lane(self.clone, config, self._launch_request(), detach=False)
        base = rev_parse(self.clone, self.spec.base_sha)
        if record.base_sha != base:  # a relaunch starts at a checkpoint; accept still compares with the base
            record.base_sha = base
            self.store.write(record)  # no supervisor yet: nobody else writes the record
        self._shim = self._spawn_supervisor(config, record)
        self._wait_started(self._shim)
        return self.store.read(self.lane_id).to_json()

    def _launch_request(self) -> LaunchRequest:
        """The lead's `LaunchRequest` fields, with the spec's start commit and target; its id must be ours."""
        data = dict(self.spec.request)
        unknown = sorted(set(data) - {f.name for f in dataclasses.fields(LaunchRequest)})
        if unknown:
            raise LanesError(f"the launch request names unknown fields: {', '.join(unknown)}",
                             "run the same lanes-tui version on the lead's machine and the nodes")
        if data.get("slug") is None:
            data["slug"], data["attempt"] = split_lane_id(self.lane_id)
        if "scope" in data:
            data["scope"] = tuple(data["scope"])
        data.update(base=self.spec.start_commit, target=self.spec.target_branch)
        try:
            request = LaunchRequest(**data)
        except TypeError as exc:
            raise LanesError(f"the launch request is incomplete: {exc}", "the lead sends at least the prompt") \
                from None
        if lane_id_for(str(request.slug), request.attempt) != self.lane_id:
            raise LanesError(f"the launch request is for lane {request.slug}-a{request.attempt}, "
                             f"not {self.lane_id}", "send the slug and attempt of the lane's own id")
        return request

    def _spawn_supervisor(self, config: Config, record: LaneRecord) -> subprocess.Popen[bytes]:
        """`reaper_shim -- python -m lanes_tui.engine.supervisor --repo CLONE --lane ID`, in its own
        session, with the supervisor's allow-listed environment (as `launcher.spawn_supervisor`)."""
        env = supervisor_env(config, record.chain)
        argv = [sys.executable, "-m", "lanes_tui.engine.procs.reaper_shim", "--grace", f"{self.stop_grace_s:g}",
                "--parent", str(os.getpid()), "--",
                sys.executable, "-m", "lanes_tui.engine.supervisor", "--repo", str(self.clone), "--lane", self.lane_id]
        log_path = self.store.lane_paths(self.lane_id).supervisor_log
        try:
            with open(log_path, "ab", opener=private_opener) as out:
                return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                        start_new_session=True, close_fds=True, cwd=str(self.clone), env=env)
        except OSError as exc:
            raise LanesError(f"cannot start the supervisor of {self.lane_id} on {self.hostname}: {exc.strerror}",
                             f"check {sys.executable} and {log_path} on {self.hostname}") from None

    def _wait_started(self, shim: subprocess.Popen[bytes]) -> None:
        """Until the supervisor says it is alive (`supervisor.json`); a shim that ends first is a failure."""
        log_path = self.store.lane_paths(self.lane_id).supervisor_log
        deadline = time.monotonic() + SUPERVISOR_START_TIMEOUT_S
        while not supervisor_alive(self.clone, self.lane_id):
            if shim.poll() is not None:
                tail = log_path.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
                raise LanesError(f"the supervisor of {self.lane_id} on {self.hostname} failed to start: {tail[0]}",
                                 f"see {log_path} on {self.hostname}")
            if time.monotonic() > deadline:
                self.stop(grace_s=1.0)
                raise LanesError(f"the supervisor of {self.lane_id} on {self.hostname} did not start within "
                                 f"{SUPERVISOR_START_TIMEOUT_S:g}s", f"see {log_path} on {self.hostname}")
            time.sleep(0.05)

    # --- Reading and talking to it --------------------------------------------------------------

    @property
    def store(self) -> LaneStore:
        return LaneStore(StatePaths(self.clone))

    def status(self) -> dict[str, Any]:
        """The lane's record, and whether its supervisor and the shim above it are alive."""
        data = self.store.read(self.lane_id).to_json()
        data["supervisor_alive"] = supervisor_alive(self.clone, self.lane_id)
        data["shim_alive"] = self._shim is not None and self._shim.poll() is None
        return data

    def output(self, seq: int, max_bytes: int) -> tuple[bytes, int]:
        """Output from byte `seq` of the lane's `output.log` (see `lanes.runner` on sequence numbers)."""
        path = self.store.lane_paths(self.lane_id).output
        return read_output(path, max(0, int(seq)), max(1, min(int(max_bytes), MAX_OUTPUT_BYTES)))

    def sample(self) -> dict[str, Any] | None:
        return self.store.last_sample(self.lane_id)

    def inbox_exchange(self, answers: dict[str, bytes]) -> dict[str, bytes]:
        """Take the lead's answers to questions asked here; return the lane's questions and marks
        (`remote.inbox_relay`: each file keeps its one writer)."""
        folder = StatePaths(self.clone).lane_inbox(self.lane_id)
        inbox_relay.take_answers(folder, answers)
        return inbox_relay.node_files(folder)

    def send(self, text: str) -> dict[str, Any]:
        from lanes_tui.engine.lanes.control_client import send_to_lane

        return send_to_lane(self.clone, self.lane_id, text)

    def watch(self, seconds: float) -> float:
        """A watch lease for the lane's supervisor here (`lanes.cadence`): the lead shows its output."""
        from lanes_tui.engine.lanes.control_client import watch_lane

        return watch_lane(self.clone, self.lane_id, seconds)

    def run_gates(self) -> dict[str, object]:
        """The lane's gates, run here where its worktree is (`check_lane`); the packet."""
        from lanes_tui.engine.decisions.check import check_lane

        return _run(check_lane(self.clone, load_config(self.clone), self.lane_id))

    # --- Sending its work back ------------------------------------------------------------------

    def _worktree(self) -> tuple[LaneRecord, Path]:
        """The lane's worktree, derived from its id and root and witnessed by git (`git.lane_paths`)."""
        record = self.store.read(self.lane_id)
        location = locate_lane(self.clone, self.lane_id, record, default_root=self.paths.worktree_root)
        return record, working_tree(location)

    def publish(self) -> dict[str, str]:
        """Commit what the agent left uncommitted onto `lane/<id>` and push that branch to the remote."""
        from lanes_tui.engine.decisions.packet import read_packet
        from lanes_tui.engine.git.accept_steps import commit_worktree
        from lanes_tui.engine.git.frozen_work import frozen_problem

        record, worktree = self._worktree()
        if record.state in LIVE_STATES and supervisor_alive(self.clone, self.lane_id):  # its agent still writes
            raise LanesError(f"lane {self.lane_id} is still {record.state} on {self.hostname}",
                             "stop it or wait for it to settle, then publish")
        message = f"lanes-tui: {self.lane_id} published from {self.hostname}"
        frozen = (read_packet(self.store.lane_paths(self.lane_id)) or {}).get("frozen_sha")
        if isinstance(frozen, str) and frozen:  # the work its check froze before the gates, never their files
            problem = frozen_problem(self.clone, worktree, self.lane_id, frozen)
            if problem is not None:
                raise LanesError(f"lane {self.lane_id} on {self.hostname}: {problem}",
                                 f"run `lanes-tui check {self.lane_id}` again")
            commit = commit_worktree(worktree, [], message, frozen=frozen)
        else:
            pending = changed_files(worktree, "HEAD")  # uncommitted paths only: the agent's commits are there
            commit = commit_worktree(worktree, pending, message)
        ref = f"refs/heads/{branch_for(self.lane_id)}"
        node_git.push(self.clone, self.spec.remote, f"+{ref}:{ref}")
        log.info("lane %s published %s", self.lane_id, commit)
        return {"ref": ref, "commit": commit}

    def checkpoint(self) -> str | None:
        """Push the worktree as it stands to `refs/lanes-wip/<id>` if it changed since the last checkpoint
        (or since the start commit); the lane's branch, HEAD and index are never touched. None: unchanged."""
        _, worktree = self._worktree()
        tree = node_git.snapshot_tree(worktree)
        if tree == self._last_checkpoint_tree():
            return None
        commit = node_git.commit_tree(worktree, tree, f"lanes-tui: checkpoint of {self.lane_id} from {self.hostname}")
        node_git.push(self.clone, self.spec.remote, f"+{commit}:{WIP_REF.format(lane_id=self.lane_id)}")
        write_json_atomic(self.paths.checkpoint_file(self.lane_id), {"tree": tree, "commit": commit, "t": time.time()})
        return commit

    def _last_checkpoint_tree(self) -> str:
        """The tree of the last checkpoint pushed from here, else of the start commit."""
        with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
            tree = read_json(self.paths.checkpoint_file(self.lane_id))["tree"]
            if isinstance(tree, str):
                return tree
        return node_git.tree_of(self.clone, self.spec.start_commit)

    # --- Ending it ----------------------------------------------------------------------------

    def stop(self, grace_s: float | None = None) -> list[int]:
        """SIGTERM the shim (it stops the supervisor, which stops its agent by escalation) and wait for
        it with a deadline; then `launcher.stop_lane` for whatever is left (a supervisor started by an
        earlier actor, the lane's cgroup, processes with its environment). Returns the pids killed by force."""
        grace = self.stop_grace_s if grace_s is None else max(0.0, grace_s)
        forced: list[int] = []
        shim, ours = self._shim, self._shim is not None and self._shim.poll() is None
        if shim is not None and ours:
            with contextlib.suppress(ProcessLookupError):
                shim.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                shim.wait(min(grace, self.stop_grace_s) + SHIM_EXIT_MARGIN_S)
        if StatePaths(self.clone).state.is_dir():
            # The shim gone, this is a sweep; without a shim of ours, the supervisor gets its grace here.
            forced += _run(stop_lane(self.clone, self.lane_id, grace_s=1.0 if ours else grace))
        if shim is not None and shim.poll() is None:
            shim.kill()
            shim.wait()
            forced.append(shim.pid)
        return sorted(set(forced))

    def discard(self) -> list[str]:
        """Stop the lane, remove its worktree and branch (witnessed by git, as `LocalRunner.discard`),
        then the lane's clone folder; returns what was removed."""
        removed: list[str] = []
        lane_dir = self.paths.lane_dir(self.lane_id)
        if lane_dir.is_symlink():
            raise LanesError(f"{lane_dir} is a symbolic link", "remove it by hand; lanes-tui never follows it")
        location = None
        if self.store.exists(self.lane_id):
            record = self.store.read(self.lane_id)
            location = locate_lane(self.clone, self.lane_id, record, default_root=self.paths.worktree_root)
            git_witness(location)  # checked before the stop: a lane git disagrees on is left as it is
        self.stop()
        if location is not None:
            removed += remove_lane_worktree(location)
            with contextlib.suppress(OSError):
                location.worktree.parent.rmdir()  # the clone's own folder under the worktree root, once empty
        if lane_dir.exists():
            shutil.rmtree(lane_dir)
            removed.append(str(lane_dir))
        return removed

    def close(self) -> None:
        """Stop the lane, once (the actor's shutdown calls it; a second call does nothing)."""
        if self._closed:
            return
        self._closed = True
        self.stop()


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run engine coroutines from these synchronous methods, even on a thread with a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()
