"""The body of a lane's Ray actor: a `NodeLane` with a keeper thread and one-call polls. No Ray here.

`ray_actors` makes this class an actor (`ray.remote(...)(subclass)`); only it, `ray_runner` and
`ray_doctor` import Ray; importing this one never does, so it is tested as a plain object and read without a
cluster. What it adds to `NodeLane`:

* `begin()`: prepare and start in one call, on a *keeper thread* that lives as long as the actor.
  The reaper shim above the supervisor asks for PDEATHSIG, which the kernel sends when the thread
  that started the shim exits, not only the process: started from one of Ray's method threads, the
  lane could be torn down by a thread pool's housekeeping. The keeper also pushes a WIP checkpoint
  every `spec.checkpoint_s`, so a node lost mid-lane loses at most that much work.
* `poll(seq, max_bytes)`: status, the next output batch and the latest sample in one round trip,
  the lead's sync costs one call per lane, not three (a round trip is milliseconds; a sync of many
  lanes runs every second).
* one lock around what writes git state (checkpoint, publish, gates, stop, discard), so a checkpoint
  never races a publish in the same worktree; reads (status, output, sample, send) never wait on it,
  so a long gate run does not make the lane look unreachable.
"""

from __future__ import annotations

import importlib.metadata
import logging
import platform
import queue
import socket
import subprocess
import sys
import threading
import time
from typing import Any

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.git.commands import first_line
from lanes_tui.engine.remote.node_lane import NodeLane
from lanes_tui.engine.remote.spec import NodeLaneSpec

__all__ = ["LaneActorBody", "ls_remote", "node_facts", "version_checks"]

log = logging.getLogger(__name__)

#: How long `begin` waits for the keeper's prepare and start (a first clone of a big remote included).
BEGIN_TIMEOUT_S = 900.0


class LaneActorBody:
    """One lane on this node, as its actor serves it (see the module docstring)."""

    def __init__(self, spec_json: dict[str, Any]) -> None:
        self.spec = NodeLaneSpec.from_json(spec_json)
        self.lane = NodeLane(self.spec)
        self._git = threading.Lock()
        self._ending = threading.Event()
        self._begun = False
        self._keeper: threading.Thread | None = None
        self._checkpoint: dict[str, Any] = {"commit": None, "t": None, "error": None, "count": 0}

    # --- Starting -------------------------------------------------------------------------------
    def begin(self) -> dict[str, Any]:
        """Prepare the clone and start the lane on the keeper thread; {"prepared", "record", "node"}."""
        if self._keeper is not None:
            raise LanesError(f"lane {self.spec.lane_id} was already started by this actor",
                             "ask for its status instead")
        answer: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=1)
        self._keeper = threading.Thread(target=self._keep, args=(answer,), daemon=True,
                                        name=f"lane-keeper-{self.spec.lane_id}")
        self._keeper.start()
        try:
            kind, value = answer.get(timeout=BEGIN_TIMEOUT_S)
        except queue.Empty:
            raise LanesError(f"lane {self.spec.lane_id} did not start on {socket.gethostname()} within "
                             f"{BEGIN_TIMEOUT_S:g}s", "check the node's disk and its access to the remote") from None
        if kind == "error":
            raise value
        self._begun = True
        return {"prepared": value[0], "record": value[1], "node": self.node()}

    def _keep(self, answer: queue.Queue[tuple[str, Any]]) -> None:
        """The keeper thread: prepare + start (so the shim's PDEATHSIG follows this thread), then the
        periodic checkpoints until the lane is stopped or the actor shuts down."""
        try:
            prepared = self.lane.prepare()
            record = self.lane.start()
        except BaseException as exc:  # handed to `begin`, which raises it in the caller
            answer.put(("error", exc))
            return
        answer.put(("ok", (prepared, record)))
        while not self._ending.wait(self.spec.checkpoint_s):
            self._checkpoint_now()
        # Returning ends the thread: PDEATHSIG then reaches a shim that is already stopping or gone.

    def _checkpoint_now(self) -> str | None:
        """One checkpoint under the git lock; a failure is kept for `poll` to report, never raised."""
        with self._git:
            try:
                commit = self.lane.checkpoint()
            except Exception as exc:  # the remote, the worktree: reported, the lane goes on
                self._checkpoint["error"] = str(exc)
                log.warning("checkpoint of %s failed: %s", self.spec.lane_id, exc)
                return None
        self._checkpoint["error"] = None
        if commit is not None:
            self._checkpoint.update(commit=commit, t=time.time(), count=self._checkpoint["count"] + 1)
        return commit

    # --- Where it runs --------------------------------------------------------------------------
    def node_id(self) -> str:
        """The cluster's id of this node; the Ray subclass answers it (a plain object has none)."""
        return ""

    def node(self) -> dict[str, str]:
        """{"hostname", "node_id"}: what the lead names the node by in the lane's record and reasons."""
        return {"hostname": socket.gethostname(), "node_id": self.node_id()}

    # --- Reading --------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        data = self.lane.status()
        data["checkpoint"] = dict(self._checkpoint)
        return data

    def output(self, seq: int, max_bytes: int) -> tuple[bytes, int]:
        return self.lane.output(seq, max_bytes)

    def sample(self) -> dict[str, Any] | None:
        return self.lane.sample()

    def poll(self, seq: int, max_bytes: int, answers: dict[str, bytes] | None = None) -> dict[str, Any]:
        """{"status", "output": (bytes, next seq), "sample", "inbox"}; status None while `begin` still
        runs. `answers` are the lead's answers to the lane's questions, `inbox` its questions and marks
        (`remote.inbox_relay`): the lead's one call a tick does all of it."""
        if not self._begun:
            return {"status": None, "output": (b"", seq), "sample": None, "inbox": {}}
        inbox = self.lane.inbox_exchange(answers or {})
        return {"status": self.status(), "output": self.lane.output(seq, max_bytes), "sample": self.lane.sample(),
                "inbox": inbox}

    def send(self, text: str) -> dict[str, Any]:
        return self.lane.send(text)

    def watch(self, seconds: float) -> float:
        return self.lane.watch(seconds)

    #: What `visit` may call: the lead's work on the worktree, never `begin` or `shutdown`.
    VISITS = frozenset({"run_gates", "publish", "checkpoint", "stop", "discard", "status"})

    def visit(self, method: str, *args: Any) -> dict[str, Any]:
        """{"value": method(*args), "status": the lane's status afterwards (None once it is gone)}.

        One round trip for the work and the record it changed (gates move the lane to ready or
        rejected). The lead also sends it to a short-lived actor on the node of a lane whose own
        actor was let go: `NodeLane` re-opens the lane's clone from the spec alone.
        """
        if method not in self.VISITS:
            raise LanesError(f"{method!r} is not something the lead asks a lane's node to do")
        value = getattr(self, method)(*args)
        try:
            status: dict[str, Any] | None = self.lane.status()
        except LanesError:  # discarded: nothing left to read
            status = None
        return {"value": value, "status": status}

    # --- Work that writes git state -------------------------------------------------------------
    def run_gates(self) -> dict[str, object]:
        with self._git:
            return self.lane.run_gates()

    def publish(self) -> dict[str, str]:
        with self._git:
            return self.lane.publish()

    def checkpoint(self) -> str | None:
        """A checkpoint now (the lead's, before it lets the actor go); None when nothing changed."""
        return self._checkpoint_now()

    # --- Ending ---------------------------------------------------------------------------------
    def stop(self, grace_s: float | None = None) -> list[int]:
        """Stop the lane through the shim (then the keeper ends); the pids killed by force."""
        with self._git:
            forced = self.lane.stop(grace_s)
        self._ending.set()
        return forced

    def discard(self) -> list[str]:
        """Stop the lane and remove its worktree, branch and clone on this node; what was removed."""
        with self._git:
            removed = self.lane.discard()
        self._ending.set()
        return removed

    def shutdown(self) -> None:
        """Before the actor goes: stop the lane (once) so nothing of it outlives the actor."""
        self._ending.set()
        with self._git:
            self.lane.close()


