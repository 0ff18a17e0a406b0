"""The sim's script language: which lines are steps and what each step does (docs/sim.md).

Split from `sim.agent` (which re-exports these names). Each step parses into an `Action`, a
function the run calls with the `Sim`, so parsing happens once, up front, and a typo is reported
before anything runs. Same import budget as the sim: standard library only, and not even `typing`
(hence the `TYPE_CHECKING = False` below, which mypy reads as true).
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Callable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Protocol

    class Sim(Protocol):
        """What a step may do to the running agent (`agent.Sim` is the one implementation); a
        protocol, so this module never imports the agent module that imports it."""

        cwd: Path
        last_answer: str | None

        def emit(self, line: str) -> None: ...
        def print_lines(self, count: int, rate: float | None, text: str) -> None: ...
        def write(self, rel: str, text: str, mode: str) -> None: ...
        def burn(self, seconds: float, procs: int) -> None: ...
        def alloc(self, mib: int, step: int, every: float, hold: float) -> None: ...
        def fork_bomb(self, count: int, hold: float) -> None: ...
        def touch(self, seconds: float, every: float) -> None: ...
        def spawn_setsid(self, seconds: float) -> None: ...
        def ask(self, question: str, flags: list[str], yes_no: bool) -> None: ...
        def echo_input(self, seconds: float) -> None: ...
        def usage(self, tokens_in: int, tokens_out: int, cost: float) -> None: ...

__all__ = [
    "ALLOC_MAX_MIB",
    "BURN_MAX_PROCS",
    "CONFIG_ERROR",
    "ECHO_DEFAULT_S",
    "FORK_MAX",
    "OUT_OF_BUDGET",
    "RATE_LIMITED",
    "STEP_WORDS",
    "Action",
    "ScriptError",
    "SimExit",
    "parse_script",
    "parse_step",
]

OUT_OF_BUDGET = "SIM-OUT-OF-BUDGET: You've hit your usage limit"
CONFIG_ERROR = "SIM-CONFIG-ERROR: Unknown Model, please check the model code"
RATE_LIMITED = "SIM-RATE-LIMITED: 429 Too Many Requests"

# Bounds of the resource steps (`alloc`, `fork-bomb`, `burn --procs`): they exist for the governor's
# tests of per-lane caps, and a typo must not take the machine down with the lane.
ALLOC_MAX_MIB = 65536
FORK_MAX = 100_000
BURN_MAX_PROCS = 64
#: How long `echo-input` listens when no time is given: bounded, so a forgotten lane still ends.
ECHO_DEFAULT_S = 60.0

Action = Callable[["Sim"], None]


class ScriptError(ValueError):
    """A line that starts with a step word but whose arguments do not parse."""


class SimExit(Exception):
    """Ends the run with an exit code; raised by `exit`, the error steps and refusals."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code



# --- parsing --------------------------------------------------------------------------------------


def _number(word: str, value: str, *, whole: bool = False, positive: bool = False,
            most: float | None = None) -> float:
    try:
        num = int(value) if whole else float(value)
    except ValueError:
        raise ScriptError(f"{word}: {value!r} is not a {'whole ' if whole else ''}number") from None
    if (num < 0 or (positive and num == 0) or num != num or num == float("inf")
            or (most is not None and num > most)):
        raise ScriptError(f"{word}: {value!r} is out of range")
    return num


def _options(word: str, args: list[str], known: dict[str, bool]) -> tuple[dict[str, str], list[str]]:
    """Split `--name value` / `--name=value` / `--flag` options (names in `known`) from the rest."""
    opts: dict[str, str] = {}
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if name in known:
            if known[name] and not eq:
                if i + 1 >= len(args):
                    raise ScriptError(f"{word}: {name} needs a value")
                i += 1
                value = args[i]
            elif not known[name] and eq:
                raise ScriptError(f"{word}: {name} takes no value")
            opts[name] = value
        elif arg.startswith("--"):
            raise ScriptError(f"{word}: unknown option {arg}")
        else:
            rest.append(arg)
        i += 1
    return opts, rest


