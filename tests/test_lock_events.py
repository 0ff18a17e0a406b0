"""`lanes-tui lock` inside a lane (issue 10, item 5): the wait and the runs in the lane's events.

Every `lock` here is the real command line as a process, in a real repository whose state folder
holds a real lane record, as an agent's shell would run it (`LANES_LANE`, `LANES_HOME`). The lane
status is read back with the engine's own `lane_status`, and the live engine's scan is shown to
turn a lock event into a new lane status although `lane.json` never changes. Order is proved by the
events themselves, never by sleeping.
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
from typing import Any

import pytest

from lanes_tui.engine.core import slots
from lanes_tui.engine.live.engine import Engine
from lanes_tui.engine.state.events import LaneChanged
from lanes_tui.engine.state.lock_events import lane_events_path
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths, heavy_slot_dir
from lanes_tui.engine.state.status import LaneStatus, lane_status
from lanes_tui.engine.state.store import LaneStore
from tests.helpers import wait_for

LANE = "busy-a1"
WAIT_RE = r"waiting for a heavy slot, held by lane other-a1 since \d\d:\d\d \(make test\)"


@pytest.fixture()
def store(repo: Path, monkeypatch: pytest.MonkeyPatch) -> LaneStore:
    """A running lane's record in the repository's state folder; no lock settings of the caller."""
    monkeypatch.setenv("LANES_HEAVY_LOAD", "0")
    for name in ("LANES_HEAVY_SLOT", "LANES_HEAVY_SLOTS", "LANES_LANE", "LANES_HOME"):
        monkeypatch.delenv(name, raising=False)
    paths = StatePaths(repo)
    paths.ensure()
    lane_store = LaneStore(paths)
    lane_store.create(LaneRecord(id=LANE, slug="busy", attempt=1, task_type="backend", prompt="p", chain=["sim"],
                                 repo=str(repo), worktree=str(repo.parent / "wt"), branch=f"lane/{LANE}",
                                 base_sha="0" * 40, target_branch="main", state="running"))
    return lane_store


@pytest.fixture()
def other_holds_the_slot(store: LaneStore) -> Iterator[slots.Slot]:
    """The only heavy slot, held by this test process as another lane's suite would hold it."""
    slot = slots.try_acquire(heavy_slot_dir(), 1, {"lane": "other-a1", "kind": "lock", "command": "make test"})
    assert slot is not None
    with slot:
        yield slot


def lane_env(store: LaneStore, lane_id: str = LANE) -> dict[str, str]:
    """The environment of an agent's shell in lane `lane_id`, with one heavy slot."""
    return {**os.environ, "LANES_LANE": lane_id, "LANES_HOME": str(store.paths.state), "LANES_HEAVY_SLOTS": "1"}


def start_lock(store: LaneStore, *argv: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "lanes_tui.app", "lock", *argv], cwd=store.paths.repo,
                            env=env or lane_env(store), stderr=subprocess.DEVNULL)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def lock_events(store: LaneStore) -> list[dict[str, Any]]:
    path = store.lane_paths(LANE).events
    return [e for e in map(json.loads, path.read_text().splitlines()) if str(e["type"]).startswith("lock-")]


def now_status(store: LaneStore) -> LaneStatus:
    return lane_status(store, store.read(LANE))


def test_a_locked_run_is_two_events_and_no_write_to_lane_json(store: LaneStore) -> None:
    record = store.lane_paths(LANE).record
    before = (record.read_bytes(), record.stat().st_mtime_ns)
    proc = start_lock(store, "--", sys.executable, "-c", "import sys; sys.exit(3)")
    try:
        assert proc.wait(timeout=60) == 3
    finally:
        stop(proc)
    assert (record.read_bytes(), record.stat().st_mtime_ns) == before  # the supervisor is its only writer
    acquired, released = lock_events(store)
    assert (acquired["type"], acquired["pid"], acquired["slot"]) == ("lock-acquired", proc.pid, 0)
    assert (released["type"], released["pid"], released["slot"], released["exit"]) == ("lock-released", proc.pid,
                                                                                          0, 3)
    assert acquired["waited_s"] >= 0 and released["held_s"] >= 0 and released["t"] >= acquired["t"]
    status = now_status(store)
    assert (status.locks, status.lock_wait) == (1, None)
    assert status.to_json()["locks"] == 1  # `status --json` carries it


