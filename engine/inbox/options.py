"""A question's options built and an answer normalised against them: the asking and answering sides'
one rule for what a yes/no, permission, choice or text question offers and takes (INBOX.md)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.inbox.files import (
    MAX_LABEL,
    MAX_OPTIONS,
    MAX_VALUE_BYTES,
    NO_WORDS,
    OPTION_ID_RE,
    YES_WORDS,
    Option,
)


def build_options(kind: str, options: Sequence[str | Option]) -> tuple[Option, ...]:
    """The options a question offers; yes/no and permission questions always offer exactly yes and no."""
    if kind in ("yesno", "permission"):
        if options:
            raise LanesError(f"a {kind} question takes no options", "its answers are always yes and no")
        labels = ("Allow", "Deny") if kind == "permission" else ("Yes", "No")
        return (Option("yes", labels[0]), Option("no", labels[1]))
    if kind == "text":
        if options:
            raise LanesError("a text question takes no options", "drop the options or ask a choice question")
        return ()
    if not options:
        raise LanesError("a choice question needs at least one option", "pass the options, e.g. a,b")
    if len(options) > MAX_OPTIONS:
        raise LanesError(f"{len(options)} options are too many", f"offer at most {MAX_OPTIONS}")
    built: list[Option] = []
    seen: set[str] = set()
    for index, item in enumerate(options, start=1):
        if isinstance(item, Option):
            option = item
            if not OPTION_ID_RE.match(option.id):
                raise LanesError(f"invalid option id {option.id!r}", "use 1-64 letters, digits, '_.:-'")
            if option.id in seen:
                raise LanesError(f"option id {option.id!r} is given twice", "give each option its own id")
        else:
            label = item.strip()
            base = label if OPTION_ID_RE.match(label) else re.sub(r"[^A-Za-z0-9_.:-]+", "-", label).strip("-")
            base = base[:60] or str(index)
            oid, n = base, 2
            while oid in seen:
                oid, n = f"{base}-{n}", n + 1
            option = Option(oid, label)
        if not option.label.strip() or len(option.label) > MAX_LABEL:
            raise LanesError(f"option label {option.label[:40]!r} is empty or too long",
                             f"use 1-{MAX_LABEL} characters")
        seen.add(option.id)
        built.append(option)
    return tuple(built)


def normalise_value(kind: str, options: Sequence[Option], value: str) -> str:
    """The canonical answer: `yes`/`no`, an option id, or the text; LanesError naming the valid ones."""
    if not isinstance(value, str):
        raise LanesError(f"answer {value!r} is not text", "give the answer as a string")
    word = value.strip()
    if kind in ("yesno", "permission"):
        if word.lower() in YES_WORDS:
            return "yes"
        if word.lower() in NO_WORDS:
            return "no"
        raise LanesError(f"{value[:40]!r} is not an answer to a {kind} question",
                         "answer yes or no (also y/n, allow/deny, true/false)")
    if kind == "choice":
        for option in options:
            if option.id == word:
                return option.id
        for option in options:
            if option.id.lower() == word.lower() or option.label.strip().lower() == word.lower():
                return option.id
        valid = ", ".join(o.id if o.id == o.label else f"{o.id} ({o.label})" for o in options)
        raise LanesError(f"{value[:40]!r} is not one of the options", f"answer one of: {valid}")
    if not word:
        raise LanesError("an empty answer", "type some text")
    if len(value.encode("utf-8", "surrogatepass")) > MAX_VALUE_BYTES:
        raise LanesError("the answer is too long", f"keep it under {MAX_VALUE_BYTES} bytes")
    return value
