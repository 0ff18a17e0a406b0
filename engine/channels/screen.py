"""Terminal-prompt detection on a rendered screen: the fallback when an agent has no structured channel.

Screen text is a weak signal (PROVIDERS.md lists the traps), so detection is deliberately narrow:

* the screen is rendered with pyte (a terminal emulator), so only what is on the *live* screen counts;
  scrolled-off output and cursor tricks cannot fake a prompt, and a stale spinner that scrolled away
  cannot hide one;
* nothing is matched until the screen has been still for a debounce (an agent mid-print is not asking);
* only the bottom of the screen is read: scanning upwards from the last non-empty line, every line
  below the prompt must be part of a prompt block (numbered options, box borders, other prompt
  lines); one line of ordinary output below a prompt-like line means it was just output;
* numbered-list items, bullets, quotes and diff lines never count as the prompt line itself, so a plan
  or a diff that mentions `(y/n)` is not a question;
* with a visible cursor, the cursor must sit inside the prompt block: a program that printed a line and
  a newline is not waiting at that line;
* a busy marker (a spinner, `esc to interrupt`) in the bottom lines means the agent is working.

`Screen` is pure (bytes in, verdict out, clock injected), so recorded byte streams test it directly.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lanes_tui.engine.config.cli_facts import SCREEN_BUSY, SCREEN_PROMPTS
from lanes_tui.engine.config.providers import ProviderConfig, compile_pattern
from lanes_tui.engine.core.clock import Clock

COLUMNS = 120
ROWS = 40
DEBOUNCE_S = 0.3
#: How many non-empty lines at the bottom make up "the live bottom of the screen".
BOTTOM_LINES = 8
#: How many lines of the screen a question's body shows for context.
CONTEXT_LINES = 14

_BORDER = "│┃|║╎╏ \t"
_BOX_ONLY_RE = re.compile(r"^[\s─━│┃║═╭╮╰╯┌┐└┘├┤┬┴┼╔╗╚╝╠╣▔▁▏▕|+\-=_]*$")
#: Menu pointers drawn before an option: > \u276f (heavy angle) \u203a (single angle) and bullets.
_POINTERS = r">\u276f\u203a▶▸●○◯◉◦•*"
_OPTION_RE = re.compile(rf"^(?:[{_POINTERS}]\s*)?\(?\d{{1,2}}[.):]\s")
_ORDINARY_RE = re.compile(rf"^(?:[+\-*•>]|@@|\d+[.)]\s|\d+\s+[+\-]\s|[{_POINTERS}]\s*\d)")


@dataclass(frozen=True)
class PromptPatterns:
    """One provider's prompt and busy patterns, compiled (case-insensitive, as in `config.providers`)."""

    prompts: tuple[re.Pattern[str], ...]
    busy: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def compile(cls, prompts: Iterable[str], busy: Iterable[str] = ()) -> PromptPatterns:
        return cls(tuple(compile_pattern(p) for p in prompts), tuple(compile_pattern(p) for p in busy))

    @classmethod
    def for_provider(cls, provider: ProviderConfig) -> PromptPatterns:
        """By the provider's name, else its executable's name, else a name prefix (`claude-glm`).

        An agent we know nothing about gets every prompt pattern and no busy markers.
        """
        key = _table_key(provider.name, SCREEN_PROMPTS) or _table_key(
            os.path.basename(provider.executable()), SCREEN_PROMPTS)
        if key is None:
            return cls.compile([p for ps in SCREEN_PROMPTS.values() for p in ps])
        return cls.compile(SCREEN_PROMPTS[key], SCREEN_BUSY.get(key, ()))

    def is_prompt(self, text: str) -> re.Pattern[str] | None:
        return next((p for p in self.prompts if p.search(text)), None)

    def is_busy(self, text: str) -> bool:
        return any(p.search(text) for p in self.busy)


def _table_key(name: str, table: Mapping[str, object]) -> str | None:
    lowered = name.lower()
    if lowered in table:
        return lowered
    return next((key for key in table if lowered.startswith(key)), None)


@dataclass(frozen=True)
class PromptMatch:
    """A detected prompt: the line that asks, the pattern that matched, the screen it was seen on."""

    line: str
    pattern: str
    fingerprint: str
    context: str


