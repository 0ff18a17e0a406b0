"""The target branches and the remotes, watched (issue 28, item 4).

An agent that runs `git update-ref refs/heads/main X` lands work nobody accepted, and one that
writes `remote.origin.pushurl` or `branch.main.merge` redirects `finish`'s push. Refs and config are
shared by every worktree, so the only defence without a kernel ruleset is to notice.

When a lane starts and the repository has no watch yet, the launcher records one in
`.lanes/state/git-watch.json`: each target branch's commit, the repository's git snapshot
(`git.git_snapshot`: config, hooks, attributes) and the program-naming keys `git.harden` trusts. A
later lane adds its target if new. An accept lanes-tui makes moves the recorded commit with the
target (`record_accept`). Then `warnings` says, for `status` (text and `--json`), the dashboard's
attention bar and `doctor`:

- a target that moved without an accept *to lane work*: the commits it gained include some on a
  `lane/` branch, or it no longer contains the recorded commit. The lead's own commits (a commit, a
  squash merge or cherry-pick by hand) are on no lane branch and are not reported: an agent commits as
  the lead, so nothing else tells them apart (an agent that commits detached and then moves the target
  is seen only by the kernel ruleset, which keeps refs out of its reach);
- a `remote.*` or `branch.<target>.*` key that is not what it was.

`finish` refuses to push while there is a warning, and names the URL it would push to; the lead
confirms with `finish --push-anyway`, which records the watch anew (`record`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.atomic import read_json, write_json_atomic
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.git.commands import run_git
from lanes_tui.engine.git.git_snapshot import accept_current, differences, snapshot
from lanes_tui.engine.git.harden import common_dir, program_entries
from lanes_tui.engine.git.upstream import upstream_of
from lanes_tui.engine.state.paths import StatePaths

__all__ = ["WATCH_FILE", "accept_config", "accept_git_config", "confirm_git_watch", "git_watch_warnings", "push_url",
           "read_watch", "record", "record_accept", "record_lane_start", "trusted_hooks", "warnings"]

WATCH_FILE = "git-watch.json"


def _path(repo: Path) -> Path:
    return StatePaths(repo).state / WATCH_FILE


def read_watch(repo: Path) -> dict[str, Any] | None:
    """The recorded watch, or None when there is none (or it cannot be read: `warnings` says so)."""
    try:
        data = read_json(_path(repo))
    except (FileNotFoundError, ValueError, OSError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("targets"), dict) else None


def _sha(repo: Path, branch: str) -> str:
    proc = run_git(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}", check=False)
    return os.fsdecode(proc.stdout).strip() if proc.returncode == 0 else ""


def record(repo: Path, targets: list[str]) -> dict[str, Any]:
    """Record the watch anew: these targets at their commits, the git snapshot, the trusted programs."""
    data = {"recorded": time.time(), "targets": {t: _sha(repo, t) for t in targets},
            "snapshot": snapshot(repo), "trusted": program_entries(common_dir(repo))}
    write_json_atomic(_path(repo), data)
    return data


def record_lane_start(repo: Path, target: str) -> None:
    """At a lane's start: make the watch if there is none; add a target it does not know yet."""
    data = read_watch(repo)
    if data is None:
        if not _path(repo).exists():
            record(repo, [target])
        return  # a damaged watch is left for `warnings` to report, never silently replaced
    if target not in data["targets"]:
        data["targets"][target] = _sha(repo, target)
        write_json_atomic(_path(repo), data)


def record_accept(repo: Path, target: str, expected: str, sha: str) -> None:
    """lanes-tui moved the target itself (an accept from `expected` to `sha`): `sha` is the commit
    expected from now on. Only when the watch had `expected`: a target that had already moved without
    an accept stays reported (the accept built on it, it did not explain it)."""
    data = read_watch(repo)
    if data is not None and data["targets"].get(target) == expected:
        data["targets"][target] = sha
        write_json_atomic(_path(repo), data)


def accept_config(repo: Path) -> None:
    """The lead took the repository's git config as it is now (`check --accept-git-config`): the
    watch's snapshot and trusted programs are recorded anew; its targets are left as they were."""
    data = read_watch(repo)
    if data is None:
        return
    data.update(snapshot=snapshot(repo), trusted=program_entries(common_dir(repo)))
    write_json_atomic(_path(repo), data)


