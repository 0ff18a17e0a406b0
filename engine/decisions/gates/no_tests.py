"""A gate step that ran no tests: recognised per test runner, so that zero tests is never a pass.

A test command exits 0 (or pytest's 5) when it finds nothing to run: a pytest project run with
`unittest`, a test folder without `__init__.py`, a `testMatch` that matches nothing. Counting that as
passed shows a lane as `ready` whose tests never ran, so `gates.run.run_step` asks `recognise` and fails
the step unless it may run nothing (`allow_no_tests`).

One function per runner, each reading only what that runner itself prints (or its exit code). A
recogniser returns the reason (`pytest exit 5`) only when the run was empty *and* its exit code is
the one that runner uses for an empty run, so a real failure is never relabelled. The ones that need
every line of the output ("every package said [no test files]") answer only when `complete`: a tail
cut from a long run could hold only its last, empty part (cargo's doc-tests after real unit tests).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["NOTE_ALLOWED", "NOTE_FAILED", "cargo_test", "go_test", "jest", "mocha", "pytest", "recognise",
           "runner_of", "unittest"]

#: The line the gate's output tail gets when a step ran nothing and may not.
NOTE_FAILED = ("[lanes-tui: no tests ran ({reason}); a test suite that runs nothing is not a pass: "
               "add tests, fix the collection, or set allow_no_tests = true]")
#: The line it gets when the step may (`allow_no_tests = true`).
NOTE_ALLOWED = "[lanes-tui: no tests ran ({reason}); passed because allow_no_tests = true]"

#: Programs that run the command after them (`uv run pytest`, `npx jest`): the runner is what follows.
_WRAPPERS = {"uv": 2, "poetry": 2, "pdm": 2, "pipenv": 2, "hatch": 2, "npx": 1}
_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")


def pytest(exit_code: int | None, output: str, complete: bool = True) -> str | None:
    """pytest exits 5 when it collected nothing (none found, all deselected): its own word for it."""
    return "pytest exit 5" if exit_code == 5 else None


_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in ", re.MULTILINE)


def unittest(exit_code: int | None, output: str, complete: bool = True) -> str | None:
    """`Ran 0 tests in 0.000s`: Python 3.11 then says `OK` and exits 0; 3.12+ says `NO TESTS RAN` and
    exits 5. The summary is the last thing unittest prints, so a tail holds it."""
    counts = _UNITTEST_RAN.findall(output)
    if counts and all(int(n) == 0 for n in counts) and exit_code in (0, 5):
        return "unittest: Ran 0 tests"
    return None


_GO_EMPTY = re.compile(r"^(\?\s+\S+\s+\[no test files\]|ok\s+\S+\s+.*\[no tests to run\])\s*$")
_GO_RAN = re.compile(r"^(ok\s+\S+|FAIL\b|--- (PASS|FAIL|SKIP))")


def go_test(exit_code: int | None, output: str, complete: bool = True) -> str | None:
    """`go test`: every package line is `?  pkg [no test files]` or `ok  pkg 0.01s [no tests to run]`,
    or go found no package at all (`no packages to test`)."""
    if not complete or exit_code not in (0, 1):
        return None
    lines = [line.rstrip() for line in output.splitlines()]
    if exit_code == 1:  # go's own refusal: nothing matched the pattern
        return "go test: no packages to test" if "no packages to test" in lines else None
    empty = [line for line in lines if _GO_EMPTY.match(line)]
    ran = [line for line in lines if _GO_RAN.match(line) and not _GO_EMPTY.match(line)]
    if "no packages to test" in lines and not ran:
        return "go test: no packages to test"
    return "go test: every package had no tests" if empty and not ran else None


_CARGO_RUNNING = re.compile(r"^running (\d+) tests?\s*$", re.MULTILINE)


def cargo_test(exit_code: int | None, output: str, complete: bool = True) -> str | None:
    """`cargo test`: each test binary and the doc-tests print `running N tests`; every N is 0."""
    counts = _CARGO_RUNNING.findall(output)
    if complete and exit_code == 0 and counts and all(int(n) == 0 for n in counts):
        return "cargo test: running 0 tests"
    return None


_JEST = re.compile(r"^No tests found, exiting with code (\d+)", re.MULTILINE)


def jest(exit_code: int | None, output: str, complete: bool = True) -> str | None:
    """jest says `No tests found, exiting with code 1` (0 with `--passWithNoTests`), and exits so."""
    found = _JEST.search(output)
    if found and exit_code in (0, 1):  # npm wraps it and exits 1 whatever jest's code was
        return "jest: No tests found"
    return None


_MOCHA_COUNT = re.compile(r"^\s*(\d+) (passing|failing|pending)\b", re.MULTILINE)
_MOCHA_NO_FILES = re.compile(r"^(Error: )?No test files found", re.MULTILINE)


def mocha(exit_code: int | None, output: str, complete: bool = True) -> str | None:
    """mocha's summary `0 passing (2ms)` with no other count, or `Error: No test files found` (exit 1)."""
    if _MOCHA_NO_FILES.search(output) and exit_code in (0, 1):
        return "mocha: No test files found"
    counts = _MOCHA_COUNT.findall(output)
    if complete and exit_code == 0 and counts and all(int(n) == 0 for n, _ in counts):
        return "mocha: 0 passing"
    return None


Recogniser = Callable[[int | None, str, bool], str | None]
_BY_RUNNER: dict[str, tuple[Recogniser, ...]] = {
    "pytest": (pytest,), "unittest": (unittest,), "go": (go_test,), "cargo": (cargo_test,),
    "jest": (jest,), "mocha": (mocha,), "npm": (jest, mocha),
}


def runner_of(argv: Sequence[str]) -> str | None:
    """Which runner a gate's argv starts: `pytest`, `unittest`, `go`, `cargo`, `jest`, `mocha`, `npm`
    (`npm test` / `yarn test` / `pnpm test`, whose output is jest's or mocha's), or None (`make test`,
    a script: its output could be any runner's, or several, so nothing is guessed)."""
    words = list(argv)
    while words and Path(words[0]).name in _WRAPPERS:
        words = words[_WRAPPERS[Path(words[0]).name]:]
    if not words:
        return None
    program = Path(words[0]).name
    if _PYTHON.match(program) and len(words) > 2 and words[1] == "-m":
        program = words[2]
    if program in ("pytest", "py.test"):
        return "pytest"
    if program in ("unittest", "jest", "mocha"):
        return program
    if program in ("go", "cargo") and len(words) > 1 and words[1] == "test":
        return program
    if program in ("npm", "yarn", "pnpm") and "test" in words[1:3]:
        return "npm"
    return None


def recognise(argv: Sequence[str], exit_code: int | None, output: str, *, complete: bool = True) -> str | None:
    """Why this step ran no tests (`pytest exit 5`), or None when it ran some or cannot tell."""
    runner = runner_of(argv)
    for check in _BY_RUNNER.get(runner or "", ()):
        reason = check(exit_code, output, complete)
        if reason:
            return reason
    return None
