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

from lanes_tui.engine.config.providers import SCREEN_BUSY, SCREEN_PROMPTS, ProviderConfig, compile_pattern
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
