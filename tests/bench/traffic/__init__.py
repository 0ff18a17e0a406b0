"""Real agent traffic for the benchmarks: the recordings of this folder and the provider that replays them.

A benchmark's `--traffic NAME[@RATE]` runs its lanes on the real CLI's preset (`claude`, `codex`,
`gemini`: its channel, patterns, environment and fence as shipped) with the preset's argv swapped for
`tests/bench/replay_agent.py --recording NAME`, which prints `NAME.jsonl` as the sim would print its
lines (same prompt, same `print N --rate R`); `@RATE` plays it at RATE lines a second whatever the
benchmark's script says. `plain` (the default) leaves the sim in place. How the recordings were made:
README.md here.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPLAY_AGENT = HERE.parent / "replay_agent.py"
#: The choices of every benchmark's `--traffic`; a rate may follow (`claude@2`).
TRAFFICS = ("plain", "claude", "codex", "gemini")
#: Each recording's channel, as its preset has it (`engine/config/providers.py`).
CHANNELS = {"claude": "claude-stream-json", "codex": "codex-json", "gemini": "gemini-stream-json"}


def parse(value: str) -> tuple[str, float | None]:
    """`claude@2` → ("claude", 2.0); `codex` → ("codex", None); raises ValueError for anything else."""
    name, _, rate = value.partition("@")
    if name not in TRAFFICS or (rate and name == "plain"):
        raise ValueError(f"--traffic must be one of {', '.join(TRAFFICS)} (a real one may take @LINES_PER_S), "
                         f"not {value!r}")
    return name, (float(rate) if rate else None)


def check(value: str) -> str:
    """An argparse `type`: the value, checked."""
    import argparse

    try:
        parse(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    return value


def provider(traffic: str) -> str:
    """The provider the lanes' chain names: the sim for `plain`, else the real CLI's preset."""
    return parse(traffic)[0] if parse(traffic)[0] != "plain" else "sim"


def argv(traffic: str, *, prompt_placeholder: bool = True) -> list[str]:
    """The replay agent's argv for `traffic` (not `plain`), with the prompt where the preset puts it
    (`prompt_placeholder`; a caller that passes `--prompt` itself says False)."""
    name, rate = parse(traffic)
    args = [sys.executable, str(REPLAY_AGENT), "--recording", name]
    if rate is not None:
        args += ["--rate", f"{rate:g}"]
    if name == "gemini" and prompt_placeholder:
        args += ["--prompt", "{prompt}"]  # the gemini preset passes the prompt as an argument
    return args


def provider_toml(traffic: str, max_lanes: int) -> str:
    """The `[providers.NAME]` table of a bench config: the preset's argv swapped for the replay, or the
    sim's capacity for `plain`."""
    name = provider(traffic)
    if name == "sim":
        return f"[providers.sim]\nmax = {max_lanes}\n"
    return f"[providers.{name}]\nmax = {max_lanes}\nargv = {json.dumps(argv(traffic))}\n"


def is_agent(cmdline: str) -> bool:
    """Whether a process's command line is a benchmark's fake agent (the sim or the replay)."""
    return "lanes_tui.engine.sim" in cmdline or REPLAY_AGENT.name in cmdline
