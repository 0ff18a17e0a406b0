"""Terminal-prompt detection on recorded screens: byte streams fed straight into the renderer.

The traps of PROVIDERS.md — numbered lists and diffs that look like prompts, a busy agent, a stale
spinner, a prompt already answered — each get a recorded screen; a fake clock drives the debounce.
"""

from __future__ import annotations

import pytest

from lanes_tui.engine.channels.screen import DEBOUNCE_S, PromptPatterns, Screen
from lanes_tui.engine.config.providers import PRESETS
from lanes_tui.engine.core.clock import FakeClock

AIDER_PROMPT = b"Apply edits to calc.py? (Y)es/(N)o [Yes]: "
#: aider's pattern plus a generic `(y/n)`, so the structural rules (not just the pattern) are tested.
GREEDY = PromptPatterns.compile([r"\(Y\)es/\(N\)o", r"\(y/n\)"])


def settled(data: bytes, patterns: PromptPatterns = GREEDY, *, rows: int = 40) -> Screen:
    clock = FakeClock()
    screen = Screen(patterns, clock, rows=rows)
    screen.feed(data)
    clock.advance(DEBOUNCE_S)
    return screen


def test_aider_prompt_at_the_cursor_is_detected_after_the_debounce() -> None:
    clock = FakeClock()
    screen = Screen(PromptPatterns.for_provider(PRESETS["aider"]), clock)
    screen.feed(b"Aider v0.86.1\r\nMain model: sonnet\r\n\r\n" + AIDER_PROMPT)
    assert screen.detect() is None, "not still yet"
    clock.advance(DEBOUNCE_S / 2)
    screen.feed(b"")
    assert screen.detect() is None
    clock.advance(DEBOUNCE_S / 2)
    match = screen.detect()
    assert match is not None
    assert match.line == "Apply edits to calc.py? (Y)es/(N)o [Yes]:"
    assert match.fingerprint == screen.fingerprint()
    assert "Main model: sonnet" in match.context


def test_any_change_restarts_the_debounce() -> None:
    clock = FakeClock()
    screen = Screen(GREEDY, clock)
    screen.feed(AIDER_PROMPT)
    clock.advance(DEBOUNCE_S - 0.01)
    screen.feed(b"\x1b[1m\x1b[0m")  # invisible: no change, the debounce keeps running
    clock.advance(0.01)
    assert screen.detect() is not None
    screen.feed(b"\r\nmore output\r\n" + AIDER_PROMPT)
    assert screen.detect() is None
    clock.advance(DEBOUNCE_S)
    assert screen.detect() is not None


@pytest.mark.parametrize("recorded", [
    # A numbered plan that mentions (y/n) and (Y)es/(N)o, ending the output.
    b"Here is the plan:\r\n1. Ask the user: Continue? (y/n)\r\n2. Apply edits? (Y)es/(N)o when unsure\r\n",
    # The same without a final newline: the cursor sits on a list item.
    b"Here is the plan:\r\n1. Ask the user: Continue? (y/n)\r\n2. Apply edits? (Y)es/(N)o when unsure",
    # A diff whose lines contain prompts, as the last thing on the screen.
    b"calc.py\r\n@@ -1,3 +1,4 @@\r\n-    if input('Overwrite? (y/n) ') == 'y':\r\n"
    b"+    if input('Overwrite? (Y)es/(N)o ') == 'y':",
    # A diff with line numbers (as Claude shows them).
    b"  12 -    ok = ask('(y/n)')\r\n  12 +    ok = ask('(Y)es/(N)o')\r\n",
    # Prose that quotes a prompt, followed by more ordinary output.
    b"The tool prints Apply? (Y)es/(N)o and waits.\r\nRunning the tests now.\r\n",
    # A prompt-looking line, then a newline: the program went on, the cursor is below it.
    b"Continue? (y/n)\r\n",
    # A markdown bullet and a quote.
    b"Notes:\r\n- answer (y/n) when asked\r\n> Proceed? (Y)es/(N)o",
])
def test_ordinary_output_raises_no_question(recorded: bytes) -> None:
    assert settled(recorded).detect() is None


def test_prompt_after_ordinary_lookalikes_is_still_found() -> None:
    recorded = (b"1. Ask the user: Continue? (y/n)\r\n-    if input('Overwrite? (y/n) '):\r\n\r\n" + AIDER_PROMPT)
    match = settled(recorded).detect()
    assert match is not None and match.line.startswith("Apply edits to calc.py?")


