"""The conflict radar on real repositories and real sim lanes: shared files, trial merges, its cache.

Everything here happens before any accept, and the radar must leave no trace the lead or a lane
could see: refs, the target, the lanes' worktrees and index files stay exactly as they were.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shlex
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.app.dashboard.app import LanesApp
from lanes_tui.engine.git import radar as radar_module
from lanes_tui.engine.git.radar import Radar, RadarReport, trial_merge
from lanes_tui.engine.git.worktrees import changed_files
from lanes_tui.engine.live.engine import Engine
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.status import LaneStatus
from lanes_tui.engine.state.store import LaneStore
from lanes_tui.widgets.conflicts_modal import ConflictsModal
from tests.conftest import git
from tests.fake_engine import FakeEngine, lane
from tests.helpers import cli, run_lane, status, wait_state, write_config


@pytest.fixture()
def programme(repo: Path) -> Path:
    git(repo, "checkout", "-q", "-b", "programme")
    write_config(repo)
    return repo


def ready_lanes(repo: Path, scripts: dict[str, str]) -> list[str]:
    """Start every lane first, then wait for each: they run side by side."""
    lanes = [run_lane(repo, script, lane_id=name) for name, script in scripts.items()]
    for lane_id in lanes:
        wait_state(repo, lane_id)
        assert status(repo, lane_id)["state"] == "ready"
    return lanes


def kinds(conflicts: list[dict[str, Any]]) -> dict[tuple[str, str | None], list[str]]:
    return {(c["kind"], c["lane"]): c["files"] for c in conflicts}


def traces(repo: Path, lanes: list[str]) -> dict[str, Any]:
    """What the lead or a lane could see change: refs, stashes, each worktree's status and index."""
    seen: dict[str, Any] = {"refs": git(repo, "for-each-ref"), "stash": git(repo, "stash", "list"),
                            "lead": git(repo, "status", "--porcelain")}
    for lane_id in lanes:
        worktree = Path(status(repo, lane_id)["worktree"])
        index = Path(git(worktree, "rev-parse", "--path-format=absolute", "--git-path", "index"))
        seen[lane_id] = (git(worktree, "status", "--porcelain", "--untracked-files=all"),
                      hashlib.sha256(index.read_bytes()).hexdigest(), git(worktree, "rev-parse", "HEAD"))
    return seen


def test_two_ready_lanes_editing_the_same_line_are_named_before_any_accept(programme: Path) -> None:
    repo = programme
    ca, cb, calm = ready_lanes(repo, {"ca": "write README.md title from lane A\n",
                                      "cb": "write README.md title from lane B\n",
                                      "calm": "write notes.txt nothing in common\n"})
    before = traces(repo, [ca, cb, calm])

    rows = {row["id"]: row for row in status(repo)}
    assert kinds(rows[ca]["conflicts"]) == {("merge", cb): ["README.md"], ("overlap", cb): ["README.md"]}
    assert kinds(rows[cb]["conflicts"]) == {("merge", ca): ["README.md"], ("overlap", ca): ["README.md"]}
    assert rows[calm]["conflicts"] == []
    assert rows[ca]["conflicts"][0] == {"lane": cb, "files": ["README.md"], "kind": "merge", "target": "programme"}
    # One lane asked for: the radar still looks at the others.
    assert status(repo, cb)["conflicts"] == rows[cb]["conflicts"]
    assert LaneStatus.from_json(rows[ca]).to_json() == rows[ca]

    assert traces(repo, [ca, cb, calm]) == before, "the radar changed something the lead or a lane can see"
    assert git(repo, "log", "--format=%s", "-1", "programme") == "initial"


def test_a_ready_lane_that_conflicts_with_its_moved_target(programme: Path) -> None:
    repo = programme
    (lane,) = ready_lanes(repo, {"late": "write README.md title from the lane\n"})
    assert status(repo, lane)["conflicts"] == []  # the target has not moved: a fast-forward
    (repo / "README.md").write_text("# title from the lead\n")
    git(repo, "commit", "-q", "-am", "the lead edits the title")
    assert status(repo, lane)["conflicts"] == [
        {"lane": None, "files": ["README.md"], "kind": "target", "target": "programme"}]
    refused = cli(repo, "accept", lane)  # the radar's prediction is what the guarded accept finds
    assert refused.returncode == 1 and "README.md" in refused.stderr


