"""Where a lane's worktree and branch are: derived from its id and its own root, never read from lane.json.

`lane.json` is rewritten by the supervisor all the time and sits within reach of an agent (which runs
as the lead's user); a hand edit can point it at another lane's worktree, at the repository, or at a
folder under a broad worktree root. So nothing that deletes or runs work takes a path or a branch
from it:

- When a lane is created, the launcher writes `origin.json` in the lane's state folder, once:
  `{id, repo, worktree_root, worktree, branch, created, lead_checkout}` and a sha256 over them.
  Agents are told about `LANES_HOME` for `lanes-tui ask`, not about this file, and the supervisor
  never writes it.
- The lane's worktree is always `worktree_path(root, repo, id)` and its branch `lane/<id>`, with the
  root from `origin.json`: a later edit of `[lanes] worktree_root` applies to new lanes only.
  `locate_lane` derives both and refuses in one line, naming the file and the value to restore, when
  lane.json or origin.json disagree (path, branch, root, id ≠ its folder, repository).
- git is the second witness (`git_witness`): a folder that `git worktree list --porcelain` does not
  list as this lane's worktree on `lane/<id>` (or mid-rebase of it) is never removed and no gate runs
  in it, and nothing is done while git has `lane/<id>` checked out in another folder.

Why a plain digest and not an HMAC: an agent runs as the lead's user, so any key lanes-tui could read,
the agent could read too, and a keyed MAC would promise more than it holds. The digest catches a
hand edit or a rewrite of one field; the derivation makes even a consistent forgery harmless, since
every path is `<root>/<repo>-<hash8>/<id>` (a forged root can only name a folder called after this
lane) and git must still list that folder as this lane's worktree before anything touches it.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.atomic import read_json, write_json_atomic
from lanes_tui.engine.core.digest import sha256_hex
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import branch_for, validate_lane_id
from lanes_tui.engine.core.schema import NewerSchema, check_schema, stamped
from lanes_tui.engine.git.commands import WorktreeEntry, list_worktrees, run_git
from lanes_tui.engine.git.harden import dotgit_problem, register_lane, repair_dotgit
from lanes_tui.engine.git.worktrees import remove_worktree
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import LanePaths, StatePaths, repo_key, worktree_path

ORIGIN_FIELDS = ("id", "repo", "worktree_root", "worktree", "branch", "created", "lead_checkout")


@dataclass(frozen=True)
class LaneOrigin:
    """What a lane was created as; written once to `origin.json`, with a digest over these fields."""

    id: str
    repo: str
    worktree_root: str
    worktree: str
    branch: str
    created: float
    lead_checkout: dict[str, Any] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in ORIGIN_FIELDS}

    def digest(self) -> str:
        text = json.dumps(self.body(), sort_keys=True, separators=(",", ":"))
        return sha256_hex(text.encode())


@dataclass(frozen=True)
class LaneLocation:
    """A lane's worktree and branch as derived from its id and root, agreed by its record and origin."""

    lane_id: str
    repo: Path
    root: Path
    worktree: Path
    branch: str
    origin: LaneOrigin | None


def write_origin(lane: LanePaths, origin: LaneOrigin) -> None:
    """Once, when the lane is created; an existing origin is never replaced."""
    if os.path.lexists(lane.origin):
        raise LanesError(f"{lane.origin} already exists", "lane ids are never reused; pick another --id")
    write_json_atomic(lane.origin, stamped({**origin.body(), "digest": origin.digest()}, "origin.json"))


def read_origin(lane: LanePaths) -> LaneOrigin | None:
    """The lane's origin; None for a lane created before origins existed; a damaged one refuses."""
    try:
        data = read_json(lane.origin)
    except FileNotFoundError:
        return None
    except (ValueError, OSError) as exc:
        raise _damaged(lane, f"it is not readable JSON ({exc})") from None
    if not isinstance(data, dict):
        raise _damaged(lane, "it does not hold an object")
    try:  # the version is outside the digest: it says how to read the fields the digest covers
        check_schema(data, "origin.json", f"origin.json of {lane.dir.name}")
    except NewerSchema:
        raise
    except LanesError as exc:
        raise _damaged(lane, exc.what) from None
    try:
        strings = {name: data[name] for name in ("id", "repo", "worktree_root", "worktree", "branch")}
        if not all(isinstance(v, str) and "\x00" not in v for v in strings.values()) \
                or not isinstance(data["created"], int | float) or not math.isfinite(data["created"]):
            raise TypeError("a field has the wrong type")
        checkout = data.get("lead_checkout") or {}
        if not isinstance(checkout, dict):
            raise TypeError("lead_checkout is not an object")
        origin = LaneOrigin(**strings, created=float(data["created"]), lead_checkout=checkout)
    except (KeyError, TypeError, OverflowError) as exc:  # OverflowError: a `created` no float can hold
        raise _damaged(lane, f"a field is missing or of the wrong type ({exc})") from None
    if data.get("digest") != origin.digest():
        raise _damaged(lane, "its digest does not match its fields")
    return origin


