"""The dialogs: what each key returns through `dismiss`, and what they refuse."""

from __future__ import annotations

import dataclasses
from typing import Any

from textual.widgets import Input, Select, Static, TextArea

from lanes_tui.widgets import (
    AcceptModal,
    ConfirmModal,
    HelpScreen,
    ReasonModal,
    RecoverChoice,
    RecoverModal,
    StartLaneModal,
    TextAnswerModal,
)
from tests.snapshot_apps.widget_apps import QUESTIONS, ModalHost, question

PLAN = ["lane tidy-tests-a2 (ready) → programme at 0123456789", "gates: passed; review: MISSING",
        "files (2): a.py, b.py", "fast-forward of the target", "then the worktree and branch lane/x are removed"]


async def run_keys(make: Any, *keys: str) -> tuple[ModalHost, list[Any]]:
    app = ModalHost(make)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press(*keys)
        await pilot.pause()
    return app, app.results


async def test_confirm_keys() -> None:
    assert (await run_keys(lambda: ConfirmModal("Accept?", PLAN), "y"))[1] == [True]
    assert (await run_keys(lambda: ConfirmModal("Accept?", PLAN), "n"))[1] == [False]
    assert (await run_keys(lambda: ConfirmModal("Accept?", PLAN), "escape"))[1] == [False]


async def test_refused_confirm_cannot_be_confirmed() -> None:
    lines = [*PLAN, "REFUSED: the lane is rejected, not ready (gates failed)"]
    app = ModalHost(lambda: ConfirmModal("Accept?", lines))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        assert app.results == []
        assert isinstance(app.screen, ConfirmModal)
        note = str(app.screen.query_one("#refused-note", Static).content)
        assert "the lane is rejected" in note and "y is disabled" in note
        await pilot.press("escape")
        await pilot.pause()
    assert app.results == [False]
    # the caller may refuse too, without a REFUSED line
    assert (await run_keys(lambda: ConfirmModal("Abandon?", PLAN, refused=True), "y", "n"))[1] == [False]


async def test_recover_keys() -> None:
    lines = ["x-a1: stalled (no activity)", "--recheck: …", "--relaunch: …"]
    assert (await run_keys(lambda: RecoverModal(lines), "c"))[1] == [RecoverChoice("recheck")]
    assert (await run_keys(lambda: RecoverModal(lines), "l"))[1] == [RecoverChoice("relaunch")]
    assert (await run_keys(lambda: RecoverModal(lines), "escape"))[1] == [None]


async def test_recover_note_goes_with_the_relaunch() -> None:
    lines = ["x-a1: rejected (gate failed)"]
    # n puts the cursor in the note, where c and l are letters; enter relaunches with the note
    typed = await run_keys(lambda: RecoverModal(lines), "n", *"look at calc.py", "enter")
    assert typed[1] == [RecoverChoice("relaunch", "look at calc.py")]
    # tab there and back: l relaunches with what the field holds; c re-checks without it
    app = ModalHost(lambda: RecoverModal(lines))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("n", *"cl", "escape")
        await pilot.pause()
    assert app.results == [None]  # escape in the note cancels the dialog, and typed letters chose nothing


async def test_recover_refuses_relaunch_past_the_attempts_cap() -> None:
    why = "x-a3 is attempt 3 of 3 ([lanes] attempts) — take it over: …"
    app = ModalHost(lambda: RecoverModal(["x-a3: rejected (gate failed)"], relaunch_refused=why))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("l")
        await pilot.pause()
        assert app.results == [] and isinstance(app.screen, RecoverModal)
        shown = str(app.screen.query_one("#recover-error", Static).content)
        assert "relaunch refused" in shown and "attempt 3 of 3" in shown and "take it over" in shown
        assert app.screen.query_one("#note", Input).disabled
        await pilot.press("n", "c")  # the note cannot be written; a re-check is still offered
        await pilot.pause()
    assert app.results == [RecoverChoice("recheck")]


async def test_text_answer_returns_text_and_refuses_empty() -> None:
    q = question("q_00000000000a", "x-a1", "open", 0.0, kind="text", title="Name the module?")
    app = ModalHost(lambda: TextAnswerModal(q))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert app.results == []
        assert "type an answer" in str(app.screen.query_one("#answer-error", Static).content)
        await pilot.press(*"cache", "enter")
        await pilot.pause()
    assert app.results == ["cache"]
    assert (await run_keys(lambda: TextAnswerModal(q), "x", "escape"))[1] == [None]


async def test_text_answer_returns_the_choice_id() -> None:
    choice = QUESTIONS[2]  # options oauth / pw
    assert (await run_keys(lambda: TextAnswerModal(choice), "down", "enter"))[1] == ["pw"]
    assert (await run_keys(lambda: TextAnswerModal(choice), "enter"))[1] == ["oauth"]
    with_default = dataclasses.replace(choice, question=dataclasses.replace(choice.question, default="pw"))
    assert (await run_keys(lambda: TextAnswerModal(with_default), "enter"))[1] == ["pw"]
    yes_no = question("q_00000000000b", "x-a1", "open", 0.0, kind="yesno")
    assert (await run_keys(lambda: TextAnswerModal(yes_no), "down", "enter"))[1] == ["no"]


async def test_reason_returns_the_trimmed_text_and_refuses_empty() -> None:
    app = ModalHost(lambda: ReasonModal("Accept x-a1 over its review?", ["REFUSED: the review is BLOCKING"]))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("space", "enter")
        await pilot.pause()
        assert app.results == [] and "type your reason" in str(app.screen.query_one("#reason-error", Static).content)
        await pilot.press(*"known ", "enter")
        await pilot.pause()
    assert app.results == ["known"]
    assert (await run_keys(lambda: ReasonModal("Why?", []), "x", "escape"))[1] == [None]


