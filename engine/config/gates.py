"""The `[gates]` table: the checks a lane's work must pass, as named steps with their own timeouts.

Split from `settings` to keep that module small, like `review`: it reads through the parser's own
checks (the `GatesChecks` protocol below) rather than importing `settings`, which imports this module.

`commands` is a shorthand for steps named after their command (`pytest`, `unittest`, the first word);
`[gates.steps.NAME]` tables add steps with their own `timeout_s` and `env`. With neither key the
commands are detected from the worktree (`decisions.gates.plan`), so a new repository gets its own
test runner rather than a guess at pytest; `commands = []` still means no gates at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

from lanes_tui.engine.config.review import ReviewChecks

__all__ = ["GateStep", "GatesChecks", "GatesConfig", "parse_gates"]

_GATES_KEYS = ("commands", "timeout_s", "slots", "slot_wait_s", "env", "steps", "venv", "shared_venvs", "writable",
               "max_load", "allow_no_tests")
_STEP_KEYS = ("command", "timeout_s", "env", "allow_no_tests")
_STEP_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")


@dataclass(frozen=True)
class GateStep:
    """One `[gates.steps.NAME]` table: a command with its own limit and the variables it is given."""

    name: str
    command: str
    #: None: `[gates] timeout_s`. `LANES_GATE_TIMEOUT_<NAME>` in the lead's environment overrides both.
    timeout_s: float | None = None
    #: Variables this step gets from the lead's environment besides `[gates] env`: names or `PREFIX_*`.
    env: tuple[str, ...] = ()
    #: A run of no tests passes this step; None: `[gates] allow_no_tests` (`decisions.gates.no_tests`).
    allow_no_tests: bool | None = None


@dataclass(frozen=True)
class GatesConfig:
    """The `[gates]` table: checks run in the worktree after the agent, inside a heavy slot."""

    #: None: no `commands` key, so the commands are detected (unless `steps` names some); `()`: no gates.
    commands: tuple[str, ...] | None = None
    timeout_s: float = 1800
    slots: int = 1
    slot_wait_s: float = 600
    #: Environment variables gate commands get besides the base set and the lane's LANES_* (never a
    #: provider's credentials): exact names or `PREFIX_*`.
    env: tuple[str, ...] = ()
    #: `[gates.steps.NAME]`, in the file's order, run after the `commands`.
    steps: tuple[GateStep, ...] = ()
    #: The virtualenv gates run in (relative to the repository); None: the worktree's or repository's `.venv`.
    venv: str | None = None
    #: Virtualenvs (relative to the repository or absolute) that no lane may change (`decisions.gates.shared_envs`).
    shared_venvs: tuple[str, ...] = ()
    #: What gates may write besides the worktree, its admin folder and their TMPDIR (`lanes.confine`).
    writable: tuple[str, ...] = ()
    #: The 1-minute load above which gates (and `lanes-tui lock`) hold back, within `slot_wait_s`; 0: never
    #: wait for the load; None: `core.waits.default_load_limit` (twice the cores, at least 4).
    #: `LANES_HEAVY_LOAD` in the environment overrides it (`lanes.heavy.load_limit`).
    max_load: float | None = None
    #: A step that ran no tests passes (every step that does not say otherwise); False: it fails.
    allow_no_tests: bool = False

    @property
    def detect(self) -> bool:
        """True when the commands are to be detected from the worktree: no `commands`, no `steps`."""
        return self.commands is None and not self.steps


class GatesChecks(ReviewChecks, Protocol):
    """What `parse_gates` needs besides the review's checks: environment patterns checked for safety."""

    def env_patterns(self, key: str, value: object) -> tuple[str, ...]: ...
    def writable_paths(self, key: str, value: object) -> tuple[str, ...]: ...


def parse_gates(checks: GatesChecks, raw: dict[str, Any]) -> GatesConfig:
    """`[gates]` and its `[gates.steps.NAME]` tables → GatesConfig; ConfigError at the first mistake."""
    checks.unknown_keys("gates", raw, _GATES_KEYS)
    steps: list[GateStep] = []
    tables = raw.get("steps", {})
    if not isinstance(tables, dict):
        checks.fail("gates.steps", "must be a table of steps",
                    'write each step as [gates.steps.NAME] with command = "…"')
    for name, table in tables.items():
        key = f"gates.steps.{name}"
        if not _STEP_NAME_RE.match(name):
            checks.fail(key, f"invalid gate step name {name!r}", "use letters, digits, '-' or '_'")
        if not isinstance(table, dict):
            checks.fail(key, "must be a table", f'write it as [{key}] with command = "…"')
        checks.unknown_keys(key, table, _STEP_KEYS)
        if "command" not in table:
            checks.fail(key, f"gate step {name!r} has no command", 'add command = "{python} -m pytest -q"')
        timeout = table.get("timeout_s")
        steps.append(GateStep(
            name=name,
            command=checks.string(f"{key}.command", table["command"]),
            timeout_s=None if timeout is None else checks.number(f"{key}.timeout_s", timeout, positive=True),
            env=checks.env_patterns(f"{key}.env", table.get("env", [])),
            allow_no_tests=_flag(checks, f"{key}.allow_no_tests", table["allow_no_tests"])
            if "allow_no_tests" in table else None,
        ))
    venv = raw.get("venv")
    return GatesConfig(
        commands=checks.strings("gates.commands", raw["commands"]) if "commands" in raw else None,
        timeout_s=checks.number("gates.timeout_s", raw.get("timeout_s", 1800), positive=True),
        slots=checks.integer("gates.slots", raw.get("slots", 1), minimum=1),
        slot_wait_s=checks.number("gates.slot_wait_s", raw.get("slot_wait_s", 600), positive=False),
        env=checks.env_patterns("gates.env", raw.get("env", [])),
        writable=checks.writable_paths("gates.writable", raw.get("writable", [])),
        steps=tuple(steps),
        venv=None if venv is None else checks.string("gates.venv", venv),
        shared_venvs=checks.strings("gates.shared_venvs", raw.get("shared_venvs", [])),
        max_load=_max_load(checks, raw["max_load"]) if "max_load" in raw else None,
        allow_no_tests=_flag(checks, "gates.allow_no_tests", raw.get("allow_no_tests", False)),
    )


def _max_load(checks: GatesChecks, value: object) -> float:
    """`[gates] max_load`: a load figure, 0 or more (`number` checks it; its words are about seconds)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        checks.fail("gates.max_load", f"must be a load figure, got {value!r}",
                    "write a number without quotes, e.g. max_load = 4 (0 = never wait for the load)")
    if not (0 <= value < 10_000):  # also refuses nan and inf
        checks.fail("gates.max_load", f"must be a load figure from 0 up, got {value!r}",
                    "write e.g. max_load = 4, twice the cores is the default (0 = never wait for the load)")
    return float(value)


def _flag(checks: GatesChecks, key: str, value: object) -> bool:
    """`allow_no_tests = true`: a TOML boolean, never the string "true" (which would read as a yes to anything)."""
    if not isinstance(value, bool):
        checks.fail(key, f"must be true or false, got {value!r}", f"write {key.rsplit('.', 1)[-1]} = true (no quotes)")
    return value