def test_the_radar_sees_commits_and_new_files_and_redoes_only_what_moved(programme: Path) -> None:
    repo = programme
    one, two = ready_lanes(repo, {"one": "write a.txt from one\n", "two": "write b.txt from two\n"})
    store = LaneStore(StatePaths(repo))
    radar = Radar(repo)
    first = radar.scan(store.all())
    assert first.of(one) == () and first.of(two) == ()
    # Each into the target, and the pair: their frozen work (`git.frozen_work`), no snapshot needed, and
    # no `git status` (a frozen lane's head is its branch's); no merge either: none of the three can
    # conflict (the target has not moved, the pair shares no file and deletes none).
    assert (radar.snapshots_made, radar.merges_run, radar.merges_skipped, radar.statuses_run) == (0, 0, 3, 0)
    assert radar.scan(store.all()) is first and radar.merges_run == 0  # nothing moved: nothing redone

    worktree = Path(store.read(two).worktree)
    (worktree / "a.txt").write_text("from two, committed\n")
    git(worktree, "add", "a.txt")
    git(worktree, "commit", "-q", "-m", "two's own commit")
    (worktree / "new file.txt").write_text("untracked\n")
    report = radar.scan(store.all())
    assert report.merge_conflict(one, two) == ("a.txt",) and report.merge_conflict(two, one) == ("a.txt",)
    assert [c.files for c in report.of(one) if c.kind == "overlap"] == [("a.txt",)]
    assert radar.snapshots_made == 1, "only the lane that moved (its HEAD past its frozen work) is snapshotted"
    # two into the target (its snapshot has uncommitted files: counted as deleting) and the new pair,
    # which shares a.txt; one into the target still cannot conflict
    assert radar.merges_run == 2
    files = changed_files(worktree, store.read(two).base_sha)
    assert files == ["a.txt", "b.txt", "new file.txt"]  # what accept would stage: what the radar compares

    # A live lane has no trial merges (its work is not done); shared files are still named.
    live = [replace(r, state="running") if r.id == one else r for r in store.all()]
    report = radar.scan(live)
    assert [(c.kind, c.lane, c.files) for c in report.of(one)] == [("overlap", two, ("a.txt",))]
    assert radar.scan([]) == RadarReport()


