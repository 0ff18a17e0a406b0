"""The scorecard's tasks and runs: `lanes-tui scorecard prepare TASK` and `record ID` (docs/benchmarks.md).

Why: the dashboard's benchmarks measure lanes-tui, not the orchestration it does. A scorecard runs
fixed tasks (a task file: a source at a known commit, setup steps, a prompt, a pass check) the same
way each time, so a change to the engine, a prompt or a provider shows up as a task that stopped
passing, needed the lead more often, or cost more. Each task gets a fresh repository of its own in a
work folder, so a run never touches the lead's repository; only the scorecard's own files are kept
in the lead's state folder (`scorecard/`): `prepared.jsonl` (task → repository → lane) and the
records (`scorecard_compare`).

Three sim tasks ship with lanes-tui (`scorecard_tasks/*.toml`): their sources are text in the task
file and their prompts sim scripts, so the scorecard runs offline and costs nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.core.atomic import append_jsonl, read_json, read_jsonl
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.lanes.launcher import LaunchRequest, launch_lane
from lanes_tui.engine.state.meters import METERS_FILE, lane_figures
from lanes_tui.engine.state.model import LIVE_STATES, TASK_TYPES, LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore

TASKS_DIR = Path(__file__).with_name("scorecard_tasks")
#: Git identity and dates fixed, so a task built from text gets the same commit each time.
_GIT_ENV = {"GIT_AUTHOR_NAME": "lanes-tui scorecard", "GIT_AUTHOR_EMAIL": "scorecard@lanes-tui.invalid",
            "GIT_COMMITTER_NAME": "lanes-tui scorecard", "GIT_COMMITTER_EMAIL": "scorecard@lanes-tui.invalid",
            "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
_TIMEOUT_S = 300


@dataclass(frozen=True)
class ScoreTask:
    """One task file, checked: every argv a list of strings, the source a path or files given as text."""

    name: str
    prompt: str
    check: tuple[str, ...]
    description: str = ""
    task_type: str = "backend"
    source: str = ""  # a git repository (a path); empty: the `files` below
    commit: str = ""  # the source's commit (empty: its HEAD)
    setup: tuple[tuple[str, ...], ...] = ()
    files: dict[str, str] = field(default_factory=dict)
    config: str = ""  # extra `.lanes/config.toml` text for the task's repository (providers, review, gates)


def builtin_tasks() -> list[str]:
    """The names of the task files shipped with lanes-tui."""
    return sorted(p.stem for p in TASKS_DIR.glob("*.toml"))


def load_task(spec: str) -> ScoreTask:
    """A task by shipped name (`add-function`) or by path to a task file."""
    path = Path(spec)
    if not path.is_file():
        path = TASKS_DIR / f"{spec}.toml"
    if not path.is_file():
        raise LanesError(f"no scorecard task {spec!r}",
                         f"give a task file's path or one of: {', '.join(builtin_tasks())}")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise LanesError(f"task file {path} is not valid TOML: {exc}", "fix the file") from exc
    return parse_task(raw, str(path))


def parse_task(raw: dict[str, Any], where: str) -> ScoreTask:
    def text(key: str, default: str | None = None) -> str:
        value = raw.get(key, default)
        if not isinstance(value, str):
            raise LanesError(f"{where}: `{key}` must be a string", "see docs/benchmarks.md, Scorecard")
        return value

    def argv(value: Any, key: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not value or not all(isinstance(a, str) for a in value):
            raise LanesError(f"{where}: `{key}` must be a non-empty list of strings (an argv, never a shell line)",
                             'e.g. check = ["{python}", "-m", "unittest"]')
        return tuple(value)

    files = raw.get("files", {})
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise LanesError(f"{where}: `files` must map paths to text", '[files]\n"calc.py" = "..."')
    setup = raw.get("setup", [])
    if not isinstance(setup, list):
        raise LanesError(f"{where}: `setup` must be a list of argv lists", 'setup = [["git", "status"]]')
    task = ScoreTask(name=text("name"), prompt=text("prompt"), check=argv(raw.get("check"), "check"),
                     description=text("description", ""), task_type=text("task_type", "backend"),
                     source=text("source", ""), commit=text("commit", ""),
                     setup=tuple(argv(s, "setup") for s in setup), files=dict(files), config=text("config", ""))
    if task.task_type not in TASK_TYPES:
        raise LanesError(f"{where}: task_type {task.task_type!r} is unknown", f"one of {', '.join(TASK_TYPES)}")
    if not task.source and not task.files:
        raise LanesError(f"{where}: the task has neither `source` nor `files`", "name a repository or give files")
    for name in task.files:
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise LanesError(f"{where}: file {name!r} leaves the task's repository", "use a relative path")
    return task


def _filled(args: tuple[str, ...]) -> list[str]:
    return [a.replace("{python}", sys.executable) for a in args]


def _run(argv: list[str], cwd: Path, what: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=_TIMEOUT_S,
                          env={**os.environ, **(env or {})}, check=False)
    if proc.returncode != 0:
        first = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[:1]
        raise LanesError(f"{what} failed (exit {proc.returncode}): {first[0] if first else ''}",
                         "fix the task file or its source, then prepare again")
    return proc.stdout.strip()


def _build_repo(task: ScoreTask, dest: Path) -> str:
    """The task's repository at its commit, in `dest`; returns the commit checked out."""
    if task.source:
        _run(["git", "clone", "-q", "--no-local", str(Path(task.source).expanduser()), str(dest)], dest.parent,
             f"cloning {task.source}")
        if task.commit:
            _run(["git", "checkout", "-q", "-B", "main", task.commit], dest, f"checking out {task.commit}")
    else:
        dest.mkdir(parents=True)
        _run(["git", "init", "-q", "-b", "main"], dest, "git init")
        for name, content in task.files.items():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / name).write_text(content, encoding="utf-8")
        _run(["git", "add", "-A"], dest, "git add")
        _run(["git", "commit", "-q", "-m", f"scorecard task {task.name}"], dest, "git commit", _GIT_ENV)
    head = _run(["git", "rev-parse", "HEAD"], dest, "git rev-parse")
    if task.commit and not head.startswith(task.commit) and task.source == "":
        raise LanesError(f"task {task.name} built commit {head[:12]}, not {task.commit}",
                         "the task's files changed: update its `commit`")
    return head


