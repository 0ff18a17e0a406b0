"""The simulated agent: a real process that follows a small script, for the demo, tests and benchmarks.

Run as ``python -m lanes_tui.engine.sim`` with the script on stdin, ``--script FILE`` or
``--prompt TEXT``. One step a line; a line is a step only when its first word is exactly one of
the step words below *and* its arguments parse, so prose in a prompt ("print the results", "Say
hi", "exit status 1 means…") is never mistaken for a step. A line that starts with a step word but
does not parse is treated as prompt text and noted on stderr, so a typo in a script is visible.
``#`` starts a comment. See ``docs/sim.md`` for the steps.

Import cost matters: benchmarks start a hundred of these, so only the standard library is used and
``subprocess``/``json``/``shutil`` are imported only by the steps that need them.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

OUT_OF_BUDGET = "SIM-OUT-OF-BUDGET: You've hit your usage limit"
CONFIG_ERROR = "SIM-CONFIG-ERROR: Unknown Model, please check the model code"
ASK_CMD_ENV = "LANES_TUI_ASK_CMD"
ACTIVITY_DIR = ".sim-activity"
_CHUNK = 64 * 1024

Action = Callable[["Sim"], None]


class ScriptError(ValueError):
    """A line that starts with a step word but whose arguments do not parse."""


class SimExit(Exception):
    """Ends the run with an exit code; raised by `exit`, the error steps and refusals."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class Sim:
    """The running agent: its worktree, output stream and the answer `if` compares against."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd.resolve()
        self.out = sys.stdout.buffer
        self.last_answer: str | None = None
        self.touches = 0
        self.children: list[object] = []  # keeps spawned Popen objects alive; never waited

    def emit(self, line: str) -> None:
        self.out.write(line.encode("utf-8", "surrogateescape") + b"\n")
        self.out.flush()

    def print_lines(self, count: int, rate: float | None, text: str) -> None:
        if rate is None:
            # As fast as the pipe takes it: one write per 64 KiB, not per line, so the throughput
            # benchmark measures the supervisor rather than this process's syscalls.
            buf: list[bytes] = []
            size = 0
            for i in range(1, count + 1):
                chunk = f"line {i}: {text}\n".encode("utf-8", "surrogateescape")
                buf.append(chunk)
                size += len(chunk)
                if size >= _CHUNK:
                    self.out.write(b"".join(buf))
                    self.out.flush()
                    buf, size = [], 0
            self.out.write(b"".join(buf))
            self.out.flush()
            return
        start = time.monotonic()
        for i in range(1, count + 1):
            delay = start + (i - 1) / rate - time.monotonic()  # scheduled, so no drift
            if delay > 0:
                time.sleep(delay)
            self.emit(f"line {i}: {text}")

    def inside(self, rel: str) -> Path:
        """The path under the worktree, or exit 2: an agent must not write outside its lane."""
        target = (self.cwd / rel).resolve()
        if os.path.isabs(rel) or not target.is_relative_to(self.cwd):
            sys.stderr.write(f"sim: refusing to write outside the worktree: {rel}\n")
            raise SimExit(2)
        return target

    def write(self, rel: str, text: str, mode: str) -> None:
        target = self.inside(rel)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, mode, encoding="utf-8") as fh:
                fh.write(text + "\n")
        except OSError as exc:
            sys.stderr.write(f"sim: cannot write {rel}: {exc}\n")
            raise SimExit(2) from exc

    def burn(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        n = 0
        while time.monotonic() < end:
            for _ in range(10_000):
                n += 1

    def touch(self, seconds: float, every: float) -> None:
        """Rewrite one file every `every` seconds: file activity with no output, for the watchdog."""
        self.touches += 1
        folder = self.cwd / ACTIVITY_DIR
        folder.mkdir(exist_ok=True)
        ignore = folder / ".gitignore"
        if not ignore.exists():  # keeps the activity files out of the lane's commit
            ignore.write_text("*\n", encoding="utf-8")
        target = folder / f"{self.touches}.txt"
        start = time.monotonic()
        end = start + seconds
        tick = 0
        while True:
            target.write_text(f"{tick} {time.time():.3f}\n", encoding="utf-8")
            tick += 1
            due = start + tick * every
            if due >= end:
                break
            time.sleep(max(0.0, due - time.monotonic()))
        time.sleep(max(0.0, end - time.monotonic()))

    def spawn_setsid(self, seconds: float) -> None:
        import subprocess

        code = "import sys, time; time.sleep(float(sys.argv[1]))"
        child = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", code, repr(seconds)],
            start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        self.children.append(child)
        self.emit(f"sim: spawned setsid child {child.pid}")

    def ask(self, question: str, flags: list[str], yes_no: bool) -> None:
        import subprocess

        try:
            argv = [*ask_command(), question, *flags]
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
                                  check=False)
        except (OSError, ValueError) as exc:
            sys.stderr.write(f"sim: cannot run the ask helper: {exc}\n")
            answer = "error"
        else:
            if done.returncode in (3, 4):
                answer = "none"
            elif yes_no and done.returncode in (0, 1):
                answer = "yes" if done.returncode == 0 else "no"
            elif not yes_no and done.returncode == 0:
                answer = done.stdout.strip()
            else:
                sys.stderr.write(f"sim: the ask helper exited with {done.returncode}\n")
                answer = "error"
        self.last_answer = answer
        self.emit(f'sim: asked "{question}" -> {answer}')


def ask_command() -> list[str]:
    """`lanes-tui ask` as an argv prefix; the question and flags are appended to it.

    ``LANES_TUI_ASK_CMD`` (a JSON list) replaces the whole prefix, ``ask`` included. Otherwise
    ``lanes-tui`` on PATH, then the one next to this interpreter (a venv that is not on PATH).
    """
    raw = os.environ.get(ASK_CMD_ENV)
    if raw:
        import json

        cmd = json.loads(raw)
        if not isinstance(cmd, list) or not cmd or not all(isinstance(a, str) for a in cmd):
            raise ValueError(f"{ASK_CMD_ENV} must be a JSON list of strings")
        return cmd
    import shutil

    found = shutil.which("lanes-tui")
    if found is None:
        sibling = Path(sys.executable).with_name("lanes-tui")
        if not os.access(sibling, os.X_OK):
            raise ValueError("lanes-tui is not on PATH")
        found = str(sibling)
    return [found, "ask"]


# --- parsing --------------------------------------------------------------------------------------


def _number(word: str, value: str, *, whole: bool = False, positive: bool = False) -> float:
    try:
        num = int(value) if whole else float(value)
    except ValueError:
        raise ScriptError(f"{word}: {value!r} is not a {'whole ' if whole else ''}number") from None
    if num < 0 or (positive and num == 0) or num != num or num == float("inf"):
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
    if word in ("sleep", "burn", "spawn-setsid"):
        _count(word, args, 1, 1)
        secs = _number(word, args[0])
        if word == "sleep":
            return lambda sim: time.sleep(secs)
        return (lambda sim: sim.burn(secs)) if word == "burn" else (lambda sim: sim.spawn_setsid(secs))
    if word == "touch":
        opts, rest = _options(word, args, {"--every": True})
        _count(word, rest, 1, 1)
        secs = _number(word, rest[0])
        every = _number(word, opts.get("--every", "1"), positive=True)
        return lambda sim: sim.touch(secs, every)
    if word in ("out-of-budget", "config-error"):
        default = OUT_OF_BUDGET if word == "out-of-budget" else CONFIG_ERROR
        return _exit_with(1, " ".join(args) or default)
    if word == "exit":
        _count(word, args, 1, 1)
        return _exit_with(int(_number(word, args[0], whole=True)))
    if word == "env":
        _count(word, args, 1, 1)
        name = args[0]
        return lambda sim: sim.emit(f"{name}={os.environ.get(name, '<unset>')}")
    # fail-if-exists: a read-only check, so an absolute path (outside the lane) is allowed.
    _count(word, args, 1, 1)
    probe = args[0]

    def run(sim: Sim) -> None:
        if (sim.cwd / probe).exists():
            raise SimExit(3)

    return run


STEP_WORDS = frozenset(("print", "say", "write", "append", "sleep", "burn", "touch", "spawn-setsid", "ask",
                        "if", "out-of-budget", "config-error", "exit", "env", "fail-if-exists"))


def parse_step(words: list[str]) -> Action | None:
    """The action for one step's words, None when the first word is not a step word."""
    word, args = words[0], words[1:]
    if word not in STEP_WORDS:
        return None
    if word == "print":
        return _parse_print(args)
    if word == "ask":
        return _parse_ask(args)
    if word == "if":
        return _parse_if(args)
    return _parse_simple(word, args)


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


