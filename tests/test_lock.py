"""`lanes-tui lock -- CMD…` (issue 10, item 5): agents' heavy runs in the gates' heavy slots.

Every test runs the real command line as a process, with the slots under `tmp_path` (through
`XDG_RUNTIME_DIR`) and the load wait off (`LANES_HEAVY_LOAD=0`: the machine's load is not the
test's to control). Order is proved by what the commands write themselves, never by sleeping.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lanes_tui.engine.core import slots
from lanes_tui.engine.state.paths import heavy_slot_dir
from tests.helpers import wait_for, write_config

#: A command that prints what it was given: its slot marker, TMPDIR and what TMPDIR holds.
SHOW = ("import json, os; t = os.environ.get('TMPDIR', ''); print(json.dumps({'slot': os.environ.get("
        "'LANES_HEAVY_SLOT'), 'tmp': t, 'files': sorted(os.listdir(t)) if os.path.isdir(t) else None}))")


@pytest.fixture()
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Slots under tmp_path, and none of the caller's lock settings (the suite may run in a lock)."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("LANES_HEAVY_LOAD", "0")
    for name in ("LANES_HEAVY_SLOT", "LANES_HEAVY_SLOTS", "LANES_LANE", "LANES_HOME"):
        monkeypatch.delenv(name, raising=False)
    return heavy_slot_dir()


@pytest.fixture()
def other_holds_slot_0(run_dir: Path) -> Iterator[slots.Slot]:
    """Slot 0 held by this test process, as another lane's run would hold it."""
    slot = slots.try_acquire(run_dir, 1, {"lane": "other", "kind": "lock", "command": "make test"})
    assert slot is not None and slot.index == 0
    with slot:
        yield slot


