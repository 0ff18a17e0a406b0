"""`lanes-tui diff ID` (issue 12, item 6): a real repository and real sim lanes, read through the engine
and through the real command line."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.decisions.lane_diff import lane_diff
from tests.conftest import git
from tests.helpers import cli, run_lane, status, wait_state, write_config

SCRIPT = "write src/new.py inside\nwrite calc.py changed\nwrite notes.txt outside\n"


def mixed_lane(repo: Path, lane_id: str) -> tuple[str, Path]:
    """A settled sim lane scoped to `src/` and `calc.py`, with every kind of change in its worktree:
    `src/new.py` committed on the lane branch, `README.md` staged, `calc.py` unstaged (the sim's
    edit) and `notes.txt` untracked (outside the scope, like the staged README)."""
    write_config(repo)
    lane = run_lane(repo, SCRIPT, lane_id=lane_id, extra=("--scope", "src/", "--scope", "calc.py"))
    wait_state(repo, lane)
    assert status(repo, lane)["state"] == "ready", status(repo, lane)
    worktree = Path(status(repo, lane)["worktree"])
    git(worktree, "add", "src/new.py")
    git(worktree, "commit", "-q", "-m", "lane commit")
    (worktree / "README.md").write_text("# project\nmore\n")
    git(worktree, "add", "README.md")
    return lane, worktree


def index_bytes(worktree: Path) -> bytes:
    return Path(worktree / git(worktree, "rev-parse", "--git-path", "index")).read_bytes()


def test_committed_staged_unstaged_and_untracked_changes_all_appear(repo: Path) -> None:
    lane, worktree = mixed_lane(repo, "mixed")
    before = index_bytes(worktree)
    found = lane_diff(repo, load_config(repo), lane)
    by_path = {f.path: f for f in found.files}
    assert list(by_path) == ["README.md", "calc.py", "notes.txt", "src/new.py"]
    assert [by_path[p].status for p in by_path] == ["modified", "modified", "added", "added"]
    assert (by_path["calc.py"].added, by_path["calc.py"].removed) == (1, 2)
    assert (by_path["notes.txt"].added, by_path["notes.txt"].removed) == (1, 0)
    assert by_path["notes.txt"].digest == "sha256:" + hashlib.sha256(b"outside\n").hexdigest()
    assert "+++ b/notes.txt" in by_path["notes.txt"].diff and "+inside" in by_path["src/new.py"].diff
    assert "-    return a + b" in by_path["calc.py"].diff and "+more" in by_path["README.md"].diff
    assert found.scope == ("src/", "calc.py") and found.outside_scope == ("README.md", "notes.txt")
    assert found.base_sha == git(repo, "rev-parse", "main") and not found.cut
    assert index_bytes(worktree) == before  # a snapshot: the lane's index is never rewritten

    (worktree / "calc.py").unlink()  # a deletion is named so, with no content to digest
    gone = {f.path: f for f in lane_diff(repo, load_config(repo), lane).files}["calc.py"]
    assert (gone.status, gone.digest, gone.removed) == ("deleted", "deleted", 2)


def test_the_digest_is_stable_and_follows_every_change(repo: Path) -> None:
    lane, worktree = mixed_lane(repo, "digest")
    config = load_config(repo)
    first, again = lane_diff(repo, config, lane), lane_diff(repo, config, lane)
    assert first.digest == again.digest and first.digest.startswith("sha256:")
    (worktree / "notes.txt").write_text("outside, edited\n")
    edited = lane_diff(repo, config, lane)
    assert edited.digest != first.digest
    changed = [a.path for a, b in zip(first.files, edited.files, strict=True) if a.digest != b.digest]
    assert changed == ["notes.txt"]
    (worktree / "notes.txt").write_text("outside\n")  # back as it was: the same digest again
    assert lane_diff(repo, config, lane).digest == first.digest

    small = lane_diff(repo, config, lane, max_bytes=300)  # a bounded text, digests untouched
    assert small.cut and small.digest == first.digest and len(small.text().encode()) < 300 + 400
    assert small.text().rstrip().endswith("the digests still cover every file")


def test_the_command_prints_the_diff_the_stat_and_json(repo: Path) -> None:
    lane, _ = mixed_lane(repo, "printed")
    plain = cli(repo, "diff", lane)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.startswith("diff --git a/README.md b/README.md")
    assert "diff --git a/notes.txt b/notes.txt" in plain.stdout and "+changed" in plain.stdout

    stat = cli(repo, "diff", lane, "--stat")
    assert stat.returncode == 0, stat.stderr
    lines = stat.stdout.splitlines()
    assert re.fullmatch(r"M  calc\.py  \+1 -2  sha256:[0-9a-f]{8}…", lines[1]), lines
    assert re.fullmatch(r"A  notes\.txt  \+1 -0  sha256:[0-9a-f]{8}…  \(outside scope\)", lines[2]), lines
    data = json.loads(cli(repo, "diff", lane, "--json", check=True).stdout)
    assert re.fullmatch(r"4 files, \+4 -2, digest sha256:[0-9a-f]{64}", lines[4]), lines
    assert lines[4].endswith(data["digest"])
    assert lines[5] == "scope: src/, calc.py; outside it (2): README.md, notes.txt"
    assert {"lane", "base_sha", "digest", "files", "outside_scope"} <= set(data)
    assert data["lane"] == lane and data["outside_scope"] == ["README.md", "notes.txt"]
    assert [(f["path"], f["status"]) for f in data["files"]] == [
        ("README.md", "modified"), ("calc.py", "modified"), ("notes.txt", "added"), ("src/new.py", "added")]
    assert data["files"][2]["digest"] == "sha256:" + hashlib.sha256(b"outside\n").hexdigest()


def test_bad_and_unknown_lane_ids_are_refused_in_one_line(repo: Path) -> None:
    write_config(repo)
    for bad, words in (("../escape", "lane id"), ("no-such-lane", "no lane 'no-such-lane'")):
        refused = cli(repo, "diff", bad)
        assert refused.returncode == 2, refused
        assert refused.stderr.startswith("lanes-tui: ") and words in refused.stderr, refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1 and "Traceback" not in refused.stderr
    usage = cli(repo, "diff")
    assert usage.returncode == 2 and "Traceback" not in usage.stderr


def test_four_hundred_untracked_files_diff_in_one_pass_like_one_by_one(repo: Path, monkeypatch) -> None:
    """Issue 17 item 4: the one-pass diff (a temporary index, `git add -N`) gives every file the
    patch, counts and digest the per-file `git diff --no-index` gave, quoted names included, and
    leaves the lane's index alone. Correctness only: the timing is in tests/bench/lane_diff.py."""
    from lanes_tui.engine.decisions import lane_diff as module
    from lanes_tui.engine.git import patches

    lane, worktree = mixed_lane(repo, "many")
    folder = worktree / "src" / "many"
    folder.mkdir()
    for i in range(400):
        (folder / f"f{i:03d}.txt").write_text(f"line {i}\n" * (i % 5 + 1))
    odd = ["tab\tname.txt", 'quote"d.txt', "é a b/x.txt", "back\\slash.txt", "a b.txt"]
    for name in odd:
        target = worktree / name
        target.parent.mkdir(exist_ok=True)
        target.write_text(f"{name}\n")
    (worktree / "blob.bin").write_bytes(b"\0\1\2")
    before = index_bytes(worktree)
    calls: list[int] = []
    real = patches.one_pass_patches
    monkeypatch.setattr(module, "one_pass_patches", lambda *a, **k: calls.append(1) or real(*a, **k))
    found = lane_diff(repo, load_config(repo), lane)
    assert calls and index_bytes(worktree) == before
    assert len(patches.split_patch(b"".join(f.diff.encode() for f in found.files))) == len(found.files)

    def refuse(*_a: object, **_k: object) -> dict[str, bytes]:
        raise module.LanesError("forced per-file diffs")

    monkeypatch.setattr(module, "one_pass_patches", refuse)
    one_by_one = lane_diff(repo, load_config(repo), lane)
    assert [f.to_json() for f in found.files] == [f.to_json() for f in one_by_one.files]
    assert found.digest == one_by_one.digest and len(found.files) == 4 + 400 + len(odd) + 1
    by_path = {f.path: f for f in found.files}
    assert by_path["src/many/f007.txt"].added == 3 and "+line 7" in by_path["src/many/f007.txt"].diff
    assert by_path["src/many/f007.txt"].digest == "sha256:" + hashlib.sha256(b"line 7\n" * 3).hexdigest()
    assert by_path["blob.bin"].binary and by_path["tab\tname.txt"].added == 1
    assert by_path["é a b/x.txt"].status == "added" and "+é a b/x.txt" in by_path["é a b/x.txt"].diff