def _count(word: str, args: list[str], lo: int, hi: int | None = None) -> None:
    if len(args) < lo or (hi is not None and len(args) > hi):
        need = f"{lo}" if hi == lo else f"{lo}+" if hi is None else f"{lo}-{hi}"
        raise ScriptError(f"{word}: expects {need} argument(s), got {len(args)}")


def _parse_print(args: list[str]) -> Action:
    opts, rest = _options("print", args, {"--rate": True, "--text": True})
    _count("print", rest, 1, 1)
    count = int(_number("print", rest[0], whole=True))
    rate = _number("print", opts["--rate"], positive=True) if "--rate" in opts else None
    text = opts.get("--text", "simulated output")
    return lambda sim: sim.print_lines(count, rate, text)


def _parse_alloc(args: list[str]) -> Action:
    opts, rest = _options("alloc", args, {"--step": True, "--every": True, "--hold": True})
    _count("alloc", rest, 1, 1)
    mib = int(_number("alloc", rest[0], whole=True, positive=True, most=ALLOC_MAX_MIB))
    step = int(_number("alloc", opts.get("--step", "16"), whole=True, positive=True, most=ALLOC_MAX_MIB))
    every = _number("alloc", opts.get("--every", "0.05"))
    hold = _number("alloc", opts.get("--hold", "0"))
    return lambda sim: sim.alloc(mib, step, every, hold)


def _parse_fork_bomb(args: list[str]) -> Action:
    opts, rest = _options("fork-bomb", args, {"--hold": True})
    _count("fork-bomb", rest, 1, 1)
    count = int(_number("fork-bomb", rest[0], whole=True, positive=True, most=FORK_MAX))
    hold = _number("fork-bomb", opts.get("--hold", "30"))
    return lambda sim: sim.fork_bomb(count, hold)


def _parse_burn(args: list[str]) -> Action:
    opts, rest = _options("burn", args, {"--procs": True})
    _count("burn", rest, 1, 1)
    secs = _number("burn", rest[0])
    procs = int(_number("burn", opts.get("--procs", "1"), whole=True, positive=True, most=BURN_MAX_PROCS))
    return lambda sim: sim.burn(secs, procs)


def _parse_ask(args: list[str]) -> Action:
    opts, rest = _options("ask", args, {"--yes-no": False, "--choice": True, "--text": False,
                                        "--default": True, "--timeout": True})
    _count("ask", rest, 1)
    kinds = [k for k in ("--yes-no", "--choice", "--text") if k in opts]
    if len(kinds) > 1:
        raise ScriptError("ask: give one of --yes-no, --choice, --text")
    kind = kinds[0] if kinds else "--yes-no"
    flags: list[str] = [kind, opts["--choice"]] if kind == "--choice" else [kind]
    if "--default" in opts:
        flags += ["--default", opts["--default"]]
    if "--timeout" in opts:
        _number("ask", opts["--timeout"])
        flags += ["--timeout", opts["--timeout"]]
    question = " ".join(rest)
    return lambda sim: sim.ask(question, flags, kind == "--yes-no")


def _parse_if(args: list[str]) -> Action:
    _count("if", args, 2)
    expected = args[0].casefold()
    then = parse_step(args[1:])
    if then is None:
        raise ScriptError(f"if: {args[1]!r} is not a step")

    def run(sim: Sim) -> None:
        if sim.last_answer is not None and sim.last_answer.casefold() == expected:
            then(sim)

    return run


def _exit_with(code: int, line: str | None = None) -> Action:
    def run(sim: Sim) -> None:
        if line is not None:
            sim.emit(line)
        raise SimExit(code)

    return run