def _damaged(lane: LanePaths, why: str) -> LanesError:
    return LanesError(f"lane {lane.dir.name}: {lane.origin} cannot be trusted: {why}",
                      "restore it from a backup (lanes-tui writes it once, when the lane starts); until then "
                      f"clean up by hand: `git worktree list` shows the worktree on lane/{lane.dir.name}")


def locate_lane(repo: Path, lane_id: str, record: LaneRecord, *, default_root: Path | None = None) -> LaneLocation:
    """Derive the lane's worktree and branch and check that its record and origin agree; else refuse.

    `default_root` (the configured root) is used only for a lane older than `origin.json` whose
    worktree git no longer lists and whose record claims no usable root.
    """
    validate_lane_id(lane_id)
    repo = repo.resolve()
    lane = StatePaths(repo).lane(lane_id)
    where = lane.record
    if record.id != lane_id:
        raise LanesError(f"{where} names id {record.id!r}, but it is the record of lane {lane_id}",
                         f'restore "id": "{lane_id}" in it')
    if "\x00" in record.repo or Path(record.repo).resolve() != repo:  # (a NUL: resolve raises ValueError)
        raise LanesError(f"{where} names repository {record.repo}, not {repo}", f'restore "repo": "{repo}" in it')
    branch = branch_for(lane_id)
    origin = read_origin(lane)
    if origin is not None:
        root = _root_from_origin(lane, origin, repo, lane_id)
        if record.worktree_root and os.path.normpath(record.worktree_root) != str(root):
            raise LanesError(f"{where} names worktree root {record.worktree_root}, but lane {lane_id} was created "
                             f"under {root}", f'restore "worktree_root": "{root}" in it')
    else:
        root = _legacy_root(repo, lane_id, record, default_root)
    expected = worktree_path(root, repo, lane_id)
    if record.branch != branch:
        raise LanesError(f"{where} names branch {record.branch!r}, not {branch!r}",
                         f'restore "branch": "{branch}" in it')
    if os.path.normpath(record.worktree) != str(expected):
        raise LanesError(f"{where} names worktree {record.worktree}, not this lane's folder {expected}",
                         f'restore "worktree": "{expected}" in it')
    return _registered(LaneLocation(lane_id, repo, root, expected, branch, origin))


def _registered(loc: LaneLocation) -> LaneLocation:
    """From here on, every git lanes-tui runs in the lane's folder uses the git dir derived from its id
    (`git.harden`), whatever its `.git` file says."""
    register_lane(loc.repo, loc.lane_id, loc.worktree)
    return loc


def _root_from_origin(lane: LanePaths, origin: LaneOrigin, repo: Path, lane_id: str) -> Path:
    if origin.id != lane_id:
        raise _damaged(lane, f"it names lane {origin.id!r}, not {lane_id!r}")
    if Path(origin.repo).resolve() != repo:
        raise LanesError(f"lane {lane_id} was started in the repository {origin.repo}, not in {repo}",
                         "run lanes-tui in the repository the lane belongs to")
    root = Path(os.path.normpath(origin.worktree_root))
    if not root.is_absolute() or origin.branch != branch_for(lane_id) \
            or os.path.normpath(origin.worktree) != str(worktree_path(root, repo, lane_id)):
        raise _damaged(lane, "its root, worktree and branch disagree with each other")
    return root