async def test_accept_modal_tones_the_review_the_verification_and_the_gates() -> None:
    lines = ["lane x-a1 (ready) → programme at 0123456789", "gates: failed",
             "review: CLEAN by codex (openai) (STALE: the lane changed since this review)",
             "verified by ana (2026-12-01 17:02): ran it (STALE: the lane changed since)", "files (1): a.py",
             "REFUSED: the review is stale: the lane changed since it was reviewed"]
    gates = [{"command": "pytest -q", "status": "failed", "exit_code": 1, "duration_s": 75.0},
             {"command": "ruff check .", "status": "not-run"}]
    app = ModalHost(lambda: AcceptModal("Accept x-a1?", lines, gates=gates, review="CLEAN", review_override=True))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        shown = {str(w.content): set(w.classes) for w in app.screen.query(".line").results(Static)}
        assert list(shown)[2:4] == ["✗ pytest -q — failed (exit 1), 1m15s", "· ruff check . — not-run"]
        assert "gate-failed" in shown["✗ pytest -q — failed (exit 1), 1m15s"]
        assert {"review-clean", "stale"} <= shown[lines[2]] and "stale" in shown[lines[3]]
        assert "overridable" in shown[lines[5]]  # the one refusal y may lift, with a reason
        await pilot.press("y")
        await pilot.pause()
    assert app.results == [True]
    # Without review_override the same refusal disables y, as every other refusal does.
    assert (await run_keys(lambda: AcceptModal("Accept x-a1?", lines, gates=gates), "y", "n"))[1] == [False]


async def test_accept_modal_names_the_radars_predicted_conflicts_most_serious_first() -> None:
    conflicts = [{"kind": "overlap", "lane": "b-a1", "files": ["a.py"], "target": "programme"},
                 {"kind": "merge", "lane": "b-a1", "files": ["a.py", "b.py", "c.py", "d.py", "e.py"],
                  "target": "programme"},
                 {"kind": "target", "lane": None, "files": ["README.md"], "target": "programme"}]
    app = ModalHost(lambda: AcceptModal("Accept x-a1?", PLAN, conflicts=conflicts))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        shown = [str(w.content) for w in app.screen.query(".conflict").results(Static)]
        assert shown == [
            "the radar predicts conflicts with programme in README.md: the accept's rebase will stop there, "
            "nothing merged",
            "the radar predicts conflicts with b-a1 in a.py, b.py, c.py, d.py +1: accept order matters",
            "shares files with b-a1: a.py (they may still merge cleanly)"]
        await pilot.press("y")  # a prediction is not a refusal: the lead may still accept
        await pilot.pause()
    assert app.results == [True]


async def test_start_lane_returns_the_form() -> None:
    app = ModalHost(lambda: StartLaneModal(["backend", "docs"], ["claude", "sim"]))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press(*"fix it", "enter", *"now")
        app.screen.query_one("#provider", Select).value = "sim"
        app.screen.query_one("#task-type", Select).value = "docs"
        app.screen.query_one("#slug", Input).value = "fix-it"
        await pilot.press("ctrl+s")
        await pilot.pause()
    assert app.results == [{"prompt": "fix it\nnow", "task_type": "docs", "lane": "sim", "slug": "fix-it"}]


async def test_start_lane_defaults_and_start_button() -> None:
    app = ModalHost(lambda: StartLaneModal(["backend", "docs"], ["claude"]))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press(*"go")
        await pilot.click("#start")
        await pilot.pause()
    assert app.results == [{"prompt": "go", "task_type": "backend", "lane": None, "slug": None}]


async def test_start_lane_refuses_empty_prompt_and_bad_id() -> None:
    app = ModalHost(lambda: StartLaneModal(["backend"], ["sim"]))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("space", "ctrl+s")
        await pilot.pause()
        assert app.results == []
        error = app.screen.query_one("#start-error", Static)
        assert "prompt is empty" in str(error.content)
        app.screen.query_one("#prompt", TextArea).text = "do it"
        app.screen.query_one("#slug", Input).value = "no/slashes"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.results == [] and "task id" in str(error.content)
        await pilot.press("escape")
        await pilot.pause()
    assert app.results == [None]


async def test_help_lists_keys_and_closes() -> None:
    rows = [("a", "accept the selected lane"), ("?", "this help")]
    for key in ("escape", "q", "question_mark"):
        app = ModalHost(lambda: HelpScreen(rows))
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen) and app.screen.row_count == 2
            await pilot.press(key)
            await pilot.pause()
        assert app.results == [None], key


async def test_help_wraps_every_description_instead_of_cutting_it() -> None:
    """Issue 32: the help's table cut a description at the dialog's edge. Every key's whole text is on
    the screen now, wrapped, at the dashboard's smallest usable width."""
    from textual.geometry import Region

    from lanes_tui.app.dashboard.keys import help_rows

    rows = help_rows()
    app = ModalHost(lambda: HelpScreen(rows))
    async with app.run_test(size=(80, 30)) as pilot:
        await pilot.pause()
        cells = list(app.screen.query(".help-does").results(Static))[1:]  # after the header's
        assert len(cells) == len(rows)
        wrapped = 0
        for cell, (_key, does) in zip(cells, rows, strict=True):
            lines = cell.render_lines(Region(0, 0, cell.outer_size.width, cell.outer_size.height))
            drawn = " ".join("".join(segment.text for segment in line).strip() for line in lines)
            assert " ".join(drawn.split()) == " ".join(does.split()), does
            wrapped += len(lines) > 1
        assert wrapped >= 5  # the long ones take several lines
