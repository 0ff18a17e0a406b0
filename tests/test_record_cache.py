"""`RecordCache`: every lane's record as `LaneStore.all` gives it, parsing only the records that changed."""

from __future__ import annotations

from pathlib import Path

from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.record_cache import RecordCache
from lanes_tui.engine.state.store import LaneStore


def _lane(store: LaneStore, lane_id: str) -> LaneRecord:
    record = LaneRecord(id=lane_id, slug=lane_id.rsplit("-", 1)[0], attempt=1, task_type="backend", prompt="p",
                        chain=["sim"], repo=str(store.paths.repo), worktree="/nowhere", branch=f"lane/{lane_id}",
                        base_sha="0" * 40, target_branch="main", state="running", state_reason="it runs")
    store.create(record)
    return record


def test_only_changed_records_are_read_again(tmp_path: Path) -> None:
    store = LaneStore(StatePaths(tmp_path))
    for lane_id in ("one-a1", "two-a1", "three-a1"):
        _lane(store, lane_id)
    cache = RecordCache(store)
    first = cache.all()
    assert [r.id for r in first] == [r.id for r in store.all()] and cache.last_reads == 3
    again = cache.all()
    assert cache.last_reads == 0 and all(a is b for a, b in zip(first, again, strict=True))

    store.transition(store.read("two-a1"), "ready", "its gates passed")
    states = {r.id: r.state for r in cache.all()}
    assert cache.last_reads == 1 and states == {"one-a1": "running", "two-a1": "ready", "three-a1": "running"}

    cache.all(fresh=True)
    assert cache.last_reads == 3


def test_corrupt_removed_and_half_made_lanes_are_left_out_as_by_the_store(tmp_path: Path) -> None:
    store = LaneStore(StatePaths(tmp_path))
    for lane_id in ("keep-a1", "bad-a1", "gone-a1"):
        _lane(store, lane_id)
    cache = RecordCache(store)
    assert len(cache.all()) == 3
    store.lane_paths("bad-a1").record.write_text("{ not json")
    store.lane_paths("gone-a1").record.unlink()
    store.lane_paths("empty-a1").dir.mkdir(parents=True)  # a folder with no record yet
    assert [r.id for r in cache.all()] == ["keep-a1"] == [r.id for r in store.all()]
    # Mended by hand: read again, since its file changed.
    mended = store.read("keep-a1")
    mended.id, mended.branch = "bad-a1", "lane/bad-a1"
    store.write(mended)
    assert sorted(r.id for r in cache.all()) == ["bad-a1", "keep-a1"] and cache.last_reads == 1