def _config_text(task: ScoreTask, worktrees: Path) -> str:
    chains = "\n".join(f'{t} = ["sim"]' for t in TASK_TYPES)
    return (f'[lanes]\nworktree_root = "{worktrees}"\n\n[chains]\n{chains}\n\n[providers.sim]\nmax = 20\n\n'
            f"[gates]\ncommands = []\n\n{task.config}\n")


@dataclass(frozen=True)
class Prepared:
    task: str
    repo: Path
    lane: str
    commit: str


def prepare(home: Path, spec: str, work_dir: Path | None = None, prompt: str | None = None) -> Prepared:
    """Build a fresh repository for the task in the work folder and launch a lane on it."""
    task = load_task(spec)
    paths = StatePaths(home)
    paths.ensure()
    work = (work_dir or paths.state / "scorecard" / "work").expanduser().resolve()
    work.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    dest, n = work / f"{task.name}-{stamp}", 1
    while dest.exists() or dest.with_name(dest.name + "-worktrees").exists():
        n += 1
        dest = work / f"{task.name}-{stamp}-{n}"
    try:
        commit = _build_repo(task, dest)
        for step in task.setup:
            _run(_filled(step), dest, f"setup step {' '.join(step)}")
        config_path = dest / ".lanes" / "config.toml"
        config_path.parent.mkdir(parents=True, exist_ok=True)
        config_path.write_text(_config_text(task, dest.with_name(dest.name + "-worktrees")), encoding="utf-8")
        record = launch_lane(dest, load_config(dest), LaunchRequest(prompt=prompt or task.prompt,
                                                                    task_type=task.task_type, slug=task.name))
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)  # nothing half-done: no lane started on it
        raise
    append_jsonl(scorecard_dir(home) / "prepared.jsonl",
                 {"t": time.time(), "task": task.name, "spec": spec, "repo": str(dest), "lane": record.id,
                  "commit": commit, "check": list(task.check)})
    return Prepared(task.name, dest, record.id, commit)


def scorecard_dir(home: Path) -> Path:
    folder = StatePaths(home).state / "scorecard"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _prepared(home: Path) -> list[dict[str, Any]]:
    path = scorecard_dir(home) / "prepared.jsonl"
    return [row for row in read_jsonl(path) if isinstance(row, dict)] if path.is_file() else []


