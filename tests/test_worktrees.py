"""Lane worktrees on real repositories: creation, change detection, the digest, and guarded removal."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import git

from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.git.worktrees import (
    WorktreeInfo,
    ahead_behind,
    changed_files,
    check_worktree_root,
    create_worktree,
    current_branch,
    find_repo_root,
    is_dirty,
    list_lane_worktrees,
    remove_worktree,
    rev_parse,
    unique_commits,
    worktree_digest,
)
from lanes_tui.engine.state.paths import default_worktree_root, repo_key


@pytest.fixture()
def root(repo: Path) -> Path:
    return default_worktree_root()


def branch_exists(repo: Path, branch: str) -> bool:
    return bool(git(repo, "branch", "--list", branch))


def commit_file(where: Path, name: str, text: str, message: str = "change") -> None:
    (where / name).parent.mkdir(parents=True, exist_ok=True)
    (where / name).write_text(text)
    git(where, "add", "--", name)
    git(where, "commit", "-q", "-m", message)


def make_lane(repo: Path, root: Path, lane_id: str = "fix-a1", base: str | None = None) -> WorktreeInfo:
    return create_worktree(repo, root, lane_id, base)


# --- create ---------------------------------------------------------------------------------------

def test_create_records_branch_base_and_files(repo: Path, root: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    info = make_lane(repo, root)
    assert info.branch == "lane/fix-a1"
    assert info.base_sha == head
    assert info.base_ref == "main"
    assert info.path == root.resolve() / repo_key(repo) / "fix-a1"
    assert (info.path / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert current_branch(info.path) == "lane/fix-a1"
    assert rev_parse(info.path, "HEAD") == head
    assert current_branch(repo) == "main"  # the lead's checkout is untouched
    [entry] = list_lane_worktrees(repo)
    assert entry.path.resolve() == info.path
    assert (entry.branch, entry.head, entry.locked, entry.prunable) == ("lane/fix-a1", head, False, False)


def test_create_from_other_bases(repo: Path, root: Path) -> None:
    first = git(repo, "rev-parse", "HEAD")
    git(repo, "branch", "feature/x")
    commit_file(repo, "more.txt", "more\n")
    info = make_lane(repo, root, "b-a1", base="feature/x")
    assert (info.base_sha, info.base_ref) == (first, "feature/x")
    assert not (info.path / "more.txt").exists()
    by_sha = make_lane(repo, root, "b-a2", base=first)
    assert (by_sha.base_sha, by_sha.base_ref) == (first, None)
    git(repo, "checkout", "-q", "--detach", "HEAD")
    assert current_branch(repo) is None
    detached = make_lane(repo, root, "b-a3")
    assert detached.base_ref is None
    assert detached.base_sha == git(repo, "rev-parse", "HEAD")
    with pytest.raises(LanesError, match="unknown revision"):
        make_lane(repo, root, "b-a4", base="no-such-branch")
    with pytest.raises(LanesError, match="invalid revision"):
        make_lane(repo, root, "b-a4", base="--orphan")
    assert not branch_exists(repo, "lane/b-a4")


def test_create_refuses_existing_branch_or_folder(repo: Path, root: Path) -> None:
    make_lane(repo, root)
    with pytest.raises(LanesError, match="already exists"):
        make_lane(repo, root)
    git(repo, "branch", "lane/taken-a1")
    with pytest.raises(LanesError, match="branch lane/taken-a1 already exists"):
        make_lane(repo, root, "taken-a1")
    assert not (root / repo_key(repo) / "taken-a1").exists()
    folder = root / repo_key(repo) / "squat-a1"
    folder.mkdir(parents=True)
    (folder / "precious.txt").write_text("keep me\n")
    with pytest.raises(LanesError, match=r"folder .* already exists"):
        make_lane(repo, root, "squat-a1")
    assert (folder / "precious.txt").read_text() == "keep me\n"
    assert not branch_exists(repo, "lane/squat-a1")


def test_create_refuses_bad_ids(repo: Path, root: Path) -> None:
    for bad in ("../x", "a/b", "", "x" * 65, "sp ace"):
        with pytest.raises(LanesError, match="invalid lane id"):
            make_lane(repo, root, bad)
    assert list_lane_worktrees(repo) == []


def test_failed_worktree_add_leaves_nothing(repo: Path, tmp_path: Path) -> None:
    root = tmp_path / "wt"
    root.mkdir()
    (root / repo_key(repo)).write_text("a file where the repo folder should be\n")
    with pytest.raises(LanesError, match="worktree add failed"):
        create_worktree(repo, root, "boom-a1")
    assert not branch_exists(repo, "lane/boom-a1")
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert (root / repo_key(repo)).is_file()


def test_worktree_root_inside_repo_refused(repo: Path) -> None:
    for bad in (repo, repo / "worktrees", repo / ".git" / "lanes"):
        with pytest.raises(LanesError, match="inside the repository"):
            check_worktree_root(repo, bad)
        with pytest.raises(LanesError, match="inside the repository"):
            create_worktree(repo, bad, "in-a1")
    assert not (repo / "worktrees").exists()
    assert not branch_exists(repo, "lane/in-a1")
    check_worktree_root(repo, repo.parent / "elsewhere")


# --- repository lookups ---------------------------------------------------------------------------

def test_find_repo_root_from_subfolder_file_and_lane(repo: Path, root: Path) -> None:
    sub = repo / "pkg" / "deep"
    sub.mkdir(parents=True)
    assert find_repo_root(sub) == repo.resolve()
    assert find_repo_root(repo / "calc.py") == repo.resolve()
    info = make_lane(repo, root)
    (info.path / "inner").mkdir()
    assert find_repo_root(info.path) == repo.resolve()
    assert find_repo_root(info.path / "inner") == repo.resolve()


def test_find_repo_root_outside_any_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = tmp_path / "plain" / "folder"
    plain.mkdir(parents=True)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    with pytest.raises(LanesError, match="is not inside a git repository") as caught:
        find_repo_root(plain)
    assert "--repo PATH" in str(caught.value)
    with pytest.raises(LanesError, match="is not inside a git repository"):
        find_repo_root(tmp_path / "missing" / "x")


def test_current_branch_and_rev_parse(repo: Path) -> None:
    assert current_branch(repo) == "main"
    head = rev_parse(repo, "main")
    git(repo, "tag", "-a", "v1", "-m", "v1")
    assert rev_parse(repo, "v1") == head  # annotated tags peel to their commit
    with pytest.raises(LanesError, match="unknown revision"):
        rev_parse(repo, "nope")
    with pytest.raises(LanesError):
        rev_parse(repo, "-h")


# --- changes and the digest -----------------------------------------------------------------------

def test_changed_files_sees_every_kind_of_change(repo: Path, root: Path) -> None:
    commit_file(repo, "notes.txt", "notes\n")
    commit_file(repo, "reverted.txt", "original\n")
    info = make_lane(repo, root)
    wt = info.path
    assert changed_files(wt, info.base_sha) == []
    assert not is_dirty(wt)
    commit_file(wt, "calc.py", "def add(a, b):\n    return b + a\n")  # committed on the lane
    commit_file(wt, "reverted.txt", "changed\n")
    (wt / "reverted.txt").write_text("original\n")  # committed, then reverted in the working tree
    (wt / "staged.txt").write_text("staged\n")
    git(wt, "add", "staged.txt")  # staged
    (wt / "notes.txt").write_text("edited\n")  # unstaged
    (wt / "README.md").unlink()  # deleted
    (wt / "sub").mkdir()
    (wt / "sub" / "new file.txt").write_text("untracked\n")  # untracked, in a new folder
    (wt / ".gitignore").write_text("*.log\n")
    (wt / "build.log").write_text("ignored\n")  # ignored: not a change
    assert changed_files(wt, info.base_sha) == [
        ".gitignore", "README.md", "calc.py", "notes.txt", "reverted.txt", "staged.txt", "sub/new file.txt",
    ]
    assert is_dirty(wt)
    assert not is_dirty(repo)


def test_digest_tracks_content_mode_and_presence(repo: Path, root: Path) -> None:
    wt = make_lane(repo, root).path
    (wt / "new.txt").write_text("one\n")
    files = ["new.txt", "calc.py", "gone.txt"]
    first = worktree_digest(wt, files)
    assert worktree_digest(wt, list(reversed(files))) == first
    assert worktree_digest(wt, iter([*files, "calc.py"])) == first
    assert worktree_digest(wt, files[:2]) != first

    (wt / "new.txt").write_text("two\n")
    changed = worktree_digest(wt, files)
    assert changed != first
    (wt / "new.txt").write_text("one\n")
    assert worktree_digest(wt, files) == first

    os.chmod(wt / "new.txt", 0o755)
    assert worktree_digest(wt, files) != first
    os.chmod(wt / "new.txt", 0o644)
    assert worktree_digest(wt, files) == first

    (wt / "gone.txt").write_text("")  # missing → empty file is a change
    assert worktree_digest(wt, files) != first
    (wt / "gone.txt").unlink()
    assert worktree_digest(wt, files) == first

    (wt / "link").symlink_to("calc.py")
    with_link = worktree_digest(wt, [*files, "link"])
    (wt / "link").unlink()
    (wt / "link").symlink_to("new.txt")
    assert worktree_digest(wt, [*files, "link"]) != with_link
    (wt / "link").unlink()
    (wt / "link").write_text("calc.py")  # a file holding the target text is not the symlink
    assert worktree_digest(wt, [*files, "link"]) != with_link


def test_digest_refuses_paths_leaving_the_worktree(repo: Path, root: Path) -> None:
    wt = make_lane(repo, root).path
    for bad in ("../outside", "/etc/passwd", "a/../../b"):
        with pytest.raises(LanesError, match="not inside the worktree"):
            worktree_digest(wt, [bad])


# --- history --------------------------------------------------------------------------------------

def test_unique_commits_and_ahead_behind(repo: Path, root: Path) -> None:
    info = make_lane(repo, root)
    assert unique_commits(repo, info.branch) == 0
    assert ahead_behind(repo, info.branch, "main") == (0, 0)
    commit_file(info.path, "a.txt", "a\n")
    commit_file(info.path, "b.txt", "b\n")
    assert unique_commits(repo, info.branch) == 2
    commit_file(repo, "main.txt", "main moved\n")
    assert ahead_behind(repo, info.branch, "main") == (2, 1)
    assert ahead_behind(repo, "main", info.branch) == (1, 2)
    git(repo, "branch", "keep", info.branch)
    assert unique_commits(repo, info.branch) == 0  # another branch still holds them
    assert unique_commits(repo, "lane/missing-a1") == 0
    with pytest.raises(LanesError, match="unknown revision"):
        ahead_behind(repo, "lane/missing-a1", "main")


# --- removal --------------------------------------------------------------------------------------

def test_remove_deletes_worktree_and_branch_and_is_idempotent(repo: Path, root: Path) -> None:
    info = make_lane(repo, root)
    (info.path / "dirty.txt").write_text("uncommitted\n")
    commit_file(info.path, "work.txt", "work\n")
    removed = remove_worktree(repo, root, info.path, info.branch)
    assert removed == [f"worktree {info.path}", f"branch {info.branch}"]
    assert not info.path.exists()
    assert not branch_exists(repo, info.branch)
    assert list_lane_worktrees(repo) == []
    assert remove_worktree(repo, root, info.path, info.branch) == []
    assert current_branch(repo) == "main"
    assert (repo / "calc.py").exists()


def test_remove_handles_half_gone_lanes(repo: Path, root: Path) -> None:
    # Folder deleted by hand: the registration is pruned and the branch still goes.
    gone = make_lane(repo, root, "gone-a1")
    shutil.rmtree(gone.path)
    [entry] = list_lane_worktrees(repo)
    assert entry.prunable
    assert remove_worktree(repo, root, gone.path, gone.branch) == [f"branch {gone.branch}"]
    assert list_lane_worktrees(repo) == []
    # A stray folder that git does not know: removed, read-only contents and all.
    stray = root / repo_key(repo) / "stray-a1"
    (stray / "cache").mkdir(parents=True)
    (stray / "cache" / "ro.txt").write_text("x")
    os.chmod(stray / "cache", 0o500)
    assert remove_worktree(repo, root, stray, None) == [f"folder {stray}"]
    assert not stray.exists()
    # No branch given: only the folder goes.
    keep = make_lane(repo, root, "keep-a1")
    assert remove_worktree(repo, root, keep.path, None) == [f"worktree {keep.path}"]
    assert branch_exists(repo, keep.branch)


def test_remove_refuses_paths_outside_the_root(repo: Path, root: Path, tmp_path: Path) -> None:
    info = make_lane(repo, root)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "data.txt").write_text("precious\n")
    evil = root / repo_key(repo) / "evil-a1"
    evil.symlink_to(elsewhere, target_is_directory=True)
    for bad in (repo, repo / "calc.py", elsewhere, evil, root, root / "..", Path("/tmp/elsewhere")):
        with pytest.raises(LanesError, match="refusing to remove"):
            remove_worktree(repo, root, bad, info.branch)
    assert (elsewhere / "data.txt").read_text() == "precious\n"
    assert evil.is_symlink()
    assert (repo / "calc.py").exists()
    assert info.path.exists()
    assert branch_exists(repo, info.branch)


def test_remove_refuses_repo_under_the_root(tmp_path: Path, repo: Path) -> None:
    # A worktree root that contains the repository: the repository itself is never a lane folder.
    root = repo.parent
    with pytest.raises(LanesError, match="refusing to remove"):
        remove_worktree(repo, root, repo, None)
    assert (repo / ".git").is_dir()


def test_remove_refuses_non_lane_branches(repo: Path, root: Path) -> None:
    info = make_lane(repo, root)
    git(repo, "branch", "feature/x")
    for bad in ("main", "feature/x", "lane/../main", "lane/", "lane/a/b", "refs/heads/lane/fix-a1"):
        with pytest.raises(LanesError):
            remove_worktree(repo, root, info.path, bad)
    assert info.path.exists()
    for branch in ("main", "feature/x", info.branch):
        assert branch_exists(repo, branch)


def test_remove_never_deletes_the_checked_out_branch(repo: Path, root: Path) -> None:
    git(repo, "checkout", "-q", "-b", "lane/here-a1")
    folder = root / repo_key(repo) / "here-a1"
    folder.mkdir(parents=True)
    with pytest.raises(LanesError, match="checked out"):
        remove_worktree(repo, root, folder, "lane/here-a1")
    assert folder.exists()
    assert current_branch(repo) == "lane/here-a1"


def test_remove_without_force_and_locked(repo: Path, root: Path) -> None:
    info = make_lane(repo, root)
    (info.path / "dirty.txt").write_text("x\n")
    with pytest.raises(LanesError, match="worktree remove failed"):
        remove_worktree(repo, root, info.path, info.branch, force=False)
    assert (info.path / "dirty.txt").exists()
    assert branch_exists(repo, info.branch)
    git(repo, "worktree", "lock", "--reason", "lead says keep", str(info.path))
    [entry] = list_lane_worktrees(repo)
    assert entry.locked
    with pytest.raises(LanesError, match="locked"):
        remove_worktree(repo, root, info.path, info.branch)
    assert info.path.exists()
    git(repo, "worktree", "unlock", str(info.path))
    (info.path / "dirty.txt").unlink()
    assert remove_worktree(repo, root, info.path, info.branch, force=False) == [
        f"worktree {info.path}", f"branch {info.branch}",
    ]


def test_remove_refuses_another_repositorys_worktree(repo: Path, root: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    commit_file(other, "x.txt", "x\n")
    folder = root / repo_key(repo) / "foreign-a1"
    git(other, "worktree", "add", "-q", "-b", "lane/foreign-a1", str(folder))
    with pytest.raises(LanesError, match="another repository"):
        remove_worktree(repo, root, folder, None)
    assert (folder / "x.txt").exists()
    git(other, "worktree", "remove", "--force", str(folder))


def test_list_lane_worktrees_ignores_other_worktrees(repo: Path, root: Path, tmp_path: Path) -> None:
    git(repo, "worktree", "add", "-q", "-b", "feature/y", str(tmp_path / "feature-wt"))
    git(repo, "worktree", "add", "-q", "--detach", str(tmp_path / "detached-wt"))
    a = make_lane(repo, root, "a-a1")
    b = make_lane(repo, root, "b-a1")
    assert [e.branch for e in list_lane_worktrees(repo)] == [a.branch, b.branch]