def _parse_simple(word: str, args: list[str]) -> Action:
    if word == "say":
        text = " ".join(args)
        return lambda sim: sim.emit(text)
    if word in ("write", "append"):
        _count(word, args, 1)
        path, text, mode = args[0], " ".join(args[1:]), "w" if word == "write" else "a"
        return lambda sim: sim.write(path, text, mode)
    if word in ("sleep", "spawn-setsid"):
        _count(word, args, 1, 1)
        secs = _number(word, args[0])
        return (lambda sim: time.sleep(secs)) if word == "sleep" else (lambda sim: sim.spawn_setsid(secs))
    if word == "touch":
        opts, rest = _options(word, args, {"--every": True})
        _count(word, rest, 1, 1)
        secs = _number(word, rest[0])
        every = _number(word, opts.get("--every", "1"), positive=True)
        return lambda sim: sim.touch(secs, every)
    if word in ("out-of-budget", "config-error", "rate-limited"):
        default = {"out-of-budget": OUT_OF_BUDGET, "config-error": CONFIG_ERROR}.get(word, RATE_LIMITED)
        return _exit_with(1, " ".join(args) or default)
    if word == "exit":
        _count(word, args, 1, 1)
        return _exit_with(int(_number(word, args[0], whole=True)))
    if word == "echo-input":
        _count(word, args, 0, 1)
        secs = _number(word, args[0], positive=True) if args else ECHO_DEFAULT_S
        return lambda sim: sim.echo_input(secs)
    if word == "usage":
        _count(word, args, 3, 3)
        tokens_in, tokens_out = (int(_number(word, a, whole=True)) for a in args[:2])
        cost = _number(word, args[2].removeprefix("$"), most=1e6)
        return lambda sim: sim.usage(tokens_in, tokens_out, cost)
    if word == "env":
        _count(word, args, 1, 1)
        name = args[0]
        return lambda sim: sim.emit(_env_line(name))
    # fail-if-exists: a read-only check, so an absolute path (outside the lane) is allowed.
    _count(word, args, 1, 1)
    probe = args[0]

    def run(sim: Sim) -> None:
        if (sim.cwd / probe).exists():
            raise SimExit(3)

    return run


def _env_line(name: str) -> str:
    """`NAME=value`, or `NAME is not set`: a test can tell an empty value from a dropped variable."""
    value = os.environ.get(name)
    return f"{name} is not set" if value is None else f"{name}={value}"


STEP_WORDS = frozenset(("print", "say", "write", "append", "sleep", "burn", "touch", "spawn-setsid", "ask",
                        "if", "out-of-budget", "config-error", "rate-limited", "exit", "env", "fail-if-exists", "alloc",
                        "fork-bomb", "echo-input", "usage"))

_PARSERS: dict[str, Callable[[list[str]], Action]] = {
    "print": _parse_print, "ask": _parse_ask, "if": _parse_if, "alloc": _parse_alloc,
    "fork-bomb": _parse_fork_bomb, "burn": _parse_burn,
}


def parse_step(words: list[str]) -> Action | None:
    """The action for one step's words, None when the first word is not a step word."""
    word, args = words[0], words[1:]
    if word not in STEP_WORDS:
        return None
    parser = _PARSERS.get(word)
    return parser(args) if parser is not None else _parse_simple(word, args)


def parse_script(text: str) -> tuple[list[tuple[int, Action]], list[str]]:
    """Steps as (line number, action), and notes about lines that looked like steps but were not."""
    steps: list[tuple[int, Action]] = []
    notes: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        first = raw.split(None, 1)[0] if raw.strip() else ""
        if first not in STEP_WORDS:
            continue  # prose, a blank line or a comment: only an exact step word opens a step
        try:
            action = parse_step(shlex.split(raw, comments=True))
        except (ScriptError, ValueError) as exc:
            notes.append(f"sim: line {number} is not a valid step ({exc}); treated as prompt text")
            continue
        if action is not None:
            steps.append((number, action))
    return steps, notes
