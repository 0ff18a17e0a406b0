"""The shared git config, hooks folder and `info/attributes` as a lane found them (issue 28, item 3).

`git.harden` keeps lanes-tui's own git from running what a lane wrote; this module makes such a write
*visible*. When a lane starts, the launcher records a `snapshot` of what every worktree shares and a
lane could change without touching its own folder: the repository's config files (each key and
value, includes followed), the hooks folder (each file's sha256 and mode), and `info/attributes`.
It is kept in the lane's state folder (`git-snapshot.json`, written once, like `origin.json`), and
every decision (`check`, `accept`, `accept --queue`, `diff`, the review) compares it with the repository
now: a difference is refused in one line naming each key or file and the command that restores it.

The lead's own changes count too: lanes-tui cannot tell who wrote a config key. When the change is
the lead's, `lanes-tui check ID --accept-git-config` takes the repository as it is now as the lane's
new snapshot (and the git watch's, `git.watch`), and the decisions go on.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
import stat
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.atomic import read_json, write_json_atomic
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.git.harden import common_dir, config_entries, repo_config_files
from lanes_tui.engine.state.paths import StatePaths

__all__ = ["SNAPSHOT_FILE", "accept_current", "differences", "read_lane_snapshot", "refuse_if_changed", "snapshot",
           "write_lane_snapshot"]

SNAPSHOT_FILE = "git-snapshot.json"
#: A hook bigger than this is known by size and mtime, not read.
_MAX_HASHED = 4 << 20


def snapshot(repo: Path, lane_id: str | None = None) -> dict[str, Any]:
    """{config: {file: [[key, value], …]}, hooks: {name: "mode:sha256"}, attributes: sha256 | None}.

    The config files are the shared `config` and `config.worktree`, and the lane's own
    `worktrees/<id>/config.worktree` (other lanes' files apply only to their worktrees, and a lane
    started later writes its own: not a change to this one).
    """
    common = common_dir(repo)
    mine = common / "worktrees" / lane_id / "config.worktree" if lane_id else None
    files = [p for p in repo_config_files(common) if p.parent == common or p == mine]
    config = {_rel(common, path): [[k, v] for k, v in config_entries(path)] for path in files}
    hooks: dict[str, str] = {}
    folder = common / "hooks"
    with contextlib.suppress(OSError):
        for entry in sorted(folder.iterdir()):
            hooks[entry.name] = _fingerprint(entry)
    attributes = common / "info" / "attributes"
    return {"config": config, "hooks": hooks,
            "attributes": _fingerprint(attributes) if os.path.lexists(attributes) else None}


def _rel(common: Path, path: Path) -> str:
    return str(path.relative_to(common)) if path.is_relative_to(common) else str(path)


def _fingerprint(path: Path) -> str:
    try:
        st = path.lstat()
    except OSError:
        return "unreadable"
    if stat.S_ISLNK(st.st_mode):
        return f"link:{os.readlink(path)}"
    if not stat.S_ISREG(st.st_mode):
        return "folder" if stat.S_ISDIR(st.st_mode) else "special"
    if st.st_size > _MAX_HASHED:
        return f"{st.st_mode & 0o111:o}:large:{st.st_size}:{st.st_mtime_ns}"
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "unreadable"
    return f"{st.st_mode & 0o111:o}:{digest}"


def differences(repo: Path, before: Any, now: dict[str, Any]) -> list[tuple[str, str]]:
    """(what changed, the command that restores it), one per key, hook or file; [] when equal."""
    if not isinstance(before, dict):
        return []
    common = common_dir(repo)
    found: list[tuple[str, str]] = []
    old_config: dict[str, Any] = before["config"] if isinstance(before.get("config"), dict) else {}
    for name in sorted(set(old_config) | set(now["config"])):
        found.extend(_config_changes(common, name, old_config.get(name) or [], now["config"].get(name) or []))
    old_hooks: dict[str, Any] = before["hooks"] if isinstance(before.get("hooks"), dict) else {}
    for name in sorted(set(old_hooks) | set(now["hooks"])):
        path = common / "hooks" / name
        if name not in old_hooks:
            found.append((f"hook {path} added", f"rm {shlex.quote(str(path))}"))
        elif name not in now["hooks"]:
            found.append((f"hook {path} removed", f"restore {path} from a backup"))
        elif old_hooks[name] != now["hooks"][name]:
            found.append((f"hook {path} changed", f"restore {path} from a backup, or `rm {shlex.quote(str(path))}`"))
    if before.get("attributes") != now["attributes"]:
        path = common / "info" / "attributes"
        fix = f"rm {shlex.quote(str(path))}" if before.get("attributes") is None else f"restore {path}"
        found.append((f"{path} {'added' if before.get('attributes') is None else 'changed'}", fix))
    return found


def _config_changes(common: Path, name: str, old: list[Any], new: list[Any]) -> list[tuple[str, str]]:
    def values(pairs: list[Any]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for pair in pairs:
            if isinstance(pair, list) and len(pair) == 2:
                out.setdefault(str(pair[0]), []).append(str(pair[1]))
        return out

    before, after = values(old), values(new)
    where = "" if name == "config" else f"--file {shlex.quote(str(common / name))} "
    found = []
    for key in sorted(set(before) | set(after)):
        was, now = before.get(key), after.get(key)
        if was == now:
            continue
        label = f"git config {key}" + ("" if name == "config" else f" (in {name})")
        if was is None:
            found.append((f"{label} added ({_show(now)})", f"git config {where}--unset-all {key}"))
        elif now is None:
            found.append((f"{label} removed (was {_show(was)})",
                          " && ".join(f"git config {where}--add {key} {shlex.quote(v)}" for v in was)))
        else:
            restore = f"git config {where}--replace-all {key} {shlex.quote(was[-1])}" if len(was) == 1 else \
                f"git config {where}--unset-all {key}, then add back {_show(was)}"
            found.append((f"{label} changed from {_show(was)} to {_show(now)}", restore))
    return found


def _show(values: list[str] | None) -> str:
    text = ", ".join(repr(v) for v in values or [])
    return text if len(text) <= 300 else text[:297] + "…"  # a URL or a program path is what the lead must see


def write_lane_snapshot(repo: Path, lane_id: str, snap: dict[str, Any]) -> None:
    write_json_atomic(StatePaths(repo).lane(lane_id).dir / SNAPSHOT_FILE, snap)


def read_lane_snapshot(repo: Path, lane_id: str) -> dict[str, Any] | None:
    """The lane's snapshot; None for a lane started before snapshots; a damaged one refuses."""
    path = StatePaths(repo).lane(lane_id).dir / SNAPSHOT_FILE
    try:
        data = read_json(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise LanesError(f"lane {lane_id}: {path} cannot be read ({exc})",
                         f"`lanes-tui check {lane_id} --accept-git-config` records the git config as it is now",
                         ) from None
    if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
        raise LanesError(f"lane {lane_id}: {path} is not a git snapshot",
                         f"`lanes-tui check {lane_id} --accept-git-config` records the git config as it is now")
    return data


def refuse_if_changed(repo: Path, lane_id: str) -> None:
    """Refuse a decision when the shared git config, hooks or attributes differ from the lane's snapshot."""
    before = read_lane_snapshot(repo, lane_id)
    if before is None:
        return
    found = differences(repo, before, snapshot(repo, lane_id))
    if not found:
        return
    shown = found[:4]
    more = f" (+{len(found) - 4} more)" if len(found) > 4 else ""
    raise LanesError(
        f"lane {lane_id}: the shared git config CHANGED since the lane started: "
        + "; ".join(what for what, _ in shown) + more + " (an agent may have written it; your own changes count too)",
        "restore it: " + "; ".join(f"`{fix}`" if fix.startswith(("git ", "rm ")) else fix for _, fix in shown)
        + f"; or, if the change is yours, `lanes-tui check {lane_id} --accept-git-config`")


def accept_current(repo: Path, lane_id: str) -> list[str]:
    """The lead took the repository's git config as it is now: the lane's new snapshot. Returns what changed."""
    now = snapshot(repo, lane_id)
    before = read_lane_snapshot_or_none(repo, lane_id)
    changed = [what for what, _ in differences(repo, before, now)] if before is not None else []
    write_lane_snapshot(repo, lane_id, now)
    return changed


def read_lane_snapshot_or_none(repo: Path, lane_id: str) -> dict[str, Any] | None:
    try:
        return read_lane_snapshot(repo, lane_id)
    except LanesError:
        return None

