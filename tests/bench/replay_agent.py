"""A fake agent that prints what a real agent CLI printed: a recording of `tests/bench/traffic/`, line for line.

    python tests/bench/replay_agent.py --recording claude|codex|gemini|PATH [--rate R] [--prompt TEXT]

The benchmarks' lanes run the sim (`print N --rate R`: N short plain lines). With `--traffic NAME` they run
this instead, as a provider whose channel is the real CLI's (`claude-stream-json`, `codex-json`,
`gemini-stream-json`, `tests.bench.traffic.provider_toml`), so the supervisor parses, logs and shows
the same bytes the real CLI would send it. It reads the same instructions as the sim, from the same
prompt, so every benchmark script works unchanged:

- `print N [--rate R]`: N lines of the recording, at R lines a second (scheduled, no drift), or as fast
  as the pipe takes them without a rate (64 KiB writes). The recording's first line (the session's
  start: Claude's `system/init`, codex's `thread.started`, gemini's `init`) comes first, once; its last
  line (the `result` / `turn.completed`) once at the end; the lines between repeat in their order, each
  with its recorded size (tool results of 15–48 KB among lines of 0.2–1 KB), its ids tagged with the
  loop's number after the first (`ID_FIELD`: a few bytes more).
- `sleep T`: print the first line, then nothing for T seconds (an idle agent).

`--rate R` on the command line replaces the prompt's rate: a benchmark's `--traffic claude@2` plays the
recording at 2 lines a second whatever its scripts say (see `tests/bench/traffic/README.md` for the
rates of the real CLIs). The prompt is `--prompt` (`--prompt {prompt}` in the argv of a preset whose
prompt is an argument, as gemini's), else stdin: a stream-json `user` line (Claude's channel keeps stdin
open) or all of stdin up to its end. Other arguments (the flags a channel adds) are ignored.
Standard library only, run as a file: a lane's agent sees no `tests` package on its path.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import time
from pathlib import Path

TRAFFIC = Path(__file__).resolve().parent / "traffic"
#: One write's worth of lines when there is no rate: as the sim, so B8 measures the supervisor.
CHUNK = 64 * 1024
#: The ids a conversation is keyed by (Claude's message, tool-use and line ids, codex's items, gemini's tool
#: ids): each loop past the first tags them (`msg_…` → `~2~msg_…`), so the channels and the conversation
#: view see new messages and calls, as from a CLI going on, not the same ones again (the view shows a
#: message it has seen once only).
ID_FIELD = re.compile(rb'("(?:id|uuid|tool_use_id|tool_id|call_id)":")')
TAG = re.compile(rb"~\d+~")


def recording_path(name: str) -> Path:
    """A recording by name (`claude` → `traffic/claude.jsonl`) or by path."""
    path = TRAFFIC / f"{name}.jsonl"
    return path if path.exists() else Path(name)


def load(path: Path) -> tuple[bytes, list[bytes], bytes]:
    """(first line, the lines between, last line), each with its newline."""
    lines = [line if line.endswith(b"\n") else line + b"\n" for line in path.read_bytes().splitlines(keepends=True)
             if line.strip()]
    if len(lines) < 3:
        raise SystemExit(f"replay_agent: {path} holds {len(lines)} lines; a recording needs at least 3")
    return lines[0], lines[1:-1], lines[-1]


def prompt_text(given: str | None) -> str:
    if given is not None:
        return given
    if sys.stdin is None or sys.stdin.isatty():
        return ""
    first = sys.stdin.buffer.readline()
    if first.lstrip().startswith(b"{"):
        try:
            message = json.loads(first)["message"]["content"]
            return "\n".join(part["text"] for part in message if part.get("type") == "text")
        except (ValueError, KeyError, TypeError):
            return ""
    return (first + sys.stdin.buffer.read()).decode("utf-8", "replace")


def steps(prompt: str) -> list[tuple[str, float, float | None]]:
    """The prompt's `print N [--rate R]` and `sleep T` lines, in order: (word, number, rate)."""
    found: list[tuple[str, float, float | None]] = []
    for line in prompt.splitlines():
        try:
            words = shlex.split(line)
        except ValueError:
            continue
        if len(words) >= 2 and words[0] == "sleep":
            found.append(("sleep", float(words[1]), None))
        elif len(words) >= 2 and words[0] == "print" and words[1].isdigit():
            rate = float(words[words.index("--rate") + 1]) if "--rate" in words[:-1] else None
            found.append(("print", float(words[1]), rate))
    return found


def line_at(body: list[bytes], index: int) -> bytes:
    """The `index`-th line the replay prints after the first: the body in a loop, its ids tagged by loop."""
    line = body[index % len(body)]
    loop = index // len(body)
    return ID_FIELD.sub(rb"\1~%d~" % loop, line) if loop else line


def untagged(line: bytes) -> bytes:
    """A printed line as it is in the recording."""
    return TAG.sub(b"", line) if b"~" in line else line


def play(body: list[bytes], count: int, rate: float | None, start_at: int, out: int) -> int:
    """Write `count` lines of `body` from index `start_at` on; the index to go on from."""
    index = start_at
    if rate is None or rate <= 0:
        block: list[bytes] = []
        size = 0
        for _ in range(count):
            line = line_at(body, index)
            index += 1
            block.append(line)
            size += len(line)
            if size >= CHUNK:
                _write(out, b"".join(block))
                block, size = [], 0
        if block:
            _write(out, b"".join(block))
        return index
    start = time.monotonic()
    for i in range(count):
        delay = start + i / rate - time.monotonic()  # scheduled, so no drift
        if delay > 0:
            time.sleep(delay)
        _write(out, line_at(body, index))
        index += 1
    return index


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="replay_agent.py", description=__doc__.splitlines()[0])
    parser.add_argument("--recording", required=True, help="claude, codex, gemini (tests/bench/traffic) or a path")
    parser.add_argument("--rate", type=float, default=None, help="lines a second, replacing the prompt's rate")
    parser.add_argument("--prompt", default=None, help="the instructions (else the arguments left, else stdin)")
    args, _ = parser.parse_known_args(argv)  # the flags a channel adds (Claude's `--input-format …`)
    first, body, last = load(recording_path(args.recording))
    plan = steps(prompt_text(args.prompt))
    out = sys.stdout.fileno()
    try:
        _write(out, first)
        index = 0
        for word, number, rate in plan:
            if word == "sleep":
                time.sleep(number)
            else:
                index = play(body, int(number), args.rate if args.rate is not None else rate, index, out)
        _write(out, last)
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
