"""The scorecard's tasks and runs: `lanes-tui scorecard prepare TASK` (docs/benchmarks.md, "Scorecard").

Why: the dashboard's benchmarks measure lanes-tui, not the orchestration it does. A scorecard runs
fixed tasks (a task file: a source at a known commit, setup steps, a prompt or a plan, a pass check)
the same way each time, so a change to the engine, a prompt or a provider shows up as a task that
stopped passing, needed the lead more often, or cost more. Each run gets a fresh repository of its
own in a work folder, so a run never touches the lead's repository; only the scorecard's own files
are kept in the lead's state folder (`scorecard/`): `prepared.jsonl` (run → repository → lane or
plan) and the records (`scorecard_compare`).

Every run has its own id, `TASK-rN` (N counts up across the runs prepared from this state folder):
it names the run's repository folder, its lane (`TASK-rN-a1`) or its plan (`TASK-rN`), so two runs of
one task never share a lane id and `record ID` always finds the one run meant.

Three sim tasks ship with lanes-tui (`scorecard_tasks/*.toml`): their sources are text in the task
file and their prompts sim scripts, so the scorecard runs offline and costs nothing.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.core.atomic import append_jsonl, read_jsonl
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import MAX_SLUG, validate_slug
from lanes_tui.engine.lanes.launcher import LaunchRequest, launch_lane
from lanes_tui.engine.state.model import TASK_TYPES
from lanes_tui.engine.state.paths import StatePaths

TASKS_DIR = Path(__file__).with_name("scorecard_tasks")
#: Git identity and dates fixed, so a task built from text (and its setup commit) is the same commit each time.
_GIT_ENV = {"GIT_AUTHOR_NAME": "lanes-tui scorecard", "GIT_AUTHOR_EMAIL": "scorecard@lanes-tui.invalid",
            "GIT_COMMITTER_NAME": "lanes-tui scorecard", "GIT_COMMITTER_EMAIL": "scorecard@lanes-tui.invalid",
            "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
TIMEOUT_S = 300
#: A task name leaves room for `-rNNNN` in a lane's slug (MAX_SLUG).
MAX_TASK_NAME = MAX_SLUG - 8
_TASK_KEYS = frozenset({"name", "description", "task_type", "prompt", "check", "source", "commit", "setup",
                        "files", "config", "tickets"})
_TICKET_REFUSED = {"repo": "a scorecard plan works in its task's one repository",
                   "prompt_file": "write the ticket's prompt into the task file: the plan file is generated"}


@dataclass(frozen=True)
class ScoreTask:
    """One task file, checked: every argv a list of strings, the source a path or files given as text.

    The work is either one lane (`prompt`) or a plan (`tickets`, the `[[tickets]]` of a plan file).
    """

    name: str
    check: tuple[str, ...]
    prompt: str = ""
    description: str = ""
    task_type: str = "backend"
    source: str = ""  # a git repository (a path, relative to the task file, or a URL); empty: `files`
    commit: str = ""  # the source's commit: required with `source`, checked when given with `files`
    setup: tuple[tuple[str, ...], ...] = ()
    files: dict[str, str] = field(default_factory=dict)
    config: str = ""  # extra `.lanes/config.toml` text for the task's repository (providers, review, gates)
    tickets: tuple[dict[str, Any], ...] = ()
    where: Path = TASKS_DIR  # the task file's folder: a relative `source` is read from there

    @property
    def is_plan(self) -> bool:
        return bool(self.tickets)


def builtin_tasks() -> list[str]:
    """The names of the task files shipped with lanes-tui."""
    return sorted(p.stem for p in TASKS_DIR.glob("*.toml"))


def load_task(spec: str) -> ScoreTask:
    """A task by shipped name (`add-function`) or by path to a task file."""
    path = Path(spec).expanduser()
    if not path.is_file() and "/" not in spec and not spec.endswith(".toml"):
        path = TASKS_DIR / f"{spec}.toml"
    if not path.is_file():
        raise LanesError(f"no scorecard task {spec!r}",
                         f"give a task file's path or one of: {', '.join(builtin_tasks())}")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise LanesError(f"task file {path} is not valid TOML: {exc}", "fix the file") from exc
    return parse_task(raw, str(path), path.resolve().parent)


def parse_task(raw: dict[str, Any], where: str, folder: Path = TASKS_DIR) -> ScoreTask:
    """Check a task file's table; the first problem is one `LanesError` naming the file and the key."""
    fix = "see docs/benchmarks.md, Scorecard"

    def text(key: str, default: str | None = None) -> str:
        value = raw.get(key, default)
        if not isinstance(value, str):
            raise LanesError(f"{where}: `{key}` must be a string" + (" (it is missing)" if value is None else ""),
                             fix)
        return value

    def argv(value: Any, key: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not value or not all(isinstance(a, str) for a in value):
            raise LanesError(f"{where}: `{key}` must be a non-empty list of strings (an argv, never a shell line)",
                             'e.g. check = ["{python}", "-m", "unittest"]')
        return tuple(value)

    unknown = sorted(set(raw) - _TASK_KEYS)
    if unknown:
        raise LanesError(f"{where}: unknown key `{unknown[0]}`", f"the keys are {', '.join(sorted(_TASK_KEYS))}")
    files = raw.get("files", {})
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise LanesError(f"{where}: `files` must map paths to text", '[files]\n"calc.py" = "..."')
    setup = raw.get("setup", [])
    if not isinstance(setup, list):
        raise LanesError(f"{where}: `setup` must be a list of argv lists", 'setup = [["git", "status"]]')
    tickets = _tickets(raw.get("tickets", []), where)
    name = text("name")
    if len(name) > MAX_TASK_NAME:
        raise LanesError(f"{where}: task name {name!r} is longer than {MAX_TASK_NAME} characters", "shorten it")
    try:
        validate_slug(name)
    except LanesError as exc:
        raise LanesError(f"{where}: `name`: {exc.what}", exc.fix) from None
    task = ScoreTask(name=name, prompt=text("prompt", ""), check=argv(raw.get("check"), "check"),
                     description=text("description", ""), task_type=text("task_type", "backend"),
                     source=text("source", ""), commit=text("commit", ""),
                     setup=tuple(argv(s, "setup") for s in setup), files=dict(files), config=text("config", ""),
                     tickets=tickets, where=folder)
    try:
        own = tomllib.loads(task.config)
    except tomllib.TOMLDecodeError as exc:
        raise LanesError(f"{where}: `config` is not valid TOML: {exc}", "it is .lanes/config.toml text") from None
    if "lanes" in own:
        raise LanesError(f"{where}: `config` sets [lanes]", "the scorecard writes [lanes] itself (worktree_root)")
    if task.task_type not in TASK_TYPES:
        raise LanesError(f"{where}: task_type {task.task_type!r} is unknown", f"one of {', '.join(TASK_TYPES)}")
    if bool(task.prompt.strip()) == task.is_plan:
        raise LanesError(f"{where}: give either `prompt` (one lane) or `[[tickets]]` (a plan), not "
                         + ("both" if task.is_plan else "neither"), fix)
    if bool(task.source) == bool(task.files):
        raise LanesError(f"{where}: give either `source` (a git repository) or `[files]`, not "
                         + ("both" if task.source else "neither"), fix)
    if task.source and not task.commit:
        raise LanesError(f"{where}: `source` needs `commit`: a scorecard task runs at a known commit",
                         'e.g. commit = "3f2a9c1…" (git rev-parse HEAD in the source)')
    for name in task.files:
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise LanesError(f"{where}: file {name!r} leaves the task's repository", "use a relative path")
    return task


def _tickets(value: Any, where: str) -> tuple[dict[str, Any], ...]:
    """The `[[tickets]]` of a plan task: tables of strings, numbers and lists of strings (TOML we can write)."""
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise LanesError(f"{where}: `tickets` must be [[tickets]] tables", "see docs/plans.md, The plan file")
    for index, ticket in enumerate(value, 1):
        for key, item in ticket.items():
            if key in _TICKET_REFUSED:
                raise LanesError(f"{where}: ticket #{index} sets `{key}`", _TICKET_REFUSED[key])
            plain = isinstance(item, str | int) or (isinstance(item, list) and all(isinstance(i, str) for i in item))
            if not plain or isinstance(item, bool):
                raise LanesError(f"{where}: ticket #{index} `{key}` must be a string, a number or a list of strings",
                                 "see docs/plans.md, The plan file")
    return tuple(dict(t) for t in value)


def plan_text(task: ScoreTask, name: str, target: str = "main") -> str:
    """The plan file of a plan task, named after its run (json.dumps of a str, int or list is valid TOML)."""
    parts = [f"[plan]\nname = {json.dumps(name)}\ntarget = {json.dumps(target)}\n"]
    for ticket in task.tickets:
        parts.append("[[tickets]]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in ticket.items()))
    return "\n".join(parts)


def filled(args: tuple[str, ...] | list[str]) -> list[str]:
    """An argv with `{python}` replaced by lanes-tui's own Python."""
    return [a.replace("{python}", sys.executable) for a in args]


def run_step(argv: list[str], cwd: Path, what: str, env: dict[str, str] | None = None) -> str:
    """Run one command; any failure is one `LanesError` naming it (never a traceback)."""
    try:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S,
                              env={**os.environ, **(env or {})}, check=False)
    except subprocess.TimeoutExpired:
        raise LanesError(f"{what} did not finish within {TIMEOUT_S} s", "fix the task file or its source") from None
    except OSError as exc:
        raise LanesError(f"{what} could not start: {exc.strerror or exc}", "fix the task file") from None
    if proc.returncode != 0:
        first = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[:1]
        raise LanesError(f"{what} failed (exit {proc.returncode}){': ' + first[0] if first else ''}",
                         "fix the task file or its source, then prepare again")
    return proc.stdout.strip()


def _source(task: ScoreTask) -> str:
    if "://" in task.source or task.source.startswith("git@"):
        return task.source
    path = (task.where / Path(task.source).expanduser()).resolve()
    if not (path / ".git").exists() and not (path / "HEAD").is_file():
        raise LanesError(f"task {task.name}: source {path} is not a git repository",
                         "give the path of a repository (relative to the task file) in `source`")
    return str(path)


def _build_repo(task: ScoreTask, dest: Path) -> str:
    """The task's repository at its commit, in `dest`; returns the commit checked out."""
    if task.source:
        source = _source(task)
        run_step(["git", "clone", "-q", "--no-local", source, str(dest)], dest.parent, f"cloning {source}")
        try:
            found = run_step(["git", "rev-parse", "--verify", "--quiet", f"{task.commit}^{{commit}}"], dest,
                             "git rev-parse")
        except LanesError:
            raise LanesError(f"task {task.name}: commit {task.commit} is not in {source}",
                             "fix `commit` in the task file (git log in the source shows its commits)") from None
        run_step(["git", "checkout", "-q", "-B", "main", found], dest, f"checking out {task.commit}")
    else:
        dest.mkdir(parents=True)
        run_step(["git", "init", "-q", "-b", "main"], dest, "git init")
        for name, content in task.files.items():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / name).write_text(content, encoding="utf-8")
        run_step(["git", "add", "-A"], dest, "git add")
        run_step(["git", "commit", "-q", "-m", f"scorecard task {task.name}"], dest, "git commit", _GIT_ENV)
    head = run_step(["git", "rev-parse", "HEAD"], dest, "git rev-parse")
    if task.commit and not head.startswith(task.commit.lower()) and not task.source:
        raise LanesError(f"task {task.name} built commit {head[:12]}, not {task.commit}",
                         "the task's files changed: update its `commit`")
    return head


