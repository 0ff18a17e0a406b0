"""The conflict radar's bounds with many ready lanes, on real repositories and worktrees.

A ready lane's side is its frozen work: no `git status` for it, and a steady radar asks git nothing.
A trial merge that cannot conflict is not run, one that could always is, and a look runs at most
`MERGES_PER_LOOK`: the rest follow at the next looks, and the report ends the same as one uncapped.
The lanes are made as the radar benchmark makes them (`tests/bench/radar_cost.py`): a worktree, a
change, frozen as `check` freezes it, a `ready` record; no supervisor.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lanes_tui.engine.core.clock import FakeClock
from lanes_tui.engine.git import radar as radar_module
from lanes_tui.engine.git.radar import Radar
from lanes_tui.engine.live.radar_watch import RadarWatch
from tests.bench.radar_cost import ReadyWorld


@pytest.fixture()
def world(tmp_path: Path) -> Iterator[ReadyWorld]:
    made = ReadyWorld(shared_every=1, root=tmp_path)
    try:
        yield made
    finally:
        made.close()


def test_a_capped_look_finishes_its_merges_at_the_next_looks_then_asks_git_nothing(
        world: ReadyWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    world.grow_to(4)  # every lane edits the same line of README.md: six pairs, each conflicting
    uncapped = Radar(world.repo).scan(world.store.all())
    monkeypatch.setattr(radar_module, "MERGES_PER_LOOK", 2)
    clock = FakeClock()
    watch = RadarWatch(world.repo, world.store, clock)
    pending = []
    for _ in range(3):
        watch.refresh()
        pending.append(watch.radar.pending)
        clock.advance(watch.every_s)
    assert pending == [4, 2, 0]
    assert watch.radar.merges_run == 6 and watch.skipped == 0
    assert watch.report == uncapped
    for lane in world.lanes:  # each conflicts with the three others
        assert sorted(c.lane for c in watch.report.of(lane) if c.kind == "merge") == \
            sorted(set(world.lanes) - {lane})
    # Nothing moves: a ready lane's frozen work is a ref, so the look asks git nothing at all.
    assert watch.radar.statuses_run == 0
    watch.refresh()
    assert watch.skipped == 1 and watch.radar.merges_run == 6


def test_merges_that_cannot_conflict_are_skipped_and_the_others_tried(world: ReadyWorld) -> None:
    plain = world.add_lane(lambda wt, i: (wt / f"new_{i}.py").write_text("x = 1\n"))
    other = world.add_lane(lambda wt, i: (wt / f"new_{i}.py").write_text("y = 2\n"))
    radar = Radar(world.repo)
    radar.scan(world.store.all())
    # Two new files, the target unmoved: neither pair nor target merge can conflict.
    assert (radar.merges_run, radar.merges_skipped) == (0, 3)

    # A deletion (a rename's half) is tried against every other lane, and a file where another lane
    # made a folder is tried and conflicts.
    deleter = world.add_lane(lambda wt, i: (wt / "module_00.py").unlink())
    folder = world.add_lane(lambda wt, i: (wt / "shared").mkdir() or (wt / "shared" / "inner.py").write_text("z\n"))
    flat = world.add_lane(lambda wt, i: (wt / "shared").write_text("a file\n"))
    radar = Radar(world.repo)
    report = radar.scan(world.store.all())
    tried = radar.merges_run
    # the deleter against the four others and its target; the folder against the file
    assert tried == 4 + 1 + 1
    assert report.merge_conflict(folder, flat) and report.merge_conflict(flat, folder)
    assert not report.of(plain) and not report.of(other) and not report.of(deleter)
