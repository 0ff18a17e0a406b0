"""One decision API (`decisions.api.Decisions`) for the command line and the dashboard's `Engine`, the
Engine composed of parts, and the decisions' results as typed values (issue 31, item 7)."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.decisions.accept_journal import AcceptJournal, stuck_accepts
from lanes_tui.engine.decisions.accept_plan import plan_accept
from lanes_tui.engine.decisions.api import Decisions
from lanes_tui.engine.decisions.commands import offloaded
from lanes_tui.engine.decisions.packet import read_packet
from lanes_tui.engine.decisions.ranking import GroupRanks
from lanes_tui.engine.decisions.results import GateLine, Packet, ReviewVerdict
from lanes_tui.engine.live.engine import Engine
from lanes_tui.engine.live.radar_watch import RadarWatch
from lanes_tui.engine.live.watch import LaneScanner
from lanes_tui.engine.state.events import LaneChanged
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from tests.helpers import cli, ready_lane, write_config

GATE = 'commands = ["{python} -c \\"print(1)\\""]'


def test_the_engine_is_composed_of_parts_not_mixed_in(repo: Path) -> None:
    write_config(repo)
    engine = Engine(repo, use_inotify=False, use_pidfd=False)
    assert Engine.__mro__ == (Engine, object)
    parts = (engine.scanner, engine.radar, engine.schedule, engine.plans, engine.remote_tick, engine.leases,
             engine.git_watch)
    for part in parts:  # each a plain class, built with what it needs: none reaches back into the Engine
        assert type(part).__mro__ == (type(part), object), type(part)
        assert not any(value is engine for value in vars(part).values()), type(part)


def test_the_engine_offers_each_decision_with_the_decisions_own_signature() -> None:
    names = ["plan_accept", "accept", "plan_queue", "accept_queue", "plan_abandon", "abandon", "gate_report",
             "review", "verify", "wake", "inspect", "recheck", "relaunch", "finish", "answer", "allow_always"]
    for name in names:
        attribute = Engine.__dict__[name]
        assert isinstance(attribute, offloaded) and attribute.method is getattr(Decisions, name), name
        own = list(inspect.signature(getattr(Decisions, name)).parameters.values())[1:]
        assert list(attribute.signature.parameters.values()) == own, name
    # `check` too: a cluster lane's gates go through the engine's runner, a local lane's through the same method
    assert Engine.__dict__["_check_here"].method is Decisions.check


async def test_the_command_line_and_the_engine_get_the_same_typed_packet(repo: Path) -> None:
    write_config(repo, gates=GATE)
    lane = ready_lane(repo, "write api.txt one\n", "api")
    decide = Decisions(repo)
    packet = await decide.check(lane)
    assert isinstance(packet, Packet) and packet.ok and packet.lane == lane
    assert [type(g) for g in packet.gates] == [GateLine] and packet.gates[0].status == "passed"
    on_disk = read_packet(StatePaths(repo).lane(lane))
    assert on_disk is not None and on_disk["gates_status"] == "passed"  # the file is the JSON it always was
    stored = await decide.packet(lane)  # parsed once from disk
    assert stored == Packet.from_json(on_disk, lane=lane) and stored.to_json() == on_disk
    assert stored.gates == packet.gates and stored.changed_files == packet.changed_files
    shown = json.loads(cli(repo, "check", lane, "--json", check=True).stdout)
    after = await decide.packet(lane)  # the command line's check wrote it: what it printed is what it wrote
    assert after is not None and shown["gates"] == [g.to_json() for g in after.gates]
    assert shown["gates_status"] == after.gates_status == "passed"
    async with Engine(repo, use_inotify=False, use_pidfd=False) as engine:
        again = await engine.check(lane)  # the same method, offloaded to a worker thread's loop
    assert isinstance(again, Packet) and again.ok and again.changed_files == packet.changed_files == ("api.txt",)
    # a part stands on its own: the scanner, given the store and the radar, reads the lane as the Engine does
    paths = StatePaths(repo)
    store = LaneStore(paths)
    scanner = LaneScanner(paths, store, RadarWatch(repo, store, engine.clock), GroupRanks(repo), 4096)
    events = scanner.scan(True)
    assert [(e.lane_id, e.status.state) for e in events if isinstance(e, LaneChanged)] == [(lane, "ready")]


def test_a_packet_or_verdict_of_the_wrong_shape_is_one_clear_problem() -> None:
    with pytest.raises(LanesError) as bad:
        Packet.from_json({"gates": 5}, lane="x-a1")
    assert "gates is not a list of objects" in str(bad.value) and "lanes-tui check x-a1" in str(bad.value)
    with pytest.raises(LanesError, match="exit code of 'make' is not a number"):
        Packet.from_json({"gates": [{"command": "make", "status": "failed", "exit_code": "2"}]}, lane="x-a1")
    with pytest.raises(LanesError, match="warnings is not a list of strings"):
        Packet.from_json({"warnings": "one"}, lane="x-a1")
    kept = {"lane": "x-a1", "gates": [{"command": "make", "status": "passed", "exit_code": 0, "duration_s": 1}],
            "gates_status": "passed", "extra": {"kept": True}}
    packet = Packet.from_json(kept)
    assert packet.to_json() == kept and packet.gates[0].duration_s == 1  # numbers as written, never coerced
    with pytest.raises(LanesError, match="no verdict"):
        ReviewVerdict.from_json({"verdict": "MAYBE"}, lane="x-a1")
    verdict = ReviewVerdict.from_json({"verdict": "BLOCKING", "reviewer": "codex", "reason": "",
                                       "findings": [{"path": "a.py", "line": 3, "text": "off by one"}]})
    assert verdict.findings[0].line == 3 and verdict.reviewer == "codex"


def test_a_journal_of_the_wrong_shape_is_stuck_with_the_field_named(repo: Path) -> None:
    write_config(repo)
    lane = ready_lane(repo, "write journal.txt one\n", "journal")
    lane_paths = StatePaths(repo).lane(lane)
    journal = {"step": "merge", "lane": lane, "target": "main", "lane_head": 5, "state_before": "ready"}
    lane_paths.accept_journal.write_text(json.dumps(journal))
    stuck = stuck_accepts(repo)
    assert [(s.lane_id, s.what) for s in stuck] == [(lane, f"{lane_paths.accept_journal}: lane_head is not a "
                                                           "string")]
    plan = plan_accept(repo, load_config(repo), lane)
    assert any("lane_head is not a string" in refusal for refusal in plan.refusals)
    shown = cli(repo, "status", lane)  # reconcile tries the journal: marked stuck, never a traceback
    assert "Traceback" not in shown.stderr
    assert json.loads(lane_paths.accept_journal.read_text())["stuck"]["what"].endswith("lane_head is not a string")
    parsed = AcceptJournal.from_json({"step": "cleanup", "merged_sha": "abc", "outside_scope": ["x"]})
    assert parsed.merged == "abc" and parsed.outside_scope == ("x",) and parsed.stuck is None