def _setup(task: ScoreTask, dest: Path) -> str:
    """Run the setup steps; what they change is committed (fixed author and date), so the lane's
    worktree, cut from the commit, starts from it. Returns the commit lanes start from."""
    for step in task.setup:
        run_step(filled(step), dest, f"setup step {' '.join(step)!r}")
    if run_step(["git", "status", "--porcelain"], dest, "git status"):
        run_step(["git", "add", "-A"], dest, "git add")
        run_step(["git", "commit", "-q", "-m", f"scorecard setup of {task.name}"], dest, "git commit", _GIT_ENV)
    return run_step(["git", "rev-parse", "HEAD"], dest, "git rev-parse")


def _config_text(task: ScoreTask, worktrees: Path) -> str:
    """The task repository's config: its own worktree root, no protected branch (a plan's accepts
    merge into the throwaway `main`), the sim for every task type and no gates, unless the task's
    `config` gives its own `[chains]`, `[providers.sim]` or `[gates]`."""
    own = tomllib.loads(task.config)
    parts = [f'[lanes]\nworktree_root = {json.dumps(str(worktrees))}\nprotected_branches = []\n']
    if "chains" not in own:
        parts.append("[chains]\n" + "".join(f'{t} = ["sim"]\n' for t in TASK_TYPES))
    if not isinstance(own.get("providers"), dict) or "sim" not in own["providers"]:
        parts.append("[providers.sim]\nmax = 20\n")
    if "gates" not in own:
        parts.append("[gates]\ncommands = []\n")
    return "\n".join([*parts, task.config]) + "\n"


