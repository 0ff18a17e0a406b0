"""Where everything lives on disk, derived from the repository root (PRODUCT.md, "State on disk")."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from lanes_tui.engine.core.atomic import PRIVATE_DIR
from lanes_tui.engine.core.digest import sha256_hex
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import validate_lane_id


def default_worktree_root() -> Path:
    """The user data dir of lanes-tui (XDG), outside any repository."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "lanes-tui" / "worktrees"


def runtime_dir() -> Path:
    """Machine-wide locks (heavy slots) live here, shared by every repository of the user."""
    base = (os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("XDG_CACHE_HOME")
            or str(Path.home() / ".cache"))
    return Path(base) / "lanes-tui"


def heavy_slot_dir() -> Path:
    """The machine-wide heavy slots: gates and `lanes-tui lock` take the same ones, so together they
    never run more suites at once than the machine was sized for."""
    return runtime_dir() / "heavy-slots"


def repo_key(repo: Path) -> str:
    """`<repo-name>-<hash8>`: one folder per repository under the worktree root."""
    digest = sha256_hex(str(repo.resolve()).encode())[:8]
    return f"{repo.resolve().name}-{digest}"


def inside(path: Path, root: Path) -> bool:
    """True if `path` (resolved) is `root` or below it; symlinks cannot smuggle a path out."""
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class StatePaths:
    """The `.lanes/` layout of one repository.

    Every path is worked out once per object (`cached_property`, and `lane` keeps each lane's
    `LanePaths`): the dashboard's engine asks for the same few hundred paths several times a second,
    and building them again with pathlib was a quarter of its scan at 100 lanes (docs/benchmarks.md, B2).
    """

    repo: Path

    @cached_property
    def lanes_dir(self) -> Path:
        return self.repo / ".lanes"

    @cached_property
    def config(self) -> Path:
        return self.lanes_dir / "config.toml"

    @cached_property
    def state(self) -> Path:
        return self.lanes_dir / "state"

    @cached_property
    def lanes(self) -> Path:
        return self.state / "lanes"

    @cached_property
    def inbox(self) -> Path:
        return self.state / "inbox"

    @cached_property
    def locks(self) -> Path:
        return self.state / "locks"

    @cached_property
    def bin(self) -> Path:
        return self.state / "bin"

    @cached_property
    def engine_log(self) -> Path:
        return self.state / "engine.log"

    @cached_property
    def _lane_paths(self) -> dict[str, LanePaths]:
        """Lane id -> its `LanePaths`, for the ids `lane` was asked for (only valid ones)."""
        return {}

    def lane(self, lane_id: str) -> LanePaths:
        paths = self._lane_paths.get(lane_id)
        if paths is None:  # an invalid id raises here every time, and is never kept
            paths = self._lane_paths[lane_id] = LanePaths(self.lanes / validate_lane_id(lane_id))
        return paths

    def lane_inbox(self, lane_id: str) -> Path:
        return self.inbox / validate_lane_id(lane_id)

    def ensure(self) -> None:
        """Create the state folders and the `.gitignore` that keeps state out of the lead's commits.

        The state holds prompts, agent output and answers: its folders are the lead's alone (0700),
        and a state folder an older version made 0755 is tightened here.
        """
        self.lanes_dir.mkdir(parents=True, exist_ok=True)
        for folder in (self.state, self.lanes, self.inbox, self.locks, self.bin):
            folder.mkdir(mode=PRIVATE_DIR, exist_ok=True)
        if stat.S_IMODE(self.state.stat().st_mode) & 0o077:
            self.state.chmod(PRIVATE_DIR)
        ignore = self.lanes_dir / ".gitignore"
        if not ignore.exists():
            ignore.write_text("state/\n", encoding="utf-8")

    def lane_ids(self) -> list[str]:
        if not self.lanes.is_dir():
            return []
        return sorted(p.name for p in self.lanes.iterdir() if p.is_dir() and (p / "lane.json").exists())


@dataclass(frozen=True)
class LanePaths:
    """The files of one lane under `.lanes/state/lanes/<id>/` (each worked out once, as in `StatePaths`)."""

    dir: Path

    @cached_property
    def record(self) -> Path:
        return self.dir / "lane.json"

    @cached_property
    def events(self) -> Path:
        return self.dir / "events.jsonl"

    @cached_property
    def output(self) -> Path:
        return self.dir / "output.log"

    @cached_property
    def packet(self) -> Path:
        return self.dir / "packet.json"

    @cached_property
    def receipt(self) -> Path:
        return self.dir / "receipt.json"

    @cached_property
    def supervisor(self) -> Path:
        return self.dir / "supervisor.json"

    @cached_property
    def samples(self) -> Path:
        return self.dir / "samples.jsonl"

    @cached_property
    def supervisor_log(self) -> Path:
        return self.dir / "supervisor.log"

    @cached_property
    def origin(self) -> Path:
        """Written once when the lane is created (`git.lane_paths`); nothing rewrites it."""
        return self.dir / "origin.json"

    @cached_property
    def accept_journal(self) -> Path:
        return self.dir / "accept.json"


def worktree_path(worktree_root: Path, repo: Path, lane_id: str) -> Path:
    path = worktree_root / repo_key(repo) / validate_lane_id(lane_id)
    if not inside(path, worktree_root):
        raise LanesError(f"worktree path {path} escapes the worktree root {worktree_root}")
    return path
