"""The git side of a lane on a cluster node: its folders, the node's shared mirror, the lane's own clone of
the shared remote, checkpoints that touch nothing of the lane's, and pushes back. No Ray.

A node's folder for one repository (`NodePaths.root`, `<work_root>/<repo_key>`) holds:

* `mirror.git`: a bare copy of the remote that every lane of that repository on the node borrows
  objects from (`git clone --reference`), so the tenth lane does not download the repository a tenth
  time. Several actors share it, so it is cloned and fetched under an flock on `mirror.lock`; its
  automatic gc is off, because the lanes' clones read its objects through `alternates` and a gc
  could drop objects they still use.
* `lanes/<lane id>/repo`: the lane's clone; the ordinary lane code treats it as the lead's
  repository (its `.lanes/` state, the lane's branch, the worktree's git metadata).
* `worktrees/`: the `[lanes] worktree_root` of every lane's clone; kept outside the clones (a
  worktree root inside a repository is refused) and beside them.

Everything that talks to the remote runs capped (`git.commands.run_git_capped`): a remote that stops
answering costs a LanesError after `NETWORK_TIMEOUT_S`, never a lane that hangs for ever.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import tomlkit
import tomlkit.exceptions

from lanes_tui.engine.core.atomic import write_text_atomic
from lanes_tui.engine.core.errors import ConfigError, LanesError
from lanes_tui.engine.core.ids import validate_lane_id
from lanes_tui.engine.git.commands import branch_exists, first_line, git_out, refuse_option, run_git, run_git_capped
from lanes_tui.engine.remote.spec import BASE_REF, WIP_REF
from lanes_tui.engine.state.paths import StatePaths

#: The longest a clone, fetch or push of the shared remote may take.
NETWORK_TIMEOUT_S = 600.0
#: How long a lane waits for another lane's clone or fetch of the mirror before giving up.
MIRROR_LOCK_WAIT_S = NETWORK_TIMEOUT_S + 60.0
#: Checkpoints are authored by lanes-tui: a node need not have a git identity for them.
AUTHOR_ENV = {"GIT_AUTHOR_NAME": "lanes-tui", "GIT_AUTHOR_EMAIL": "lanes-tui@localhost",
              "GIT_COMMITTER_NAME": "lanes-tui", "GIT_COMMITTER_EMAIL": "lanes-tui@localhost"}
#: What the mirror keeps of the remote: branches, and the lanes' bases and checkpoints.
MIRROR_REFSPECS = ("+refs/heads/*:refs/heads/*", "+refs/lanes-base/*:refs/lanes-base/*",
                   "+refs/lanes-wip/*:refs/lanes-wip/*")


@dataclass(frozen=True)
class NodePaths:
    """The node's folders for one repository's lanes (see the module docstring)."""

    root: Path

    @classmethod
    def of(cls, work_root: str | None, repo_key: str) -> NodePaths:
        """`<work_root>/<repo_key>`; no work root: `$XDG_CACHE_HOME/lanes-tui/ray` (or ~/.cache)."""
        if not repo_key or repo_key in (".", "..") or "/" in repo_key or "\0" in repo_key \
                or len(repo_key.encode("utf-8", "surrogatepass")) > 200:  # one folder name, nothing more
            raise LanesError(f"invalid repository key {repo_key!r}",
                             "the lead sends `core.repo.repo_key` of its repository (`<name>-<hash8>`)")
        if work_root:
            base = Path(work_root).expanduser()
        else:
            base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lanes-tui" / "ray"
        return cls(base.resolve() / repo_key)

    @property
    def mirror(self) -> Path:
        return self.root / "mirror.git"

    @property
    def mirror_lock(self) -> Path:
        return self.root / "mirror.lock"

    @property
    def worktree_root(self) -> Path:
        return self.root / "worktrees"

    def lane_dir(self, lane_id: str) -> Path:
        return self.root / "lanes" / validate_lane_id(lane_id)

    def clone(self, lane_id: str) -> Path:
        return self.lane_dir(lane_id) / "repo"

    def checkpoint_file(self, lane_id: str) -> Path:
        """The last checkpoint pushed (its tree and commit), beside the clone: not in any worktree."""
        return self.lane_dir(lane_id) / "checkpoint.json"


def network_git(cwd: Path, *args: str, fix: str) -> bytes:
    """A clone, fetch, push or ls-remote of the shared remote, capped; its stdout, or a LanesError."""
    proc = run_git_capped(cwd, *args, timeout_s=NETWORK_TIMEOUT_S)
    if proc.returncode != 0:
        raise LanesError(f"git {args[0]} of the shared remote failed: {first_line(proc.stderr)}", fix)
    return proc.stdout


@contextlib.contextmanager
def mirror_lock(path: Path, timeout_s: float = MIRROR_LOCK_WAIT_S) -> Iterator[None]:
    """The node-wide lock on one repository's mirror (an flock: freed by the kernel if its holder dies)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise LanesError(f"another lane held {path} for over {timeout_s:g}s",
                                     "check the node for a stuck git clone or fetch, then start the lane again") \
                        from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)