# --- `doctor`'s questions to a node (run there as tasks by `ray_runner`) ---------------------------
def node_facts() -> dict[str, str]:
    """What must be the same on the driver and every node: Ray's, Python's and lanes-tui's versions."""
    try:
        ours = importlib.metadata.version("lanes-tui")
    except importlib.metadata.PackageNotFoundError:
        ours = "not installed"
    ray_module = sys.modules.get("ray")  # loaded in a Ray worker (and by the driver); never imported here
    return {"hostname": socket.gethostname(), "ray": str(getattr(ray_module, "__version__", "none")),
            "python": platform.python_version(), "lanes_tui": ours}


def ls_remote(remote: str) -> tuple[bool, str]:
    """`git ls-remote --heads REMOTE` on a node: can the nodes reach the shared remote?"""
    try:
        done = subprocess.run(["git", "ls-remote", "--heads", "--", remote], capture_output=True, timeout=60,
                              check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{socket.gethostname()}: {exc}"
    if done.returncode != 0:
        return False, f"{socket.gethostname()}: {first_line(done.stderr)}"
    return True, f"{remote} answers on {socket.gethostname()}"


def version_checks(here: dict[str, str], facts: list[dict[str, str]], failed: list[str]) -> list[tuple[str, bool, str]]:
    """`doctor`'s version lines: the driver's `node_facts` against each node's (`failed`: nodes that
    could not answer). A node on another Ray or Python cannot run the driver's actors at all; one on
    another lanes-tui runs the lane with other rules than the lead's."""
    checks = []
    for name, fields in (("ray and python versions", ("ray", "python")), ("lanes-tui version", ("lanes_tui",))):
        odd = [f"{f['hostname']} ({', '.join(f[k] for k in fields)})" for f in facts
               if any(f[k] != here[k] for k in fields)]
        detail = (f"driver {', '.join(here[k] for k in fields)}"
                  + (f"; differs on {', '.join(odd)}" if odd else f", same on {len(facts)} node(s)")
                  + (f"; no answer from {', '.join(failed)}" if failed else ""))
        checks.append((name, not odd and not failed, detail))
    return checks
