"""The config's layers: the lead's own `config.toml` under each repository's `.lanes/config.toml`.

A lead with several repositories sets providers (models, credentials' names, argv) once, in
`$XDG_CONFIG_HOME/lanes-tui/config.toml` (`~/.config/…` when that is unset) or the file
`LANES_TUI_CONFIG` names, and each repository's file says only what differs. The repository wins key
by key; tables are merged (`[providers.claude] model` in the repository keeps the user file's
`[providers.claude] env`), arrays and other values are replaced whole, never joined.

Each layer is parsed on its own first, so a syntax error names its own file and line; the merged data
is then validated once by `settings`, which asks `Layers.blame(key)` which file a bad key came from,
and `lanes-tui providers` asks `Layers.origin(key)` where each value it shows was set. Standard
library only: `lanes-tui lock`, in an agent's shell, reads the config too.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.errors import ConfigError
from lanes_tui.engine.core.limits import MAX_CONFIG_BYTES, read_limited
from lanes_tui.engine.state.paths import StatePaths

__all__ = ["USER_CONFIG_ENV", "Layer", "Layers", "parse_toml", "read_layers", "user_config_path"]

#: Names the user-level config file, instead of `$XDG_CONFIG_HOME/lanes-tui/config.toml`.
USER_CONFIG_ENV = "LANES_TUI_CONFIG"


@dataclass(frozen=True)
class Layer:
    """One config file: `user` (the lead's own) or `repo` (the repository's `.lanes/config.toml`)."""

    kind: str
    path: Path
    text: str
    data: Mapping[str, Any]

    def holds(self, dotted_key: str) -> bool:
        """True when this file sets `dotted_key` (a table counts: `providers.claude`)."""
        node: Any = self.data
        for part in dotted_key.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return False
            node = node[part]
        return True


@dataclass(frozen=True)
class Layers:
    """The files read for one repository, lowest first (the user's, then the repository's)."""

    layers: tuple[Layer, ...] = ()

    @property
    def repo(self) -> Layer | None:
        return next((layer for layer in self.layers if layer.kind == "repo"), None)

    def merged(self) -> dict[str, Any]:
        """Every layer's data, a later layer winning key by key; tables merged at every depth."""
        result: dict[str, Any] = {}
        for layer in self.layers:
            _merge_into(result, layer.data)
        return result

    def origin(self, dotted_key: str) -> Layer | None:
        """The file whose value of `dotted_key` wins; None when no file sets it (a preset or default)."""
        return next((layer for layer in reversed(self.layers) if layer.holds(dotted_key)), None)

    def blame(self, dotted_key: str) -> Layer | None:
        """The file a problem with `dotted_key` is reported in: the one that sets it, else the one
        that sets its nearest enclosing table, else the repository's (the lead's first place to look)."""
        parts = dotted_key.split(".")
        for end in range(len(parts), 0, -1):
            found = self.origin(".".join(parts[:end]))
            if found is not None:
                return found
        return self.repo or (self.layers[-1] if self.layers else None)


def _merge_into(target: dict[str, Any], data: Mapping[str, Any]) -> None:
    for key, value in data.items():
        if isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _merge_into(target[key], value)
        else:
            target[key] = _copied(value)


def _copied(value: Any) -> Any:
    """A table copied (so merging never changes a layer's own data); other values as they are."""
    if isinstance(value, Mapping):
        return {key: _copied(item) for key, item in value.items()}
    return value


def user_config_path(environ: Mapping[str, str]) -> tuple[Path | None, bool]:
    """(the user-level config file, whether `LANES_TUI_CONFIG` named it); (None, False) when no home is known.

    A relative `XDG_CONFIG_HOME` is ignored, as the XDG spec says: it would name a different file in
    every folder the command runs from.
    """
    named = environ.get(USER_CONFIG_ENV, "")
    if named:
        return Path(named).expanduser(), True
    base = environ.get("XDG_CONFIG_HOME", "")
    if not base or not os.path.isabs(base):
        home = environ.get("HOME", "")
        if not home:
            return None, False
        base = os.path.join(home, ".config")
    return Path(base) / "lanes-tui" / "config.toml", False


def read_layers(repo: Path, environ: Mapping[str, str] | None = None, *, repo_text: str | None = None,
                user_text: str | None = None) -> Layers:
    """The user's file (if there is one) under the repository's (if there is one).

    `repo_text` and `user_text` stand in for those files (the writer validates an edit before saving it).
    """
    env = os.environ if environ is None else environ
    found: list[Layer] = []
    path, named = user_config_path(env)
    if path is not None and user_text is not None:
        found.append(Layer("user", path, user_text, parse_toml(user_text, path)))
    elif path is not None:
        user = _read("user", path, required=named)
        if user is not None:
            found.append(user)
    repo_path = StatePaths(repo).config
    if repo_text is not None:
        found.append(Layer("repo", repo_path, repo_text, parse_toml(repo_text, repo_path)))
    else:
        own = _read("repo", repo_path, required=False)
        if own is not None:
            found.append(own)
    return Layers(tuple(found))


def _read(kind: str, path: Path, *, required: bool) -> Layer | None:
    try:
        text = read_limited(path, MAX_CONFIG_BYTES, f"the config {path}").decode("utf-8")  # never unbounded
    except FileNotFoundError:
        if required:
            raise ConfigError(f"{USER_CONFIG_ENV} names a file that does not exist",
                              f"create it, or unset {USER_CONFIG_ENV} to use the default place",
                              path=str(path)) from None
        return None
    except IsADirectoryError:
        raise ConfigError("the config is a folder, not a file", "point it at a config.toml file",
                          path=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the config: {exc}", "make it a readable UTF-8 text file",
                          path=str(path)) from exc
    return Layer(kind, path, text, parse_toml(text, path))


def parse_toml(text: str, path: Path | None) -> dict[str, Any]:
    """tomllib's reading of one file; a syntax error becomes a ConfigError naming the file and line."""
    where = str(path) if path else None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        line = int(match.group(1)) if match else None
        if "(at end of document)" in str(exc):
            line = max(1, len(text.splitlines()))
        what = re.sub(r"\s*\(at (?:line|end of).*\)$", "", str(exc)) or "syntax error"
        raise ConfigError(f"malformed TOML: {what}",
                          "fix the syntax on that line (strings need quotes, arrays [a, b], see toml.io)",
                          line=line, path=where) from exc
    except (ValueError, RecursionError) as exc:  # tomllib's own limits, past which it raises these bare
        what = "an integer with more digits than Python converts" if isinstance(exc, ValueError) \
            else "arrays or tables nested too deeply"
        raise ConfigError(f"malformed TOML: {what}", "write ordinary numbers and flat values", path=where) from None