def test_trial_merge_reports_the_conflicting_files(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", "left")
    (repo / "README.md").write_text("left\n")
    (repo / "calc.py").write_text("left\n")
    git(repo, "commit", "-q", "-am", "left")
    left = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", "right", base)
    (repo / "README.md").write_text("right\n")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n")
    git(repo, "commit", "-q", "-am", "right")
    right = git(repo, "rev-parse", "HEAD")
    assert trial_merge(repo, left, right) == ("README.md", "calc.py")
    assert trial_merge(repo, base, right) == ()
    assert git(repo, "rev-parse", "HEAD") == right and git(repo, "status", "--porcelain") == ""


async def test_the_dashboard_engine_marks_conflicts_and_follows_a_fix(programme: Path) -> None:
    repo = programme
    ca, cb = ready_lanes(repo, {"ea": "write README.md title from lane A\n", "eb": "write README.md title B\n"})
    engine = Engine(repo, poll_s=0.05)
    engine.radar.every_s = 0.1
    await engine.start()
    try:
        by_id = {s.id: s for s in engine.lanes()}
        assert {(c["kind"], c["lane"]) for c in by_id[ca].conflicts} == {("merge", cb), ("overlap", cb)}
        assert engine.radar.report.merge_conflict(cb, ca) == ("README.md",)
        # The lane's worktree changes: the same title as lane A merges cleanly; the shared file stays.
        # The radar judges the work frozen at a check (`git.frozen_work`): the fix counts once checked.
        worktree = Path(by_id[cb].worktree)
        (worktree / "README.md").write_text("title from lane A\n")
        assert (await asyncio.to_thread(cli, repo, "check", cb)).returncode == 0

        async def fixed() -> None:
            while {c["kind"] for s in engine.lanes() if s.id == cb for c in s.conflicts} != {"overlap"}:
                await asyncio.sleep(0.05)

        await asyncio.wait_for(fixed(), 20)
    finally:
        await engine.aclose()
    assert os.path.isdir(worktree)


async def test_the_conflicts_key_lists_each_pair_once(tmp_path: Path) -> None:
    def found(kind: str, other: str | None, *files: str) -> dict[str, Any]:
        return {"lane": other, "files": list(files), "kind": kind, "target": "programme"}

    engine = FakeEngine(tmp_path, [
        lane("ca-a1", "ready", conflicts=[found("merge", "cb-a1", "README.md"),
                                          found("overlap", "cb-a1", "README.md")]),
        lane("cb-a1", "ready", conflicts=[found("merge", "ca-a1", "README.md"),
                                          found("overlap", "ca-a1", "README.md"), found("target", None, "calc.py")]),
        lane("calm-a1", "running")])
    app = LanesApp(engine.repo, engine=engine, flush_s=0.01)  # type: ignore[arg-type]
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("c")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, ConflictsModal)
        assert modal.rows == [("conflicts with target", "cb-a1 → programme", "calc.py"),
                              ("merge conflict", "ca-a1 ↔ cb-a1", "README.md"),
                              ("same files", "ca-a1 ↔ cb-a1", "README.md")]
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ConflictsModal)


