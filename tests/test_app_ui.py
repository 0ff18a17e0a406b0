"""UI tests: the real App and screen, a fake engine, every key checked by the calls and messages it causes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.message import Message
from textual.pilot import Pilot
from textual.widgets import Static

from lanes_tui.app.dashboard.app import LanesApp
from lanes_tui.app.dashboard.messages import LanesChanged, QuestionsUpdated
from lanes_tui.engine import Findings
from lanes_tui.widgets import (
    AcceptModal,
    ConfirmModal,
    DiffPane,
    HelpScreen,
    InboxPane,
    LanesTable,
    RecoverModal,
    StartLaneModal,
    TextAnswerModal,
)
from tests.fake_engine import FakeEngine, lane


@pytest.fixture()
def engine(tmp_path: Path) -> FakeEngine:
    return FakeEngine(tmp_path, [lane("ready-a1", "ready"), lane("broken-a1", "rejected"),
                                 lane("busy-a1", "running"), lane("stuck-a1", "stalled")])


def make_app(engine: FakeEngine, messages: list[Message] | None = None) -> LanesApp:
    return LanesApp(engine.repo, engine=engine, flush_s=0.01)  # type: ignore[arg-type]


def notes(app: LanesApp) -> list[str]:
    return [f"{n.title}: {n.message}" for n in app._notifications]


def commands(engine: FakeEngine) -> list[tuple[str, Any]]:
    return [c for c in engine.calls if c[0] not in ("start", "output", "aclose")]


async def select(pilot: Pilot[None], lane_id: str) -> None:
    table = pilot.app.screen.query_one(LanesTable)
    table.focus()
    table.move_cursor(row=table.get_row_index(lane_id))
    await pilot.pause()
    assert table.selected_lane == lane_id


async def test_accept_shows_the_plan_then_accepts(engine: FakeEngine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 36)) as pilot:
        await select(pilot, "ready-a1")
        await pilot.press("a")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, ConfirmModal)
        text = "\n".join(modal.lines)
        assert "files (2): calc.py, test_calc.py" in text and "programme" in text and "gates: passed" in text
        await pilot.press("y")
        await pilot.pause()
        await pilot.pause()
    assert commands(engine) == [("plan_accept", "ready-a1"), ("accept", "ready-a1")]
    assert any("accepted ready-a1" in n for n in notes(app))


async def test_the_accept_dialog_names_the_conflicts_the_radar_predicts(tmp_path: Path) -> None:
    """The radar's findings reach the dialog from the app's statuses (the engine filled them): the
    lead reads the predicted conflict before pressing y."""
    found = [{"kind": "merge", "lane": "other-a1", "files": ["a.py", "b.py"], "target": "programme"},
             {"kind": "overlap", "lane": "other-a1", "files": ["a.py", "b.py"], "target": "programme"}]
    engine = FakeEngine(tmp_path, [lane("mine-a1", "ready", conflicts=found), lane("other-a1", "ready"),
                                   lane("calm-a1", "ready")])
    app = make_app(engine)
    async with app.run_test(size=(120, 36)) as pilot:
        await select(pilot, "mine-a1")
        await pilot.press("a")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, AcceptModal)
        shown = [str(w.content) for w in modal.query(".conflict").results(Static)]
        assert shown == ["the radar predicts conflicts with other-a1 in a.py, b.py: accept order matters",
                         "shares files with other-a1: a.py, b.py (they may still merge cleanly)"]
        await pilot.press("n")
        await pilot.pause()
        await select(pilot, "calm-a1")
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, AcceptModal) and not list(app.screen.query(".conflict").results(Static))
        await pilot.press("n")
        await pilot.pause()
    assert commands(engine) == [("plan_accept", "mine-a1"), ("plan_accept", "calm-a1")]


async def test_accept_on_a_rejected_lane_shows_the_refusal(engine: FakeEngine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 36)) as pilot:
        await select(pilot, "broken-a1")
        await pilot.press("a")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmModal)
    assert commands(engine) == [("plan_accept", "broken-a1")]
    assert any("Refused" in n and "not ready" in n and "--override" in n for n in notes(app))


async def test_abandon_asks_then_abandons(engine: FakeEngine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 36)) as pilot:
        await select(pilot, "busy-a1")
        await pilot.press("x")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal)
        assert any("2 changed file(s)" in line for line in app.screen.lines)
        await pilot.press("n")
        await pilot.pause()
        await pilot.press("x")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        await pilot.pause()
    assert commands(engine) == [("plan_abandon", "busy-a1"), ("plan_abandon", "busy-a1"), ("abandon", "busy-a1")]


@pytest.mark.parametrize(("key", "call"), [("c", "recheck"), ("l", "relaunch")])
async def test_recover_offers_recheck_and_relaunch(engine: FakeEngine, key: str, call: str) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 36)) as pilot:
        await select(pilot, "stuck-a1")
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, RecoverModal)
        await pilot.press(key)
        await pilot.pause()
        await pilot.pause()
    assert commands(engine) == [("wake", "stuck-a1"), ("inspect", "stuck-a1"), (call, "stuck-a1")]


async def test_recover_dialog_note_reaches_the_relaunch(engine: FakeEngine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 36)) as pilot:
        await select(pilot, "stuck-a1")
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, RecoverModal)
        await pilot.press("n", *"the fixture is stale", "enter")
        await pilot.pause()
        await pilot.pause()
    assert commands(engine) == [("wake", "stuck-a1"), ("inspect", "stuck-a1"),
                                ("relaunch", ("stuck-a1", "the fixture is stale"))]
    assert any("stuck-a1 relaunched as stuck-a2" in n for n in notes(app))


async def test_recover_dialog_refuses_a_relaunch_past_the_attempts_cap(engine: FakeEngine) -> None:
    real_inspect = engine.inspect

    async def capped(lane_id: str, *, stop_leftovers: bool = True) -> Findings:
        assert not stop_leftovers, "the dashboard looks first; the lead may still cancel"
        findings = await real_inspect(lane_id, stop_leftovers=stop_leftovers)
        findings.relaunch_refused = ("stuck-a1 is attempt 3 of 3 ([lanes] attempts)", "take it over: …")
        return findings

    engine.inspect = capped  # type: ignore[method-assign]
    app = make_app(engine)
    async with app.run_test(size=(120, 36)) as pilot:
        await select(pilot, "stuck-a1")
        await pilot.press("r")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, RecoverModal)
        assert any("relaunch: refused, stuck-a1 is attempt 3 of 3" in line for line in modal.lines)
        await pilot.press("l")
        await pilot.pause()
        assert app.screen is modal  # still open, saying why
        assert "take it over" in str(modal.query_one("#recover-error", Static).content)
        await pilot.press("escape")
        await pilot.pause()
    assert commands(engine) == [("wake", "stuck-a1"), ("inspect", "stuck-a1")]  # no relaunch


@pytest.mark.parametrize(("key", "value"), [("y", "yes"), ("n", "no")])
async def test_answering_from_the_inbox_writes_the_answer_file(engine: FakeEngine, key: str, value: str) -> None:
    question = engine.inbox.ask("busy-a1", kind="yesno", title="Deploy to staging?")
    app = make_app(engine)
    async with app.run_test(size=(120, 36)) as pilot:
        inbox = app.screen.query_one(InboxPane)
        assert inbox.selected_question is not None and inbox.selected_question.question.id == question.id
        await pilot.press(key)
        await pilot.pause()
        await pilot.pause()
    answer = json.loads((engine.repo / "inbox" / "busy-a1" / f"{question.id}.answer.json").read_text())
    assert answer["value"] == value and answer["by"] == "lead"
    assert commands(engine) == [("answer", (question.id, value))]


async def test_enter_answers_a_text_question(engine: FakeEngine) -> None:
    question = engine.inbox.ask("busy-a1", kind="text", title="Name for the flag?")
    app = make_app(engine)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("y")  # y/n do not fit a text question: a hint, nothing written
        await pilot.pause()
        assert commands(engine) == []
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, TextAnswerModal)
        await pilot.press(*"use_fast_path")
        await pilot.press("enter")
        await pilot.pause()
        await pilot.pause()
    assert commands(engine) == [("answer", (question.id, "use_fast_path"))]
    assert any("press enter" in n for n in notes(app))


async def test_start_form_starts_a_lane(engine: FakeEngine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, StartLaneModal)
        await pilot.press(*"add a sub function")
        await pilot.press("ctrl+s")
        await pilot.pause()
        await pilot.pause()
    (name, request), = commands(engine)
    assert name == "run_lane" and request.prompt == "add a sub function" and request.task_type == "backend"


async def test_kill_gates_diff_help_and_quit(engine: FakeEngine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 36)) as pilot:
        await select(pilot, "busy-a1")
        await pilot.press("k")
        await pilot.pause()
        await pilot.press("g")
        await pilot.pause()
        await pilot.press("d")
        await pilot.pause()
        await pilot.pause()
        diff = app.screen.query_one(DiffPane)
        assert diff.lane_id == "busy-a1"
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
    assert commands(engine) == [("kill", "busy-a1"), ("check", "busy-a1"), ("diff", "busy-a1")]
    assert app.return_code == 0
    assert engine.calls[-1] == ("aclose", None)


async def test_engine_events_arrive_as_batched_messages_in_order(engine: FakeEngine) -> None:
    seen: list[Message] = []
    app = make_app(engine)
    async with app.run_test(size=(120, 36), message_hook=seen.append) as pilot:
        await pilot.pause()
        engine.set_lane(lane("busy-a1", "waiting"))
        question = engine.inbox.ask("busy-a1", kind="yesno", title="Proceed?")
        engine.publish_questions()
        engine.set_lane(lane("busy-a1", "running"))
        await pilot.pause(0.1)
        table = app.screen.query_one(LanesTable)
        assert str(table.get_cell("busy-a1", "state")) == "running"
    # A message bubbles from the screen to the App, so the hook sees it twice: count each once.
    ours = list({id(m): m for m in seen if isinstance(m, LanesChanged | QuestionsUpdated)}.values())
    assert [type(m) for m in ours] == [LanesChanged, QuestionsUpdated]  # one flush, lanes first
    assert [s.state for s in ours[0].statuses] == ["running"]  # the newer state replaced the older
    assert ours[1].questions[0].question.id == question.id
    assert any("busy-a1 asks: Proceed?" in n for n in notes(app))


async def test_a_new_question_and_a_stall_ring_the_bell(engine: FakeEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    from lanes_tui.engine.state.events import StallDetected
    from lanes_tui.engine.state.samples import parse_stall

    rings: list[int] = []
    app = make_app(engine)
    monkeypatch.setattr(app, "bell", lambda: rings.append(1))
    async with app.run_test(size=(120, 36)) as pilot:
        engine.inbox.ask("busy-a1", kind="yesno", title="Proceed?")
        engine.publish_questions()
        await pilot.pause(0.1)
        engine.emit(StallDetected("busy-a1", parse_stall({"idle_s": 901, "tree": []})))
        await pilot.pause(0.1)
    assert len(rings) == 2
    assert any("went silent" in n for n in notes(app))


async def test_keys_are_remappable_from_the_config(engine: FakeEngine) -> None:
    engine.config = engine.config.__class__(**{**engine.config.__dict__, "keys": {"accept": "A"}})
    app = make_app(engine)
    async with app.run_test(size=(120, 36)) as pilot:
        await select(pilot, "ready-a1")
        await pilot.press("a")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmModal)
        await pilot.press("A")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal)


async def test_every_action_is_in_the_command_palette(engine: FakeEngine) -> None:
    from textual.command import CommandPalette

    app = make_app(engine)
    async with app.run_test(size=(120, 36)) as pilot:
        await select(pilot, "ready-a1")
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"accept")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert isinstance(app.screen, ConfirmModal)
    assert commands(engine) == [("plan_accept", "ready-a1")]


async def test_every_tab_has_a_key_named_in_the_help_and_remappable(engine: FakeEngine) -> None:
    """Issue 32: Gates, Worktrees and Plan had no key. 1–5 show the tabs in order; `[keys]` remaps them."""
    from textual.widgets import TabbedContent

    from lanes_tui.app.dashboard.keys import help_rows

    engine.config = engine.config.__class__(**{**engine.config.__dict__, "keys": {"tab_plan": "L"}})
    app = make_app(engine)
    async with app.run_test(size=(120, 36)) as pilot:
        await select(pilot, "busy-a1")
        tabs = app.screen.query_one(TabbedContent)
        shown = []
        for key in ("3", "4", "L", "2", "1"):
            await pilot.press(key)
            await pilot.pause()
            shown.append(tabs.active)
        assert shown == ["tab-gates", "tab-worktrees", "tab-plan", "tab-diff", "tab-output"]
        await pilot.press("5")  # remapped away
        await pilot.pause()
        assert tabs.active == "tab-output"
    assert ("gates", "busy-a1") in engine.calls and ("diff", "busy-a1") in engine.calls  # each tab loaded
    rows = dict(help_rows({"tab_plan": "L"}))
    assert [rows[k] for k in ("1", "2", "3", "4", "L")] == [
        "show the Output tab", "show the Diff tab (the selected lane's diff)",
        "show the Gates tab: the selected lane's last gate run (g runs them again)",
        "show the Worktrees tab: where each lane works, and how far it is from its target",
        "show the Plan tab: the open plans' tickets"]


async def test_send_refuses_a_lane_that_is_not_running_before_the_dialog(engine: FakeEngine) -> None:
    """Issue 32: `T` on a lane that ended let the lead type, then refused; now it refuses at once, with why."""
    from lanes_tui.widgets import ReasonModal

    app = make_app(engine)
    async with app.run_test(size=(120, 36)) as pilot:
        await select(pilot, "broken-a1")
        await pilot.press("T")
        await pilot.pause()
        assert not isinstance(app.screen, ReasonModal)
        assert notes(app)[-1] == ("Send: broken-a1 is not running (rejected: rejected for a test): no agent takes "
                                  "a line; `r` relaunches it with a note")
        await select(pilot, "ready-a1")
        await pilot.press("T")
        await pilot.pause()
        assert not isinstance(app.screen, ReasonModal) and "ready-a1 is not running (ready" in notes(app)[-1]
        await select(pilot, "busy-a1")  # running: the dialog opens as before
        await pilot.press("T")
        await pilot.pause()
        assert isinstance(app.screen, ReasonModal)
        await pilot.press("escape")
        await pilot.pause()
    assert [c for c in engine.calls if c[0] == "send"] == []


async def test_the_theme_chosen_in_the_palette_is_kept_in_the_user_config(engine: FakeEngine) -> None:
    """Issue 32: the theme picked with "Change theme" was forgotten. It goes to the lead's own config
    (`$XDG_CONFIG_HOME/lanes-tui/config.toml`, a tmp folder under the tests) and comes back at the next start."""
    import os

    from lanes_tui.engine import load_config

    user_file = Path(os.environ["XDG_CONFIG_HOME"]) / "lanes-tui" / "config.toml"
    app = make_app(engine)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert app.theme != "nord" and not user_file.exists()
        app.action_change_theme()
        await pilot.pause()
        await pilot.press(*"nord")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert app.theme == "nord"
        for _ in range(100):  # written in a worker thread
            if user_file.exists():
                break
            await pilot.pause(0.05)
    assert 'theme = "nord"' in user_file.read_text()
    assert load_config(engine.repo).dashboard.theme == "nord"

    again = FakeEngine(engine.repo, [lane("ready-a1", "ready")])
    again.config = load_config(engine.repo)  # the real loader: the user's file under the repository's
    app = make_app(again)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert app.theme == "nord"
    assert user_file.read_text().count("theme") == 1  # restoring it wrote nothing
