"""Each process loads only what it runs.

- engine/ never imports textual or rich: every module is imported in a fresh interpreter.
- A real supervisor (started by `lanes-tui run`, running a sim lane through its gates) never loads
  tomlkit, GitPython, textual, rich, or a channel its provider does not use.
- Only engine/git/views.py imports GitPython (the dashboard's read-only views), and only when a view
  runs; the write path stays on the git command line.
- `lanes-tui ask`, `answer` and `inbox` load the inbox code and the state paths, nothing else of
  the engine, and no third-party package at all.

The processes report their `sys.modules` at exit through the `LANESTUI_DEBUG_MODULES` hook
(`engine/core/debug.py`).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import run_lane, wait_for, wait_state, write_config

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "engine"
MODULES = sorted(
    ".".join(p.relative_to(ENGINE).with_suffix("").parts).removesuffix(".__init__").removesuffix("__init__")
    for p in ENGINE.rglob("*.py") if p.name != "__main__.py"
)
UI = ("textual", "rich")


def _loaded(code: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
                          capture_output=True, text=True, check=True)
    return set(proc.stdout.split())


def _top(modules: set[str], *names: str) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in names)


@pytest.mark.parametrize("module", MODULES)
def test_engine_module_imports_no_ui(module: str) -> None:
    name = "lanes_tui.engine" + (f".{module}" if module else "")
    assert _top(_loaded(f"import {name}"), *UI) == [], f"{name} pulled in the UI"


def test_engine_modules_are_all_found() -> None:
    """Guards the parametrisation above against silently testing nothing."""
    assert {"supervisor.main", "live.engine", "config.settings", "lanes.watchdog", "lanes.launcher",
            "inbox.store", ""} <= set(MODULES)


def test_the_door_costs_nothing_until_used() -> None:
    """Importing `lanes_tui.engine` loads no subpackage: the names come on first use."""
    loaded = _loaded("import lanes_tui.engine")
    assert sorted(m for m in loaded if m.startswith("lanes_tui.engine.")) == []


def _imports_gitpython(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
        if any(n == "git" or n.startswith("git.") for n in names):
            return True
    return False


def test_only_the_read_only_views_import_gitpython() -> None:
    """Worktree add/remove, commit, rebase and merge stay on the git command line (timeouts, process
    control); GitPython serves the dashboard's read-only views, from one module."""
    importers = sorted(p.relative_to(ROOT).as_posix() for p in ENGINE.rglob("*.py") if _imports_gitpython(p))
    assert importers == ["engine/git/views.py"]


def test_the_views_load_gitpython_only_when_used() -> None:
    """The live engine imports the views at start-up; GitPython comes with the first view asked for."""
    assert _top(_loaded("import lanes_tui.engine.git.views"), "git") == []
    assert _top(_loaded("import lanes_tui.engine.live.engine"), "git") == []


def test_headless_cli_imports_no_ui() -> None:
    """`lanes-tui ask` runs inside agents' shells: it must not pay for Textual."""
    assert _top(_loaded("import lanes_tui.app.cli.main"), *UI) == []