def update_mirror(paths: NodePaths, remote: str) -> None:
    """Clone the mirror the first time (into a temporary name, so a half clone is never taken for
    one), fetch the remote's branches, bases and checkpoints into it after."""
    fix = f"check that this node can reach {remote} (`git ls-remote {remote}`)"
    with mirror_lock(paths.mirror_lock):
        if not (paths.mirror / "HEAD").is_file():
            shutil.rmtree(paths.mirror, ignore_errors=True)  # a leftover without HEAD is no mirror
            tmp = Path(tempfile.mkdtemp(prefix=".mirror-", dir=paths.root))
            try:
                network_git(paths.root, "clone", "--bare", "--quiet", "--", remote, str(tmp / "git"), fix=fix)
                run_git(tmp / "git", "config", "gc.auto", "0")
                os.rename(tmp / "git", paths.mirror)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        network_git(paths.mirror, "fetch", "--quiet", "--", remote, *MIRROR_REFSPECS, fix=fix)


def clone_lane(paths: NodePaths, lane_id: str, remote: str) -> Path:
    """The lane's clone, borrowing objects from the mirror; an existing one (a retried prepare) is kept."""
    clone = paths.clone(lane_id)
    if (clone / ".git").is_dir():
        return clone
    clone.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(clone, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=".repo-", dir=clone.parent))
    try:
        network_git(clone.parent, "clone", "--quiet", "--reference", str(paths.mirror), "--", remote,
                    str(tmp / "repo"), fix=f"check that this node can reach {remote}")
        os.rename(tmp / "repo", clone)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return clone


def fetch_lane_refs(clone: Path, remote: str, lane_id: str, commits: Sequence[str], target: str) -> None:
    """The lane's base and checkpoint refs and the target branch, as far as the remote has them; then
    each of `commits` (its start commit and base) must be there: the mirror's objects count (a relaunch
    starts from an earlier attempt's checkpoint, which the mirror fetched), and a missing one is
    fetched by its id as a last try."""
    lane_refs = [BASE_REF.format(lane_id=lane_id), WIP_REF.format(lane_id=lane_id)]
    head = f"refs/heads/{target}"
    fix = f"check that this node can reach {remote}"
    listed = os.fsdecode(network_git(clone, "ls-remote", "--", remote, *lane_refs, head, fix=fix))
    present = {line.split("\t", 1)[1] for line in listed.splitlines() if "\t" in line}
    specs = [f"+{ref}:{ref}" for ref in lane_refs if ref in present]
    if head in present:
        specs.append(f"+{head}:refs/remotes/origin/{target}")
    if specs:
        network_git(clone, "fetch", "--quiet", "--no-tags", "--", remote, *specs, fix=fix)
    for commit in dict.fromkeys(commits):
        if not has_commit(clone, commit):
            run_git_capped(clone, "fetch", "--quiet", "--no-tags", "--", remote, commit, timeout_s=NETWORK_TIMEOUT_S)
        if not has_commit(clone, commit):
            raise LanesError(f"the lane's commit {commit} is not on the shared remote {remote}",
                             f"push it there first (the lead pushes a lane's base to {lane_refs[0]})")


def has_commit(repo: Path, rev: str) -> bool:
    refuse_option(rev, "commit")
    return run_git(repo, "cat-file", "-e", f"{rev}^{{commit}}", check=False).returncode == 0