def fingerprint(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class Screen:
    """A pyte screen fed with an agent's terminal output, and the prompt detector over it."""

    def __init__(self, patterns: PromptPatterns, clock: Clock, *, columns: int = COLUMNS, rows: int = ROWS,
                 debounce_s: float = DEBOUNCE_S) -> None:
        self.patterns = patterns
        self.clock = clock
        self.debounce_s = debounce_s
        import pyte  # here, not at the top: only terminal lanes pay for it (about 40 ms at start-up)

        self._screen = pyte.Screen(columns, rows)
        self._stream = pyte.ByteStream(self._screen)
        self._text = self._render()
        self.last_change = clock.monotonic()

    def feed(self, data: bytes) -> None:
        """Render output bytes; any visible change restarts the stillness debounce."""
        if not data:
            return
        self._stream.feed(data)
        text = self._render()
        if text != self._text:
            self._text = text
            self.last_change = self.clock.monotonic()

    @property
    def text(self) -> str:
        return self._text

    def fingerprint(self) -> str:
        """What a question is tied to: the hash of the whole visible screen text (not the cursor)."""
        return fingerprint(self._text)

    def still(self) -> bool:
        return self.clock.monotonic() - self.last_change >= self.debounce_s - 1e-9  # float-safe

    def detect(self) -> PromptMatch | None:
        """The prompt the agent is waiting at, or None (see the module docstring for the rules)."""
        if not self.still():
            return None
        lines = [(row, line.rstrip()) for row, line in enumerate(self._screen.display) if line.strip()]
        bottom = lines[-BOTTOM_LINES:]
        if not bottom:
            return None
        for _, line in bottom:
            if self.patterns.is_busy(line) and self.patterns.is_prompt(line) is None:
                return None
        found: tuple[int, str, re.Pattern[str]] | None = None
        for row, line in reversed(bottom):
            content = line.strip(_BORDER)
            pattern = self.patterns.is_prompt(content)
            if pattern is not None and not _ORDINARY_RE.match(content):
                found = (row, line, pattern)
                break
            if not (pattern is not None or _OPTION_RE.match(content) or _BOX_ONLY_RE.match(content)):
                return None  # ordinary output below anything prompt-like: not waiting for the lead
        if found is None:
            return None
        row, line, pattern = found
        cursor = self._screen.cursor
        if not cursor.hidden and not row <= cursor.y <= bottom[-1][0]:
            return None
        context = "\n".join(text for _, text in lines[-CONTEXT_LINES:])
        return PromptMatch(line.strip(_BORDER).strip(), pattern.pattern, self.fingerprint(), context)

    def _render(self) -> str:
        return "\n".join(line.rstrip() for line in self._screen.display)

    def repaint(self) -> bytes:
        """The live screen as terminal bytes: what a viewer who attaches mid-run is shown first.

        The raw stream from then on (`PtyTerminal.listeners`) moves the viewer's terminal from this
        picture exactly as it moves the pyte screen, so the two stay the same.
        """
        return paint(self._screen)

    @property
    def cursor(self) -> tuple[int, int, bool]:
        """(row, column, hidden), from 0."""
        cursor = self._screen.cursor
        return cursor.y, cursor.x, bool(cursor.hidden)


_COLOURS = {"black": 0, "red": 1, "green": 2, "brown": 3, "blue": 4, "magenta": 5, "cyan": 6, "white": 7}


def _colour(value: str, base: int) -> str | None:
    """One pyte colour (a name, `bright…`, or six hex digits) as SGR parameters; None for the default."""
    if value == "default":
        return None
    name = value.removeprefix("bright").replace("bfight", "")  # pyte spells one of them `bfightmagenta`
    if name in _COLOURS:
        return str(base + (60 if value.startswith(("bright", "bfight")) else 0) + _COLOURS[name])
    if len(value) == 6:
        try:
            red, green, blue = (int(value[i:i + 2], 16) for i in (0, 2, 4))
        except ValueError:
            return None
        return f"{base + 8};2;{red};{green};{blue}"
    return None


def _sgr(char: object) -> str:
    params = ["0"]
    for attr, code in (("bold", "1"), ("italics", "3"), ("underscore", "4"), ("blink", "5"), ("reverse", "7"),
                       ("strikethrough", "9")):
        if getattr(char, attr, False):
            params.append(code)
    for value, base in ((getattr(char, "fg", "default"), 30), (getattr(char, "bg", "default"), 40)):
        colour = _colour(str(value), base)
        if colour is not None:
            params.append(colour)
    return "\x1b[" + ";".join(params) + "m"


def paint(screen: Any) -> bytes:
    """A pyte screen as bytes that draw it on a terminal of at least its size: home, clear, each row
    with its colours and attributes, then the cursor where the program left it (and hidden if it was)."""
    out = ["\x1b[0m\x1b[H\x1b[2J"]
    for row in range(screen.lines):
        line = screen.buffer[row]
        last = max((col for col, char in line.items() if char.data not in ("", " ") or char.bg != "default"
                    or char.reverse), default=-1)
        if last < 0:
            continue
        out.append(f"\x1b[{row + 1};1H")
        current = ""
        for col in range(last + 1):
            char = line[col]
            if char.data == "":  # the right half of a wide character
                continue
            style = _sgr(char)
            if style != current:
                out.append(style)
                current = style
            out.append(char.data)
        out.append("\x1b[0m")
    cursor = screen.cursor
    out.append(f"\x1b[{cursor.y + 1};{cursor.x + 1}H")
    out.append("\x1b[?25l" if cursor.hidden else "\x1b[?25h")
    out.append(_sgr(cursor.attrs))  # what the program prints next comes in the colours it chose last
    return "".join(out).encode("utf-8", "replace")