def warnings(repo: Path) -> list[str]:
    """One line per thing the watch sees changed: a target moved without an accept, a remote or branch
    key changed. [] without a watch (no lane has started since it existed)."""
    path = _path(repo)
    data = read_watch(repo)
    if data is None:
        return [f"the git watch {path} cannot be read: `lanes-tui finish --push-anyway` records it anew"] \
            if path.exists() else []
    found = []
    for target, was in sorted(data["targets"].items()):
        now = _sha(repo, str(target))
        moved = _moved(repo, str(target), str(was), now) if now != was else None
        if moved is not None:
            found.append(moved)
    before = data.get("snapshot")
    if isinstance(before, dict):
        targets = {str(t) for t in data["targets"]}
        for what, _fix in differences(repo, before, snapshot(repo)):
            if _watched_key(what, targets):
                found.append(what.replace("git config ", "", 1) + " since the first lane started")
    return found


def _watched_key(what: str, targets: set[str]) -> bool:
    key = what.removeprefix("git config ").split(" ", 1)[0]
    if key.startswith("remote."):
        return True
    return any(key.startswith(f"branch.{t}.") for t in targets)


def _moved(repo: Path, target: str, was: str, now: str) -> str | None:
    """The warning for a target not at its recorded commit, or None when the move is the lead's own work.

    Flagged: the target is gone; it no longer contains the recorded commit (a reset, a rewrite); or
    the commits it gained include any on a `lane/` branch (an agent's `update-ref` to its own work; an
    accept records its commit, so accepted work is never here). Commits on no lane branch are taken as
    the lead's (a commit, a squash merge or cherry-pick by hand) and are not reported.
    """
    if not now:
        return f"target {target} is gone (it was at {was[:10]})"
    text = f"target {target} moved from {was[:10] or '(none)'} to {now[:10]} without an accept"
    if was and run_git(repo, "merge-base", "--is-ancestor", was, now, check=False).returncode != 0:
        return text + "; it no longer contains the recorded commit"
    new = _revs(repo, f"{was}..{now}" if was else now)
    on_lanes = _revs(repo, "--branches=lane/*", *([f"^{was}"] if was else [])) or set()
    if new is None:
        return text
    lanes = len(new & on_lanes)
    if not lanes:
        return None
    return text + f" ({len(new)} commit{'s' if len(new) != 1 else ''}, {lanes} of them from lane/ branches)"


def _revs(repo: Path, *spec: str) -> set[str] | None:
    proc = run_git(repo, "rev-list", "--max-count=10000", *spec, check=False)
    return set(os.fsdecode(proc.stdout).split()) if proc.returncode == 0 else None


def push_url(repo: Path, branch: str) -> str | None:
    """`REMOTE URL` a push of `branch` to its upstream goes to (the push URL, else the URL), or None
    without an upstream: what `finish` prints before it pushes."""
    try:
        upstream = upstream_of(repo, branch)
    except LanesError:
        return None
    if upstream is None:
        return None
    proc = run_git(repo, "remote", "get-url", "--push", "--", upstream.remote, check=False)
    url = os.fsdecode(proc.stdout).strip() if proc.returncode == 0 else "(no URL)"
    return f"{upstream.name} at {url}"


def git_watch_warnings(repo: Path) -> list[str]:
    """`warnings`, under the name the engine's door gives it (status, doctor, the attention bar)."""
    return warnings(repo)


def confirm_git_watch(repo: Path) -> list[str]:
    """`finish --push-anyway`: the lead confirmed what the watch saw; it is recorded anew, the same
    targets at their commits now. Returns the warnings it replaced."""
    seen = warnings(repo)
    data = read_watch(repo)
    record(repo, sorted(str(t) for t in data["targets"]) if data is not None else [])
    return seen


def accept_git_config(repo: Path, lane_id: str) -> list[str]:
    """`check ID --accept-git-config`: the repository's git config, hooks and attributes as they are now
    are the lead's; the lane's snapshot and the watch's are recorded anew. Returns what had changed."""
    changed = accept_current(repo, lane_id)
    accept_config(repo)
    return changed


def trusted_hooks(repo: Path) -> str | None:
    """The shared hooks folder when it holds exactly what it held when the watch was recorded (before
    the first lane could write it): then its hooks are the lead's, and `finish`'s push runs them (the
    pre-push hook of `init --hooks`). None otherwise: the push runs no hook."""
    data = read_watch(repo)
    before = data.get("snapshot") if data is not None else None
    if not isinstance(before, dict) or before.get("hooks") != snapshot(repo)["hooks"]:
        return None
    config = before.get("config")
    if isinstance(config, dict) and any(str(k).lower() == "core.hookspath" for pairs in config.values()
                                        if isinstance(pairs, list) for k, *_ in pairs):
        return None  # the lead points hooks elsewhere: not a folder this snapshot covers
    return str(common_dir(repo) / "hooks")
