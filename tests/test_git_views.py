"""The dashboard's read-only git views on real repositories: Worktrees rows, a lane's commits, and
proof that GitPython's helper processes are gone once a view returns. No git is mocked."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import psutil
import pytest
from conftest import git

from lanes_tui.engine.git.views import lane_commits, lane_diff, worktree_row
from lanes_tui.engine.git.worktrees import changed_files, create_worktree
from lanes_tui.engine.live.engine import Engine
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths, default_worktree_root
from lanes_tui.engine.state.store import LaneStore

CALC_V2 = "def add(a, b):\n    return b + a\n\n\ndef sub(a, b):\n    return a - b\n"  # +5 -1 on calc.py


def make_lane(repo: Path, lane_id: str = "views-a1", target: str = "main") -> LaneRecord:
    """A real lane worktree and the record the launcher would write for it."""
    info = create_worktree(repo, default_worktree_root(), lane_id)
    return LaneRecord(id=lane_id, slug=lane_id.rsplit("-", 1)[0], attempt=1, task_type="backend", prompt="p",
                      chain=["sim"], repo=str(repo), worktree=str(info.path), branch=info.branch,
                      base_sha=info.base_sha, target_branch=target, state="ready")


def commit(where: Path, name: str, text: str, message: str) -> str:
    (where / name).write_text(text)
    git(where, "add", "--", name)
    git(where, "commit", "-q", "-m", message)
    return git(where, "rev-parse", "HEAD")


def busy_lane(repo: Path) -> LaneRecord:
    """Two commits, a staged new file, an edited file, a new text file, a new binary file; main moved on."""
    record = make_lane(repo)
    wt = Path(record.worktree)
    commit(wt, "calc.py", CALC_V2, "Add sub")  # +5 -1
    commit(wt, "docs.md", "one\ntwo\n", "Write docs\n\nA body the summary leaves out.")  # +2
    (wt / "README.md").write_text("# project\nmore\n")  # +1, uncommitted
    (wt / "staged.txt").write_text("s\n")  # +1, staged only
    git(wt, "add", "--", "staged.txt")
    (wt / "notes.txt").write_text("a\nb\nc")  # +3, untracked, no final newline
    (wt / "blob.bin").write_bytes(b"\0\1\2\3")  # binary: a changed file, no lines
    commit(repo, "main-only.txt", "main\n", "Main moves on")
    return record


def git_children() -> list[str]:
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.name() == "git" or "git" in proc.cmdline()[:1]:
                found.append(" ".join(proc.cmdline()))
        except psutil.Error:
            continue
    return found


# --- Worktrees rows --------------------------------------------------------------------------------

def test_row_counts_committed_and_uncommitted_work(repo: Path) -> None:
    record = busy_lane(repo)
    row = worktree_row(repo, record)
    assert [c["summary"] for c in row.pop("commits")] == ["Write docs", "Add sub"]  # the pane's tooltip
    assert row == {"lane": "views-a1", "path": record.worktree, "branch": "lane/views-a1", "changed": 6,
                   "insertions": 12, "deletions": 1, "ahead": 2, "behind": 1}
    # The same set accept stages, and the same lines the Diff pane shows.
    assert row["changed"] == len(changed_files(Path(record.worktree), record.base_sha))
    diff_lines = lane_diff(record).splitlines()
    assert row["insertions"] == sum(1 for x in diff_lines if x.startswith("+") and not x.startswith("+++"))
    assert row["deletions"] == sum(1 for x in diff_lines if x.startswith("-") and not x.startswith("---"))


def test_a_fresh_lane_is_all_zero(repo: Path) -> None:
    record = make_lane(repo)
    assert worktree_row(repo, record) == {"lane": "views-a1", "path": record.worktree, "branch": "lane/views-a1",
                                          "changed": 0, "insertions": 0, "deletions": 0, "ahead": 0, "behind": 0,
                                          "commits": []}


def test_a_reverted_file_is_changed_but_adds_no_lines(repo: Path) -> None:
    """Committed then reverted on disk: accept would still stage it; the diff against the base is empty."""
    record = make_lane(repo)
    wt = Path(record.worktree)
    commit(wt, "calc.py", CALC_V2, "Add sub")
    (wt / "calc.py").write_text((repo / "calc.py").read_text())
    row = worktree_row(repo, record)
    assert (row["changed"], row["insertions"], row["deletions"], row["ahead"]) == (1, 0, 0, 1)


def test_missing_worktree_keeps_what_is_known(repo: Path) -> None:
    record = busy_lane(repo)
    git(Path(record.worktree), "commit", "-q", "-m", "Staged too")
    shutil.rmtree(record.worktree)  # the folder is gone, the branch is not
    row = worktree_row(repo, record)
    assert row["path"] == record.worktree + " (gone)"
    assert (row["changed"], row["insertions"], row["deletions"]) == (None, None, None)
    assert (row["ahead"], row["behind"]) == (3, 1)  # read in the main repository
    assert [c["summary"] for c in lane_commits(record)] == ["Staged too", "Write docs", "Add sub"]
    assert lane_diff(record) == f"(the worktree {record.worktree} is gone)"


def test_broken_worktree_and_unknown_target_give_partial_rows(repo: Path) -> None:
    record = busy_lane(repo)
    wt = Path(record.worktree)
    no_target = LaneRecord(**{**record.to_json(), "providers_tried": [], "target_branch": "deleted-branch"})
    row = worktree_row(repo, no_target)
    assert (row["ahead"], row["behind"]) == (None, None)
    assert (row["changed"], row["insertions"], row["deletions"]) == (6, 12, 1)

    (wt / ".git").unlink()  # the folder stays, but it is no longer a git worktree
    row = worktree_row(repo, record)
    assert row["path"] == record.worktree
    assert (row["changed"], row["insertions"], row["deletions"]) == (None, None, None)
    assert (row["ahead"], row["behind"]) == (2, 1)

    no_repo = LaneRecord(**{**record.to_json(), "providers_tried": [], "repo": str(repo.parent / "nowhere")})
    assert lane_commits(no_repo) == []
    bad_base = LaneRecord(**{**record.to_json(), "providers_tried": [], "base_sha": "f" * 40})
    assert worktree_row(repo / "not-a-repo", bad_base)["ahead"] is None


# --- commits ---------------------------------------------------------------------------------------

def test_commits_are_the_lanes_own_newest_first(repo: Path) -> None:
    record = make_lane(repo)
    wt = Path(record.worktree)
    first = commit(wt, "calc.py", CALC_V2, "Add sub")
    second = commit(wt, "docs.md", "one\ntwo\n", "Write docs\n\nA body the summary leaves out.")
    commit(repo, "main-only.txt", "main\n", "Main moves on")  # not the lane's
    commits = lane_commits(record)
    assert [c["sha"] for c in commits] == [second, first]
    assert commits[0]["summary"] == "Write docs"
    assert {c["author"] for c in commits} == {"Test Lead"}
    when = int(git(wt, "log", "-1", "--format=%at", second))
    assert commits[0]["timestamp"] == when and isinstance(when, int)
    assert [c["sha"] for c in lane_commits(record, limit=1)] == [second]
    assert lane_commits(record, limit=0) == []
    assert lane_commits(make_lane(repo, "empty-a1")) == []


# --- processes and environment ----------------------------------------------------------------------

def test_no_git_process_outlives_a_view(repo: Path) -> None:
    from git import Repo

    record = busy_lane(repo)
    # The check can see GitPython's helpers: reading a commit starts a persistent `git cat-file`.
    with Repo(record.worktree) as open_repo:
        assert open_repo.head.commit.summary == "Write docs"
        assert any("cat-file" in c for c in git_children()), git_children()
    assert git_children() == []
    for _ in range(3):
        assert worktree_row(repo, record)["changed"] == 6
        assert len(lane_commits(record)) == 2
        assert git_children() == []


def test_git_variables_of_a_hook_do_not_redirect_the_views(repo: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    record = busy_lane(repo)
    expected, commits = worktree_row(repo, record), lane_commits(record)
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
    monkeypatch.setenv("GIT_PREFIX", "sub/")
    assert worktree_row(repo, record) == expected
    assert lane_commits(record) == commits
    # GitPython reads GIT_WORK_TREE while opening; it would show another tree, so the numbers stay unknown.
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    row = worktree_row(repo, record)
    assert [row[k] for k in ("changed", "insertions", "deletions", "ahead", "behind")] == [None] * 5
    assert lane_commits(record) == []


# --- through the engine ----------------------------------------------------------------------------

async def test_engine_serves_rows_and_commits(repo: Path) -> None:
    record = busy_lane(repo)
    store = LaneStore(StatePaths(repo))
    StatePaths(repo).ensure()
    store.create(record)
    engine = Engine(repo)
    [row] = await engine.worktree_rows()
    assert (row["lane"], row["changed"], row["insertions"], row["deletions"]) == ("views-a1", 6, 12, 1)
    commits = await engine.lane_commits("views-a1", limit=5)
    assert [c["summary"] for c in commits] == ["Write docs", "Add sub"]
    assert git_children() == []
    assert os.path.isdir(record.worktree)
