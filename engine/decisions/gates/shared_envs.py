"""Shared environments untouched: a lane may not install into a virtualenv other work depends on.

An agent told to "make the tests pass" may `pip install` into the project's `.venv` (or one named in
`[gates] shared_venvs`): its gates then pass on a machine nobody else has, and every other lane and
the lead now run on changed packages. So the supervisor takes a digest of each such venv before the
agent starts and compares it after the agent ends; any change sends the lane back `rejected` naming
what was added and removed.

The digest is the site-packages listing (`*.dist-info` and `*.egg-info` folder names: name and
version), read without running anything: cheap, and no interpreter of the venv runs code the agent
may have planted.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.atomic import read_json, write_json_atomic
from lanes_tui.engine.decisions.gates.plan import project_venv

__all__ = ["BEFORE_FILE", "changes", "digest", "record_before", "shared_venvs"]

#: In the lane's folder: the digests taken before the agent started.
BEFORE_FILE = "shared-envs.json"
_SUFFIXES = (".dist-info", ".egg-info")


def shared_venvs(repo: Path, config: Config) -> list[Path]:
    """`[gates] shared_venvs` (relative to the repository, `~` allowed) and the project's own venv."""
    found: list[Path] = []
    for name in config.gates.shared_venvs:
        path = Path(os.path.expanduser(name))
        found.append((path if path.is_absolute() else repo / path).absolute())
    own = project_venv(repo, config.gates)
    if own is not None:
        found.append(own)
    return list(dict.fromkeys(found))


def digest(venv: Path) -> list[str]:
    """The installed distributions as `name-version`, sorted; [] when the venv has none (or is gone)."""
    names: set[str] = set()
    for site in venv.glob("lib/python*/site-packages"):
        with contextlib.suppress(OSError):
            names.update(entry.name.removesuffix(suffix) for entry in site.iterdir()
                         for suffix in _SUFFIXES if entry.name.endswith(suffix))
    return sorted(names)


def record_before(repo: Path, config: Config, lane_dir: Path) -> None:
    """Before the agent starts: the digest of every shared venv, kept in the lane's folder."""
    with contextlib.suppress(OSError):  # a digest that cannot be kept is a check skipped, not a lane lost
        write_json_atomic(lane_dir / BEFORE_FILE, {str(v): digest(v) for v in shared_venvs(repo, config)})


def changes(lane_dir: Path) -> list[str]:
    """After the agent: one line per shared venv whose digest changed, naming what was added and removed."""
    try:
        before = read_json(lane_dir / BEFORE_FILE)
    except (OSError, ValueError):
        return []
    lines: list[str] = []
    for venv, names in (before.items() if isinstance(before, dict) else ()):
        if not isinstance(names, list):
            continue
        now = set(digest(Path(venv)))
        added, removed = sorted(now - set(names)), sorted(set(names) - now)
        if added or removed:
            parts = ([f"added {', '.join(added)}"] if added else []) + ([f"removed {', '.join(removed)}"]
                                                                       if removed else [])
            lines.append(f"the agent changed the shared environment {venv}: {'; '.join(parts)}")
    return lines
