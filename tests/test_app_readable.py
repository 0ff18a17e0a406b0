"""The Output pane shows a structured lane readable, `w` toggles the raw lines, and the title says which.

A fake engine hands the pane recorded claude stream-json as the lane's tail and then streams codex
lines in chunks cut mid-line, as the engine's output events do; a plain lane's lines show as they are.
"""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot

from lanes_tui.app.dashboard.app import LanesApp
from lanes_tui.engine.state.events import OutputAppended
from lanes_tui.widgets import LanesTable, OutputPane
from tests.fake_engine import FakeEngine, lane

SAMPLES = Path(__file__).parent / "readable_samples"
CLAUDE = (SAMPLES / "claude_run.jsonl").read_text(encoding="utf-8")
CODEX = (SAMPLES / "codex_run.jsonl").read_text(encoding="utf-8")
PLAIN = "=== lanes-tui: sim starting ===\nworking on calc.py\n{\"a\": 1}\n"


class StructuredEngine(FakeEngine):
    """`claude-a1`'s tail is recorded stream-json; `plain-a1`'s is plain text."""

    async def output_tail_at(self, lane_id: str, max_bytes: int = 65536) -> tuple[str, int]:
        self.calls.append(("output", lane_id))
        text = CLAUDE if lane_id == "claude-a1" else PLAIN
        return text, len(text.encode())


def pane(pilot: Pilot[None]) -> OutputPane:
    return pilot.app.screen.query_one(OutputPane)


def shown(pilot: Pilot[None]) -> list[str]:
    return [line for line in pane(pilot).lines if line]


async def settle(pilot: Pilot[None]) -> None:
    for _ in range(5):
        await pilot.pause()


async def test_readable_by_default_raw_on_w_and_back(tmp_path: Path) -> None:
    engine = StructuredEngine(tmp_path, [lane("claude-a1", "running", provider="claude"), lane("plain-a1", "running")])
    app = LanesApp(engine.repo, engine=engine, flush_s=0.01)  # type: ignore[arg-type]
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        assert app.screen.query_one(LanesTable).selected_lane == "claude-a1"
        assert pane(pilot).border_title == "Output · claude-a1 · readable"
        lines = shown(pilot)
        assert lines[0].startswith("# claude · model claude-sonnet-5-5")
        assert "→ Write: /tmp/cwork-lswhc9ja/hello.txt" in lines
        assert lines[-1] == "= done · 3 turns · 1.8 s · $0.0096 · tokens 3600 in · 240 out"
        assert not any(line.startswith("{") for line in lines)

        # New output streams in, cut mid-line: each line shows once it is whole.
        size = len(CLAUDE.encode())
        cut = CODEX.index("cat hello.txt")
        engine.emit(OutputAppended("claude-a1", size, CODEX[:cut], end=size + cut))
        await settle(pilot)
        assert shown(pilot)[-1] == "→ edit: add /work/lane/hello.txt"  # the command's line is not whole yet
        engine.emit(OutputAppended("claude-a1", size + cut, CODEX[cut:], end=size + len(CODEX.encode())))
        await settle(pilot)
        assert shown(pilot)[-4:] == ["→ $ cat hello.txt", "  ⎿ exit 0: hello", "Wrote hello.txt and ran cat.",
                                     "= turn done · tokens 3600 in (+1800 cached, +300 written) · 240 out "
                                     "(+60 reasoning)"]

        await pilot.press("w")
        await settle(pilot)
        assert pane(pilot).border_title == "Output · claude-a1 · raw"
        assert shown(pilot) == CLAUDE.splitlines()  # the tail read again, as written
        assert engine.calls.count(("output", "claude-a1")) == 2

        await pilot.press("w")
        await settle(pilot)
        assert pane(pilot).border_title == "Output · claude-a1 · readable"
        assert shown(pilot)[-1].startswith("= done · 3 turns")


async def test_a_plain_lane_shows_its_lines_as_they_are(tmp_path: Path) -> None:
    engine = StructuredEngine(tmp_path, [lane("plain-a1", "running")])
    app = LanesApp(engine.repo, engine=engine, flush_s=0.01)  # type: ignore[arg-type]
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        assert pane(pilot).border_title == "Output · plain-a1"  # nothing was made readable: no mark
        assert shown(pilot) == PLAIN.splitlines()
        await pilot.press("w")
        await settle(pilot)
        assert pane(pilot).border_title == "Output · plain-a1 · raw"
        assert shown(pilot) == PLAIN.splitlines()


async def test_w_is_in_the_help(tmp_path: Path) -> None:
    from lanes_tui.app.dashboard.keys import help_rows

    assert any(key == "w" and "raw JSON lines" in text for key, text in help_rows())