def test_an_answered_prompt_is_not_asked_again() -> None:
    assert settled(AIDER_PROMPT + b"n\r\n").detect() is None


CLAUDE = PromptPatterns.for_provider(PRESETS["claude"])
CLAUDE_DIALOG = (
    "\x1b[?25l"  # Claude's TUI hides the cursor
    "╭──────────────────────────────────────────────╮\r\n"
    "│ Bash command                                 │\r\n"
    "│   rm -rf build                               │\r\n"
    "│ Do you want to proceed?                      │\r\n"
    "│ \u276f 1. Yes                                     │\r\n"
    "│   2. Yes, and don't ask again for rm         │\r\n"
    "│   3. No, and tell Claude what to do differently (esc) │\r\n"
    "╰──────────────────────────────────────────────╯"
).encode()


def test_claude_permission_dialog_is_detected_through_its_box() -> None:
    match = settled(b"Cleaning up.\r\n" + CLAUDE_DIALOG, CLAUDE).detect()
    assert match is not None
    assert match.line == "Do you want to proceed?"


def test_busy_marker_in_the_live_bottom_suppresses_detection() -> None:
    busy = "\r\n✻ Thinking… (12s · 1.2k tokens · esc to interrupt)".encode()
    assert settled(CLAUDE_DIALOG + busy, CLAUDE).detect() is None


def test_stale_spinner_far_above_does_not_hide_a_real_prompt() -> None:
    stale = "✻ Thinking… (3s · 400 tokens · esc to interrupt)\r\n".encode()
    filler = b"".join(b"output line %d\r\n" % i for i in range(12))
    match = settled(stale + filler + CLAUDE_DIALOG, CLAUDE).detect()
    assert match is not None and match.line == "Do you want to proceed?"


def test_stale_spinner_scrolled_off_the_screen_is_gone() -> None:
    stale = "✻ Working… (esc to interrupt)\r\n".encode()
    filler = b"".join(b"line %d\r\n" % i for i in range(50))
    screen = settled(stale + filler + CLAUDE_DIALOG, CLAUDE, rows=20)
    assert "esc to interrupt" not in screen.text
    assert screen.detect() is not None


def test_codex_and_gemini_prompts() -> None:
    codex = PromptPatterns.for_provider(PRESETS["codex"])
    recorded = (b"\x1b[?25lRun this command?\r\n  $ rm -rf build\r\n"
                b"Press enter to confirm or esc to cancel")
    assert settled(recorded, codex).detect() is not None
    gemini = PromptPatterns.for_provider(PRESETS["gemini"])
    # For Gemini `esc to cancel` means busy, except on the confirmation line itself.
    assert settled(b"\x1b[?25l\xe2\xa0\x8f Reading files (esc to cancel, 3s)", gemini).detect() is None
    waiting = b"\x1b[?25lApply this change?\r\n\xe2\xa0\x8f Waiting for user confirmation... (esc to cancel)"
    assert settled(waiting, gemini).detect() is not None


def test_colours_and_split_utf8_render_like_plain_text() -> None:
    clock = FakeClock()
    screen = Screen(GREEDY, clock)
    coloured = b"\x1b[32m\xe2\x9c\x93 tests\x1b[0m\r\n\x1b[1;33mApply edits to calc.py?\x1b[0m (Y)es/(N)o [Yes]: "
    for cut in range(0, len(coloured), 5):
        screen.feed(coloured[cut:cut + 5])
    clock.advance(DEBOUNCE_S)
    match = screen.detect()
    assert match is not None and "✓ tests" in screen.text


def test_fingerprint_ignores_the_cursor_but_not_the_text() -> None:
    screen = settled(AIDER_PROMPT)
    before = screen.fingerprint()
    screen.feed(b"\x1b[1;1H")
    assert screen.fingerprint() == before
    screen.feed(b"x")
    assert screen.fingerprint() != before


def test_unknown_agents_get_every_prompt_pattern() -> None:
    from lanes_tui.engine.config.providers import ProviderConfig

    custom = ProviderConfig("my-agent", ("/opt/bin/aider-nightly",), "arg", "", "", 1, "pty", (), ())
    assert PromptPatterns.for_provider(custom) == PromptPatterns.for_provider(PRESETS["aider"])
    stranger = ProviderConfig("stranger", ("stranger-cli",), "arg", "", "", 1, "pty", (), ())
    patterns = PromptPatterns.for_provider(stranger)
    assert patterns.is_prompt("Allow command?") and patterns.is_prompt("Apply? (Y)es/(N)o")
    assert not patterns.busy
