"""Scope is checked at accept (issue 11, item 4): real repos and real sim lanes for the engine and the
command line, literal data for the accept modal, a fake engine for the dashboard's accept key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.decisions.accept_plan import AcceptPlan
from lanes_tui.engine.decisions.scope import describe_outside, in_scope, outside_scope
from lanes_tui.engine.git.worktrees import changed_files
from lanes_tui.engine.lanes.launcher import LaunchRequest, launch_lane
from lanes_tui.widgets import AcceptModal
from tests.conftest import git
from tests.fake_engine import FakeEngine, lane
from tests.helpers import cli, status, wait_state, write_config
from tests.snapshot_apps.widget_apps import ModalHost


@pytest.fixture()
def programme(repo: Path) -> Path:
    """The lead works on a programme branch (main is protected by default)."""
    git(repo, "checkout", "-q", "-b", "programme")
    write_config(repo)
    return repo


def scoped_lane(repo: Path, script: str, slug: str, scope: tuple[str, ...]) -> str:
    """A real sim lane launched with a scope (as a plan ticket launches it), waited until ready."""
    record = launch_lane(repo, load_config(repo), LaunchRequest(prompt=script, slug=slug, scope=scope))
    wait_state(repo, record.id)
    assert status(repo, record.id)["state"] == "ready", status(repo, record.id)
    return record.id


def packet(repo: Path, lane_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((repo / ".lanes/state/lanes" / lane_id / "packet.json").read_text())
    return data


# --- the matching -------------------------------------------------------------------------------------

def test_scope_matches_exact_paths_and_folder_prefixes() -> None:
    scope = ["calc.py", "src/", "docs/api.md"]
    assert in_scope("calc.py", scope) and in_scope("src/a/b.py", scope) and in_scope("docs/api.md", scope)
    assert not in_scope("calc.pyc", scope) and not in_scope("srcx/a.py", scope) and not in_scope("docs/x.md", scope)
    assert in_scope("src", ["src"])  # an exact entry is the path itself …
    assert not in_scope("src/a.py", ["src"])  # … never a folder: folders end in `/`
    assert in_scope("./src//a.py", ["src/"])  # compared as git names paths
    assert outside_scope(["b.py", "src/a.py", "a.py", "b.py"], scope) == ["a.py", "b.py"]
    assert outside_scope(["anything.py"], []) == []  # no scope: nothing is checked


def test_a_rename_counts_by_both_paths(repo: Path) -> None:
    """git lists a lane's rename as its old and its new path: moving a file into the scope from
    outside it touches a file outside it."""
    base = git(repo, "rev-parse", "HEAD")
    (repo / "src").mkdir()
    git(repo, "mv", "calc.py", "src/calc.py")
    files = changed_files(repo, base)
    assert files == ["calc.py", "src/calc.py"]
    assert outside_scope(files, ["src/"]) == ["calc.py"]
    assert outside_scope(files, ["src/", "calc.py"]) == []


def test_the_refusal_is_one_line_with_what_and_the_fix() -> None:
    text = describe_outside("t-a1", ["notes.txt"], ["src/", "calc.py"])
    assert text == ("it changed 1 file outside its scope (src/, calc.py): notes.txt; revert them in the lane "
                    "and run `lanes-tui check t-a1`, or accept with --override REASON")
    many = describe_outside("t-a1", [f"f{i}.txt" for i in range(10)], ["src/"])
    assert "10 files" in many and "f7.txt and 2 more" in many and "\n" not in many


# --- real lanes ---------------------------------------------------------------------------------------

def test_a_lane_outside_its_scope_is_refused_then_accepted_with_an_override(programme: Path) -> None:
    repo = programme
    script = "write src/new.py inside\nwrite calc.py inside too\nwrite notes.txt outside\n"
    lane_id = scoped_lane(repo, script, "scoped", ("src/", "calc.py"))
    found = packet(repo, lane_id)
    assert found["scope"] == ["src/", "calc.py"] and found["outside_scope"] == ["notes.txt"]

    checked = cli(repo, "check", lane_id)  # `check` tells the lead before any accept
    assert checked.returncode == 0, checked.stderr
    warning = "WARNING: accept will refuse: it changed 1 file outside its scope (src/, calc.py): notes.txt"
    assert warning in checked.stdout

    dry = cli(repo, "accept", lane_id, "--dry-run")
    assert dry.returncode == 2  # as the accept itself: refused
    assert "scope: src/, calc.py" in dry.stdout and "outside its scope (1): notes.txt" in dry.stdout

    target = git(repo, "rev-parse", "programme")
    refused = cli(repo, "accept", lane_id)
    assert refused.returncode == 2  # a refusal (LanesError)
    line = refused.stderr.strip()
    assert line == (f"lanes-tui: accept {lane_id} refused: it changed 1 file outside its scope (src/, calc.py): "
                    f"notes.txt; revert them in the lane and run `lanes-tui check {lane_id}`, "
                    "or accept with --override REASON"), line
    assert git(repo, "rev-parse", "programme") == target and status(repo, lane_id)["state"] == "ready"

    blank = cli(repo, "accept", lane_id, "--override", "  ")
    assert blank.returncode == 2 and "--override needs a reason" in blank.stderr

    ok = cli(repo, "accept", lane_id, "--override", "the notes belong with this change")
    assert ok.returncode == 0, ok.stderr
    assert status(repo, lane_id)["state"] == "accepted"
    assert (repo / "notes.txt").read_text() == "outside\n" and (repo / "src/new.py").exists()
    after = packet(repo, lane_id)
    assert after["override"] == "the notes belong with this change"
    assert after["override_outside_scope"] == ["notes.txt"]
    events = [json.loads(x) for x in (repo / ".lanes/state/lanes" / lane_id / "events.jsonl").read_text().splitlines()]
    accepted = [e for e in events if e.get("type") == "state" and e.get("state") == "accepted"]
    assert accepted and accepted[-1]["override"] == "the notes belong with this change"


def test_a_lane_inside_its_scope_accepts(programme: Path) -> None:
    repo = programme
    lane_id = scoped_lane(repo, "write src/a.py a\nwrite src/deep/b.py b\n", "inside", ("src/",))
    assert packet(repo, lane_id)["outside_scope"] == []
    checked = cli(repo, "check", lane_id)
    assert "outside its scope" not in checked.stdout
    ok = cli(repo, "accept", lane_id)
    assert ok.returncode == 0, ok.stderr
    assert (repo / "src/deep/b.py").read_text() == "b\n"
    assert "override" not in packet(repo, lane_id)


# --- the accept modal ---------------------------------------------------------------------------------

LINES = ["lane t-a1 (ready) → programme at 0123456789", "gates: passed; review: MISSING",
         "files (3): src/a.py, notes.txt, setup.cfg", "fast-forward of the target",
         "then the worktree and branch lane/t-a1 are removed",
         "REFUSED: it changed 2 files outside its scope (src/): notes.txt, setup.cfg; revert them in the lane "
         "and run `lanes-tui check t-a1`, or accept with --override REASON"]


def _texts(app: Any, selector: str) -> list[str]:
    return [str(w.render()) for w in app.screen.query(selector).results(Static)]


async def test_the_accept_modal_shows_the_scope_and_the_files_outside_it() -> None:
    app = ModalHost(lambda: AcceptModal("Accept t-a1?", LINES, scope=["src/"], outside=["notes.txt", "setup.cfg"]))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        scope = _texts(app, "#scope Static")
        assert scope == ["scope: src/", "outside the scope (2):", "  notes.txt", "  setup.cfg"]
        assert len(app.screen.query("#scope .outside")) == 2
        assert "outside its scope" in _texts(app, "#refused-note")[0]
        await pilot.press("y")  # refused: y does nothing
        await pilot.pause()
        assert isinstance(app.screen, AcceptModal) and app.results == []
        await pilot.press("escape")
        await pilot.pause()
    assert app.results == [False]


async def test_the_accept_modal_of_an_in_scope_lane_and_of_a_lane_without_scope() -> None:
    ok_lines = [line for line in LINES if not line.startswith("REFUSED")]
    app = ModalHost(lambda: AcceptModal("Accept t-a1?", ok_lines, scope=["src/", "calc.py"]))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert _texts(app, "#scope Static") == ["scope: src/, calc.py", "every changed file is inside the scope"]
        await pilot.press("y")
        await pilot.pause()
    assert app.results == [True]
    app = ModalHost(lambda: AcceptModal("Accept t-a1?", ok_lines))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert not app.screen.query("#scope")


class ScopedEngine(FakeEngine):
    """A fake engine whose accept plan has a scope, with files outside it or not."""

    outside: list[str] = []

    async def plan_accept(self, lane_id: str, override: str | None = None) -> AcceptPlan:
        plan = await super().plan_accept(lane_id, override)
        plan.scope, plan.outside_scope = ["src/"], list(self.outside)
        if self.outside:
            plan.refusals.append(describe_outside(lane_id, self.outside, plan.scope))
        return plan


@pytest.mark.parametrize("outside", [["notes.txt"], []])
async def test_the_accept_key_opens_the_modal_with_the_scope(tmp_path: Path, outside: list[str]) -> None:
    from lanes_tui.app.dashboard.app import LanesApp

    engine = ScopedEngine(tmp_path / "x", [lane("ready-a1", "ready")])
    engine.outside = outside
    app = LanesApp(Path("/repo"), engine=engine, flush_s=0.01)  # type: ignore[arg-type]
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause(0.2)
        assert isinstance(app.screen, AcceptModal)
        assert app.screen.scope == ["src/"] and app.screen.outside == outside
        assert not any(line.startswith("scope:") for line in app.screen.lines)  # shown once, in its block
        assert app.screen.refused == bool(outside)
        await pilot.press("y")
        await pilot.pause(0.2)
    accepted = ("accept", "ready-a1") in engine.calls
    assert accepted == (not outside)
