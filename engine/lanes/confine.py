"""What a lane's processes may write, and the kernel ruleset that holds them to it.

Every agent and every gate of a lane runs under a Landlock ruleset (`procs.landlock`) that lets it
write only:

* its worktree;
* its own git admin folder, `<common-dir>/worktrees/<name>` (its index, HEAD, logs): `git status`,
  `git diff`, `git checkout -- FILE` and `git restore` work;
* a TMPDIR of its own (fresh per lane, removed when the lane ends; `TMPDIR`, `TMP` and `TEMP` point at
  it), since a shared `/tmp` would be shared with other lanes;
* the terminal and null devices (`/dev/null`, `/dev/pts`, …) and `/dev/shm`;
* for an agent, its provider's own state (`ProviderConfig.writable`: `~/.claude`, `~/.codex`, …, plus
  the lead's `[providers.NAME] writable`); for a gate, `[gates] writable`.

Nothing else is writable: the lead checkout, the shared git config, hooks, refs, packed-refs and
`info/`, the object store, `.lanes/` and the state folder, other worktrees, the heavy-slot locks,
cgroupfs. The shared object store is left out on purpose: with it an agent could delete or replace
the objects the lead's own branches point at. Instead a contained process gets an object store of its
own (issue 29): `GIT_OBJECT_DIRECTORY` is `<admin>/lane-objects` (inside its admin folder, so it is
writable and goes with the worktree) and `GIT_ALTERNATE_OBJECT_DIRECTORIES` the shared store, read
only. So `git add`, `git diff --cached`, `git stash create` work; what needs a shared ref (`commit` on
the lane's branch, `stash`) still fails at the ref. Nothing lanes-tui writes may name an object that
is only there: every commit it makes is rehashed from the files in a temporary index, and its own git
sees the private store only for commands that write no object and no ref (`git.harden`).

Where the kernel has no Landlock, a lane runs only if the lead allowed it (`run --allow-uncontained`
or `[lanes] allow_uncontained = true`), and its record says it ran uncontained.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.trees import remove_tree
from lanes_tui.engine.git.harden import LANE_OBJECTS, common_dir
from lanes_tui.engine.procs import landlock
from lanes_tui.engine.state.paths import repo_key, runtime_dir

__all__ = ["DEVICES", "UNCONTAINED_FIX", "Confinement", "check_contained", "confine", "describe_here",
           "lane_admin_dir", "private_objects", "provider_writable"]

#: Devices every process expects to write (or open for writing): never a file of the lead's.
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx",
           "/dev/pts", "/dev/shm")  # noqa: S108 - a rule that allows writing there, not a temp file
#: Set in a confined process's environment: `ask` and `lock` then talk to the supervisor for the
#: files they cannot write themselves.
CONFINED_ENV = "LANES_CONFINED"
UNCONTAINED_FIX = ("run on a Linux kernel with Landlock (5.13+, `landlock` in the lsm= boot list), or run "
                   "uncontained on purpose with --allow-uncontained or [lanes] allow_uncontained = true")


def check_contained(allowed: bool, probe: landlock.Probe | None = None) -> None:
    """Refuse a lane the kernel cannot confine, unless the lead allowed it (one line with the fix)."""
    found = probe or landlock.probe()
    if found.available or allowed:
        return
    raise LanesError(f"the kernel cannot confine this lane's writes to its worktree: {found.reason}",
                     UNCONTAINED_FIX)


def describe_here() -> str:
    """`doctor`'s line: the mechanism in force on this machine, or why there is none."""
    return landlock.probe().describe()


def provider_writable(entries: Iterable[str], env: dict[str, str] | None = None) -> list[Path]:
    """A provider's `writable` entries as paths: `~` is the agent's HOME; a trailing `/` marks a folder,
    which is made when missing (a rule needs something to hold on to); a missing file is skipped.

    `$NAME/…` is the agent's variable NAME (a preset's `$CLAUDE_CONFIG_DIR/`: Claude Code keeps all its
    state there, not in HOME, when the lead sets it); skipped when unset or relative, and never the
    whole disk or the whole HOME, whatever the variable says.
    """
    env = env or {}
    home = env.get("HOME") or os.path.expanduser("~")
    found: list[Path] = []
    for entry in entries:
        if entry.startswith("$"):
            name, sep, rest = entry[1:].partition("/")
            base = env.get(name, "")
            if not base or not os.path.isabs(base):
                continue
            text = base.rstrip("/") + sep + rest
            if Path(text) in (Path("/"), Path(home)):
                continue
        else:
            text = home + entry[1:] if entry == "~" or entry.startswith("~/") else entry
        path = Path(text)
        if not path.is_absolute():
            continue
        if text.endswith("/"):
            with contextlib.suppress(OSError):
                path.mkdir(parents=True, exist_ok=True, mode=0o700)
        found.append(path)
    return found


