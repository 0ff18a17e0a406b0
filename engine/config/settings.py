"""`.lanes/config.toml` → typed, frozen settings; every mistake a ConfigError naming key, line and fix.

Read with tomllib (strict, standard); written with tomlkit so the lead's comments survive an edit
from the dashboard. The dashboard must not start half-configured, so everything is checked up front.
The writing side (`lanes-tui init`, edits from the dashboard) lives in `config.write`, which imports
this module and never the other way round: a supervisor reads its config without loading tomlkit.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, NoReturn

from lanes_tui.engine.config import providers as pv
from lanes_tui.engine.config.caps_keys import parse_caps
from lanes_tui.engine.config.context_keys import parse_context_warn
from lanes_tui.engine.config.dashboard import DashboardConfig, parse_dashboard
from lanes_tui.engine.config.gates import GatesConfig, parse_gates
from lanes_tui.engine.config.key_lines import did_you_mean, find_key_line, shown
from lanes_tui.engine.config.layers import Layers, parse_toml, read_layers
from lanes_tui.engine.config.notify import NotifyConfig, parse_notify
from lanes_tui.engine.config.provider_keys import NAME_RE, parse_providers
from lanes_tui.engine.config.providers import ProviderConfig
from lanes_tui.engine.config.review import ReviewConfig, parse_review
from lanes_tui.engine.config.runner import RunnerSettings, parse_runner
from lanes_tui.engine.config.tiers import TierConfig, parse_tiers
from lanes_tui.engine.config.worktree_keys import SETUP_TIMEOUT_S, parse_worktree_keys
from lanes_tui.engine.core.errors import ConfigError, LanesError
from lanes_tui.engine.core.sizes import MIN_MEMORY_BYTES, machine_memory
from lanes_tui.engine.state.context import DEFAULT_WARN
from lanes_tui.engine.state.model import TASK_TYPES
from lanes_tui.engine.state.paths import default_worktree_root, inside

__all__ = ["DEFAULT_CHAINS", "Config", "GatesConfig", "LanesSettings", "ProviderConfig", "load_config", "parse_config"]

DEFAULT_CHAINS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "backend": ("codex", "claude"),
    "hard": ("claude", "codex"),
    "ui": ("claude", "gemini"),
    "tests": ("codex", "claude"),
    "docs": ("gemini", "claude"),
})
assert tuple(DEFAULT_CHAINS) == TASK_TYPES
#: `[lanes] attempts`: the default, and the most a lead may allow (a lane id's attempt stays short).
DEFAULT_ATTEMPTS, MAX_ATTEMPTS = 3, 99


@dataclass(frozen=True)
class LanesSettings:
    """The `[lanes]` table: where worktrees go, how many lanes at once, when the watchdog fires."""

    worktree_root: Path
    max_parallel: int = 6
    timeout_s: float = 3600
    idle_timeout_s: float = 900  # 0 turns the watchdog off
    sample_s: float = 5
    protected_branches: tuple[str, ...] = ("main", "master")
    target_branch: str | None = None  # None: the branch checked out when the lane starts
    warn_idle_s: float | None = None  # None: half of idle_timeout_s (the dashboard's early warning)
    #: How many attempts a task started by hand may use (`recover --relaunch` refuses the next, as a
    #: plan's ticket goes to `takeover`); plan lanes count by the plan's own `attempts`.
    attempts: int = DEFAULT_ATTEMPTS
    # The governor's caps per lane (`lanes.caps`, docs/governor.md); 0 turns one off.
    cpu: float = 100.0  # percent of one core
    memory: int | None = None  # bytes; None: half the machine's memory ÷ max_parallel
    pids: int = 512
    nice: int = 10  # 0 leaves the agent at the lead's priority
    allow_uncapped: bool = False
    #: Run lanes even where the kernel cannot confine their writes (no Landlock): `lanes.confine`.
    allow_uncontained: bool = False
    max_cost_usd: float = 0.0  # spend cap per lane: on reaching it the lane pauses and asks
    max_tokens: int = 0
    #: Flag a lane whose agent's context is at least this full (`state.context`); per provider too.
    context_warn: float = DEFAULT_WARN
    # A new worktree made ready (`config.worktree_keys`, docs/lanes.md#worktrees-ready-to-work-in).
    copy: tuple[str, ...] = ()  # files copied from the lead checkout, never committed
    setup: tuple[str, ...] = ()  # commands run in the worktree before the agent, under its caps
    setup_timeout_s: float = SETUP_TIMEOUT_S
    watch_skip: tuple[str, ...] = ()  # directory names the file watcher skips, besides git's ignored ones

    @property
    def memory_bytes(self) -> int:
        """The memory cap in bytes: the configured one, or half the machine's memory ÷ max_parallel."""
        if self.memory is not None:
            return self.memory
        return max(MIN_MEMORY_BYTES, machine_memory() // 2 // self.max_parallel) if machine_memory() else 0

    @property
    def warn_after_s(self) -> float | None:
        """When the dashboard marks a lane as going quiet; None if neither warning nor watchdog is on."""
        if self.warn_idle_s is not None:
            return self.warn_idle_s
        return self.idle_timeout_s / 2 if self.idle_timeout_s > 0 else None


@dataclass(frozen=True)
class Config:
    """The whole validated config. `path` is None when no file exists and defaults apply."""

    lanes: LanesSettings
    chains: Mapping[str, tuple[str, ...]]
    providers: Mapping[str, ProviderConfig]
    gates: GatesConfig
    path: Path | None
    keys: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: `[tiers]`: a plan ticket's tier → provider and model (`config.tiers`); empty unless the lead sets it.
    tiers: Mapping[str, TierConfig] = field(default_factory=lambda: MappingProxyType({}))
    #: `[review]`: cross-family review of a lane's diff (`config.review`); off unless the lead sets it.
    review: ReviewConfig = field(default_factory=ReviewConfig)
    #: `[notify]`: a command run once per event that needs the lead (`config.notify`); off unless set.
    notify: NotifyConfig = field(default_factory=NotifyConfig)
    #: `[runner]`: where lanes run (`config.runner`); this machine unless the lead sets a Ray cluster.
    runner: RunnerSettings = field(default_factory=RunnerSettings)
    #: `[dashboard]`: the lead's theme (`config.dashboard`), written there by the dashboard itself.
    dashboard: DashboardConfig = field(default_factory=DashboardConfig)
    #: Every file read, lowest first: the lead's own (`config.layers`), then `.lanes/config.toml`. Not
    #: compared: the same values read from other files are the same config.
    files: tuple[Path, ...] = field(default=(), compare=False)

    def chain_for(self, task_type: str, lane: str | None = None) -> list[str]:
        """Providers to try for a task, first first; `--lane PROVIDER` moves or inserts it in front."""
        if task_type not in self.chains:
            raise LanesError(f"unknown task type {task_type!r}",
                             f"use one of {', '.join(self.chains)} (or add it under [chains])")
        chain = list(self.chains[task_type])
        if lane is not None:
            self.provider(lane)
            chain = [lane, *(name for name in chain if name != lane)]
        return chain

    def provider(self, name: str) -> ProviderConfig:
        try:
            return self.providers[name]
        except KeyError:
            raise LanesError(f"unknown provider {name!r}",
                             f"use one of {', '.join(self.providers)} (or add [providers.{name}])") from None


# --- Reading ---------------------------------------------------------------------------------------

def load_config(repo: Path, *, layers: Layers | None = None) -> Config:
    """The config of `repo`: the lead's own file under `.lanes/config.toml` (`config.layers`); no file
    at all means all defaults. `layers`: those files as an edit would leave them (its check)."""
    return _Parser("", None, repo, layers if layers is not None else read_layers(repo)).parse()


def parse_config(text: str, *, path: Path | None, repo: Path, layered: bool = False) -> Config:
    """Validate TOML text into a Config; raises ConfigError at the first problem found.

    `layered`: the text is the repository's file, read over the lead's own (an edit's check).
    """
    if layered:
        return _Parser("", None, repo, read_layers(repo, repo_text=text)).parse()
    return _Parser(text, path, repo).parse()


def _field_names(cls: type[Any], *, skip: tuple[str, ...] = ()) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.name not in skip)


