"""The keys of `[lanes]` about a lane's worktree (`copy`, `setup`, `setup_timeout_s`, `watch_skip`), read.

Split from `settings` (which calls it while reading `[lanes]`) like `caps_keys`. `copy` names files
the lead keeps out of git (`.env`, a local config) that every lane needs: each entry must be a
relative path inside the repository, since the launcher copies it from the lead checkout into the
worktree and an absolute path or `..` could reach (or write) a file outside both. `setup` commands are
split with shlex here, so a command that cannot be split is the lead's config error at load time, not
a lane that fails later; they never run through a shell.
"""

from __future__ import annotations

import shlex
from pathlib import PurePosixPath
from typing import Any, NoReturn, Protocol

from lanes_tui.engine.config.key_lines import shown

__all__ = ["SETUP_TIMEOUT_S", "check_copy_path", "parse_worktree_keys"]

#: How long one `[lanes] setup` step may run by default (`uv sync`, `npm ci` on a cold cache).
SETUP_TIMEOUT_S = 600.0


class WorktreeChecks(Protocol):
    """What `parse_worktree_keys` needs of the config parser (`settings._Parser`)."""

    def fail(self, key: str, what: str, fix: str) -> NoReturn: ...
    def strings(self, key: str, value: object, *, empty_list: bool = True) -> tuple[str, ...]: ...
    def number(self, key: str, value: object, *, positive: bool) -> float: ...


def check_copy_path(entry: str) -> str | None:
    """Why `entry` cannot be a `copy` path (absolute, `..`, `.git`, a NUL), or None when it can."""
    if "\x00" in entry:
        return "contains a NUL character"
    path = PurePosixPath(entry)
    if path.is_absolute() or entry.startswith("~"):
        return "is an absolute path"
    if ".." in path.parts:
        return "climbs out with `..`"
    if not path.parts or path.parts == (".",):
        return "names the repository itself, not a file in it"
    if path.parts[0] == ".git":
        return "is inside .git"
    return None


def parse_worktree_keys(checks: WorktreeChecks, raw: dict[str, Any]) -> dict[str, Any]:
    """The worktree keys present in `raw` (the `[lanes]` table), parsed into LanesSettings values."""
    values: dict[str, Any] = {}
    if "copy" in raw:
        entries = checks.strings("lanes.copy", raw["copy"])
        for entry in entries:
            if (why := check_copy_path(entry)) is not None:
                checks.fail("lanes.copy", f"copy entry {entry!r} {why}",
                            'list paths relative to the repository root, e.g. copy = [".env", "config/local.toml"]')
        values["copy"] = tuple(str(PurePosixPath(entry)) for entry in entries)
    if "setup" in raw:
        commands = checks.strings("lanes.setup", raw["setup"])
        for command in commands:
            try:
                argv = shlex.split(command)
            except ValueError as exc:
                checks.fail("lanes.setup", f"setup step {command!r} cannot be split into words: {exc}",
                            "close the quote; steps run without a shell, e.g. setup = [\"uv sync\"]")
            if not argv:
                checks.fail("lanes.setup", f"setup step {shown(command)} has no command", "remove the empty step")
        values["setup"] = commands
    if "setup_timeout_s" in raw:
        values["setup_timeout_s"] = checks.number("lanes.setup_timeout_s", raw["setup_timeout_s"], positive=True)
    if "watch_skip" in raw:
        # Directory names the file watcher never enters, at any depth, on top of what git ignores
        # (docs/config.md): a vendored tree that is tracked but never the agent's work, say.
        names = checks.strings("lanes.watch_skip", raw["watch_skip"])
        for name in names:
            if "/" in name or name in (".", ".."):
                checks.fail("lanes.watch_skip", f"watch_skip entry {name!r} is not a directory name",
                            'list bare names, matched at any depth, e.g. watch_skip = ["node_modules"]')
        values["watch_skip"] = names
    return values
