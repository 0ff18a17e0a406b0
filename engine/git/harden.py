"""lanes-tui's own git never runs what a lane chose (issue 28, item 3).

An agent runs as the lead's user and git shares one configuration and one hooks folder between the
lead's checkout and every worktree. So anything git would *run* on lanes-tui's behalf — an
fsmonitor, a hook, a clean/smudge filter, a textconv or external diff, a merge driver, an ssh or
credential program — could have been chosen by a lane. Every git lanes-tui runs therefore gets:

- the fixed part (`core.repo.GIT_FIXED_CONFIG`): `core.fsmonitor=false` and `core.hooksPath` at a
  file, so no hook of the shared folder runs (`--no-verify` alone skips only some);
- the drivers part (`driver_overrides`): every program-naming key of the repository's own config
  files (`<common>/config`, `config.worktree` files, what they include) whose value is not one the
  lead trusted is set back with the same command-line config: a filter to none, a textconv or diff
  command to none, a merge driver to `false` (a conflict, never a lane's program), an ssh, askpass or
  gpg program to git's default, `credential.helper` reset to the trusted list. The trusted values are
  those in the repository's git watch (`git.watch`, recorded when the first live lane starts); with
  no watch yet, what is there now is the lead's.
- for a lane's worktree, the git dir derived from the lane's id and root (`register_lane`), set with
  `GIT_DIR`/`GIT_COMMON_DIR`/`GIT_WORK_TREE`: never the worktree's `.git` file, nor the admin
  folder's `commondir`, both of which the lane can write. `dotgit_problem` says when the `.git`
  file no longer points where it must, for the decisions to refuse.
- a contained lane's agent writes its objects into a store of its own, `<admin>/lane-objects`
  (`lanes.confine`, issue 29). lanes-tui's git sees that store (as an alternate) only for the
  commands in `READ_COMMANDS`, which write no object and no ref: a `git diff` of a file the agent
  staged may need its blob, but a `write-tree` or `commit` that saw it could name an object that
  vanishes with the worktree. Without it git itself refuses such a tree ("invalid object"), so every
  commit lanes-tui makes of a lane is built from the files, rehashed in a temporary index.

The reads here use `git config --file`, which runs nothing, and are cached on the files' stat so a
busy dashboard does not pay a git process per git process.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from lanes_tui.engine.core.repo import git_env, with_git_config

__all__ = [
    "LANE_OBJECTS", "READ_COMMANDS", "LaneGitDirs", "common_dir", "config_entries", "dotgit_problem",
    "driver_overrides", "hardened_env", "is_program_key", "lane_dirs_for", "read_command", "register_lane",
    "repo_config_files",
]

#: A contained lane's own object store, in its admin folder: what its agent's `git add` writes.
LANE_OBJECTS = "lane-objects"
#: git commands that write no object and no ref: only they see a lane's private store (module doc).
READ_COMMANDS = frozenset({"diff", "status", "ls-files", "diff-files", "diff-index", "cat-file", "show", "log",
                           "ls-tree"})
#: Global options whose value is the next argument (`git -c KEY=VALUE diff`).
_VALUE_OPTIONS = frozenset({"-c", "-C", "--git-dir", "--work-tree", "--namespace", "--config-env"})

#: Single-valued keys that name a program, and the value that runs nothing of a lane's (git's default).
PROGRAM_KEYS: dict[str, str] = {
    "core.sshcommand": "ssh", "core.askpass": "", "core.gitproxy": "", "core.alternaterefscommand": "",
    "gpg.program": "gpg", "gpg.openpgp.program": "gpg", "gpg.x509.program": "gpgsm", "gpg.ssh.program": "ssh-keygen",
    "gpg.ssh.defaultkeycommand": "", "diff.external": "",
}
#: Multi-valued keys: reset with an empty value, then the trusted values again.
LIST_KEYS = frozenset({"credential.helper"})
#: `<section>.<name>.<key>` drivers and their neutral value.
DRIVER_KEYS = re.compile(r"^(filter\.[^\n]*\.(clean|smudge|process|required)|diff\.[^\n]*\.(textconv|command)"
                         r"|merge\.[^\n]*\.driver)$")
_CONFIG_TIMEOUT_S = 30.0


def is_program_key(key: str) -> bool:
    """A config key whose value git may run (case-insensitive section and key, as `--list` prints them)."""
    low = key.lower()
    return low in PROGRAM_KEYS or low in LIST_KEYS or bool(DRIVER_KEYS.match(key)) or bool(
        DRIVER_KEYS.match(_lower_ends(key)))


def _lower_ends(key: str) -> str:
    section, _, rest = key.partition(".")
    middle, _, last = rest.rpartition(".")
    return f"{section.lower()}.{middle}.{last.lower()}" if middle else key.lower()


def _neutral(key: str) -> str:
    low = _lower_ends(key)
    if low.endswith(".required"):
        return "false"
    if low.startswith("merge."):
        return "false"
    return PROGRAM_KEYS.get(low, "")


# --- the repository's own config files -------------------------------------------------------------

def repo_config_files(common: Path) -> list[Path]:
    """The config files a lane can write in the shared git dir: `config`, `config.worktree`, and each
    worktree's `config.worktree` (read by git when `extensions.worktreeConfig` is on)."""
    files = [common / "config", common / "config.worktree"]
    admin = common / "worktrees"
    with contextlib.suppress(OSError):
        files.extend(sorted(p / "config.worktree" for p in admin.iterdir() if p.is_dir()))
    return [f for f in files if f.is_file()]


