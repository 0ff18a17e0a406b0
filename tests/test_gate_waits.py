"""Every wait of the gates is visible and bounded (issue 30, item 4; docs/gates.md#waits).

A check held back by the machine's load or by a heavy slot another run holds says so within one sample
— in the lane's why, a `gate-wait` event, the lane's output, the Meters pane and `check --log` — and a
wait that outlasts `[gates] slot_wait_s` ends `not-run` with the reason and the retry. Real
repositories, real sim lanes and gate processes; the waits are driven by a fake clock and a fake load
source, never by sleeping.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.widgets import Static

from lanes_tui.app.dashboard.meters_feed import gate_waits, meters_mapping
from lanes_tui.engine import LanesError, load_config
from lanes_tui.engine.core import slots
from lanes_tui.engine.core.clock import FakeClock
from lanes_tui.engine.core.errors import ConfigError
from lanes_tui.engine.core.waits import default_load_limit
from lanes_tui.engine.decisions.check import check_lane
from lanes_tui.engine.decisions.gates.run import _load_limit
from lanes_tui.engine.lanes import heavy
from lanes_tui.engine.sim.demo import DEMO_CONFIG
from lanes_tui.engine.state.lock_events import LockJournal, read_lock_view
from lanes_tui.engine.state.paths import StatePaths, heavy_slot_dir
from lanes_tui.engine.state.status import lane_status
from lanes_tui.engine.state.store import LaneStore
from lanes_tui.widgets import MetersPane
from tests.helpers import cli, run_lane, status, wait_state, write_config
from tests.snapshot_apps.widget_apps import MACHINE, WidgetHost, lane


class WatchedClock(FakeClock):
    """A fake clock that calls `hook(seconds waited so far)` after each sleep: the test's eyes inside a
    wait, at the moment the waiting code has taken its samples and sleeps before the next one."""

    def __init__(self, hook: Callable[[float], None]) -> None:
        super().__init__()
        self.hook = hook
        self.began = self.monotonic()

    async def sleep(self, seconds: float) -> None:
        await super().sleep(seconds)
        self.hook(self.monotonic() - self.began)


def loads(*figures: float) -> Callable[[], float]:
    """A load source giving `figures` one sample at a time, then the last one for ever."""
    it: Iterator[float] = iter(figures)
    last = [figures[-1]]

    def sample() -> float:
        last[0] = next(it, last[0])
        return last[0]

    return sample


def ready_lane(repo: Path, lane_id: str, gates: str) -> str:
    """A sim lane that ran to `ready` (its gates with no load wait), its config then set to `gates`."""
    write_config(repo, gates=gates, allow_uncontained=True)
    lane_id = run_lane(repo, "write f.txt x\n", lane_id=lane_id)
    wait_state(repo, lane_id)
    assert status(repo, lane_id)["state"] == "ready", status(repo, lane_id)
    return lane_id


def look(repo: Path, lane_id: str) -> dict[str, object]:
    """The lane's why, its gate-wait events, its output and its status' wait text, read from disk now."""
    store = LaneStore(StatePaths(repo))
    record = store.read(lane_id)
    paths = store.lane_paths(lane_id)
    events = [json.loads(line) for line in paths.events.read_text().splitlines()]
    return {"why": record.state_reason, "state": record.state,
            "waits": [e for e in events if e["type"] == "gate-wait"],
            "output": paths.output.read_text(errors="replace") if paths.output.exists() else "",
            "meter": lane_status(store, record).gate_wait_text(FakeClock().time() + 1)}


def test_a_forced_load_wait_shows_its_reason_within_one_sample(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lane_id = ready_lane(repo, "busy", 'commands = ["true"]\nmax_load = 4')
    monkeypatch.delenv("LANES_HEAVY_LOAD")  # the config's max_load decides
    monkeypatch.setattr(slots, "machine_load", loads(5.1, 5.1, 3.2))
    seen: list[dict[str, object]] = []
    clock = WatchedClock(lambda waited: seen.append(look(repo, lane_id)) if not seen else None)
    asyncio.run(check_lane(repo, load_config(repo), lane_id, clock=clock))
    first = seen[0]  # one sample taken, the wait not over
    assert first["state"] == "checking" and first["why"] == "waiting for the machine: load 5.1 > 4.0 (up to 10m)"
    assert [(w["for"], w["phase"], w["load"], w["limit"], w["waited_s"]) for w in first["waits"]] == [  # type: ignore[attr-defined]
        ("load", "start", 5.1, 4.0, 0.0)]
    assert "[gate] waiting for the machine: load 5.1 > 4.0 (up to 10m)" in str(first["output"])
    assert first["meter"] == "load 5.1 > 4.0, 1s"  # the Meters pane's words, counted from the wait's start
    after = look(repo, lane_id)
    assert after["state"] == "ready" and after["meter"] is None
    end = after["waits"][-1]  # type: ignore[index]
    assert (end["phase"], end["ok"], end["waited_s"], end["load"]) == ("end", True, 2.0, 5.1)
    assert "[gate] waited 2s for the machine: load 5.1 > 4.0" in str(after["output"])
    events = (repo / ".lanes/state/lanes" / lane_id / "events.jsonl").read_text().splitlines()
    reasons = [e["reason"] for e in map(json.loads, events) if e["type"] == "state"]
    assert reasons[-4:] == ["running the gates", "waiting for the machine: load 5.1 > 4.0 (up to 10m)",
                            "running the gates", "gates passed"]
    log = cli(repo, "check", lane_id, "--log")
    assert log.returncode == 0 and log.stdout.startswith("waited 2s for the machine: load 5.1 > 4.0\n"), log.stdout


def test_a_load_that_stays_high_ends_not_run_with_the_reason(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lane_id = ready_lane(repo, "starved", 'commands = ["touch gate-ran"]\nmax_load = 4\nslot_wait_s = 5')
    worktree = Path(status(repo, lane_id)["worktree"])
    (worktree / "gate-ran").unlink()
    monkeypatch.delenv("LANES_HEAVY_LOAD")
    monkeypatch.setattr(slots, "machine_load", loads(5.1, 5.3))
    packet = asyncio.run(check_lane(repo, load_config(repo), lane_id, clock=FakeClock()))
    assert packet["gates_status"] == "not-run" and not (worktree / "gate-ran").exists()  # no gate ran
    row = status(repo, lane_id)
    assert row["state"] == "exited"
    assert row["state_reason"] == (f"gates not run: the machine stayed busy for 5s (load 5.3 > 4.0): "
                                   f"`lanes-tui check {lane_id}` to try again")
    assert packet["gates"][0]["output_tail"].startswith("not run: the machine stayed busy for 5s (load 5.3 > 4.0); "
                                                        "raise [gates] max_load")
    log = cli(repo, "check", lane_id, "--log").stdout
    assert "waited 5s for the machine: load 5.3 > 4.0 and gave up\nnot run: the machine stayed busy" in log
    assert " not-run  true" not in log and "not-run  touch" in log
    monkeypatch.setattr(slots, "machine_load", loads(1.0))  # the retry the why names
    assert asyncio.run(check_lane(repo, load_config(repo), lane_id, clock=FakeClock()))["gates_status"] == "passed"


def test_a_slot_held_by_another_run_names_its_holder(repo: Path) -> None:
    lane_id = ready_lane(repo, "queued-up", 'commands = ["true"]')
    held = slots.try_acquire(heavy_slot_dir(), 1, {"lane": "other-a1"})
    assert held is not None
    seen: list[dict[str, object]] = []

    def hook(waited: float) -> None:
        if not seen:
            seen.append(look(repo, lane_id))
        if waited >= 41.9:
            held.release()

    try:
        asyncio.run(check_lane(repo, load_config(repo), lane_id, clock=WatchedClock(hook)))
    finally:
        held.release()
    holder = f"other-a1 pid {os.getpid()}"
    assert seen[0]["why"] == f"waiting for a heavy slot: held by {holder} (up to 10m)"
    assert seen[0]["meter"] == f"a heavy slot held by {holder}, 1s"
    assert [(w["for"], w["phase"], w["held_by"]) for w in seen[0]["waits"]] == [("slot", "start", holder)]  # type: ignore[attr-defined]
    after = look(repo, lane_id)
    assert after["state"] == "ready"
    assert f"[gate] waited 42s for a heavy slot: held by {holder}" in str(after["output"])
    assert cli(repo, "check", lane_id, "--log").stdout.startswith(f"waited 42s for a heavy slot: held by {holder}\n")


@pytest.mark.parametrize(("text", "value"), [("", None), ("max_load = 0", 0.0), ("max_load = 6.5", 6.5),
                                             ("max_load = 3", 3.0)])
def test_max_load_is_read(repo: Path, text: str, value: float | None) -> None:
    write_config(repo, gates=text)
    assert load_config(repo).gates.max_load == value


@pytest.mark.parametrize("bad", ['"high"', "-1", "true", "nan", "inf", "[4]"])
def test_a_bad_max_load_is_refused_with_the_fix(repo: Path, bad: str) -> None:
    write_config(repo, gates=f"max_load = {bad}")
    with pytest.raises(ConfigError) as caught:
        load_config(repo)
    text = str(caught.value)
    assert "gates.max_load" in text and "must be a load figure" in text and "0 = never wait for the load" in text


def test_the_gates_and_lock_read_one_load_limit(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LANES_HEAVY_LOAD")
    assert default_load_limit() == max(4.0, 2.0 * (os.cpu_count() or 1))
    write_config(repo, gates="")
    gates = load_config(repo).gates
    assert heavy.load_limit(os.environ, repo) == _load_limit(gates) == default_load_limit()
    write_config(repo, gates="max_load = 6.5")
    gates = load_config(repo).gates
    assert heavy.load_limit(os.environ, repo) == _load_limit(gates) == 6.5
    monkeypatch.setenv("LANES_HEAVY_LOAD", "2")  # the environment still overrides both
    assert heavy.load_limit(os.environ, repo) == _load_limit(gates) == 2.0
    monkeypatch.setenv("LANES_HEAVY_LOAD", "high")  # lock refuses it; the gates fall back to the config
    with pytest.raises(LanesError, match="LANES_HEAVY_LOAD='high' is not a load figure"):
        heavy.load_limit(os.environ, repo)
    assert _load_limit(gates) == 6.5


def test_lock_says_it_waits_for_the_load_as_the_gates_do(tmp_path: Path) -> None:
    said: list[str] = []
    events = tmp_path / "events.jsonl"
    journal = LockJournal(events)
    slot = asyncio.run(heavy.take_slot(tmp_path / "slots", 1, {"lane": "lead"}, wait_s=None, load=4.0,
                                       say=said.append, journal=journal, clock=FakeClock(),
                                       sample=loads(5.1, 4.5, 3.0)))
    assert slot is not None
    slot.release()
    assert said == ["waiting for the machine: load 5.1 > 4.0 (up to 10m)"]
    assert read_lock_view(events).wait == "waiting for the machine: load 5.1 > 4.0"  # the lane's events too
    said.clear()
    slot = asyncio.run(heavy.take_slot(tmp_path / "slots", 1, {"lane": "lead"}, wait_s=3, load=4.0,
                                       say=said.append, clock=FakeClock(), sample=loads(5.1, 5.6)))
    assert slot is not None  # an agent's command runs anyway: nothing would run it later
    slot.release()
    assert said == ["waiting for the machine: load 5.1 > 4.0 (up to 3s)",
                    "the machine stayed busy for 3s (load 5.6 > 4.0): running anyway"]


def test_the_demo_never_waits_on_its_own_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "demo"
    (repo / ".lanes").mkdir(parents=True)
    (repo / ".lanes" / "config.toml").write_text(DEMO_CONFIG.format(root=tmp_path))
    gates = load_config(repo).gates
    monkeypatch.delenv("LANES_HEAVY_LOAD")  # the lead's default environment: the demo's config decides
    assert gates.max_load == 0 and _load_limit(gates) == 0


async def test_the_meters_pane_shows_a_gate_wait() -> None:
    now = 1_700_000_100.0
    waiting = lane("fix-a1", "checking", gate_wait={"for": "load", "phase": "start", "load": 5.1, "limit": 4.0,
                                                    "t": now - 42})
    slotted = lane("doc-a1", "checking", gate_wait={"for": "slot", "held_by": "fix-a1 pid 7\x1b[2J", "t": now - 90})
    odd = lane("odd-a1", "checking", gate_wait={"for": "load", "load": "x", "t": "y"})
    assert gate_waits([waiting, slotted, odd, lane("run-a1", "running")], now) == {
        "fix-a1": "load 5.1 > 4.0, 42s", "doc-a1": "a heavy slot held by fix-a1 pid 7?[2J, 1m30s",
        "odd-a1": "load above ?"}  # a hand-edited event: no figure made up
    pane = MetersPane()
    app = WidgetHost(pane)
    async with app.run_test(size=(120, 36)) as pilot:
        pane.update_machine(meters_mapping(MACHINE, [], [waiting], now))
        await pilot.pause()
        text = str(pane.query_one("#meters-text", Static).content)
        assert text.splitlines()[-1] == "gates waiting: fix-a1 load 5.1 > 4.0, 42s"
        pane.update_machine(meters_mapping(MACHINE, [], [lane("fix-a1", "ready")], now))
        await pilot.pause()
        assert "gates waiting" not in str(pane.query_one("#meters-text", Static).content)


def test_the_gates_tab_shows_the_waits_before_the_steps() -> None:
    from lanes_tui.engine.decisions.gates.log import gate_report
    from lanes_tui.widgets.gates_pane import render_report

    packet = {"gates": [{"name": "pytest", "status": "not-run", "command": "pytest", "waits": [
        "waited 10m for the machine: load 5.3 > 4.0 and gave up"],
        "output_tail": "not run: the machine stayed busy for 10m (load 5.3 > 4.0); raise [gates] max_load"},
        {"name": "ruff", "status": "not-run", "command": "ruff check .", "output_tail": "not run: the machine …"}]}
    report = gate_report(packet)
    assert report.waits == ("waited 10m for the machine: load 5.3 > 4.0 and gave up",
                            "not run: the machine stayed busy for 10m (load 5.3 > 4.0); raise [gates] max_load")
    lines = render_report(report).plain.splitlines()
    assert lines[:2] == [f"~ {w}" for w in report.waits] and lines[2].startswith("– pytest")
