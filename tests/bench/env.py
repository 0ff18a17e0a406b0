"""The benchmark world: a throw-away repository with N simulated lanes printing at a fixed rate.

Everything lives in one temporary folder (repository, worktrees, XDG data and runtime folders for
the heavy-slot locks) that `BenchRepo.close` removes after stopping every lane it started. Lanes
are started with the engine's own `launch_lane`, so each one is a real detached supervisor with a
real `sim` agent, exactly as `lanes-tui run` starts them.
"""

from __future__ import annotations

import asyncio
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.lanes.launcher import LaunchRequest, launch_lane, stop_lane, supervisor_key
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from tests.bench.traffic import provider as traffic_provider
from tests.bench.traffic import provider_toml

#: What every benchmark lane runs: print for much longer than any benchmark lasts, 20 lines a second.
DEFAULT_SCRIPT = "Benchmark lane: print steadily.\nprint 1000000 --rate {rate} --text \"benchmark output line\"\n"
#: The environment variables the world sets for itself (and its lanes) while it is open.
_ENV_KEYS = ("XDG_DATA_HOME", "XDG_RUNTIME_DIR", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
             "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL")


@dataclass
class BenchRepo:
    """A temporary repository configured for up to `capacity` sim lanes; a context manager."""

    capacity: int
    rate: float = 20.0
    sample_s: float = 5.0
    #: What the lanes print: the sim's plain lines, or a real CLI's recording (`tests.bench.traffic`).
    traffic: str = "plain"
    root: Path = field(init=False)
    repo: Path = field(init=False)
    lanes: list[str] = field(default_factory=list, init=False)
    _saved_env: dict[str, str | None] = field(default_factory=dict, init=False)

    def __enter__(self) -> BenchRepo:
        self.root = Path(tempfile.mkdtemp(prefix="lanes-bench-"))
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _setup(self) -> None:
        values = {"XDG_DATA_HOME": str(self.root / "xdg-data"), "XDG_RUNTIME_DIR": str(self.root / "xdg-run"),
                  "GIT_AUTHOR_NAME": "Bench Lead", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
                  "GIT_COMMITTER_NAME": "Bench Lead", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}
        for key in _ENV_KEYS:
            self._saved_env[key] = os.environ.get(key)
            os.environ[key] = values[key]
        (self.root / "xdg-run").mkdir(mode=0o700)
        self.repo = self.root / "project"
        self.repo.mkdir()
        _git(self.repo, "init", "-q", "-b", "programme")
        _git(self.repo, "config", "user.name", "Bench Lead")
        _git(self.repo, "config", "user.email", "bench@example.invalid")
        (self.repo / "README.md").write_text("# bench project\n")
        (self.repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
        (self.repo / ".gitignore").write_text(".lanes/state/\n")
        _git(self.repo, "add", "-A")
        _git(self.repo, "commit", "-q", "-m", "initial")
        write_bench_config(self.repo, self.capacity, self.sample_s, self.traffic)

    # lanes -------------------------------------------------------------------------------------
    def grow_to(self, count: int, *, timeout: float = 600.0) -> float:
        """Start lanes until `count` run (all printing); returns the seconds it took."""
        if count > self.capacity:
            raise ValueError(f"the world was configured for {self.capacity} lanes, not {count}")
        started = time.monotonic()
        config = load_config(self.repo)
        script = DEFAULT_SCRIPT.format(rate=f"{self.rate:g}")
        while len(self.lanes) < count:
            slug = f"bench-{len(self.lanes) + 1:03d}"
            # A benchmark loads the machine on purpose: the load wording guard is told so.
            record = launch_lane(self.repo, config, LaunchRequest(prompt=script, slug=slug, allow_load=True))
            self.lanes.append(record.id)
        self.wait_running(timeout=max(1.0, timeout - (time.monotonic() - started)))
        return time.monotonic() - started

    def wait_running(self, *, timeout: float = 120.0) -> None:
        """Until every lane is `running` and its output file is growing."""
        store = LaneStore(StatePaths(self.repo))
        end = time.monotonic() + timeout
        pending = list(self.lanes)
        while pending:
            pending = [lane for lane in pending if not self._printing(store, lane)]
            if not pending:
                return
            if time.monotonic() > end:
                states = {lane: store.read(lane).state for lane in pending[:5]}
                raise RuntimeError(f"{len(pending)} lanes never started printing, e.g. {states}")
            time.sleep(0.2)

    def check_printing(self) -> None:
        """Every lane is still running (none was stopped by a limit or died): else the figures lie."""
        store = LaneStore(StatePaths(self.repo))
        stopped = {lane: store.read(lane).state for lane in self.lanes}
        stopped = {lane: state for lane, state in stopped.items() if state != "running"}
        if stopped:
            raise RuntimeError(f"{len(stopped)} of {len(self.lanes)} lanes stopped during the measurement: "
                               f"{dict(list(stopped.items())[:5])}")

    def _printing(self, store: LaneStore, lane: str) -> bool:
        state = store.read(lane).state
        if state not in ("queued", "launching", "running"):
            raise RuntimeError(f"lane {lane} ended up {state} instead of printing; see its output.log")
        if state != "running":
            return False
        output = store.lane_paths(lane).output
        return output.exists() and output.stat().st_size > 0

    def supervisors(self) -> list[psutil.Process]:
        """The live supervisor processes of this world's lanes."""
        found = []
        for lane in self.lanes:
            key = supervisor_key(self.repo, lane)
            if key is None:
                continue
            try:
                proc = psutil.Process(key.pid)
                if key.alive():
                    found.append(proc)
            except psutil.Error:
                continue
        return found

    def fork_servers(self, supervisors: list[psutil.Process] | None = None) -> list[int]:
        """The live fork servers the supervisors (these, or all of this world's) were forked from."""
        parents = set()
        for proc in self.supervisors() if supervisors is None else supervisors:
            try:
                parent = proc.parent()
                if parent is not None and "lanes_tui.engine.supervisor.fork_server" in parent.cmdline():
                    parents.add(parent.pid)
            except psutil.Error:
                continue
        return sorted(parents)

    # tear-down ---------------------------------------------------------------------------------
    def stop_all(self) -> None:
        if not getattr(self, "repo", None) or not self.repo.exists():
            return
        lane_ids = StatePaths(self.repo).lane_ids()

        async def stop() -> None:
            await asyncio.gather(*(stop_lane(self.repo, lane, grace_s=10.0) for lane in lane_ids))

        asyncio.run(stop())

    def close(self) -> None:
        try:
            self.stop_all()
        finally:
            root = getattr(self, "root", None)
            if root is not None:
                if (root / "project").exists():
                    subprocess.run(["git", "worktree", "prune"], cwd=root / "project", capture_output=True,
                                   check=False)
                shutil.rmtree(root, ignore_errors=True)
            for key, value in self._saved_env.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            self._saved_env = {}


def write_bench_config(repo: Path, capacity: int, sample_s: float, traffic: str = "plain") -> Path:
    """Like `tests.helpers.write_config`, but no limit can stop a benchmark lane half-way: the
    watchdog's idle timeout and the wall-clock limit are ten hours. `traffic` other than `plain`: the
    lanes run the real CLI's preset with the replay agent as its argv (`tests.bench.traffic`)."""
    root = repo.parent / "worktrees"
    text = (f"[lanes]\nworktree_root = \"{root}\"\nmax_parallel = {capacity}\n"
            f"idle_timeout_s = 36000\nsample_s = {sample_s:g}\ntimeout_s = 36000\n\n"
            f"[chains]\nbackend = [\"{traffic_provider(traffic)}\"]\n\n{provider_toml(traffic, capacity)}\n"
            "[gates]\ncommands = []\n")
    path = repo / ".lanes" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def machine_info() -> dict[str, Any]:
    """What the figures were measured on; the machines are shared, so the load at the start too."""
    import textual

    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu_model": model,
        "logical_cores": psutil.cpu_count(logical=True),
        "physical_cores": psutil.cpu_count(logical=False),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "textual": textual.__version__,
        "platform": platform.platform(),
        "executable": sys.executable,
    }