def _legacy_root(repo: Path, lane_id: str, record: LaneRecord, default_root: Path | None) -> Path:
    """The root of a lane without `origin.json` (made before it existed, or the file was removed).

    Taken from git (where `lane/<id>` is checked out) or else from the record's own claim. That is
    safe: without git's witness nothing is removed and no gate runs, so a wrong root only refuses.
    """
    if record.worktree_root and Path(record.worktree_root).is_absolute():
        return Path(os.path.normpath(record.worktree_root))
    key = repo_key(repo)
    from_git = _root_from_git(repo, lane_id)
    if from_git is not None:
        return from_git
    claimed = Path(os.path.normpath(record.worktree))
    if claimed.is_absolute() and claimed.name == lane_id and claimed.parent.name == key:
        return claimed.parent.parent
    if default_root is not None:
        return default_root
    raise LanesError(f"lane {lane_id} has no origin.json, git lists no worktree on {branch_for(lane_id)}, "
                     f"and lane.json names no folder of this lane ({record.worktree})",
                     f"restore lane.json, or clean up by hand with `git branch -D {branch_for(lane_id)}`")


def _root_from_git(repo: Path, lane_id: str) -> Path | None:
    """The root above `<repo>-<hash8>/<id>` where git has `lane/<id>` checked out, if it does."""
    key = repo_key(repo)
    for entry in list_worktrees(repo):
        if entry.branch == branch_for(lane_id) and entry.path.name == lane_id and entry.path.parent.name == key:
            return entry.path.parent.parent
    return None


def locate_by_id(repo: Path, lane_id: str, *, default_root: Path) -> LaneLocation:
    """Where a lane whose `lane.json` cannot be read must be: from its id and `origin.json` alone.

    Nothing comes from the record. The root is the origin's; a lane without one (older than
    origins, or a `run` killed before writing it) takes it from where git has `lane/<id>` checked
    out, else the configured root. A damaged origin refuses, as everywhere; `git_witness` must still
    confirm the folder before anything is removed.
    """
    validate_lane_id(lane_id)
    repo = repo.resolve()
    lane = StatePaths(repo).lane(lane_id)
    origin = read_origin(lane)
    if origin is not None:
        root = _root_from_origin(lane, origin, repo, lane_id)
    else:
        root = _root_from_git(repo, lane_id) or default_root.expanduser().resolve()
    worktree = worktree_path(root, repo, lane_id)
    return _registered(LaneLocation(lane_id, repo, root, worktree, branch_for(lane_id), origin))


def git_witness(loc: LaneLocation) -> WorktreeEntry | None:
    """git's entry for the lane's folder, or None when git lists none and the folder is gone.

    Refuses when git disagrees: the folder exists but git does not list it, or it is a symlink; git
    lists it on another branch (a detached HEAD counts only during a rebase of the lane's branch); git
    has the lane's branch checked out in another folder.
    """
    if os.path.islink(loc.worktree):
        raise LanesError(f"{loc.worktree} is a symbolic link, not lane {loc.lane_id}'s worktree",
                         "remove the link by hand; lanes-tui never follows it")
    here: WorktreeEntry | None = None
    for entry in list_worktrees(loc.repo):
        same = entry.path.resolve() == loc.worktree.resolve()
        if entry.branch == loc.branch and not same:
            raise LanesError(f"git has {loc.branch} checked out in {entry.path}, not in the lane's folder "
                             f"{loc.worktree}", f"move it back with `git worktree move {entry.path} {loc.worktree}`")
        if same:
            here = entry
    if here is None:
        if os.path.lexists(loc.worktree):
            raise LanesError(f"git does not list {loc.worktree} as a worktree on {loc.branch}",
                             "lanes-tui only touches folders git lists as the lane's worktree; move it aside by hand")
        return None
    if here.branch != loc.branch and not (here.branch == "" and rebasing_branch(loc.worktree) == loc.branch):
        on = f"branch {here.branch}" if here.branch else "a detached HEAD"
        raise LanesError(f"git lists {loc.worktree} on {on}, not on {loc.branch}",
                         f"check the lane's branch out there again: `git -C {loc.worktree} checkout {loc.branch}`")
    return here


def rebasing_branch(worktree: Path) -> str | None:
    """The branch a rebase in progress in `worktree` is rebasing (git lists it as detached meanwhile)."""
    if not worktree.is_dir():
        return None
    for name in ("rebase-merge", "rebase-apply"):
        proc = run_git(worktree, "rev-parse", "--git-path", f"{name}/head-name", check=False)
        if proc.returncode != 0:
            continue
        path = Path(os.fsdecode(proc.stdout).strip())
        try:
            ref = (path if path.is_absolute() else worktree / path).read_text(encoding="utf-8").strip()
        except OSError:
            continue
        return ref.removeprefix("refs/heads/")
    return None


