"""Robust state (issue 9, item 7): each fault the hostile pass found, reproduced with real processes.

Lane locks that leaked for lanes that never existed, one bad record that broke `status` for every
lane or vanished from it, an interrupted `check` that left its gate running, ids starting with `-`,
unbounded or binary prompts, an unwritable or full state folder, and the process-tree read at stop.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from lanes_tui.engine import Engine, LanesError, LaneStatus, validate_lane_id
from lanes_tui.engine.core.ids import validate_slug
from lanes_tui.engine.procs import process, tree
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.widgets import LanesTable
from tests.conftest import git
from tests.helpers import as_user, cli, run_lane, status, wait_for, wait_state, write_config
from tests.snapshot_apps.widget_apps import NOW, WidgetHost
from tests.test_bad_input import _nothing_created, _one_line_error

SLOW_GATE = "commands = ['{python} -c \"import time; time.sleep(60)\"']"


def lane_dir(repo: Path, lane: str) -> Path:
    return repo / ".lanes" / "state" / "lanes" / lane


def edit_record(repo: Path, lane: str, **changes: object) -> None:
    path = lane_dir(repo, lane) / "lane.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


# --- a. lane locks only for lanes that exist --------------------------------------------------------


def test_abandon_of_a_missing_lane_leaves_no_lock_and_the_id_stays_usable(repo: Path) -> None:
    write_config(repo)
    _one_line_error(cli(repo, "abandon", "ghost-a1", "--force"), "no lane 'ghost-a1'")
    _one_line_error(cli(repo, "recover", "ghost-a1"), "no lane 'ghost-a1'")
    _one_line_error(cli(repo, "check", "ghost-a1"), "no lane 'ghost-a1'")
    assert not lane_dir(repo, "ghost-a1").exists()
    assert run_lane(repo, "say hi", lane_id="ghost") == "ghost-a1"
    # A folder an older lanes-tui left with only an unheld lock in it does not block the id either…
    (lane_dir(repo, "old-a1") / "busy").mkdir(parents=True)
    (lane_dir(repo, "old-a1") / "busy" / "slot-0.lock").write_text("{}")
    assert run_lane(repo, "say hi", lane_id="old") == "old-a1"
    # …but a folder with anything of a lane in it does.
    lane_dir(repo, "kept-a1").mkdir()
    (lane_dir(repo, "kept-a1") / "output.log").write_text("what an agent printed")
    _one_line_error(cli(repo, "run", "--prompt", "say hi", "--id", "kept"), "lane kept-a1 already exists")
    wait_state(repo, "ghost-a1")
    wait_state(repo, "old-a1")
    assert cli(repo, "check", "ghost-a1").returncode == 0
    assert not (lane_dir(repo, "ghost-a1") / "busy").exists()  # released and removed on the way out


# --- b. one bad record is a row of its own --------------------------------------------------------


BASE = dict(id="x-a1", slug="x", attempt=1, task_type="backend", prompt="p", chain=["sim"], repo="/r",
            worktree="/w", branch="lane/x-a1", base_sha="a", target_branch="main")


@pytest.mark.parametrize(("change", "field"), [
    ({"state": [1, 2]}, "'state' must be a string"), ({"state": "bogus"}, "'state' is 'bogus'"),
    ({"attempt": "1"}, "'attempt' must be a whole number"), ({"attempt": True}, "'attempt' must be"),
    ({"created": float("nan")}, "'created' must be a finite number"),
    ({"updated": float("inf")}, "'updated' must be a finite number"),
    ({"chain": "sim"}, "'chain' must be a list of strings"), ({"chain": [1]}, "'chain' must be a list"),
    ({"stall": [1]}, "'stall' must be an object or null"), ({"result": "WIN"}, "'result' is 'WIN'"),
    ({"providers_tried": [{"provider": 7}]}, "'providers_tried[0].provider' must be a string"),
    ({"providers_tried": [[]]}, "'providers_tried[0]' must be an object"),
    ({"slug": None}, "'slug' must be a string"),
])
def test_record_fields_are_checked_by_type(change: dict[str, object], field: str) -> None:
    with pytest.raises(LanesError, match=None) as caught:
        LaneRecord.from_json({**BASE, **change})
    assert field in str(caught.value)
    missing = {k: v for k, v in BASE.items() if k != "worktree"}
    with pytest.raises(LanesError, match="'worktree' is missing"):
        LaneRecord.from_json(missing)
    assert LaneRecord.from_json({**BASE, "future_field": {"x": 1}}).id == "x-a1"  # unknown keys pass


async def test_corrupt_records_are_rows_with_their_fix_and_never_break_the_others(repo: Path) -> None:
    write_config(repo)
    lanes = [run_lane(repo, "say hi", lane_id=name) for name in ("typed", "broken", "impostor", "victim")]
    for lane in lanes:
        wait_state(repo, lane)
    edit_record(repo, "typed-a1", state=[1, 2])
    (lane_dir(repo, "broken-a1") / "lane.json").write_text('{"id": "broken-a1", ')
    edit_record(repo, "impostor-a1", id="victim-a1", state="running")  # would clobber victim's record
    edit_record(repo, "victim-a1", state="running")  # its supervisor is gone: reconcile must still settle it
    victim = lane_dir(repo, "victim-a1") / "lane.json"

    proc = cli(repo, "status")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr and proc.stderr == "", proc.stderr
    assert sorted(line.split()[0] for line in proc.stdout.splitlines() if line.split()[1:2] == ["corrupt"]) == \
        ["broken-a1", "impostor-a1", "typed-a1"]
    assert "lane broken-a1: lane.json is not valid JSON" in proc.stdout
    assert "restore .lanes/state/lanes/broken-a1/lane.json from a backup" in proc.stdout
    rows = {row["id"]: row for row in status(repo)}
    assert set(rows) == set(lanes)
    assert rows["victim-a1"]["state"] == "exited" and rows["victim-a1"]["problem"] is None
    assert "reconciled from the receipt" in rows["victim-a1"]["state_reason"]
    assert "field 'state' must be a string, not a list" in rows["typed-a1"]["problem"]
    assert "names lane 'victim-a1', not its own folder's name" in rows["impostor-a1"]["problem"]
    assert rows["typed-a1"]["state"] == "lost"  # the JSON keeps to the contract's states
    assert json.loads(victim.read_text())["id"] == "victim-a1"
    one = status(repo, "broken-a1")
    assert one["id"] == "broken-a1" and "not valid JSON" in one["problem"]
    _one_line_error(cli(repo, "accept", "impostor-a1"), "impostor-a1", "not its own folder's name")
    assert "PROBLEM: lane typed-a1: lane.json is corrupt" in cli(repo, "doctor").stdout

    async with Engine(repo) as engine:  # the dashboard's engine shows the same rows
        seen = {s.id: s for s in engine.lanes()}
    assert set(seen) == set(lanes)
    assert seen["broken-a1"].problem and "not valid JSON" in seen["broken-a1"].problem
    assert seen["victim-a1"].problem is None


async def test_the_lanes_pane_shows_a_corrupt_lane_and_its_fix() -> None:
    table = LanesTable()
    bad = LaneStatus.corrupt("bad-a1", "lane bad-a1: lane.json is not valid JSON — restore it", NOW - 60)
    app = WidgetHost(table, lambda t: t.sync([bad], NOW))
    async with app.run_test(size=(160, 20)) as pilot:
        await pilot.pause()
        assert str(table.get_cell("bad-a1", "state")) == "corrupt"
        assert str(table.get_cell("bad-a1", "why")).startswith("lane bad-a1: lane.json is not valid")


# --- c. an interrupted check is found and recovered -----------------------------------------------


def gone(pid: int) -> bool:
    """Dead, or a zombie its new parent has not reaped yet (that is not ours to do)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.fixture()