def _reports(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _engine_parts(modules: list[str]) -> set[str]:
    return {".".join(m.split(".")[:3]) for m in modules if m.startswith("lanes_tui.engine.")}


@pytest.mark.slow
def test_supervisor_loads_no_writer_no_gitpython_no_ui(repo: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    report = tmp_path / "modules.jsonl"
    monkeypatch.setenv("LANESTUI_DEBUG_MODULES", str(report))
    write_config(repo, gates='commands = ["{python} -c pass"]')
    lane = run_lane(repo, "print 3\nwrite note.txt hello", lane_id="lean")
    assert wait_state(repo, lane, "ready").startswith(f"{lane} ready")
    # The report is written when the supervisor exits, just after the lane turned ready.
    supervisors = wait_for(lambda: [r for r in _reports(report) if r["program"] == "supervisor"])
    assert len(supervisors) == 1, _reports(report)
    modules = supervisors[0]["modules"]
    assert isinstance(modules, list)
    assert _top(set(modules), "tomlkit", "git", "textual", "rich", "pyte") == []
    # The lean supervisor (issue 15): samples read /proc, not psutil; asyncio runs without ssl.
    assert _top(set(modules), "psutil", "ssl", "_ssl") == []
    assert "lanes_tui.engine.config.write" not in modules
    assert "lanes_tui.engine.git.views" not in modules
    # A plain lane loads the plain channel only.
    channels = sorted(m for m in modules if m.startswith("lanes_tui.engine.channels."))
    assert channels == ["lanes_tui.engine.channels.base", "lanes_tui.engine.channels.plain"]
    assert not _engine_parts(modules) & {"lanes_tui.engine.live", "lanes_tui.engine.sim"}


def _inbox_only(modules: list[str]) -> None:
    parts = _engine_parts(modules)
    assert parts <= {"lanes_tui.engine.core", "lanes_tui.engine.inbox", "lanes_tui.engine.state"}, parts
    state = sorted(m for m in modules if m.startswith("lanes_tui.engine.state."))
    assert state == ["lanes_tui.engine.state.paths"], state
    app = sorted(m for m in modules if m.startswith("lanes_tui.app."))
    # the package (a docstring only), the parser, its shared argument types and global options (`options`),
    # how much to say (`voice`, -q / -v) and the one command module
    assert app == ["lanes_tui.app.cli", "lanes_tui.app.cli.args", "lanes_tui.app.cli.inbox",
                   "lanes_tui.app.cli.main", "lanes_tui.app.cli.options", "lanes_tui.app.cli.voice"], app
    third_party = _top(set(modules), "tomlkit", "git", "textual", "rich", "psutil", "pyte")
    assert third_party == [], third_party


def test_ask_answer_inbox_load_only_the_inbox(repo: Path, tmp_path: Path) -> None:
    report = tmp_path / "modules.jsonl"
    home = repo / ".lanes" / "state"
    home.mkdir(parents=True)
    env = {**os.environ, "LANESTUI_DEBUG_MODULES": str(report), "LANES_HOME": str(home),
           "LANES_LANE": "probe-a1"}

    def run(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "lanes_tui.app", *args], cwd=repo, capture_output=True,
                              text=True, env={**env, **extra}, timeout=60, check=False)

    assert run("ask", "--help").returncode == 0
    asked = run("ask", "Deploy?", "--yes-no", "--timeout", "0", "--default", "no")
    assert asked.returncode == 1, asked.stderr  # the default (no) applied at once
    qid = json.loads(run("inbox", "--json").stdout)[0]["id"]
    run("ask", "Again?", "--yes-no", "--timeout", "0")
    open_qid = next(q["id"] for q in json.loads(run("inbox", "--json").stdout) if q["state"] == "open")
    answered = run("answer", open_qid, "yes", LANES_LANE="")  # the lead's shell: no lane of its own
    assert answered.returncode == 0, answered.stderr
    assert qid != open_qid
    reports = _reports(report)
    commands = [r for r in reports if r["program"] == "lanes-tui"]
    assert len(commands) == 6, reports
    for entry in commands:
        modules = entry["modules"]
        assert isinstance(modules, list)
        _inbox_only(modules)
        argv = entry["argv"]
        assert isinstance(argv, list)
        # Only an `ask` that waits starts an event loop; listing and answering never load asyncio.
        assert ("asyncio" in modules) == (argv[0] == "ask" and "--help" not in argv), argv


def test_lock_stays_as_lean_as_ask(repo: Path, tmp_path: Path) -> None:
    """`lanes-tui lock -- CMD` wraps every heavy command an agent runs: no third-party package."""
    report = tmp_path / "modules.jsonl"
    home = repo / ".lanes" / "state"
    home.mkdir(parents=True)
    env = {**os.environ, "LANESTUI_DEBUG_MODULES": str(report), "LANES_HOME": str(home),
           "LANES_LANE": "probe-a1", "LANES_HEAVY_LOAD": "0"}
    proc = subprocess.run([sys.executable, "-m", "lanes_tui.app", "lock", "--", sys.executable, "-c", "pass"],
                          cwd=repo, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    commands = [r for r in _reports(report) if r["program"] == "lanes-tui"]
    assert len(commands) == 1, commands
    modules = commands[0]["modules"]
    assert isinstance(modules, list)
    assert _top(set(modules), "tomlkit", "git", "textual", "rich", "psutil", "pyte") == []
    app = sorted(m for m in modules if m.startswith("lanes_tui.app."))
    # the package (a docstring only), the parser, its shared argument types, global options and voice, the command
    assert app == ["lanes_tui.app.cli", "lanes_tui.app.cli.args", "lanes_tui.app.cli.lock",
                   "lanes_tui.app.cli.main", "lanes_tui.app.cli.options", "lanes_tui.app.cli.voice"], app
    parts = _engine_parts(modules)
    assert parts <= {"lanes_tui.engine.core", "lanes_tui.engine.state", "lanes_tui.engine.config",
                     "lanes_tui.engine.lanes"}, parts
    assert sorted(m for m in modules if m.startswith("lanes_tui.engine.lanes.")) == ["lanes_tui.engine.lanes.heavy"]


def test_the_default_runner_never_imports_ray(repo: Path) -> None:
    """Without `[runner] kind = "ray"`, nothing loads Ray (seconds and hundreds of MB, an optional extra):
    not the app, not the engine's door, not `lanes-tui status`, not an Engine started and closed — and
    not the Ray runner's own module either (`decisions.runners.make_runner` is its only importer)."""
    write_config(repo)
    program = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "import lanes_tui.app, lanes_tui.engine, lanes_tui.app.dashboard.app\n"
        "from lanes_tui.app.cli.main import main\n"
        "assert main(['status']) == 0\n"
        "from lanes_tui.engine import Engine\n"
        "async def engine_round() -> None:\n"
        "    engine = Engine(Path.cwd(), poll_s=0.01)\n"
        "    await engine.start()\n"
        "    await asyncio.sleep(0.1)\n"
        "    await engine.aclose()\n"
        "asyncio.run(engine_round())\n"
        "print('LOADED', ' '.join(sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", program], cwd=repo, capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    loaded = set(proc.stdout.split("LOADED", 1)[1].split())
    assert "lanes_tui.engine.live.engine" in loaded  # the engine did run in that process
    assert sorted(m for m in loaded if m == "ray" or m.startswith("ray.")) == []
    assert "lanes_tui.engine.remote.ray_runner" not in loaded


def test_the_supervisor_entry_loads_only_what_a_plain_lane_uses() -> None:
    """What a lane's supervisor imports to run an agent (B3's memory, issue 15): names are hashed with
    CPython's own sha256 (`core.digest`), temp files made by `core.atomic.temp_beside`, and a named
    time zone loaded only for a parking window that names one. Files are hashed (gates) with OpenSSL."""
    modules = _loaded("import sys\nsys.modules.setdefault('ssl', None)\nimport lanes_tui.engine.supervisor.entry")
    assert "lanes_tui.engine.supervisor.main" in modules
    assert _top(modules, "hashlib", "_hashlib", "tempfile", "zoneinfo", "secrets", "hmac", "_ssl") == []
    # Nor what only a rare path needs: removing a folder (shutil, with bz2 and lzma) or a did-you-mean
    # (difflib); its three arguments are parsed by hand (argparse and gettext).
    assert _top(modules, "shutil", "bz2", "lzma", "difflib", "argparse", "gettext") == []
