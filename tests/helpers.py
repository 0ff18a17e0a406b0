"""Helpers for tests that drive the real `lanes-tui` command against real repositories."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

BROKE = ("[providers.broke]\n"
         "argv = [\"{python}\", \"-c\", \"open('broke-was-here', 'w').write('x'); "
         "print('SIM-OUT-OF-BUDGET: Usage limit reached for test-model'); raise SystemExit(1)\"]\n"
         "prompt = \"arg\"\nbudget_patterns = [\"SIM-OUT-OF-BUDGET\"]\n")
BADCFG = ("[providers.badcfg]\n"
          "argv = [\"{python}\", \"-c\", \"print('SIM-CONFIG-ERROR: Unknown Model, please check the model code'); "
          "raise SystemExit(1)\"]\n"
          "prompt = \"arg\"\nconfig_patterns = [\"SIM-CONFIG-ERROR\"]\n")


#: The suite's own virtualenv (None when the suite runs on a plain interpreter). Gates that say `{python}`
#: run on the project's interpreter, never lanes-tui's (docs/gates.md), and the suite's repositories have
#: no venv of their own: `write_config` names this one as `[gates] venv`, so those gates run on an
#: interpreter that has pytest because the test says so, not because lanes-tui happens to.
SUITE_VENV: str | None = (sys.prefix if sys.prefix != sys.base_prefix and Path(sys.prefix, "bin", "python").exists()
                          else None)


def write_config(repo: Path, *, idle_timeout_s: float = 30, sample_s: float = 0.2, max_parallel: int = 6,
                 chains: str = 'backend = ["sim"]', extra: str = "", sim_max: int = 20,
                 gates: str = "commands = []", lanes_extra: str = "", timeout_s: float = 600,
                 allow_uncontained: bool = False, gates_venv: str | None = SUITE_VENV) -> Path:
    """The suite's config; `allow_uncontained` for the tests that run lanes without the kernel's fence.

    `gates_venv`: the `[gates] venv` written when the gates say `{python}` and name no venv themselves
    (None: none, so the gates find the project's interpreter as a lead's would)."""
    if gates_venv and "{python}" in gates and not re.search(r"^venv\s*=", gates, re.MULTILINE):
        gates = f"venv = {json.dumps(gates_venv)}\n{gates}"
    root = repo.parent / "worktrees"
    if allow_uncontained:
        lanes_extra = f"allow_uncontained = true\n{lanes_extra}"
    text = (f"[lanes]\nworktree_root = \"{root}\"\nmax_parallel = {max_parallel}\n"
            f"idle_timeout_s = {idle_timeout_s}\nsample_s = {sample_s}\ntimeout_s = {timeout_s}\n{lanes_extra}\n"
            f"[chains]\n{chains}\n\n[providers.sim]\nmax = {sim_max}\n\n[gates]\n{gates}\n\n{extra}")
    path = repo / ".lanes" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def cli(repo: Path, *args: str, check: bool = False, timeout: float = 120,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `lanes-tui ARGS` as a real process in `repo`."""
    proc = subprocess.run([sys.executable, "-m", "lanes_tui.app", *args], cwd=repo, capture_output=True,
                          text=True, timeout=timeout, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"lanes-tui {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
    return proc


def run_lane(repo: Path, script: str, *, lane_id: str, extra: tuple[str, ...] = ()) -> str:
    proc = cli(repo, "run", "--prompt", script, "--id", lane_id, *extra, check=True)
    return proc.stdout.strip().splitlines()[-1]


def wait_state(repo: Path, lane: str, states: str | None = None, timeout: float = 60) -> str:
    """Wait for `states`, or (default) until the lane is settled and its supervisor finished."""
    until = ("--until", states) if states else ()
    proc = cli(repo, "wait", lane, *until, "--timeout", str(timeout))
    assert proc.returncode == 0, f"{lane} never reached {states}: {proc.stderr} {status(repo, lane)}"
    return proc.stdout.strip()


def status(repo: Path, lane: str | None = None) -> Any:
    proc = cli(repo, "status", *([lane] if lane else []), "--json", check=True)
    rows = json.loads(proc.stdout)
    return rows[0] if lane else rows


def output(repo: Path, lane: str) -> str:
    """A lane's output so far: "" until its supervisor has made the log, so a wait can poll it."""
    return text_of(repo / ".lanes" / "state" / "lanes" / lane / "output.log")


def text_of(path: Path) -> str:
    """A file written by another process, or "" while it does not exist yet (it appears when written)."""
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""


def wait_for(predicate: Any, timeout: float = 30.0, interval: float = 0.05) -> Any:
    """Poll a condition on real events (a file, a state) with a bound; never a fixed sleep."""
    end = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


def as_user(repo: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`lanes-tui ARGS` as a user file modes apply to: root drops the capability that ignores them
    (`setpriv`), or the test is skipped where it cannot."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: file modes cannot be made to apply")
        caps = "-dac_override,-dac_read_search"
        prefix = ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}"]
    return subprocess.run([*prefix, sys.executable, "-m", "lanes_tui.app", *args], cwd=repo, capture_output=True,
                          text=True, timeout=timeout, check=False)


def programme_with_origin(repo: Path, tmp_path: Path) -> Path:
    """`programme` checked out (main is protected from accepts), pushed to a bare `origin` in `tmp_path`
    with its upstream set, and the config written: what `finish` and `ci` push to and open PRs from."""
    from tests.conftest import git

    git(repo, "checkout", "-q", "-b", "programme")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "-u", "origin", "programme")
    write_config(repo)
    return repo


def ready_lane(repo: Path, script: str, lane_id: str) -> str:
    """A sim lane run to its end, which must be `ready` (its gates passed); its id."""
    lane = run_lane(repo, script, lane_id=lane_id)
    wait_state(repo, lane)
    assert status(repo, lane)["state"] == "ready", status(repo, lane)
    return lane
