"""The simulated agent: a real process that follows a small script, for the demo, tests and benchmarks.

Run as ``python -m lanes_tui.engine.sim`` with the script on stdin, ``--script FILE`` or
``--prompt TEXT``. One step a line; a line is a step only when its first word is exactly one of
the step words below *and* its arguments parse, so prose in a prompt ("print the results", "Say
hi", "exit status 1 means…") is never mistaken for a step. A line that starts with a step word but
does not parse is treated as prompt text and noted on stderr, so a typo in a script is visible.
``#`` starts a comment. See ``docs/sim.md`` for the steps.

Import cost matters: benchmarks start a hundred of these, so only the standard library is used and
``subprocess``/``json``/``shutil`` are imported only by the steps that need them. The script parser
lives in `sim.script`; its names are re-exported here.

A prompt that opens with the review marker (the engine's review prompt) runs no steps: the sim
reviews the prompt's diff instead (`sim.review`, docs/sim.md#review-mode).

The resource steps (``alloc``, ``fork-bomb``, ``burn --procs``) exist for the governor's tests of
per-lane caps. Their forked children run `_child` and nothing else: stdio on /dev/null, the work,
then ``os._exit``, so a child never runs the rest of the script nor flushes the parent's buffers.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from lanes_tui.engine.sim.review import REVIEW_MARKER, is_review_request, review
from lanes_tui.engine.sim.script import (
    CONFIG_ERROR,
    OUT_OF_BUDGET,
    STEP_WORDS,
    Action,
    ScriptError,
    SimExit,
    parse_script,
    parse_step,
)

TYPE_CHECKING = False  # not `typing` at run time: the import budget above (mypy reads this as true)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn

__all__ = [
    "ACTIVITY_DIR", "ASK_CMD_ENV", "CONFIG_ERROR", "OUT_OF_BUDGET", "REVIEW_MARKER", "STEP_WORDS", "USAGE", "Action",
    "ScriptError", "Sim", "SimExit", "ask_command", "main", "parse_script", "parse_step", "run",
]

ASK_CMD_ENV = "LANES_TUI_ASK_CMD"
ACTIVITY_DIR = ".sim-activity"
_CHUNK = 64 * 1024
_MIB = 1024 * 1024
_PAGE = 4096


def _money(value: float) -> str:
    """Dollars as aider prints them (`0.04`), with up to six places when a cent is too coarse."""
    text = f"{value:.6f}".rstrip("0")
    return text + "0" * max(0, 2 - len(text.partition(".")[2]))


class Sim:
    """The running agent: its worktree, output stream and the answer `if` compares against."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd.resolve()
        self.out = sys.stdout.buffer
        self.last_answer: str | None = None
        self.touches = 0
        self.children: list[object] = []  # keeps spawned Popen objects alive; never waited
        self.session_cost = 0.0  # the `usage` steps' running total, as aider prints it

    def emit(self, line: str) -> None:
        self.out.write(line.encode("utf-8", "surrogateescape") + b"\n")
        self.out.flush()

    def usage(self, tokens_in: int, tokens_out: int, cost: float) -> None:
        """One aider-style meter line, so the `plain` channel (the sim provider's) reads real figures:
        the tokens are this message's (they add up), the session cost is the running total."""
        self.session_cost += cost
        self.emit(f"Tokens: {tokens_in} sent, {tokens_out} received. "
                  f"Cost: ${_money(cost)} message, ${_money(self.session_cost)} session.")

    def print_lines(self, count: int, rate: float | None, text: str) -> None:
        if rate is None:
            # As fast as the pipe takes it: one write per ~64 KiB, not per line, and the lines of a
            # write made by one join, so the throughput benchmark (B8) measures the supervisor
            # rather than this process's formatting or its syscalls.
            tail = f": {text}\n"
            per_write = max(1, _CHUNK // (len(tail.encode("utf-8", "surrogateescape")) + 12))
            for first in range(1, count + 1, per_write):
                block = "".join([f"line {i}{tail}" for i in range(first, min(count + 1, first + per_write))])
                self.out.write(block.encode("utf-8", "surrogateescape"))
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

    def burn(self, seconds: float, procs: int = 1) -> None:
        """Busy loops in `procs` processes (procs - 1 forked helpers and this one), then reap them."""
        end = time.monotonic() + seconds  # CLOCK_MONOTONIC is system-wide: the helpers share it
        helpers: list[int] = []
        if procs > 1:
            self.flush()
        for _ in range(procs - 1):
            try:
                pid = os.fork()
            except OSError as exc:
                sys.stderr.write(f"sim: burn started only {len(helpers)} of {procs - 1} helper processes: "
                                 f"{exc.strerror or exc}\n")
                sys.stderr.flush()
                break
            if pid == 0:
                _child(lambda: _spin(end))
            helpers.append(pid)
        _spin(end)
        for pid in helpers:
            os.waitpid(pid, 0)

    def flush(self) -> None:
        """Empty every stdio buffer before a fork, so a child has nothing of the parent's to write."""
        sys.stdout.flush()
        self.out.flush()
        sys.stderr.flush()

    def alloc(self, mib: int, step: int, every: float, hold: float) -> None:
        """Allocate `mib` MiB, `step` MiB every `every` seconds, every page touched; hold, then free."""
        held: list[bytearray] = []  # the references that keep the memory resident until the step ends
        done = 0
        start = time.monotonic()
        while done < mib:
            size = min(step, mib - done)
            try:
                block = bytearray(size * _MIB)
            except MemoryError:  # an address-space limit (a cgroup memory cap kills instead)
                self.emit(f"sim: alloc refused after {done} MiB: out of memory")
                break
            block[::_PAGE] = b"\x01" * len(range(0, len(block), _PAGE))  # resident, not just mapped
            held.append(block)
            done += size
            self.emit(f"sim: allocated {done} MiB")
            if done < mib:
                time.sleep(max(0.0, start + len(held) * every - time.monotonic()))  # scheduled, no drift
        time.sleep(hold)
        held.clear()

    def fork_bomb(self, count: int, hold: float) -> None:
        """Fork up to `count` children that sleep `hold` seconds; stop at the first refused fork.

        Not waited for: they stay in the sim's process group, which is what the supervisor kills.
        """
        self.flush()
        forked = 0
        while forked < count:
            try:
                pid = os.fork()
            except OSError as exc:  # EAGAIN from a pids cap (or RLIMIT_NPROC)
                self.emit(f"sim: fork refused after {forked} children: {exc.strerror or exc}")
                return
            if pid == 0:
                _child(lambda: time.sleep(hold))
            forked += 1
        self.emit(f"sim: forked {forked} children")

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

    def echo_input(self, seconds: float) -> None:
        """Print `echo: LINE` for each line read from stdin (a pipe, or the lane's terminal, where the
        lead types through `lanes-tui attach` or `send`) until EOF or `seconds` have passed."""
        import select

        self.emit(f"sim: echoing input for {seconds:g}s")
        end = time.monotonic() + seconds
        buf = b""
        while (left := end - time.monotonic()) > 0:
            try:
                ready, _, _ = select.select([0], [], [], left)
                chunk = os.read(0, 4096) if ready else b""
            except (OSError, ValueError):  # no stdin at all
                chunk = b""
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                self.emit("echo: " + line.rstrip(b"\r").decode("utf-8", "surrogateescape"))
        if buf.strip():
            self.emit("echo: " + buf.rstrip(b"\r").decode("utf-8", "surrogateescape"))
        self.emit("sim: input ended")

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


def _spin(end: float) -> None:
    n = 0
    while time.monotonic() < end:
        for _ in range(10_000):
            n += 1


def _child(work: Callable[[], object]) -> NoReturn:
    """A forked child's whole life: stdio on /dev/null (so the supervisor's pipe reaches EOF when the
    sim exits, whatever its children do), `work`, then `os._exit`: never the rest of the script, never
    a flush of buffers inherited from the parent, never the parent's exit handlers."""
    code = 0
    try:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        work()
    except BaseException:  # a child reports nothing: its exit code is all
        code = 1
    finally:
        os._exit(code)


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
    """Run a script, or review a diff when the prompt is a review request; return the exit code."""
    if is_review_request(text):
        return review(text, sim.emit)
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