def test_a_wait_shows_in_the_lane_status_until_the_slot_comes_free(store: LaneStore,
                                                                   other_holds_the_slot: slots.Slot) -> None:
    engine = Engine(store.paths.repo)
    engine.scanner.scan(True)  # what the dashboard knows before the agent runs its suite
    proc = start_lock(store, "--", sys.executable, "-c", "pass")
    try:
        wait_for(lambda: any(e["type"] == "lock-wait" for e in lock_events(store)))
        wait = lock_events(store)[0]
        assert wait["pid"] == proc.pid and wait["for"] == "slot"
        assert [(h["lane"], h["command"]) for h in wait["holders"]] == [("other-a1", "make test")]
        assert re.fullmatch(WAIT_RE, now_status(store).lock_wait or ""), now_status(store)
        # lane.json did not change, yet the live engine re-reads the lane on a lock event.
        changed = [e for e in engine.scanner.scan(False) if isinstance(e, LaneChanged)]
        assert [re.fullmatch(WAIT_RE, e.status.lock_wait or "") is not None for e in changed] == [True]
        other_holds_the_slot.release()
        assert proc.wait(timeout=60) == 0
    finally:
        stop(proc)
    assert [e["type"] for e in lock_events(store)] == ["lock-wait", "lock-acquired", "lock-released"]
    status = now_status(store)
    assert (status.lock_wait, status.locks) == (None, 1)
    changed = [e for e in engine.scanner.scan(False) if isinstance(e, LaneChanged)]
    assert [(e.status.lock_wait, e.status.locks) for e in changed] == [(None, 1)]


def test_a_wait_that_runs_out_or_is_stopped_is_closed(store: LaneStore, other_holds_the_slot: slots.Slot) -> None:
    timed_out = start_lock(store, "--wait", "0.2", "--", sys.executable, "-c", "pass")
    try:
        assert timed_out.wait(timeout=60) == 75
    finally:
        stop(timed_out)
    assert [(e["type"], e.get("why")) for e in lock_events(store)] == [("lock-wait", None),
                                                                        ("lock-gave-up", "no slot within 0.2s")]
    stopped = start_lock(store, "--", sys.executable, "-c", "pass")
    try:
        wait_for(lambda: len(lock_events(store)) == 3)
        assert now_status(store).lock_wait is not None
        os.kill(stopped.pid, signal.SIGTERM)
        assert stopped.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        stop(stopped)
    assert lock_events(store)[-1]["type"] == "lock-gave-up" and lock_events(store)[-1]["pid"] == stopped.pid
    assert (now_status(store).lock_wait, now_status(store).locks) == (None, 0)


def test_a_lock_killed_while_waiting_leaves_no_open_wait(store: LaneStore, other_holds_the_slot: slots.Slot) -> None:
    proc = start_lock(store, "--", sys.executable, "-c", "pass")
    try:
        wait_for(lambda: lock_events(store))
        assert now_status(store).lock_wait is not None
        proc.kill()  # SIGKILL: nothing more is written
        proc.wait(timeout=30)
    finally:
        stop(proc)
    assert [e["type"] for e in lock_events(store)] == ["lock-wait"]
    assert now_status(store).lock_wait is None  # its pid is gone


def test_a_stopped_lane_shows_no_lock_wait(store: LaneStore) -> None:
    """Only a live lane waits: the events of a lane that ended are history."""
    path = store.lane_paths(LANE).events
    with path.open("a") as handle:
        handle.write(json.dumps({"t": 1.0, "type": "lock-wait", "pid": os.getpid(), "for": "slot", "holders": []})
                     + "\n")
    assert now_status(store).lock_wait == "waiting for a heavy slot"
    record = store.read(LANE)
    store.transition(record, "exited", "the agent exited")
    assert now_status(store).lock_wait is None


@pytest.mark.parametrize("case", ["bad id", "no lane", "leftover folder", "not a state folder", "no lane id"])
def test_lock_writes_nothing_outside_a_lane(store: LaneStore, case: str) -> None:
    env = lane_env(store)
    state = store.paths.state
    if case == "bad id":
        env["LANES_LANE"] = "../busy-a1"
    elif case == "no lane":
        env["LANES_LANE"] = "ghost-a1"
    elif case == "leftover folder":
        (state / "lanes" / "empty-a1").mkdir()
        env["LANES_LANE"] = "empty-a1"
    elif case == "not a state folder":
        env["LANES_HOME"] = str(store.paths.repo)
    else:
        del env["LANES_LANE"]
    before = sorted(p.relative_to(store.paths.repo.parent) for p in store.paths.repo.parent.rglob("*"))
    proc = start_lock(store, "--", sys.executable, "-c", "pass", env=env)
    try:
        assert proc.wait(timeout=60) == 0
    finally:
        stop(proc)
    assert lane_events_path(env) is None
    after = sorted(p.relative_to(store.paths.repo.parent) for p in store.paths.repo.parent.rglob("*"))
    assert [p for p in after if p not in before and "xdg-run" not in p.parts] == []
    assert lock_events(store) == []


def test_an_events_file_that_leads_out_of_the_state_folder_is_refused(store: LaneStore, tmp_path: Path) -> None:
    events = store.lane_paths(LANE).events
    outside = tmp_path / "elsewhere.jsonl"
    events.unlink()
    events.symlink_to(outside)
    assert lane_events_path(lane_env(store)) is None
    events.unlink()
    assert lane_events_path(lane_env(store)) == events  # a plain (new) file in the lane's folder is fine