def config_entries(path: Path) -> list[tuple[str, str]]:
    """`git config --file PATH --list --includes -z` as (key, value) pairs; [] for an unreadable file.

    `git config --file` reads the file and what it includes, and runs nothing.
    """
    try:
        proc = subprocess.run(["git", "config", "--file", str(path), "--list", "--includes", "-z"], env=git_env(),
                              cwd=path.parent, capture_output=True, timeout=_CONFIG_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    pairs = []
    for item in proc.stdout.split(b"\0"):
        if item:
            key, _, value = os.fsdecode(item).partition("\n")
            pairs.append((key, value))
    return pairs


def _stat_key(paths: list[Path]) -> tuple[tuple[str, int, int, int], ...]:
    out = []
    for path in paths:
        try:
            st = path.stat()
            out.append((str(path), st.st_mtime_ns, st.st_size, st.st_ino))
        except OSError:
            out.append((str(path), -1, -1, -1))
    return tuple(out)


def _trusted(common: Path) -> dict[str, list[str]] | None:
    """The program keys the lead trusted (the git watch's `trusted`), or None with no watch yet."""
    watch = _watch_file(common)
    if watch is None:
        return None
    try:
        data = json.loads(watch.read_text(encoding="utf-8"))
        trusted = data["trusted"]
        if isinstance(trusted, dict) and all(isinstance(v, list) for v in trusted.values()):
            return {str(k): [str(x) for x in v] for k, v in trusted.items()}
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return {}  # a damaged watch trusts nothing of the repository's config


def _watch_file(common: Path) -> Path | None:
    """`.lanes/state/git-watch.json` of the repository whose git dir is `common` (`<repo>/.git`)."""
    if common.name != ".git":
        return common / "lanes-tui-no-watch"  # a separate git dir: no state folder known, trust nothing
    path = common.parent / ".lanes" / "state" / "git-watch.json"
    return path if path.exists() else None


_CACHE: dict[Path, tuple[object, list[tuple[str, str]]]] = {}


def driver_overrides(common: Path) -> list[tuple[str, str]]:
    """The command-line config that sets back every untrusted program key of the repository's config."""
    files = repo_config_files(common)
    watch = _watch_file(common)
    key = (_stat_key([*files, *([watch] if watch else [])]), str(watch))
    cached = _CACHE.get(common)
    if cached is not None and cached[0] == key:
        return cached[1]
    trusted = _trusted(common)
    current: dict[str, list[str]] = {}
    for path in files:
        for name, value in config_entries(path):
            if is_program_key(name):
                current.setdefault(name, []).append(value)
    overrides: list[tuple[str, str]] = []
    if trusted is not None:
        for name, values in sorted(current.items()):
            allowed = trusted.get(name, [])
            if values == allowed or (name.lower() not in LIST_KEYS and values[-1:] == allowed[-1:]):
                continue
            if name.lower() in LIST_KEYS:
                overrides.extend([(name, ""), *((name, v) for v in allowed)])
            else:
                overrides.append((name, allowed[-1] if allowed else _neutral(name)))
    _CACHE[common] = (key, overrides)
    return overrides


def program_entries(common: Path) -> dict[str, list[str]]:
    """The program keys of the repository's config files now: what the git watch trusts when it is made."""
    found: dict[str, list[str]] = {}
    for path in repo_config_files(common):
        for name, value in config_entries(path):
            if is_program_key(name):
                found.setdefault(name, []).append(value)
    return found


# --- where git is for a lane -----------------------------------------------------------------------

@dataclass(frozen=True)
class LaneGitDirs:
    """A lane's git, from its id and root: never from its `.git` file or its admin folder's files."""

    worktree: Path
    git_dir: Path
    common: Path

    @property
    def objects(self) -> Path:
        """The lane's private object store (present only for a lane that ran contained)."""
        return self.git_dir / LANE_OBJECTS


_LANES: dict[Path, LaneGitDirs] = {}
_COMMON: dict[Path, Path] = {}


def common_dir(repo: Path) -> Path:
    """The main repository's git dir: `<repo>/.git` (the lead's), else what git says in the main checkout."""
    repo = repo.resolve()
    found = _COMMON.get(repo)
    if found is None:
        dot = repo / ".git"
        if dot.is_dir():
            found = dot
        else:
            proc = subprocess.run(["git", "rev-parse", "--git-common-dir"], cwd=repo, env=git_env(),
                                  capture_output=True, timeout=_CONFIG_TIMEOUT_S, stdin=subprocess.DEVNULL, check=False)
            found = (repo / os.fsdecode(proc.stdout).strip()).resolve() if proc.returncode == 0 else dot
        _COMMON[repo] = found
    return found


def register_lane(repo: Path, lane_id: str, worktree: Path) -> LaneGitDirs:
    """From now on, git in `worktree` (or below) is the lane's: `<common>/worktrees/<id>`."""
    common = common_dir(repo)
    dirs = LaneGitDirs(worktree.resolve(), common / "worktrees" / lane_id, common)
    _LANES[dirs.worktree] = dirs
    return dirs


def lane_dirs_for(cwd: Path) -> LaneGitDirs | None:
    """The registered lane whose worktree holds `cwd`, if any."""
    if not _LANES:
        return None
    try:
        here = cwd.resolve()
    except (OSError, RuntimeError):
        return None
    for folder in (here, *here.parents):
        found = _LANES.get(folder)
        if found is not None:
            return found
    return None


def _common_for(cwd: Path) -> Path | None:
    """The shared git dir `cwd` is in, found without reading a `.git` file's target as the truth:
    a `.git` folder is a main checkout's own; a `.git` file only names where to look for the config."""
    try:
        here = cwd.resolve()
    except (OSError, RuntimeError):
        return None
    for folder in (here, *here.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return dot
        if dot.is_file():
            try:
                text = dot.read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                return None
            target = (folder / text.removeprefix("gitdir:").strip()).resolve()
            return target.parent.parent if target.parent.name == "worktrees" else target
        if folder.name == ".git" or ((folder / "HEAD").is_file() and (folder / "objects").is_dir()):
            return folder  # cwd is a git dir itself (a bare repository, or `.git`)
    return None


def read_command(args: tuple[str, ...] | list[str]) -> bool:
    """Whether `git args…` is one of `READ_COMMANDS` (global options before the command skipped)."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _VALUE_OPTIONS:
            skip = True
        elif not arg.startswith("-"):
            return arg in READ_COMMANDS
    return False


def hardened_env(cwd: Path, extra: dict[str, str] | None = None, *, reads: bool = False) -> dict[str, str]:
    """The environment for a git in `cwd`: `git_env()`, the lane's derived dirs, the driver overrides;
    with `reads` (a command that writes no object and no ref), the lane's private store as an alternate."""
    env = git_env()
    dirs = lane_dirs_for(cwd)
    common = dirs.common if dirs is not None else _common_for(cwd)
    if dirs is not None:
        env.update(GIT_DIR=str(dirs.git_dir), GIT_COMMON_DIR=str(dirs.common), GIT_WORK_TREE=str(dirs.worktree))
        if reads and dirs.objects.is_dir():
            env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = str(dirs.objects)
    if common is not None:
        with_git_config(env, driver_overrides(common))
    env.update(extra or {})
    return env


def dotgit_problem(dirs: LaneGitDirs) -> str | None:
    """Why the worktree's `.git` file does not point at the lane's own git folder, or None when it does.

    git itself (`worktree remove`, an agent's `git status`) still reads that file; lanes-tui does not,
    but a lane whose file was redirected is reported and refused for decisions.
    """
    dot = dirs.worktree / ".git"
    if os.path.islink(dot) or not dot.is_file():
        return f"{dot} is not the file git wrote (it is {'a link' if os.path.islink(dot) else 'missing or a folder'})"
    try:
        text = dot.read_text(encoding="utf-8", errors="replace").strip()
    except OSError as exc:
        return f"{dot} cannot be read ({exc.strerror})"
    if not text.startswith("gitdir:"):
        return f"{dot} does not start with 'gitdir:'"
    target = Path(os.path.normpath(dirs.worktree / text[len("gitdir:"):].strip()))
    if target.resolve() != dirs.git_dir.resolve():
        return f"{dot} points at {target}, not at the lane's own git folder {dirs.git_dir}"
    if not dirs.git_dir.is_dir():
        return f"the lane's git folder {dirs.git_dir} is gone"
    return None


def repair_dotgit(dirs: LaneGitDirs) -> bool:
    """Write the `.git` file git expects (for `git worktree remove` to accept the folder); True if changed."""
    if dotgit_problem(dirs) is None or not dirs.git_dir.is_dir():
        return False
    dot = dirs.worktree / ".git"
    if os.path.isdir(dot) and not os.path.islink(dot):
        return False  # a folder of its own: never rewritten, the removal guards decide
    if os.path.lexists(dot):
        os.unlink(dot)
    dot.write_text(f"gitdir: {dirs.git_dir}\n", encoding="utf-8")
    return True
