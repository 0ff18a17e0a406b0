"""Writing `.lanes/config.toml`: the commented default of `lanes-tui init` and one-key edits.

Written with tomlkit so the lead's comments survive an edit by lanes-tui; every edit is
validated by `settings.parse_config` before it replaces the file. Only this module of the engine
imports tomlkit, and nothing a lane runs imports this module.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import tomlkit

from lanes_tui.engine.config import providers as pv
from lanes_tui.engine.config.layers import USER_CONFIG_ENV, read_layers, user_config_path
from lanes_tui.engine.config.settings import DEFAULT_CHAINS, GatesConfig, LanesSettings, load_config, parse_config
from lanes_tui.engine.core.atomic import write_text_atomic
from lanes_tui.engine.core.errors import ConfigError, LanesError
from lanes_tui.engine.state.paths import StatePaths, default_worktree_root

__all__ = ["default_config_text", "set_config_value", "set_user_config_value", "write_default_config"]


def default_config_text(repo: Path) -> str:
    """The commented default config `lanes-tui init` writes: every key, its default and what it does.

    Keys whose default depends on the machine or the moment (worktree_root, target_branch) stay
    commented out, so a tracked config works for every lead; provider presets are described, not
    copied, so a preset fix reaches the lead without an edit.
    """
    lanes, gates = LanesSettings(default_worktree_root()), GatesConfig()
    doc = tomlkit.document()
    for line in ("lanes-tui configuration. Every key is optional: a missing key takes the default shown.",
                 "Edit freely; lanes-tui keeps your comments when it edits this file."):
        doc.add(tomlkit.comment(line))
    table = tomlkit.table()
    table.add(tomlkit.comment(f'worktree_root = "{lanes.worktree_root}"  # where lane worktrees go; '
                              f"must be outside the repository ({repo.name}); relative = to the repository"))
    _add(table, "max_parallel", lanes.max_parallel, "lanes running at once")
    _add(table, "timeout_s", int(lanes.timeout_s), "wall-clock limit of one provider run, seconds")
    _add(table, "idle_timeout_s", int(lanes.idle_timeout_s),
         "watchdog: no output, file change or CPU for this long = stalled; 0 turns it off")
    _add(table, "sample_s", int(lanes.sample_s), "how often the watchdog samples a lane, seconds")
    _add(table, "protected_branches", list(lanes.protected_branches), "accept never merges into these")
    table.add(tomlkit.comment('target_branch = "main"  # where accept merges; default: the branch checked '
                              "out when the lane starts"))
    table.add(tomlkit.comment("warn_idle_s = 450  # the dashboard marks a quiet lane after this long; "
                              "default: half of idle_timeout_s"))
    _add(table, "attempts", lanes.attempts, "attempts of a task started by hand: `recover --relaunch` "
         "refuses more (take it over); plans count their own")
    table.add(tomlkit.comment("The governor's caps per lane (docs/governor.md); `run --cpu/--memory/--pids` "
                              "override them. 0 or \"off\" turns one off."))
    _add(table, "cpu", f"{lanes.cpu:g}%", "CPU, in percent of one core")
    table.add(tomlkit.comment('memory = "4G"  # default: half of this machine\'s memory ÷ max_parallel'))
    _add(table, "pids", lanes.pids, "processes at once (a fork bomb stops here)")
    _add(table, "nice", lanes.nice, "CPU priority of the whole lane, 0 (yours) to 19 (lowest)")
    _add(table, "allow_uncapped", lanes.allow_uncapped, "run lanes even when nothing can hold their memory")
    _add(table, "allow_uncontained", lanes.allow_uncontained,
         "run lanes even where the kernel cannot confine their writes (no Landlock)")
    _add(table, "max_cost_usd", lanes.max_cost_usd, "spend cap per lane: reached, the lane pauses and asks; 0: none")
    _add(table, "max_tokens", lanes.max_tokens, "token cap per lane, the same way; 0: none")
    _add(table, "context_warn", lanes.context_warn, "flag a lane whose agent's context window is this full "
         "(a fraction; [providers.NAME] context_warn for one provider)")
    doc.add("lanes", table)
    table = tomlkit.table()
    table.add(tomlkit.comment("task type -> providers, first tried first; OUT-OF-BUDGET moves on to the "
                              "next in the same worktree."))
    table.add(tomlkit.comment("Add a line to create a task type (`lanes-tui run --type NAME`)."))
    for task_type, chain in DEFAULT_CHAINS.items():
        table.add(task_type, list(chain))
    doc.add("chains", table)
    table = tomlkit.table()
    table.add(tomlkit.comment('commands = ["{python} -m pytest -q"]  # unset: detected (pytest, npm test, go test, '
                              'cargo test, make test); [] = no gates; docs/gates.md'))
    table.add(tomlkit.comment("allow_no_tests = true  # a step that ran no tests passes (default: it fails)"))
    _add(table, "timeout_s", int(gates.timeout_s), "per command, seconds")
    _add(table, "slots", gates.slots, "heavy-run slots: gate runs at once on this machine")
    _add(table, "slot_wait_s", int(gates.slot_wait_s), "how long a gate run waits for a free slot, seconds")
    table.add(tomlkit.comment("max_load = 4  # the 1-minute load above which gates wait (within slot_wait_s); "
                              "unset: twice the cores, at least 4; 0: never"))
    _add(table, "env", list(gates.env), 'environment gates get beyond the base set and LANES_*: '
         '"NAME" or "PREFIX_*" (docs/providers.md)')
    doc.add("gates", table)
    doc.add(tomlkit.nl())
    for line in pv.PROVIDERS_HELP:
        doc.add(tomlkit.comment(line) if line else tomlkit.nl())
    return tomlkit.dumps(doc)


def _add(table: Any, key: str, value: object, comment: str) -> None:
    item = tomlkit.item(value)  # an item keeps its comment whatever the type (a bare bool has none)
    item.comment(comment)
    table.add(key, item)


def write_default_config(repo: Path, *, force: bool = False) -> Path:
    """Write `.lanes/config.toml` (refusing to clobber one) and make sure `.lanes/state/` is ignored."""
    paths = StatePaths(repo)
    if paths.config.exists() and not force:
        raise LanesError(f"{paths.config} already exists",
                         "edit it, or run `lanes-tui init --force` to overwrite")
    write_text_atomic(paths.config, default_config_text(repo), mode=None)  # the lead's file: umask mode
    ignore = paths.lanes_dir / ".gitignore"
    current = ignore.read_text(encoding="utf-8") if ignore.exists() else ""
    if "state/" not in current.split():
        separator = "" if not current or current.endswith("\n") else "\n"
        write_text_atomic(ignore, f"{current}{separator}state/\n", mode=None)
    return paths.config


def set_config_value(path: Path, dotted_key: str, value: object, *, repo: Path | None = None) -> None:
    """Set one key (e.g. `lanes.max_parallel`, `keys.accept`) keeping every comment of the file.

    The edited text is validated before it replaces the file, so an edit can never leave a config the
    dashboard would refuse to start with. `repo` defaults to the folder holding `.lanes/`.
    """
    new_text = _edited(path, dotted_key, value)
    # Checked over the lead's own file (`config.layers`): the dashboard reads both when it starts.
    parse_config(new_text, path=path, repo=repo if repo is not None else path.parent.parent, layered=True)
    write_text_atomic(path, new_text, mode=None)  # an existing config keeps its mode (atomic writes do)


def set_user_config_value(repo: Path, dotted_key: str, value: object) -> Path:
    """Set one key in the lead's own config (`config.layers`), creating it if need be; returns its path.

    For what belongs to the lead rather than to a repository (the dashboard's theme). Validated as
    `repo` would read it, with its own file over this one, before anything is written.
    """
    path, _named = user_config_path(os.environ)
    if path is None:
        raise LanesError("no home folder is known, so there is no user config file to write",
                         f"set HOME, XDG_CONFIG_HOME or {USER_CONFIG_ENV}")
    new_text = _edited(path, dotted_key, value)
    load_config(repo, layers=read_layers(repo, user_text=new_text))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, new_text, mode=None)
    return path


def _edited(path: Path, dotted_key: str, value: object) -> str:
    """The text of `path` (empty if it does not exist) with one key set, every comment kept."""
    parts = dotted_key.split(".")
    if len(parts) < 2 or not all(parts):
        raise LanesError(f"invalid config key {dotted_key!r}", "use table.key, e.g. lanes.max_parallel")
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        doc = tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:
        raise ConfigError(f"malformed TOML: {exc}", "fix the file by hand first", path=str(path)) from exc
    container: Any = doc
    for part in parts[:-1]:
        if part not in container:
            container[part] = tomlkit.table(is_super_table=container is doc and part == "providers")
        container = container[part]
        if not isinstance(container, dict):
            raise ConfigError(f"{part} is not a table", "edit the file by hand", key=dotted_key,
                              path=str(path))
    if isinstance(value, Path):
        value = str(value)
    elif isinstance(value, tuple):
        value = list(value)
    container[parts[-1]] = value
    return tomlkit.dumps(doc)