# --- entry point ----------------------------------------------------------------------------------

USAGE = "usage: python -m lanes_tui.engine.sim [--script FILE | --prompt TEXT]  (default: script on stdin)"


def _read_prompt(argv: list[str]) -> str:
    if not argv:
        return sys.stdin.buffer.read().decode("utf-8", "replace") if sys.stdin is not None else ""
    name, eq, value = argv[0].partition("=")
    if not eq and len(argv) == 2:
        value = argv[1]
    elif not eq or len(argv) != 1:
        name = ""
    if name == "--prompt":
        return value
    if name == "--script":
        try:
            return Path(value).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise ScriptError(f"cannot read the script: {exc}") from exc
    raise ScriptError(USAGE)


def run(text: str, sim: Sim) -> int:
    """Run a script and return the exit code."""
    steps, notes = parse_script(text)
    for note in notes:
        sys.stderr.write(note + "\n")
    sim.emit(f"sim: reading prompt ({len(text.splitlines())} lines)")
    try:
        for _line, action in steps:
            action(sim)
    except SimExit as stop:
        return stop.code
    sim.emit("sim: done")
    return 0


def main(argv: list[str] | None = None) -> int:
    # An inherited "ignore" would make the supervisor wait for its escalation to SIGKILL.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-h", "--help"):
        print(USAGE + "\nSteps: see docs/sim.md")
        return 0
    try:
        return run(_read_prompt(args), Sim(Path.cwd()))
    except ScriptError as exc:
        sys.stderr.write(f"sim: {exc}\n")
        return 2
    except BrokenPipeError:
        # The reader went away: leave quietly, and point stdout at /dev/null so the interpreter's
        # final flush does not print a second BrokenPipeError.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