def test_a_quiet_running_lane_keeps_its_side_without_asking_git(programme: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    repo = programme
    one, two = ready_lanes(repo, {"one": "write a.txt from one\n", "two": "write a.txt from two\n"})
    store = LaneStore(StatePaths(repo))
    running = [replace(r, state="running") for r in store.all()]
    radar = Radar(repo)
    statuses: list[Path] = []
    real_state = radar_module.worktree_state

    def counting_state(worktree: Path) -> tuple[str | None, list[str]]:
        statuses.append(worktree)
        return real_state(worktree)

    monkeypatch.setattr(radar_module, "worktree_state", counting_state)
    first = radar.scan(running)
    assert len(statuses) == 2 and first.of(one) and first.of(two)  # both write a.txt: an overlap
    assert radar.scan(running, quiet={one, two}) is first and len(statuses) == 2  # no git status at all
    assert radar.quiet_reused == 2
    # The supervisor of `two` saw its files change: only `two` is looked at again.
    (Path(store.read(two).worktree) / "a.txt").unlink()
    report = radar.scan(running, quiet={one})
    assert statuses[2:] == [Path(store.read(two).worktree)]
    assert report.of(one) == () and report.of(two) == ()  # the overlap is gone
    # A quiet lane whose state moved is looked at again: its side belongs to the old state.
    moved = [replace(r, state="waiting") if r.id == one else r for r in running]
    radar.scan(moved, quiet={one, two})
    assert statuses[3:] == [Path(store.read(one).worktree)]


def test_the_engine_asks_git_again_only_for_lanes_whose_files_moved(programme: Path) -> None:
    repo = programme
    _one, two = ready_lanes(repo, {"one": "write a.txt from one\n", "two": "write b.txt from two\n"})
    store = LaneStore(StatePaths(repo))
    for record in store.all():  # as if their agents still ran (a running lane's supervisor watches its files)
        store.write(replace(record, state="running"))
    engine = Engine(repo)
    watch = engine.radar

    def look() -> int:
        watch.stale = True
        engine.radar.refresh()
        return watch.radar.quiet_reused

    assert look() == 0  # the first look asks git about every lane
    assert look() == 2  # nothing touched: both keep their side
    engine.radar.touch(two)  # a sample of `two` saw files change
    assert look() == 3 and watch.touched == set()  # only `one` was quiet
    engine.radar.full_every_s = 0.0
    assert look() == 3  # a full look: git is asked about every lane again


def test_a_steady_radar_asks_git_nothing_until_a_branch_or_a_worktree_moves(
        programme: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every lane quiet and no branch or worktree moved: a look asks git nothing (`git.ref_stamp`).
    Each thing git would answer differently makes the next look ask again, and its finding shows."""
    repo = programme
    one, two = ready_lanes(repo, {"one": "write a.txt from one\n", "two": "write b.txt from two\n"})
    store = LaneStore(StatePaths(repo))
    for record in store.all():  # as if their agents still ran
        store.write(replace(record, state="running"))
    engine = Engine(repo)
    engine.radar.every_s = 0.0  # every call is a look (the watch tick calls it every 5 s)
    watch = engine.radar
    scans: list[int] = []
    real_scan = watch.radar.scan

    def counting_scan(records: Any, quiet: Any = ()) -> RadarReport:
        scans.append(1)
        return real_scan(records, quiet)

    monkeypatch.setattr(watch.radar, "scan", counting_scan)

    def look() -> int:
        engine.radar.refresh()
        return len(scans)

    assert look() == 1  # the first look asks git
    assert look() == 1 and watch.skipped == 1  # steady: nothing asked
    # The lead commits on the target branch.
    (repo / "NOTES.md").write_text("notes\n")
    git(repo, "add", "NOTES.md")
    git(repo, "commit", "-q", "-m", "notes")
    assert look() == 2
    assert look() == 2
    # Lane one commits in its worktree (its branch lives in a folder, refs/heads/lane/): the file it
    # committed is the file lane two changed, and the overlap shows at once.
    worktree = Path(store.read(one).worktree)
    (worktree / "b.txt").write_text("b from one\n")
    git(worktree, "add", "b.txt")
    git(worktree, "commit", "-q", "-m", "b from one")
    assert look() == 3
    assert [(c.kind, c.lane, c.files) for c in engine.radar.report.of(one)] == [("overlap", two, ("b.txt",))]
    assert look() == 3
    # The refs are packed; then lane two's worktree switches branch.
    git(repo, "pack-refs", "--all")
    assert look() == 4
    git(Path(store.read(two).worktree), "checkout", "-q", "-b", "elsewhere")
    assert look() == 5
    assert look() == 5
    # A lane's supervisor saw files change; a lane's state moved; a full look: each asks again.
    engine.radar.touch(one)
    assert look() == 6
    store.write(replace(store.read(one), state="waiting"))
    assert look() == 7
    engine.radar.full_every_s = 0.0
    assert look() == 8 and look() == 9
    assert watch.skipped == 4


def test_the_radar_sees_a_checking_lane(programme: Path, tmp_path: Path) -> None:
    """A lane whose gates are running is in the radar: its diff is what the gates judge, and it is
    `ready` a moment later. Its gate here waits for a file the test writes (bounded: 120 s)."""
    release = tmp_path / "release"
    code = ("import os,time; t=time.monotonic(); slow=os.environ['LANES_LANE'].startswith('slow'); "
            f"[time.sleep(0.05) for _ in iter(lambda: slow and not os.path.exists({str(release)!r}) "
            "and time.monotonic()-t<120, False)]")
    write_config(programme, gates=f"commands = [{json.dumps(sys.executable + ' -c ' + shlex.quote(code))}]")
    repo = programme
    (fast,) = ready_lanes(repo, {"fast": "write shared.txt from fast\n"})
    slow = run_lane(repo, "write shared.txt from slow\n", lane_id="slow")
    try:
        wait_state(repo, slow, "checking")
        rows = {row["id"]: row for row in status(repo)}
        assert rows[slow]["state"] == "checking"
        assert kinds(rows[fast]["conflicts"]) == {("overlap", slow): ["shared.txt"]}
        assert kinds(rows[slow]["conflicts"]) == {("overlap", fast): ["shared.txt"]}
    finally:
        release.write_text("go")
        wait_state(repo, slow)
    assert status(repo, slow)["state"] == "ready"