@dataclass(frozen=True)
class Prepared:
    """One run `prepare` started: `ident` is what `record` takes (the lane's id, or the plan's name)."""

    task: str
    run: str
    repo: Path
    commit: str
    lane: str | None = None
    plan: str | None = None
    lanes: tuple[str, ...] = ()

    @property
    def ident(self) -> str:
        return self.lane or self.plan or self.run


def scorecard_dir(home: Path) -> Path:
    """The scorecard's own folder in the lead's state folder (made on first use)."""
    folder = StatePaths(home).state / "scorecard"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def prepared_runs(home: Path) -> list[dict[str, Any]]:
    """Every run `prepare` started from this state folder, oldest first."""
    path = scorecard_dir(home) / "prepared.jsonl"
    return [row for row in read_jsonl(path) if isinstance(row, dict)] if path.is_file() else []


@contextmanager
def _prepare_lock(home: Path) -> Iterator[None]:
    """One `prepare` at a time per state folder: two at once would pick the same run number."""
    with open(scorecard_dir(home) / "prepare.lock", "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _next_run(name: str, work: Path, rows: list[dict[str, Any]]) -> str:
    """`NAME-rN`, N the first number no earlier run (recorded, or a folder in the work dir) used."""
    used = {str(row.get(key)) for row in rows for key in ("run", "lane", "plan")}
    n = 1
    while True:
        run = f"{name}-r{n}"
        if not ({run, f"{run}-a1"} & used) and not (work / run).exists() and not (work / f"{run}-worktrees").exists():
            return run
        n += 1


def prepare(home: Path, spec: str, work_dir: Path | None = None, prompt: str | None = None) -> Prepared:
    """Build a fresh repository for the task in the work folder and start its lane (or launch its plan)."""
    task = load_task(spec)
    if prompt is not None and task.is_plan:
        raise LanesError(f"task {task.name} is a plan: --prompt replaces a one-lane task's prompt",
                         "write another task file with the tickets you want")
    StatePaths(home).ensure()
    work = (work_dir or StatePaths(home).state / "scorecard" / "work").expanduser().resolve()
    work.mkdir(parents=True, exist_ok=True)
    with _prepare_lock(home):
        run = _next_run(task.name, work, prepared_runs(home))
        dest, worktrees = work / run, work / f"{run}-worktrees"
        try:
            commit = _build_repo(task, dest)
            head = _setup(task, dest)
            config_path = dest / ".lanes" / "config.toml"
            config_path.parent.mkdir(parents=True, exist_ok=True)
            config_path.write_text(_config_text(task, worktrees), encoding="utf-8")
            done = _start(task, run, dest, commit, prompt)
        except BaseException:
            shutil.rmtree(dest, ignore_errors=True)  # nothing half-done: no lane started on it
            shutil.rmtree(worktrees, ignore_errors=True)
            raise
        append_jsonl(scorecard_dir(home) / "prepared.jsonl",
                     {"t": time.time(), "task": task.name, "spec": spec, "run": run, "repo": str(dest),
                      "kind": "plan" if task.is_plan else "lane", "lane": done.lane, "plan": done.plan,
                      "lanes": list(done.lanes), "commit": commit, "head": head, "check": list(task.check)})
    return done


def _start(task: ScoreTask, run: str, dest: Path, commit: str, prompt: str | None) -> Prepared:
    config = load_config(dest)
    if not task.is_plan:
        record = launch_lane(dest, config, LaunchRequest(prompt=task.prompt if prompt is None else prompt,
                                                         task_type=task.task_type,
                                                         slug=run))
        return Prepared(task.name, run, dest, commit, lane=record.id, lanes=(record.id,))
    from lanes_tui.engine.plans.commands import launch_plan
    from lanes_tui.engine.plans.validate import load_plan

    plan_file = dest / ".lanes" / "plans" / f"{run}.toml"
    plan_file.parent.mkdir(parents=True, exist_ok=True)
    plan_file.write_text(plan_text(task, run), encoding="utf-8")
    plan = load_plan(plan_file, dest, config)
    launched = asyncio.run(launch_plan(dest, config, plan, source=str(plan_file)))
    lanes = tuple(s.lane for s in launched.decision.statuses if s.lane)
    return Prepared(task.name, run, dest, commit, plan=run, lanes=lanes)
