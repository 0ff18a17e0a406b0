"""The prompt preamble: the short contract every agent's prompt is wrapped in (issue 10, item 7).

An agent does not know it is one of several lanes on one machine, that the lead reviews and merges
its work, or that `lanes-tui lock` and `lanes-tui ask` exist; the preamble tells it, plus the
repository's own `.lanes/rules.md` when there is one. `run --raw` sends the lead's prompt alone.

The lane record keeps the prompt as the lead wrote it (status, recover and findings read it): the
supervisor wraps it only on the way to the agent, with `agent_prompt`, a pure function. The supervisor
passes the lane's caps in (`lanes.caps.lane_caps`, the run's wall-clock limit), and the preamble says
them in numbers: an agent that knows it has 2 CPUs and 4 GiB runs its tests with 2 workers instead of
finding out by being stopped. Only the caps that are set are named.

The sim reads its prompt as a script (docs/sim.md), so no preamble line may start with a step word:
every line below starts with `#`, `-` or a word that is not one (a test parses it with the sim's
parser and finds no step), and each line of the rules is quoted with `> ` for the same reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lanes_tui.engine.core.text_file import read_text_file

if TYPE_CHECKING:  # read only for its fields: the preamble stays a leaf module
    from lanes_tui.engine.lanes.caps import LaneCaps

__all__ = ["MAX_RULES_BYTES", "PREAMBLE", "RULES_FILE", "agent_prompt", "limits_line", "read_rules"]

#: Where a repository keeps the rules every agent gets (next to `.lanes/config.toml`).
RULES_FILE = Path(".lanes") / "rules.md"
#: Rules go into every prompt of every lane: a file larger than this is a mistake, not rules.
MAX_RULES_BYTES = 64 * 1024

PREAMBLE = """\
# Working in this lane (lanes-tui)
You are one of several agents the lead runs at once, each in its own git worktree.
- Work only in this worktree (your current directory) and only on the task below.
- Do not commit, push or open pull requests: the lead reviews your changes and merges them.
- Never use --no-verify, or any other way around hooks and checks.
- Never read .env files or other secrets (keys, tokens, credentials), and never print a secret.
- Only foreground commands: leave no background process, daemon or dev server running when you finish.
- Run heavy commands (test suites, builds) through `lanes-tui lock -- CMD`, so lanes take turns with the machine.
- To ask the lead, run `lanes-tui ask "QUESTION"` (add --yes-no for a yes/no question) and wait for the answer.
- Finish with a summary of what you changed and what is left to do.
"""

RULES_HEADING = "# Rules of this repository (.lanes/rules.md)"
TASK_HEADING = "# Your task"


def agent_prompt(prompt: str, rules: str | None, raw: bool, caps: LaneCaps | None = None,
                 timeout_s: float = 0) -> str:
    """What the agent receives: the preamble (with the lane's `caps` and wall-clock `timeout_s` in
    numbers, when given), the rules (quoted) and the lead's prompt; or, raw, the prompt alone."""
    if raw:
        return prompt
    limits = limits_line(caps, timeout_s)
    parts = [PREAMBLE + (f"{limits}\n" if limits else "")]
    if rules is not None and rules.strip():
        quoted = "\n".join(f"> {line}".rstrip() for line in rules.strip("\n").splitlines())
        parts.append(f"{RULES_HEADING}\n{quoted}\n")
    parts.append(f"{TASK_HEADING}\n{prompt}")
    return "\n".join(parts)


def limits_line(caps: LaneCaps | None, timeout_s: float = 0) -> str | None:
    """`- Your limits: 2 CPUs, 4 GiB memory, 256 processes, 60 min.` — the caps that are set (0: off), or None."""
    parts = []
    if caps is not None and caps.cpu:
        cpus = round(caps.cpu / 100, 2)
        parts.append(f"{cpus:g} CPU{'s' * (cpus != 1)}")
    if caps is not None and caps.memory:
        gib = caps.memory / (1 << 30)
        parts.append(f"{round(gib, 1):g} GiB memory" if gib >= 1 else f"{caps.memory / (1 << 20):.0f} MiB memory")
    if caps is not None and caps.pids:
        parts.append(f"{caps.pids} processes")
    if timeout_s > 0:
        parts.append(f"{round(timeout_s / 60, 1):g} min" if timeout_s >= 120 else f"{timeout_s:.0f} s")
    return f"- Your limits: {', '.join(parts)}." if parts else None


def read_rules(repo: Path) -> str | None:
    """`.lanes/rules.md` of the lead's checkout, None when there is none; LanesError when unusable.

    Read from the lead's checkout, not the lane's worktree, so an agent cannot rewrite the rules the
    next attempt gets. Over MAX_RULES_BYTES, not UTF-8 or with NUL bytes is one line with its fix.
    """
    return read_text_file(repo / RULES_FILE, MAX_RULES_BYTES, "the rules file",
                          too_large="shorten it: every lane's prompt carries it whole",
                          unreadable="make it a readable text file, or remove it")