_TABLES = ("lanes", "chains", "providers", "gates", "keys", "tiers", "review", "notify", "runner", "dashboard")




class _Parser:
    """One pass over the parsed TOML with the source text at hand, so errors can name a line."""

    def __init__(self, text: str, path: Path | None, repo: Path, layers: Layers | None = None) -> None:
        self.text = text
        self.path = path
        self.repo = repo
        #: The files read (`config.layers`); None: `text` alone, as `parse_config` is given it.
        self.layers = layers
        if layers is not None and layers.repo is not None:
            self.path = layers.repo.path

    def fail(self, key: str, what: str, fix: str) -> NoReturn:
        text, path = self.text, self.path
        if self.layers is not None and (layer := self.layers.blame(key)) is not None:
            text, path = layer.text, layer.path  # the file the bad key was written in
        raise ConfigError(what, fix, key=key, line=find_key_line(text, key), path=str(path) if path else None)

    def parse(self) -> Config:
        data = self.layers.merged() if self.layers is not None else parse_toml(self.text, self.path)
        for name in data:
            if name not in _TABLES:
                self.fail(name, f"unknown table or key {name!r}", did_you_mean(name, _TABLES))
        for name in _TABLES:
            if name in data and not isinstance(data[name], dict):
                self.fail(name, f"{name} must be a table, got {shown(data[name])}",
                          f"write it as a [{name}] section")
        providers = parse_providers(self, data.get("providers", {}))
        return Config(
            lanes=self.lanes(data.get("lanes", {})),
            chains=self.chains(data.get("chains", {}), providers),
            providers=providers,
            gates=parse_gates(self, data.get("gates", {})),
            path=self.path,
            keys=self.keys(data.get("keys", {})),
            tiers=parse_tiers(self, data.get("tiers", {}), providers),
            review=parse_review(self, data.get("review", {}), providers),
            notify=parse_notify(self, data.get("notify", {})),
            runner=parse_runner(self, data.get("runner", {})),
            dashboard=parse_dashboard(self, data.get("dashboard", {})),
            files=tuple(layer.path for layer in self.layers.layers) if self.layers is not None else
            tuple(p for p in (self.path,) if p is not None),
        )

    # typed getters ------------------------------------------------------------------------------
    def unknown_keys(self, table: str, values: dict[str, Any], valid: tuple[str, ...]) -> None:
        for key in values:
            if key not in valid:
                self.fail(f"{table}.{key}", f"unknown key {key!r} in [{table}]", did_you_mean(key, valid))

    def string(self, key: str, value: object, *, empty: bool = False) -> str:
        if not isinstance(value, str):
            self.fail(key, f"must be a string, got {shown(value)}",
                      f'put it in quotes: {key.rsplit(".", 1)[-1]} = "{value}"')
        if not empty and not value.strip():
            self.fail(key, "must not be empty", "give a value or delete the line for the default")
        return value

    def strings(self, key: str, value: object, *, empty_list: bool = True) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            self.fail(key, f"must be an array of strings, got {shown(value)}", 'write it as ["a", "b"]')
        if not empty_list and not value:
            self.fail(key, "must not be empty", "list at least one entry")
        if any(not item.strip() for item in value):
            self.fail(key, "contains an empty string", "remove the empty entry")
        return tuple(value)

    def integer(self, key: str, value: object, *, minimum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f"must be a whole number, got {shown(value)}",
                      f"write a number without quotes, at least {minimum}")
        if value < minimum:
            self.fail(key, f"must be at least {minimum}, got {value}", f"use a number >= {minimum}")
        return value

    def attempts(self, value: object) -> int:
        """`[lanes] attempts`: 1 (no relaunch) to MAX_ATTEMPTS."""
        attempts = self.integer("lanes.attempts", value, minimum=1)
        if attempts > MAX_ATTEMPTS:
            self.fail("lanes.attempts", f"must be at most {MAX_ATTEMPTS}, got {attempts}",
                      f"use a whole number from 1 to {MAX_ATTEMPTS} (the default is {DEFAULT_ATTEMPTS})")
        return attempts

    def number(self, key: str, value: object, *, positive: bool) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail(key, f"must be a number of seconds, got {shown(value)}",
                      "write a number without quotes")
        try:
            seconds = float(value)
        except OverflowError:  # an integer no float can hold
            seconds = math.inf
        if not math.isfinite(seconds):
            written = value if isinstance(value, float) else "a number too large"
            self.fail(key, f"must be a finite number, got {written}",
                      "write an ordinary number of seconds (nan and inf are not numbers lanes-tui can use)")
        if value < 0 or (positive and value == 0):
            bound = "greater than 0" if positive else "0 or more"
            self.fail(key, f"must be {bound}, got {value}", f"use a number {bound}")
        return seconds

    # tables ---------------------------------------------------------------------------------------
    def lanes(self, raw: dict[str, Any]) -> LanesSettings:
        self.unknown_keys("lanes", raw, _field_names(LanesSettings))
        root = default_worktree_root()
        if "worktree_root" in raw:
            written = self.string("lanes.worktree_root", raw["worktree_root"])
            if "\x00" in written:  # no path holds one: every use of it would raise ValueError
                self.fail("lanes.worktree_root", f"{written!r} contains a NUL character", "write a plain folder path")
            try:
                root = Path(written).expanduser()
            except RuntimeError:  # `~nouser/…`, or `~` with no HOME and no password entry
                user = written[1:].split("/", 1)[0]
                self.fail("lanes.worktree_root", f"cannot expand {written!r}: "
                          + (f"there is no user {user!r} on this machine" if user else "no home folder is known"),
                          "write an absolute path, or ~/… for your own home folder")
            if not root.is_absolute():
                root = self.repo / root
        root = root.resolve()
        if inside(root, self.repo):
            self.fail("lanes.worktree_root", f"worktree_root {root} is inside the repository {self.repo}",
                      f"choose a folder outside it, e.g. {default_worktree_root()}")
        warn = raw.get("warn_idle_s")
        target = raw.get("target_branch")
        return LanesSettings(
            worktree_root=root,
            max_parallel=self.integer("lanes.max_parallel", raw.get("max_parallel", 6), minimum=1),
            timeout_s=self.number("lanes.timeout_s", raw.get("timeout_s", 3600), positive=True),
            idle_timeout_s=self.number("lanes.idle_timeout_s", raw.get("idle_timeout_s", 900),
                                       positive=False),
            sample_s=self.number("lanes.sample_s", raw.get("sample_s", 5), positive=True),
            protected_branches=self.strings("lanes.protected_branches",
                                            raw.get("protected_branches", ["main", "master"])),
            target_branch=None if target is None else self.string("lanes.target_branch", target),
            warn_idle_s=None if warn is None else self.number("lanes.warn_idle_s", warn, positive=True),
            attempts=self.attempts(raw.get("attempts", DEFAULT_ATTEMPTS)),
            context_warn=parse_context_warn(self, "lanes.context_warn", raw.get("context_warn", DEFAULT_WARN)),
            **parse_caps(self, raw), **parse_worktree_keys(self, raw),
        )

    def chains(self, raw: dict[str, Any],
               providers: Mapping[str, ProviderConfig]) -> Mapping[str, tuple[str, ...]]:
        result = dict(DEFAULT_CHAINS)
        for task_type, value in raw.items():
            key = f"chains.{task_type}"
            if not NAME_RE.match(task_type):
                self.fail(key, f"invalid task type {task_type!r}", "use letters, digits, '-' or '_'")
            chain = self.strings(key, value, empty_list=False)
            for name in chain:
                if name not in providers:
                    self.fail(key, f"chain {task_type!r} names unknown provider {name!r}",
                              did_you_mean(name, list(providers)) + f" (or add [providers.{name}])")
            if len(set(chain)) != len(chain):
                self.fail(key, f"chain {task_type!r} lists a provider twice", "name each provider once")
            result[task_type] = chain
        return MappingProxyType(result)

    def env_patterns(self, key: str, value: object) -> tuple[str, ...]:
        """`env = ["NAME", "PREFIX_*"]`: exact names or prefixes, nothing a glob would read more into."""
        patterns = self.strings(key, value)
        for pattern in patterns:
            if problem := pv.env_pattern_problem(pattern):
                self.fail(key, *problem)
        return patterns

    def writable_paths(self, key: str, value: object) -> tuple[str, ...]:
        """`writable = ["~/.my-agent/", "/opt/cache/x/"]`: what the kernel lets the lane write besides its
        worktree (`lanes.confine`); absolute or under `~/`, never all of the home folder or the disk."""
        paths = self.strings(key, value)
        for path in paths:
            if not (path.startswith("/") or path.startswith("~/")) or path.rstrip("/") in {"", "~"}:
                self.fail(key, f"{path!r} is not a folder or file the agent may write",
                          'give absolute paths or ones under ~/, a folder ending in /, e.g. ["~/.my-agent/"]')
        return paths

    def keys(self, raw: dict[str, Any]) -> Mapping[str, str]:
        return MappingProxyType({name: self.string(f"keys.{name}", value) for name, value in raw.items()})