def working_tree(loc: LaneLocation) -> Path:
    """The lane's worktree for work that runs in it (gates, commit, rebase): git must list it there."""
    if git_witness(loc) is None or not loc.worktree.is_dir():
        raise LanesError(f"the worktree of {loc.lane_id} is gone ({loc.worktree})",
                         f"`lanes-tui recover {loc.lane_id} --relaunch` starts a new attempt")
    check_dotgit(loc)
    return loc.worktree


def check_dotgit(loc: LaneLocation) -> None:
    """Refuse a decision on a lane whose `.git` file was pointed elsewhere (lanes-tui's own git ignores
    it, but the lead's git in that folder and the agent's do not): one line, and how to restore it."""
    dirs = register_lane(loc.repo, loc.lane_id, loc.worktree)
    problem = dotgit_problem(dirs)
    if problem is not None:
        raise LanesError(f"lane {loc.lane_id}: {problem}",
                         f"restore it with `printf 'gitdir: {dirs.git_dir}\\n' > {loc.worktree / '.git'}`, "
                         f"or `lanes-tui abandon {loc.lane_id} --force`")


def remove_lane_worktree(loc: LaneLocation, *, force: bool = True) -> list[str]:
    """Remove the lane's worktree and `lane/<id>` branch, after asking git once more (plans age)."""
    if git_witness(loc) is not None and force:
        repair_dotgit(register_lane(loc.repo, loc.lane_id, loc.worktree))  # else `git worktree remove` refuses it
    from lanes_tui.engine.git.frozen_work import drop_frozen_ref  # here: a lane's supervisor never removes one

    removed = remove_worktree(loc.repo, loc.root, loc.worktree, loc.branch, force=force)
    drop_frozen_ref(loc.repo, loc.lane_id)  # its snapshot (`git.frozen_work`) goes with the worktree
    return removed


def lane_problem(lane: LanePaths) -> str | None:
    """What keeps lanes-tui from acting on this lane from its state folder, in one line, or None.

    Two faults an agent (running as the lead's user) can cause with ordinary commands: a lane folder
    made unwritable (`chmod 0500`), where no state change of the lane can be recorded, and a torn or
    edited `origin.json`, on which every decision refuses. `status` shows them as that lane's problem,
    beside the other lanes; `abandon --force` repairs both (`repair_for_abandon`).
    """
    if lane.dir.is_dir() and not os.access(lane.dir, os.W_OK):
        return (f"lane {lane.dir.name}: its folder {lane.dir} is not writable — `chmod u+rwx {lane.dir}`, "
                f"or `lanes-tui abandon {lane.dir.name} --force`")
    try:
        read_origin(lane)
    except LanesError as exc:
        return str(exc) if isinstance(exc, NewerSchema) else \
            f"{exc.what} — or drop the lane with `lanes-tui abandon {lane.dir.name} --force`"
    return None


def repair_for_abandon(lane: LanePaths, stamp: str) -> tuple[list[str], bool]:
    """Before `abandon --force`: make the lane's own folder writable again (owner only, never through a
    link) and set a damaged `origin.json` aside as `origin.json.damaged-<stamp>` (its bytes kept), so
    the lane is then located as one without an origin: by git's witness, which still has to confirm
    the folder before anything is removed. Returns what was done, for the lead, and whether the
    origin was set aside (the caller then takes nothing from the record either)."""
    done: list[str] = []
    if lane.dir.is_dir() and not lane.dir.is_symlink() and not os.access(lane.dir, os.W_OK) \
            and lane.dir.stat().st_uid == os.geteuid():
        os.chmod(lane.dir, 0o700)
        done.append(f"made {lane.dir} writable again (0700)")
    try:
        read_origin(lane)
    except NewerSchema:
        raise
    except LanesError:
        aside = lane.origin.with_name(f"{lane.origin.name}.damaged-{stamp}")
        os.replace(lane.origin, aside)
        done.append(f"set the damaged origin.json aside as {aside.name}")
        return done, True
    return done, False