def _events(store: LaneStore, lane_id: str) -> list[dict[str, Any]]:
    path = store.lane_paths(lane_id).events
    return [e for e in read_jsonl(path) if isinstance(e, dict)] if path.is_file() else []


def _answers(paths: StatePaths, lane_id: str) -> int:
    """The lead's answers to this lane's questions (a timeout's default is no intervention)."""
    count = 0
    for answer in paths.lane_inbox(lane_id).glob("*.answer.json"):
        try:
            data = read_json(answer)
        except (ValueError, OSError):
            continue
        if isinstance(data, dict) and data.get("by") not in ("timeout", "default"):
            count += 1
    return count


def _score_lane(repo: Path, record: LaneRecord, check: list[str] | None) -> dict[str, Any]:
    """One lane's figures: finished, passed, interventions, review rounds, minutes, tokens, cost."""
    paths = StatePaths(repo)
    store = LaneStore(paths)
    events = _events(store, record.id)
    meters = lane_figures(_read(store.lane_paths(record.id).dir / METERS_FILE))
    tokens = meters.get("tokens") or {}
    ends = [a.ended for a in record.providers_tried if a.ended]
    wall_s = (max(ends) if ends else record.updated) - record.created
    passed = None
    if check and Path(record.worktree).is_dir():
        proc = subprocess.run(_filled(tuple(check)), cwd=record.worktree, capture_output=True, timeout=_TIMEOUT_S,
                              check=False)
        passed = proc.returncode == 0
    gates_ok = record.state in ("ready", "accepted") if record.result == "OK" else False
    ok = passed if passed is not None else gates_ok
    return {
        "lane": record.id, "state": record.state, "result": record.result,
        "finished": record.result == "OK", "gates_passed": gates_ok, "passed": bool(ok),
        "interventions": {"answers": _answers(paths, record.id),
                          "sends": sum(1 for e in events if e.get("type") == "send"),
                          "relaunches": sum(1 for e in events if e.get("type") == "relaunched")},
        "review_rounds": sum(1 for e in events if e.get("type") == "review"),
        "wall_minutes": round(max(wall_s, 0.0) / 60, 4), "attempt": record.attempt,
        "first_try": bool(ok) and record.attempt == 1,
        "tokens": int(tokens.get("total", 0) or (tokens.get("input", 0) + tokens.get("output", 0))),
        "cost_usd": meters.get("cost_usd") or 0.0,
    }


def _read(path: Path) -> Any:
    try:
        return read_json(path)
    except (ValueError, OSError):
        return None


def score(home: Path, ident: str) -> dict[str, Any]:
    """Score a finished lane (prepared by the scorecard, or of this repository) or a plan's lanes."""
    prepared = [row for row in _prepared(home) if row.get("lane") == ident]
    if prepared:
        row = prepared[-1]
        repo, task, check = Path(str(row["repo"])), str(row["task"]), row.get("check")
    else:
        repo, task, check = home, ident, None
    store = LaneStore(StatePaths(repo))
    records: list[LaneRecord]
    if store.exists(ident):
        records = [store.read(ident)]
    else:
        records = [r for r in store.all() if r.plan == ident]
        if not records:
            raise LanesError(f"no lane or plan {ident!r} to score", "give a lane id from `scorecard prepare`")
    live = [r.id for r in records if r.state in LIVE_STATES]
    if live:
        raise LanesError(f"{', '.join(live)} has not finished", f"wait for it: lanes-tui --repo {repo} wait {live[0]}")
    parts = [_score_lane(repo, r, check if isinstance(check, list) else None) for r in records]
    if len(parts) == 1:
        return {"task": task, "repo": str(repo), **parts[0]}
    return {"task": task, "repo": str(repo), "lane": ",".join(p["lane"] for p in parts),
            "state": "plan", "result": None,
            "finished": all(p["finished"] for p in parts), "gates_passed": all(p["gates_passed"] for p in parts),
            "passed": all(p["passed"] for p in parts),
            "interventions": {k: sum(p["interventions"][k] for p in parts) for k in ("answers", "sends", "relaunches")},
            "review_rounds": sum(p["review_rounds"] for p in parts),
            "wall_minutes": max(p["wall_minutes"] for p in parts), "attempt": max(p["attempt"] for p in parts),
            "first_try": all(p["first_try"] for p in parts),
            "tokens": sum(p["tokens"] for p in parts), "cost_usd": sum(p["cost_usd"] for p in parts)}