def lane_admin_dir(repo: Path, worktree: Path) -> Path | None:
    """The worktree's own git admin folder, found from the repository's side (`worktrees/*/gitdir`
    naming `<worktree>/.git`), never from the worktree's `.git` file, which the lane can write."""
    want = str(worktree / ".git")
    folder = common_dir(repo) / "worktrees"
    candidates = [folder / worktree.name, *(p for p in _children(folder) if p.name != worktree.name)]
    for admin in candidates:
        try:
            if (admin / "gitdir").read_text(encoding="utf-8").strip() == want:
                return admin
        except OSError:
            continue
    return None


def _children(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


@dataclass
class Confinement:
    """One lane process's confinement: the ruleset (None: uncontained), its TMPDIR, what it records."""

    ruleset: landlock.Ruleset | None
    tmpdir: Path | None
    reason: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    #: (the lane's private object store, the shared one): set for a contained process only.
    objects: tuple[Path, Path] | None = None

    @property
    def mechanism(self) -> str:
        return f"landlock-abi{self.ruleset.abi}" if self.ruleset else "none"

    def preexec(self, first: Callable[[], None] | None = None) -> Callable[[], None] | None:
        """`first` (the cgroup join: it writes cgroupfs, which the ruleset forbids), then the ruleset."""
        restrict = self.ruleset.restrict() if self.ruleset else None
        if restrict is None or first is None:
            return restrict or first
        join = first

        def both() -> None:
            join()
            restrict()

        return both

    def env(self) -> dict[str, str]:
        """What the confined process's environment gains: its TMPDIR, and the confinement's name."""
        if self.tmpdir is None:
            return {}
        found = {"TMPDIR": str(self.tmpdir), "TMP": str(self.tmpdir), "TEMP": str(self.tmpdir)}
        if self.ruleset is not None:
            found[CONFINED_ENV] = self.mechanism
        if self.objects is not None:  # git's object writes land in the lane's own store (module doc)
            found["GIT_OBJECT_DIRECTORY"] = str(self.objects[0])
            found["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = str(self.objects[1])
        return found

    def record(self) -> dict[str, Any]:
        """What `lane.json` keeps under `confinement` and the events say."""
        if self.ruleset is None:
            return {"mechanism": "none", "reason": self.reason, **self.extra}
        objects = {"objects": str(self.objects[0])} if self.objects else {}
        return {"mechanism": self.mechanism, "writable": list(self.ruleset.writable),
                "missing": list(self.ruleset.missing), **objects, **self.extra}

    def close(self, *, remove_tmp: bool = True) -> None:
        if self.ruleset is not None:
            self.ruleset.close()
        if remove_tmp and self.tmpdir is not None:
            remove_tree(self.tmpdir)


def lane_tmpdir(repo: Path, lane_id: str, kind: str) -> Path:
    """A fresh, private TMPDIR for one lane's agents (`kind` = "agent") or one check's gates."""
    base = runtime_dir() / "tmp" / repo_key(repo)
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    folder = base / f"{lane_id}.{kind}"
    remove_tree(folder)  # what an earlier run left: never shared with this one
    folder.mkdir(mode=0o700)
    return folder


def confine(repo: Path, lane_id: str, worktree: Path, *, kind: str, writable: Iterable[Path],
            allowed_uncontained: bool, probe: landlock.Probe | None = None) -> Confinement:
    """Build the confinement of an agent run (`kind` = "agent") or a check's gates (`kind` = "gates").

    Raises LanesError when the kernel cannot confine and the lead did not allow it, or when the
    kernel refuses the ruleset.
    """
    found = probe or landlock.probe()
    check_contained(allowed_uncontained, found)
    tmpdir = lane_tmpdir(repo, lane_id, kind)
    if not found.available:
        return Confinement(None, tmpdir, reason=found.reason, extra={"allowed_by": "allow_uncontained"})
    paths: list[Path | str] = [worktree, tmpdir, *DEVICES, *writable]
    admin = lane_admin_dir(repo, worktree)
    objects = None
    if admin is not None:
        paths.insert(1, admin)
        objects = (private_objects(admin), common_dir(repo) / "objects")
    try:
        ruleset = landlock.build(found.abi, paths)
    except OSError as exc:
        remove_tree(tmpdir)
        raise LanesError(f"the kernel refused the lane's Landlock ruleset: {exc}", UNCONTAINED_FIX) from exc
    return Confinement(ruleset, tmpdir, objects=objects)


def private_objects(admin: Path) -> Path:
    """The lane's own object store in its admin folder (`LANE_OBJECTS`), made when missing.

    Only for a contained lane: an uncontained one may write the shared refs, and a commit of its
    own store on its branch would leave the branch naming objects that vanish with the worktree.
    """
    folder = admin / LANE_OBJECTS
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder
