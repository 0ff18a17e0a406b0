"""Allow rules: the lead's "allow always" for one lane's structured permission prompts.

When the lead answers a permission prompt (Claude's `can_use_tool`) with "allow for this lane", the
rule lands in the lane folder's `allow.json` and in its `events.jsonl` (`allow-rule`). From then on
the lane's channel allows a request the rule covers without asking; the question is still written
and answered by `rule`, so the inbox shows what was allowed and why (`channels.claude`).

A rule names a tool and, optionally, a pattern: a glob (`fnmatch`, case-sensitive) on the tool's
subject, the one input field that says what it will do (a Bash command, a file path, a URL). No
pattern: every use of the tool in this lane. A pattern with wildcards never matches a Bash command
holding a shell control character (`;`, `&`, `|`, `` ` ``, `$`, `<`, `>`, parentheses, a newline):
`pytest *` must not allow `pytest -q; rm -rf ~`. A pattern without wildcards is an exact command
and matches only itself.

Rules live as long as the lane: a relaunch is a new lane and asks again. The file is the lead's, but
like the inbox it sits where an agent of the same user could write, so it is read as untrusted:
bounded, entries checked one by one, anything malformed skipped.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from dataclasses import asdict, dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.atomic import append_jsonl, write_json_atomic
from lanes_tui.engine.core.clock import Clock, RealClock
from lanes_tui.engine.core.entry_files import locked, read_entries
from lanes_tui.engine.core.errors import LanesError

__all__ = ["ALLOW_FILE", "AllowRule", "RuleBook", "add_rule", "read_rules", "record_auto_allow"]

log = logging.getLogger(__name__)

ALLOW_FILE = "allow.json"
MAX_ALLOW_FILE = 256 * 1024
MAX_RULES = 200
MAX_TOOL = 100
MAX_PATTERN = 1000
#: What turns one Bash command into several, or feeds it from elsewhere.
SHELL_CONTROL = re.compile(r"[;&|`$<>()\n\r]")
_WILDCARDS = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class AllowRule:
    """One "allow always": the tool, the glob on its subject (None: any use), who added it and when."""

    tool: str
    pattern: str | None = None
    by: str = "lead"
    at: float = 0.0
    #: The question the lead answered with it, if any.
    question: str | None = None

    def matches(self, tool: str, subject: str | None) -> bool:
        """Does this rule allow `tool` on `subject` (see the module docstring for Bash)?"""
        if tool != self.tool:
            return False
        if self.pattern is None:
            return True
        if subject is None:
            return False
        if not _WILDCARDS.search(self.pattern):
            return subject == self.pattern
        if tool == "Bash" and SHELL_CONTROL.search(subject):
            return False
        return fnmatchcase(subject, self.pattern)

    def describe(self) -> str:
        return f"{self.tool} matching {self.pattern!r}" if self.pattern is not None else f"any {self.tool}"


def read_rules(lane_dir: Path) -> list[AllowRule]:
    """The lane's rules, oldest first; a missing, oversized or malformed file allows nothing."""
    path = lane_dir / ALLOW_FILE
    rules: list[AllowRule] = []
    for entry in read_entries(path, "rules", MAX_ALLOW_FILE):
        rule = _rule(entry)
        if rule is None:
            log.warning("ignoring a malformed rule in %s: %.200r", path, entry)
        else:
            rules.append(rule)
    return rules[:MAX_RULES]


def add_rule(lane_dir: Path, tool: str, pattern: str | None, *, question: str | None = None, by: str = "lead",
             clock: Clock | None = None) -> AllowRule:
    """Add a rule to the lane (once: the same tool and pattern again is the rule already there) and
    record it in the lane's events. LanesError for a tool or pattern no request could match."""
    if not isinstance(tool, str) or not tool.strip() or len(tool) > MAX_TOOL:
        raise LanesError(f"invalid tool name {tool!r}", "allow rules are for a permission prompt's tool")
    if pattern is not None and (not pattern.strip() or len(pattern) > MAX_PATTERN or "\x00" in pattern):
        raise LanesError("the pattern is empty, too long or holds a NUL",
                         "give a glob like `pytest *`, or allow the tool without a pattern")
    if not (lane_dir / "lane.json").exists():
        raise LanesError(f"no lane folder {lane_dir}", "see `lanes-tui status` for the lanes")
    clock = clock or RealClock()
    with _locked(lane_dir):
        rules = read_rules(lane_dir)
        for rule in rules:
            if (rule.tool, rule.pattern) == (tool, pattern):
                return rule
        if len(rules) >= MAX_RULES:
            raise LanesError(f"the lane has {MAX_RULES} allow rules already", "allow the tool without a pattern")
        added = AllowRule(tool, pattern, by, clock.time(), question)
        write_json_atomic(lane_dir / ALLOW_FILE, {"rules": [asdict(r) for r in (*rules, added)]})
    append_jsonl(lane_dir / "events.jsonl", {"t": added.at, "type": "allow-rule", "tool": tool, "pattern": pattern,
                                             "by": by, "question": question})
    return added


def record_auto_allow(lane_dir: Path, clock: Clock, rule: AllowRule, *, subject: str | None,
                      question: str | None) -> None:
    """The event of a request a rule allowed without asking the lead."""
    append_jsonl(lane_dir / "events.jsonl", {"t": clock.time(), "type": "allow-auto", "tool": rule.tool,
                                             "pattern": rule.pattern, "subject": subject, "question": question})


class RuleBook:
    """A lane's rules, re-read only when `allow.json` changed: a channel asks on every request and tick."""

    def __init__(self, lane_dir: Path) -> None:
        self.lane_dir = lane_dir
        self._sig: tuple[int, int] | None = None
        self._rules: list[AllowRule] = []

    def rules(self) -> list[AllowRule]:
        try:
            st = os.stat(self.lane_dir / ALLOW_FILE)
            sig = (st.st_mtime_ns, st.st_size)
        except OSError:
            sig = (0, 0)
        if sig != self._sig:
            self._sig = sig
            self._rules = read_rules(self.lane_dir) if sig != (0, 0) else []
        return self._rules

    def match(self, tool: str, subject: str | None) -> AllowRule | None:
        return next((rule for rule in self.rules() if rule.matches(tool, subject)), None)


def _rule(entry: Any) -> AllowRule | None:
    if not isinstance(entry, dict):
        return None
    tool, pattern, by, at, question = (entry.get(k) for k in ("tool", "pattern", "by", "at", "question"))
    if not isinstance(tool, str) or not tool or len(tool) > MAX_TOOL:
        return None
    if pattern is not None and (not isinstance(pattern, str) or not pattern or len(pattern) > MAX_PATTERN):
        return None
    when = float(at) if isinstance(at, int | float) and not isinstance(at, bool) else 0.0
    return AllowRule(tool, pattern, by if isinstance(by, str) else "?", when,
                     question if isinstance(question, str) else None)


def _locked(lane_dir: Path) -> contextlib.AbstractContextManager[None]:
    """One writer of `ALLOW_FILE` at a time."""
    return locked(lane_dir / ".allow.lock")
