"""B10: lanes-tui side by side with ccmanager on the same N fake agents printing 20 lines/s.

`python -m tests.bench b10 --sizes 5,20 [--warmup 60] [--window 30] [--runs 3] [--traffic plain|claude|…]`

The fake agent is the same program for both tools: the built-in sim
(`python -m lanes_tui.engine.sim --prompt 'print 1000000 --rate 20 …'`), or with `--traffic claude` (codex,
gemini) the replay agent printing a real CLI's recording with the same prompt (`tests.bench.traffic`):
ccmanager runs it in its terminal as it would run the CLI, lanes-tui's lanes through the CLI's preset
and channel.

- **ccmanager**: the official binary (npm package `@kodaikabasawa/ccmanager-linux-x64`, 4.4.3),
  installed with `npm install --prefix ~/.cache/lanes-tui-bench/ccmanager` when missing (skipped
  with one clear line when npm or the registry is not reachable; `--ccmanager PATH` uses a given
  binary). It runs in tmux at 160×48 with its own HOME whose `~/.config/ccmanager/config.json` has
  one command preset, the sim; in a repository with N−1 linked worktrees plus the main one, one
  session is opened per worktree (Enter, then Ctrl-E back to the menu). Measured in the menu view,
  then with one session open.
- **lanes-tui**: N real sim lanes (`tests.bench.env.BenchRepo`, real detached supervisors) and the
  real dashboard `lanes-tui --repo REPO` in tmux at 160×48.

Each side: `--warmup` seconds first, then `--runs` windows of `--window` seconds; the figure is the
median. CPU in % of one core from `/proc/PID/stat` (utime + stime + the reaped children's), summed
over the tool's processes; the fake agents are measured apart (the same work on both sides) and are
not counted for either tool. Memory: ccmanager's processes' RSS (agents apart); lanes-tui as the
dashboard's RSS + the PSS of the supervisors and of the fork server they came from
(`/proc/PID/smaps_rollup`), so the pages they share are not counted N times (their RSS sum is in the
JSON too). Memory is taken at the end of
every window, so growth over time shows. Each side runs alone, never both at once.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from tests.bench import procstat
from tests.bench.b2 import dashboard_command
from tests.bench.env import BenchRepo, machine_info
from tests.bench.report import command_line, markdown, median, table, write_json
from tests.bench.traffic import argv as replay_argv
from tests.bench.traffic import check as traffic_arg
from tests.bench.traffic import is_agent

PACKAGE = "@kodaikabasawa/ccmanager-linux-x64"
VERSION = "4.4.3"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "lanes-tui-bench" / "ccmanager"
SIZE = (160, 48)
RATE = 20
SIM_PROMPT = f'print 1000000 --rate {RATE} --text "benchmark output line"'


# ccmanager -------------------------------------------------------------------------------------
def ccmanager_binary(cache: Path = CACHE, *, install: bool = True) -> tuple[Path | None, str]:
    """The installed binary, installing it when missing; (None, why) when it cannot be had."""
    binary = cache / "node_modules" / PACKAGE / "bin" / "ccmanager"
    if binary.exists():
        return binary, "cached"
    if not install:
        return None, f"ccmanager is not installed in {cache}"
    npm = shutil.which("npm")
    if npm is None:
        return None, "npm is not installed"
    cache.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run([npm, "install", "--prefix", str(cache), "--no-audit", "--no-fund",
                               f"{PACKAGE}@{VERSION}"], capture_output=True, text=True, timeout=300, check=False)
    except subprocess.TimeoutExpired:
        return None, "npm install timed out (registry unreachable?)"
    if done.returncode != 0 or not binary.exists():
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return None, f"npm install {PACKAGE}@{VERSION} failed: {tail[0]}"
    return binary, "installed"


class Term:
    """A private tmux server with one session of SIZE."""

    def __init__(self, size: tuple[int, int] = SIZE) -> None:
        self.socket = f"lanes-b10-{uuid.uuid4().hex[:8]}"
        self.size = size

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True,
                              check=False).stdout

    def start(self, command: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
        w, h = self.size
        extra = [f"{k}={v}" for k, v in (env or {}).items()]
        subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", "start-server", ";",
                        "set-option", "-g", "default-size", f"{w}x{h}", ";",
                        "new-session", "-d", "-s", "b", "-x", str(w), "-y", str(h), "-c", str(cwd),
                        "env", "-u", "COLUMNS", "-u", "LINES", *extra, *command], check=True)

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "b", *keys)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "b")

    def pane_pid(self) -> int:
        return int(self.tmux("display-message", "-p", "-t", "b", "#{pane_pid}").strip())

    def wait(self, predicate: Any, timeout: float = 60.0, what: str = "") -> str:
        end = time.monotonic() + timeout
        text = ""
        while time.monotonic() < end:
            text = self.screen()
            if predicate(text):
                return text
            time.sleep(0.2)
        raise RuntimeError(f"tmux never showed {what}; last screen:\n{text}")

    def kill(self) -> None:
        self.tmux("kill-server")


def _is_agent(pid: int) -> bool:
    return is_agent(procstat.cmdline(pid))


def _printing(traffic: str) -> Any:
    """Whether a screen shows the fake agent's output: the sim's text, or a recording's JSON."""
    return (lambda s: "benchmark output line" in s) if traffic == "plain" else (lambda s: '{"type":' in s)


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def measure_ccmanager(binary: Path, n: int, *, warmup: float, window: float, runs: int,
                      traffic: str = "plain") -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="lanes-b10-ccm-"))
    term = Term()
    try:
        home = root / "home"
        (home / ".config" / "ccmanager").mkdir(parents=True)
        agent = ([sys.executable, "-m", "lanes_tui.engine.sim"] if traffic == "plain"
                 else replay_argv(traffic, prompt_placeholder=False))
        preset = {"id": "1", "name": "Fake agent", "command": agent[0], "args": [*agent[1:], "--prompt", SIM_PROMPT]}
        (home / ".config" / "ccmanager" / "config.json").write_text(json.dumps(
            {"commandPresets": {"presets": [preset], "defaultPresetId": "1"}}))
        repo = root / "repo"
        repo.mkdir()
        _git(repo, "init", "-q", "-b", "main")
        _git(repo, "-c", "user.name=b", "-c", "user.email=b@example.invalid", "commit", "-q", "--allow-empty",
             "-m", "init")
        for i in range(1, n):
            _git(repo, "worktree", "add", "-q", "-b", f"w{i:03d}", str(root / f"wt{i:03d}"))
        env = {"HOME": str(home), "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        term.start([str(binary)], repo, env)
        term.wait(lambda s: "Select a worktree" in s, 30, "the ccmanager menu")
        root_pid = term.pane_pid()
        # One session per worktree: the cursor starts on the first; Enter opens, Ctrl-E returns.
        for i in range(n):
            _select(term, "main (main)" if i == 0 else f"w{i:03d} @")
            _press_until(term, "Enter", _printing(traffic), f"session {i} printing")
            term.keys("C-e")
            term.wait(lambda s: "Select a worktree" in s, 30, "the menu again")
            time.sleep(0.3)
        deadline = time.monotonic() + 20
        while True:
            agents = [p for p in procstat.tree(root_pid) if _is_agent(p)]
            if len(agents) >= n or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if len(agents) != n:
            raise RuntimeError(f"ccmanager runs {len(agents)} fake agents, not {n}")
        result: dict[str, Any] = {"n": n, "agents": len(agents)}
        time.sleep(warmup)
        result["menu"] = _windows(lambda: _ccm_split(root_pid), runs, window)
        # One session open: back onto the first worktree's session.
        _press_until(term, "Enter", _printing(traffic), "the session view")
        time.sleep(min(warmup, 10.0))
        result["session"] = _windows(lambda: _ccm_split(root_pid), runs, window)
        return result
    finally:
        term.kill()
        time.sleep(0.5)
        shutil.rmtree(root, ignore_errors=True)


def _select(term: Term, name: str, timeout: float = 30.0) -> None:
    """Move ccmanager's menu cursor (the row starting with ❯; it is back on the first row after
    every return to the menu) onto the worktree called `name`."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        rows = [line for line in term.screen().splitlines() if "❯" in line and (" @ " in line or "(main)" in line)]
        names = [line.lstrip() for line in rows]
        at = next((k for k, line in enumerate(names) if line.startswith("❯ ") and line.count("❯") >= 2), None)
        want = next((k for k, line in enumerate(names) if name in line), None)
        if at is not None and want is not None:
            if at == want:
                return
            term.keys("Down" if want > at else "Up")
        time.sleep(0.15)
    raise RuntimeError(f"could not put ccmanager's cursor on {name}; screen:\n{term.screen()}")


def _press_until(term: Term, key: str, predicate: Any, what: str, timeout: float = 30.0) -> None:
    """Press `key` until the screen shows what it should: ccmanager drops keys while it is busy
    (the first key after start-up, typically)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        term.keys(key)
        try:
            term.wait(predicate, 1.5, what)
            return
        except RuntimeError:
            continue
    term.wait(predicate, 0.1, what)


def _ccm_split(root_pid: int) -> dict[str, list[int]]:
    pids = procstat.tree(root_pid)
    agents = [p for p in pids if _is_agent(p)]
    return {"tool": [p for p in pids if p not in agents], "agents": agents}


def _windows(groups_fn: Any, runs: int, window: float) -> dict[str, Any]:
    """`runs` windows of `window` s over the groups `groups_fn()` returns ({"tool": pids, ...})."""
    windows = []
    for _ in range(runs):
        groups = groups_fn()
        before = {k: procstat.Clock.take(v) for k, v in groups.items()}
        time.sleep(window)
        after = {k: procstat.Clock.take(v) for k, v in groups.items()}
        w: dict[str, float] = {f"{k}_cpu": after[k].percent_since(before[k]) for k in groups}
        w.update(_memory(groups))
        windows.append(w)
    out: dict[str, Any] = {"windows": windows}
    for key in windows[0]:
        out[key] = median([w[key] for w in windows])
    return out


def _memory(groups: dict[str, list[int]]) -> dict[str, float]:
    mem = {"tool_rss_mb": procstat.rss_mb(groups["tool"]), "agents_rss_mb": procstat.rss_mb(groups["agents"])}
    if "dashboard" in groups:
        mem["dashboard_rss_mb"] = procstat.rss_mb(groups["dashboard"])
        mem["supervisors_pss_mb"] = procstat.pss_mb(groups["supervisors"])
        mem["supervisors_rss_mb"] = procstat.rss_mb(groups["supervisors"])
        mem["lanes_tui_mem_mb"] = mem["dashboard_rss_mb"] + mem["supervisors_pss_mb"]
    return mem


# lanes-tui -------------------------------------------------------------------------------------
def measure_lanes(world: BenchRepo, n: int, *, warmup: float, window: float, runs: int) -> dict[str, Any]:
    term = Term()
    try:
        term.start(dashboard_command(world.repo), world.repo)
        first = world.lanes[0]
        term.wait(lambda s: first in s and f"Output · {first}" in s, 90, "the dashboard")
        dash = term.pane_pid()
        if "lanes" not in procstat.cmdline(dash):
            raise RuntimeError(f"the pane runs {procstat.cmdline(dash)!r}, not the dashboard")
        time.sleep(warmup)

        def groups() -> dict[str, list[int]]:
            procs = world.supervisors()
            sups = [s.pid for s in procs]
            agents = [p for s in sups for p in procstat.tree(s)[1:]]
            # The fork server the supervisors came from is lanes-tui's too: its CPU and its share of
            # the pages it holds with them count on lanes-tui's side.
            sups += world.fork_servers(procs)
            dashboard = procstat.tree(dash)
            return {"dashboard": dashboard, "supervisors": sups, "tool": dashboard + sups, "agents": agents}

        result = {"n": n, "agents": len(groups()["agents"]), "dashboard": _windows(groups, runs, window)}
        world.check_printing()
        return result
    finally:
        term.kill()


# the run ---------------------------------------------------------------------------------------
HEADERS = ("N", "ccmanager menu %", "ccmanager session %", "lanes-tui dashboard %", "supervisors %",
           "lanes-tui total %", "ratio menu / session", "dashboard ratio", "ccmanager MB",
           "lanes-tui MB (dash RSS + sup PSS)", "mem ratio", "agents % (each side)")


def row(r: dict[str, Any]) -> list[Any]:
    lt = r["lanes_tui"]["dashboard"]
    ccm = r.get("ccmanager")
    total = lt["tool_cpu"]
    mem = lt["lanes_tui_mem_mb"]
    if ccm:
        menu, sess = ccm["menu"]["tool_cpu"], ccm["session"]["tool_cpu"]
        ccm_mb = max(w["tool_rss_mb"] for w in ccm["menu"]["windows"] + ccm["session"]["windows"])
        ratio = f"{total / menu:.2f} / {total / sess:.2f}"
        dratio = f"{lt['dashboard_cpu'] / menu:.2f}"
        agents = f"{ccm['menu']['agents_cpu']:.1f} / {lt['agents_cpu']:.1f}"
        mratio = mem / ccm_mb
    else:
        menu = sess = ccm_mb = mratio = float("nan")
        ratio = dratio = "-"
        agents = f"- / {lt['agents_cpu']:.1f}"
    return [r["n"], menu, sess, lt["dashboard_cpu"], lt["supervisors_cpu"], total, ratio, dratio, ccm_mb, mem,
            mratio, agents]


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tests.bench b10", description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1,5,10,20", help="agent counts (default 1,5,10,20)")
    p.add_argument("--warmup", type=float, default=60.0, help="seconds before measuring (60)")
    p.add_argument("--window", type=float, default=30.0, help="seconds per window (30)")
    p.add_argument("--runs", type=int, default=3, help="windows per side (3)")
    p.add_argument("--ccmanager", type=Path, default=None, help="a ccmanager binary (else npm-installed)")
    p.add_argument("--no-ccmanager", action="store_true", help="lanes-tui side only")
    p.add_argument("--no-install", action="store_true", help="never run npm; skip ccmanager when not cached")
    p.add_argument("--out", type=Path, default=None, help="folder for the JSON (tests/bench/results)")
    p.add_argument("--traffic", type=traffic_arg, default="plain",
                   help="what the agents print: the sim's lines, or a real CLI's recording (tests/bench/traffic)")
    args = p.parse_args(argv)
    args.sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    return args


def run(args: argparse.Namespace, *, command: str | None = None) -> dict[str, Any]:
    if shutil.which("tmux") is None:
        raise SystemExit("B10 needs tmux")
    binary: Path | None = None
    why = "--no-ccmanager"
    if not args.no_ccmanager:
        if args.ccmanager:
            binary, why = args.ccmanager, "given"
        else:
            binary, why = ccmanager_binary(install=not args.no_install)
        if binary is None:
            print(f"B10: ccmanager skipped: {why}", file=sys.stderr, flush=True)
    record: dict[str, Any] = {"bench": "b10", "command": command or command_line(),
                              "started": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": machine_info(),
                              "params": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                              "ccmanager": {"binary": str(binary) if binary else None, "status": why,
                                            "version": VERSION}, "results": []}
    for n in args.sizes:
        result: dict[str, Any] = {"n": n}
        if binary is not None:
            print(f"B10 N={n}: ccmanager", file=sys.stderr, flush=True)
            result["ccmanager"] = measure_ccmanager(binary, n, warmup=args.warmup, window=args.window,
                                                    runs=args.runs, traffic=args.traffic)
        print(f"B10 N={n}: lanes-tui", file=sys.stderr, flush=True)
        with BenchRepo(capacity=n, rate=RATE, traffic=args.traffic) as world:
            world.grow_to(n)
            result["lanes_tui"] = measure_lanes(world, n, warmup=args.warmup, window=args.window, runs=args.runs)
        record["results"].append(result)
        print(table(HEADERS, [row(result)]), file=sys.stderr, flush=True)
    record["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    record["table"] = markdown(HEADERS, [row(r) for r in record["results"]])
    record["json"] = str(write_json("b10", record, args.out))
    return record


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    record = run(args)
    m = record["machine"]
    print(f"\nmachine: {m['cpu_model']}, {m['logical_cores']} cores, {m['memory_gb']} GB, load at start "
          f"{m['load_avg_at_start']}\ncommand: {record['command']}\nccmanager: {record['ccmanager']}\n")
    print(table(HEADERS, [row(r) for r in record["results"]]))
    print()
    print(record["table"])
    print(f"\n{record['json']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