def lock(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lanes_tui.app", "lock", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=60, env={**os.environ, **env}, check=False)


def shown(proc: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_the_exit_code_passes_through(run_dir: Path) -> None:
    proc = lock("--", sys.executable, "-c", "import sys; sys.exit(7)")
    assert proc.returncode == 7
    assert proc.stderr == ""


def test_a_command_that_cannot_start_is_127_and_one_line(run_dir: Path, tmp_path: Path) -> None:
    proc = lock("--", str(tmp_path / "no-such-tool"), "--flag")
    assert proc.returncode == 127
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "cannot start" in proc.stderr and "no-such-tool" in proc.stderr


@pytest.mark.parametrize(("args", "env", "words"), [
    ((), {}, "needs a command"),
    (("--",), {}, "needs a command"),
    (("--", "true"), {"LANES_HEAVY_SLOTS": "two"}, "LANES_HEAVY_SLOTS"),
    (("--", "true"), {"LANES_HEAVY_LOAD": "high"}, "LANES_HEAVY_LOAD"),
    (("--wait", "soon", "--", "true"), {}, "--wait"),
])
def test_bad_input_is_one_line(run_dir: Path, args: tuple[str, ...], env: dict[str, str], words: str) -> None:
    proc = lock(*args, **env)
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert words in proc.stderr


def test_tmpdir_is_per_slot_and_emptied(run_dir: Path) -> None:
    first = shown(lock("--", sys.executable, "-c",
                       "import os; open(os.path.join(os.environ['TMPDIR'], 'left-over'), 'w').close(); " + SHOW))
    assert first == {"slot": "0", "tmp": str(run_dir / "tmp-0"), "files": ["left-over"]}
    (run_dir / "tmp-0" / "stale").mkdir()  # as if a run had been killed before it could clean up
    (run_dir / "tmp-0" / "stale" / "file").write_text("x")
    second = shown(lock("--", sys.executable, "-c", SHOW))
    assert second == {"slot": "0", "tmp": str(run_dir / "tmp-0"), "files": []}


def test_the_slot_count_comes_from_the_environment(run_dir: Path, other_holds_slot_0: slots.Slot) -> None:
    two = shown(lock("--wait", "0", "--", sys.executable, "-c", SHOW, LANES_HEAVY_SLOTS="2"))
    assert two == {"slot": "1", "tmp": str(run_dir / "tmp-1"), "files": []}  # its own slot, its own TMPDIR
    one = lock("--wait", "0.3", "--", sys.executable, "-c", SHOW, LANES_HEAVY_SLOTS="1")
    assert one.returncode == 75, one.stderr
    assert one.stdout == ""  # the command never ran
    lines = one.stderr.splitlines()
    assert re.fullmatch(r"lanes-tui lock: waiting for a heavy slot, held by lane other since \d\d:\d\d "
                        r"\(make test\)", lines[0]), lines
    assert "no heavy slot came free within 0.3s" in lines[1]


def test_the_slot_count_comes_from_the_repository_config(repo: Path, run_dir: Path,
                                                         other_holds_slot_0: slots.Slot) -> None:
    write_config(repo, gates="commands = []\nslots = 2")
    home = repo / ".lanes" / "state"
    worktree = repo.parent / "a-worktree"  # an agent runs in its worktree, not in the repository
    worktree.mkdir()
    inside = shown(lock("--wait", "0", "--", sys.executable, "-c", SHOW, cwd=worktree, LANES_HOME=str(home)))
    assert inside["slot"] == "1"
    from_repo = shown(lock("--wait", "0", "--", sys.executable, "-c", SHOW, cwd=repo))  # the lead, in the repo
    assert from_repo["slot"] == "1"


def test_zero_slots_runs_at_once(run_dir: Path, other_holds_slot_0: slots.Slot) -> None:
    result = shown(lock("--wait", "0", "--", sys.executable, "-c", SHOW, LANES_HEAVY_SLOTS="0",
                        TMPDIR=str(run_dir.parent)))
    assert result["slot"] is None and result["tmp"] == str(run_dir.parent)  # no slot, the caller's TMPDIR


def test_a_lock_inside_a_lock_does_not_wait(run_dir: Path) -> None:
    inner = [sys.executable, "-m", "lanes_tui.app", "lock", "--wait", "0", "--", sys.executable, "-c", SHOW]
    outer = f"import subprocess, sys; p = subprocess.run({inner!r}); print(); sys.exit(p.returncode)"
    proc = lock("--", sys.executable, "-c", outer, LANES_HEAVY_SLOTS="1")
    assert proc.returncode == 0, proc.stderr  # with --wait 0 a non-re-entrant lock would exit 75
    assert proc.stderr == ""
    result = json.loads(proc.stdout.strip().splitlines()[0])
    assert result == {"slot": "0", "tmp": str(run_dir / "tmp-0"), "files": []}


#: The first holder: says it started, then holds its slot until the test lets it go.
FIRST = """\
import pathlib, sys, time
d = pathlib.Path(sys.argv[1])
(d / "a-started").touch()
while not (d / "release").exists():
    time.sleep(0.02)
with open(d / "log", "a") as log:
    log.write(f"A end {time.monotonic()}\\n")
"""
SECOND = """\
import pathlib, sys, time
with open(pathlib.Path(sys.argv[1]) / "log", "a") as log:
    log.write(f"B start {time.monotonic()}\\n")
"""


def test_two_holders_queue_on_one_slot(run_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "LANES_HEAVY_SLOTS": "1"}
    base = [sys.executable, "-m", "lanes_tui.app", "lock", "--"]
    first = subprocess.Popen([*base, sys.executable, "-c", FIRST, str(tmp_path)],
                             env={**env, "LANES_LANE": "agent-a"})
    second = None
    try:
        wait_for(lambda: (tmp_path / "a-started").exists())
        held = slots.holders(run_dir)
        assert [(h["lane"], h["kind"], h["pid"]) for h in held] == [("agent-a", "lock", first.pid)]
        assert str(held[0]["command"]).startswith(f"{sys.executable} -c ")  # the command, as `doctor` shows it
        with (tmp_path / "b.err").open("w") as err:
            second = subprocess.Popen([*base, sys.executable, "-c", SECOND, str(tmp_path)],
                                      env={**env, "LANES_LANE": "agent-b"}, stderr=err)
        wait_for(lambda: "waiting for a heavy slot" in (tmp_path / "b.err").read_text())
        assert "held by lane agent-a since " in (tmp_path / "b.err").read_text()
        assert not (tmp_path / "log").exists()  # B is queued, not running
        (tmp_path / "release").touch()
        assert first.wait(timeout=30) == 0
        assert second.wait(timeout=30) == 0
    finally:
        (tmp_path / "release").touch()  # a failed assertion must not leave the first command waiting
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    events = [line.split() for line in (tmp_path / "log").read_text().splitlines()]
    assert [e[:2] for e in events] == [["A", "end"], ["B", "start"]]
    assert float(events[0][2]) <= float(events[1][2])
    assert len((tmp_path / "b.err").read_text().splitlines()) == 1  # the wait is said once


TRAP = """\
import pathlib, signal, sys, time
out = pathlib.Path(sys.argv[1])
signal.signal(signal.SIGTERM, lambda n, f: (out.write_text(f"got {n}"), sys.exit(5)))
out.with_name("ready").touch()
time.sleep(60)
"""


def test_a_stop_signal_sent_to_lock_reaches_the_command(run_dir: Path, tmp_path: Path) -> None:
    got = tmp_path / "got"
    proc = subprocess.Popen([sys.executable, "-m", "lanes_tui.app", "lock", "--", sys.executable, "-c", TRAP,
                             str(got)])
    try:
        wait_for(lambda: (tmp_path / "ready").exists())
        os.kill(proc.pid, signal.SIGTERM)  # to lock alone, not to its process group
        assert proc.wait(timeout=30) == 5  # it waited for the command and kept its exit code
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert got.read_text() == f"got {int(signal.SIGTERM)}"
