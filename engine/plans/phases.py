"""Tasks from a plan file: `## Phase N` blocks, each a prompt of its own."""

from __future__ import annotations

import re
from pathlib import Path

from lanes_tui.engine.core.errors import LanesError

PHASE_RE = re.compile(r"^##\s+Phase\s+(\S+)\b.*$", re.MULTILINE | re.IGNORECASE)


def phase_prompt(plan_file: Path, phase: str) -> str:
    """The text of phase `phase` (heading included), up to the next phase heading."""
    try:
        text = plan_file.read_text(encoding="utf-8")
    except OSError as exc:
        raise LanesError(f"cannot read plan file {plan_file}: {exc.strerror}") from None
    heads = list(PHASE_RE.finditer(text))
    for index, head in enumerate(heads):
        if head.group(1).rstrip(":.") == str(phase):
            end = heads[index + 1].start() if index + 1 < len(heads) else len(text)
            return text[head.start():end].strip() + "\n"
    found = ", ".join(h.group(1).rstrip(":.") for h in heads) or "none"
    raise LanesError(f"plan {plan_file} has no '## Phase {phase}' block (phases found: {found})",
                     "pass one of the phases it has with --phase N")