def gate_pids() -> Iterator[list[int]]:
    """Gate processes a test saw; killed afterwards whatever happened (gates get their own env)."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_check_is_recovered_and_its_gate_stopped(repo: Path, gate_pids: list[int],
                                                               sig: signal.Signals) -> None:
    write_config(repo)
    lane = run_lane(repo, "write hi.txt hi", lane_id="checked")
    assert wait_state(repo, lane) == f"{lane} ready OK"
    write_config(repo, gates=SLOW_GATE)
    check = subprocess.Popen([sys.executable, "-m", "lanes_tui.app", "check", lane], cwd=repo,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    running = lane_dir(repo, lane) / "gates-running.json"
    try:
        gate = wait_for(lambda: running.exists() and json.loads(running.read_text()).get("pid"))
        gate_pids.append(gate)
        _one_line_error(cli(repo, "abandon", lane), f"lane {lane} is busy: check")
        check.send_signal(sig)
        check.communicate(timeout=30)
    finally:
        if check.poll() is None:
            check.kill()
            check.communicate()
    # Straight to recover, no `status` first: it used to skip the lane it held and say "nothing to recover".
    recovered = cli(repo, "recover", lane)
    assert recovered.returncode == 0, recovered.stderr
    assert f"{lane}: exited (its check was interrupted" in recovered.stdout
    assert gone(gate)
    row = status(repo, lane)
    assert row["state"] == "exited" and "lanes-tui check" in row["state_reason"]
    packet = json.loads((lane_dir(repo, lane) / "packet.json").read_text())
    assert packet["gates_status"] == "not-run" and [g["status"] for g in packet["gates"]] == ["not-run"]
    assert not running.exists() and not (lane_dir(repo, lane) / "busy").exists()
    write_config(repo)
    assert cli(repo, "check", lane).returncode == 0 and status(repo, lane)["state"] == "ready"


def test_status_alone_stops_the_gates_of_a_killed_check(repo: Path, gate_pids: list[int]) -> None:
    write_config(repo)
    lane = run_lane(repo, "say hi", lane_id="killed")
    wait_state(repo, lane)
    write_config(repo, gates=SLOW_GATE)
    check = subprocess.Popen([sys.executable, "-m", "lanes_tui.app", "check", lane], cwd=repo,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    running = lane_dir(repo, lane) / "gates-running.json"
    gate_pids.append(wait_for(lambda: running.exists() and json.loads(running.read_text()).get("pid")))
    check.kill()
    check.wait()
    row = status(repo, lane)
    assert row["state"] == "exited" and f"stopped its gate process(es) {gate_pids[0]}" in row["state_reason"]
    assert gone(gate_pids[0])


# --- d. ids --------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["-x-a1", "--help", "-"])
def test_ids_may_not_start_with_a_dash(repo: Path, bad: str) -> None:
    with pytest.raises(LanesError, match="not starting with '-'"):
        validate_lane_id(bad)
    with pytest.raises(LanesError, match="not starting with '-'"):
        validate_slug(bad)
    write_config(repo)
    _one_line_error(cli(repo, "run", "--prompt", "say hi", f"--id={bad}"), "invalid task id", "not starting with '-'")
    _nothing_created(repo)
    assert validate_lane_id("_x-a1") == "_x-a1" and validate_lane_id("x--y-a1") == "x--y-a1"


# --- e. size limits ------------------------------------------------------------------------------


def test_prompts_are_bounded_and_text(repo: Path, tmp_path: Path) -> None:
    write_config(repo)
    inputs = repo / "inputs"  # a prompt file must be inside the repository (docs/reliability.md)
    inputs.mkdir()
    huge = inputs / "huge.txt"
    with open(huge, "wb") as handle:
        handle.truncate(50 * 1024 * 1024)  # 50 MB (sparse): refused, never read in full nor stored
    (inputs / "binary.bin").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    (inputs / "nul.txt").write_bytes(b"say hi\x00")
    (tmp_path / "plan.md").write_text("## Phase 1\n" + "say hi\n" * 200_000)
    cases = [
        (["--prompt-file", "/dev/zero"], "--prompt-file /dev/zero is outside the repository"),
        (["--prompt-file", str(huge)], "larger than the limit of 1 MB"),
        (["--prompt-file", str(inputs / "binary.bin")], "is not UTF-8 text"),
        (["--prompt-file", str(inputs / "nul.txt")], "contains NUL bytes"),
        (["--prompt-file", str(inputs / "missing.txt")], "cannot read --prompt-file"),
        (["--plan", "/dev/zero", "--phase", "1"], "is not a regular file"),
        (["--plan", str(tmp_path / "plan.md"), "--phase", "1"], "1,400,011 bytes, more than the limit of 1 MB"),
        (["--prompt", "say hi\n" * 18_000], None),  # under the per-argument limit of the OS: accepted
    ]
    for args, needle in cases:
        if needle is None:
            continue
        _one_line_error(cli(repo, "run", *args), needle)
        _nothing_created(repo)


def test_config_and_question_limits(repo: Path) -> None:
    config = write_config(repo)
    config.write_text(config.read_text() + "# " + "x" * 1_000_001 + "\n")
    _one_line_error(cli(repo, "run", "--prompt", "say hi"), "config", "larger than the limit of 1 MB")
    _nothing_created(repo)
    env = {**os.environ, "LANES_LANE": "asker-a1", "LANES_HOME": str(repo / ".lanes" / "state")}
    (repo / ".lanes" / "state").mkdir()
    asked = cli(repo, "ask", "Big?", "--body", "x" * 70_000, "--timeout", "0", env=env)
    _one_line_error(asked, "larger than 64 KiB")


def test_the_engine_refuses_a_prompt_over_the_limit_too(repo: Path) -> None:
    from lanes_tui.engine import LaunchRequest, launch_lane, load_config

    write_config(repo)
    with pytest.raises(LanesError, match="more than the limit of 1 MB"):
        launch_lane(repo, load_config(repo), LaunchRequest(prompt="x" * 1_000_001, slug="big"))
    _nothing_created(repo)


# --- f. unwritable and full state folders ---------------------------------------------------------




def test_an_unwritable_state_folder_is_one_line(repo: Path) -> None:
    write_config(repo)
    state = repo / ".lanes" / "state"
    state.mkdir()
    state.chmod(0o500)
    try:
        _one_line_error(as_user(repo, "run", "--prompt", "say hi"), "the state folder is not writable",
                        "Permission denied", "chmod u+rwx")
        _nothing_created(repo)
        assert as_user(repo, "status").returncode == 0
    finally:
        state.chmod(0o700)
    lane = run_lane(repo, "say hi", lane_id="frozen")
    wait_state(repo, lane)
    edit_record(repo, lane, state="running")  # a lane reconcile must write to settle
    for path in [state, *state.rglob("*")]:
        if path.is_dir():
            path.chmod(0o500)
    try:  # that lane cannot be settled: it is shown with its problem, and status goes on (test_lane_faults.py)
        shown = as_user(repo, "status")
        assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr
        assert f"problem: lane {lane}: its folder {lane_dir(repo, lane)} is not writable" in shown.stdout, shown.stdout
    finally:
        for path in [state, *state.rglob("*")]:
            if path.is_dir():
                path.chmod(0o700)
    assert status(repo, lane)["state"] == "exited"


@pytest.fixture()
def small_state_disk(repo: Path) -> Iterator[Path]:
    """A 512 KB tmpfs mounted where the repository keeps its state (root only)."""
    state = repo / ".lanes" / "state"
    state.mkdir(parents=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k,mode=0700", "tmpfs", str(state)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield state
    finally:
        subprocess.run(["umount", "-l", str(state)], check=False)


def test_a_full_disk_under_the_state_ends_the_lane_failed_resource(repo: Path, small_state_disk: Path) -> None:
    write_config(repo)
    lane = run_lane(repo, "print 200000 --text filling-the-state-disk-with-output\nsay never", lane_id="full")
    assert wait_state(repo, lane) == f"{lane} exited FAILED-RESOURCE"
    row = status(repo, lane)
    assert row["result"] == "FAILED-RESOURCE" and "no space left on the device holding" in row["state_reason"]
    assert str(lane_dir(repo, lane)) in row["state_reason"]  # the file it was writing
    receipt = json.loads((lane_dir(repo, lane) / "receipt.json").read_text())
    assert receipt["result"] == "FAILED-RESOURCE"
    assert not (lane_dir(repo, lane) / "space-reserve").exists()
    assert git(repo, "branch", "--list", f"lane/{lane}") != ""


# --- g. the process tree at stop time -------------------------------------------------------------


def test_the_tree_is_read_until_two_reads_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    reads = iter([[11, 12], [11, 13], [11, 13, 14], [11, 13, 14]])
    calls: list[int] = []

    def flaky(pid: int) -> list[int]:
        calls.append(pid)
        return next(reads) if pid == 1 else []

    monkeypatch.setattr(tree, "child_pids", flaky)
    assert sorted(process.descendant_pids(1)) == [11, 12, 13, 14]  # the union: a child missed once is kept
    assert calls.count(1) == 4
    counter = iter(range(100, 200))
    monkeypatch.setattr(tree, "child_pids", lambda pid: [next(counter)] if pid == 1 else [])
    assert len(process.descendant_pids(1, reads=3)) == 3  # never more reads than allowed


def test_children_are_all_found_while_siblings_churn() -> None:
    churn = ("import os, subprocess, sys\n"
             "kids = [subprocess.Popen(['sleep', '60']) for _ in range(8)]\n"
             "print(' '.join(str(k.pid) for k in kids), flush=True)\n"
             "while True:\n"
             "    pid = os.fork()\n"
             "    if pid == 0:\n"
             "        os._exit(0)\n"
             "    os.waitpid(pid, 0)\n")
    parent = subprocess.Popen([sys.executable, "-c", churn], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    try:
        assert parent.stdout is not None
        kids = {int(pid) for pid in parent.stdout.readline().split()}
        for _ in range(300):
            found = set(process.descendant_pids(parent.pid))
            assert kids <= found, kids - found
    finally:
        os.killpg(parent.pid, signal.SIGKILL)
        parent.wait()


@pytest.mark.parametrize("content", ['{"pid": 1e400, "create_time": 1}', '{"pid": 12, "create_time": 1e400}',
                                     '{"pid": -5, "create_time": 1}', '{"pid": 12, "create_time": NaN}', '[1, 2]'])
def test_an_edited_supervisor_file_is_treated_as_no_supervisor(repo: Path, content: str) -> None:
    """supervisor.json is in an agent's reach: nonsense in it means "no live supervisor", never a crash."""
    from lanes_tui.engine.lanes.launcher import supervisor_alive, supervisor_key

    lane_dir = repo / ".lanes" / "state" / "lanes" / "x-a1"
    lane_dir.mkdir(parents=True)
    (lane_dir / "supervisor.json").write_text(content)
    assert supervisor_key(repo, "x-a1") is None and not supervisor_alive(repo, "x-a1")