def ensure_target_branch(clone: Path, target: str, fallback: str) -> None:
    """The target branch in the clone: the remote's if it has one, else made at `fallback` (the base)."""
    refuse_option(target, "target branch")
    if run_git(clone, "check-ref-format", "--branch", target, check=False).returncode != 0:
        raise LanesError(f"invalid target branch {target!r}", "name a branch of the lead's repository")
    if branch_exists(clone, target):
        return
    tracking = f"refs/remotes/origin/{target}"
    if run_git(clone, "rev-parse", "--verify", "--quiet", tracking, check=False).returncode == 0:
        run_git(clone, "branch", "--quiet", "--track", target, f"origin/{target}")
    else:
        run_git(clone, "branch", "--quiet", target, fallback)


def ensure_identity(clone: Path, hostname: str) -> None:
    """A committer identity for `publish`'s commit when the node has none (a bare cluster image)."""
    if run_git(clone, "var", "GIT_COMMITTER_IDENT", check=False).returncode == 0:
        return
    run_git(clone, "config", "user.name", "lanes-tui")
    run_git(clone, "config", "user.email", f"lanes-tui@{hostname or 'localhost'}")


def write_node_config(clone: Path, config_text: str, worktree_root: Path) -> Path:
    """The lead's config as the clone's `.lanes/config.toml`, with `[lanes] worktree_root` set to the
    node's folder: edited as TOML (tomlkit), so a key the lead set is replaced, never duplicated.

    A `[runner]` table is dropped: on the node the lane runs on the node (a local lane of the clone),
    and nothing there may take `kind = "ray"` as a cue to start lanes on the cluster again."""
    path = StatePaths(clone).config
    try:
        doc = tomlkit.parse(config_text)
    except tomlkit.exceptions.ParseError as exc:
        raise ConfigError(f"the lead's config sent to this node is malformed TOML: {exc}",
                          "fix .lanes/config.toml on the lead's machine", path=str(path)) from None
    lanes = doc.get("lanes")
    if lanes is None:
        doc["lanes"] = tomlkit.table()
    elif not isinstance(lanes, dict):
        raise ConfigError("lanes is not a table", "write it as a [lanes] table", key="lanes", path=str(path))
    doc["lanes"]["worktree_root"] = str(worktree_root)
    doc.pop("runner", None)
    write_text_atomic(path, tomlkit.dumps(doc), mode=None)
    return path


def exclude_state(clone: Path) -> None:
    """`.lanes/state/` ignored in the clone through `info/exclude` (never a tracked file of the lead's)."""
    path = Path(git_out(clone, "rev-parse", "--git-path", "info/exclude"))
    path = path if path.is_absolute() else clone / path
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    if ".lanes/state/" in current.split():
        return
    separator = "" if not current or current.endswith("\n") else "\n"
    write_text_atomic(path, f"{current}{separator}.lanes/state/\n", mode=None)


def snapshot_tree(worktree: Path) -> str:
    """The tree of the worktree as it stands (tracked, staged, unstaged, untracked; ignored files not),
    built in a temporary index so the lane's own index, HEAD and branch are never touched."""
    with tempfile.TemporaryDirectory(prefix="lanes-checkpoint-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        run_git(worktree, "read-tree", "HEAD", extra_env=env)
        run_git(worktree, "add", "-A", "--", ".", extra_env=env)
        return git_out_env(worktree, env, "write-tree")


def commit_tree(worktree: Path, tree: str, message: str) -> str:
    """A commit of `tree` on the worktree's HEAD that no branch points to."""
    return git_out_env(worktree, AUTHOR_ENV, "commit-tree", "--no-gpg-sign", tree, "-p", "HEAD", "-m", message)


def tree_of(repo: Path, rev: str) -> str:
    return git_out(repo, "rev-parse", f"{rev}^{{tree}}")


def git_out_env(cwd: Path, env: dict[str, str], *args: str) -> str:
    return os.fsdecode(run_git(cwd, *args, extra_env=env).stdout).strip()


def push(repo: Path, remote: str, refspec: str) -> None:
    """Force-push one ref to the shared remote (a lane's branch or checkpoint is the node's to set)."""
    network_git(repo, "push", "--quiet", "--no-verify", "--", remote, refspec,
                fix=f"check that this node may push to {remote}")
