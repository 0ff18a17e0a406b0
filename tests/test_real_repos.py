"""Issue 17: what a lead's real repository has and the tiny test repositories do not.

A `node_modules` of thousands of directories (no watch below it), a linked worktree the lead works
from (`inbox` still finds the main repository's questions), and multibyte output split at a read
boundary (the character arrives whole).
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.repo import find_repo_root
from lanes_tui.engine.core.utf8 import Utf8Stream, decode_span, whole_chars_end
from lanes_tui.engine.lanes import inotify
from lanes_tui.engine.lanes.agent_run import LineFramer
from lanes_tui.engine.lanes.inotify import TreeWatcher
from lanes_tui.engine.lanes.watch_skip import RAISE_LIMIT, lane_tree_watcher
from lanes_tui.engine.live.engine import Engine
from lanes_tui.engine.live.watch import Watched
from tests.conftest import git

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux") or inotify.load_libc() is None,
                                reason="inotify is Linux-only")


def _watched(w: TreeWatcher) -> set[str]:
    return {os.fsdecode(p) for p in w._paths.values()}


def _big_ignored_tree(repo: Path, dirs: int = 5000) -> Path:
    (repo / ".gitignore").write_text("node_modules/\n")
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("x = 1\n")
    modules = repo / "node_modules"
    for i in range(dirs):
        (modules / f"pkg{i:04d}").mkdir(parents=True)
    return modules


@linux_only
def test_an_ignored_node_modules_gets_no_watch(repo: Path) -> None:
    modules = _big_ignored_tree(repo)
    events: list[tuple[str, dict[str, Any]]] = []
    w = lane_tree_watcher(repo, (), lambda kind, **data: events.append((kind, data)))
    try:
        assert w.active
        top = os.path.realpath(repo)
        assert _watched(w) == {top, os.path.join(top, "src")}
        assert w.watch_count == 2
        assert not any(p.startswith(os.path.realpath(modules)) for p in _watched(w))
        assert events == []
    finally:
        w.close()


@linux_only
def test_a_directory_git_ignores_that_appears_later_gets_no_watch(repo: Path) -> None:
    (repo / ".gitignore").write_text("build/\n")
    w = lane_tree_watcher(repo, (), lambda *a, **k: None)
    try:
        (repo / "build").mkdir()
        (repo / "kept").mkdir()
        assert w.poll_changed()
        (repo / "build" / "deep").mkdir()  # under an unwatched directory: no event, no watch
        w.poll_changed()
        top = os.path.realpath(repo)
        assert _watched(w) == {top, os.path.join(top, "kept")}
    finally:
        w.close()


@linux_only
def test_a_changed_gitignore_is_asked_again(repo: Path) -> None:
    (repo / "out").mkdir()
    (repo / "out" / "inner").mkdir()
    w = lane_tree_watcher(repo, (), lambda *a, **k: None)
    try:
        top = os.path.realpath(repo)
        assert os.path.join(top, "out", "inner") in _watched(w)
        (repo / ".gitignore").write_text("out/\n")
        assert w.poll_changed()
        assert _watched(w) == {top}
        (repo / ".gitignore").write_text("# nothing ignored\n")
        w.poll_changed()
        assert _watched(w) == {top, os.path.join(top, "out"), os.path.join(top, "out", "inner")}
    finally:
        w.close()


@linux_only
def test_watch_skip_names_are_left_out_at_any_depth(repo: Path) -> None:
    (repo / "vendor" / "a").mkdir(parents=True)
    (repo / "src" / "vendor").mkdir(parents=True)
    w = lane_tree_watcher(repo, ("vendor",), lambda *a, **k: None)
    try:
        top = os.path.realpath(repo)
        assert _watched(w) == {top, os.path.join(top, "src")}
    finally:
        w.close()


def test_watch_skip_is_read_from_the_lanes_table(repo: Path) -> None:
    (repo / ".lanes").mkdir()
    (repo / ".lanes" / "config.toml").write_text('[lanes]\nwatch_skip = ["node_modules", ".venv"]\n')
    assert load_config(repo).lanes.watch_skip == ("node_modules", ".venv")
    (repo / ".lanes" / "config.toml").write_text('[lanes]\nwatch_skip = ["a/b"]\n')
    with pytest.raises(LanesError, match="watch_skip"):
        load_config(repo)


class _Limited:
    """The real libc, but the watch limit is reached after `limit` watches."""

    def __init__(self, real: Any, limit: int) -> None:
        self.real, self.limit, self.added = real, limit, 0

    def init1(self, flags: int) -> int:
        return int(self.real.init1(flags))

    def add_watch(self, fd: int, path: bytes, mask: int) -> int:
        if self.added >= self.limit:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.added += 1
        return int(self.real.add_watch(fd, path, mask))

    def rm_watch(self, fd: int, wd: int) -> None:
        self.real.rm_watch(fd, wd)


@linux_only
def test_the_watch_limit_is_said_once_in_the_lanes_events(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = inotify.load_libc()
    monkeypatch.setattr(inotify, "load_libc", lambda: _Limited(real, limit=1))
    (repo / "a").mkdir()
    (repo / "b").mkdir()
    events: list[tuple[str, dict[str, Any]]] = []
    w = lane_tree_watcher(repo, (), lambda kind, **data: events.append((kind, data)))
    try:
        assert w.degraded
        (repo / "c").mkdir()
        w.poll_changed()
        assert [kind for kind, _ in events] == ["watch-limit"]
        assert RAISE_LIMIT in events[0][1]["message"]
    finally:
        w.close()


@linux_only
def test_doctor_names_the_watch_limit_and_the_sysctl(repo: Path) -> None:
    from lanes_tui.app.cli.config import doctor_report

    line = doctor_report(repo)["inotify"]
    assert "fs.inotify.max_user_watches = " in line and RAISE_LIMIT in line


def _cli(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("LANES_HOME", "LANES_LANE")}
    return subprocess.run([sys.executable, "-m", "lanes_tui.app", *args], cwd=cwd, capture_output=True,
                          text=True, env={**clean, **env}, timeout=60, check=False)


def test_inbox_from_a_linked_worktree_lists_the_main_repositorys_questions(repo: Path, tmp_path: Path) -> None:
    home = repo / ".lanes" / "state"
    home.mkdir(parents=True)
    asked = _cli(repo, "ask", "Deploy?", "--yes-no", "--timeout", "0", LANES_HOME=str(home), LANES_LANE="probe-a1")
    assert asked.returncode == 3, asked.stderr  # asked; still open when the wait of 0 s ended
    linked = tmp_path / "second-checkout"
    git(repo, "worktree", "add", "-q", "-b", "lead-side", str(linked))
    (linked / "sub").mkdir()
    listed = _cli(linked / "sub", "inbox", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [q["title"] for q in json.loads(listed.stdout)] == ["Deploy?"]
    assert not (linked / ".lanes").exists()  # no second, empty state in the linked worktree


def test_the_repository_root_of_a_linked_worktree_is_the_main_one(repo: Path, tmp_path: Path) -> None:
    linked = tmp_path / "lane-tree"
    git(repo, "worktree", "add", "-q", "-b", "lane/x", str(linked))
    assert find_repo_root(linked) == repo.resolve()
    assert find_repo_root(linked / "calc.py") == repo.resolve()
    assert find_repo_root(repo) == repo.resolve()
    with pytest.raises(LanesError, match="not inside a git repository"):
        find_repo_root(tmp_path)  # the test's own folder holds the repository, it is not one


EURO = "€".encode()  # three bytes: e2 82 ac


def test_a_character_split_across_two_reads_is_decoded_whole() -> None:
    stream = Utf8Stream()
    assert stream.feed(b"price " + EURO[:1]) == "price "
    assert stream.pending == 1
    assert stream.feed(EURO[1:] + b"5\n") == "€5\n"
    assert stream.pending == 0
    assert decode_span(EURO[2:] + b"ok " + EURO[:2]) == ("ok ", 1, 2)
    assert whole_chars_end(b"ab" + EURO[:2]) == 2


def test_the_line_framer_never_cuts_a_character_in_two() -> None:
    framer = LineFramer(limit=4)
    lines = framer.feed(b"abc" + EURO[:2])  # over the limit, and the cut would fall inside the euro
    assert lines == [b"abc"]
    assert framer.feed(EURO[2:] + b"\n") == ["€".encode()]


def _two_chunk_output(repo: Path) -> tuple[Engine, Path]:
    engine = Engine(repo)
    output = engine.paths.lane("multi-a1").output
    output.parent.mkdir(parents=True)
    output.write_bytes(b"")
    return engine, output


def test_the_output_follower_keeps_a_split_character_for_the_next_read(repo: Path) -> None:
    engine, output = _two_chunk_output(repo)
    watched = Watched()
    events: list[Any] = []
    with open(output, "ab") as handle:
        handle.write(b"total: " + EURO[:2])
        handle.flush()
        engine.scanner.scan_output("multi-a1", watched, False, events)
        handle.write(EURO[2:] + b"12\n")
        handle.flush()
        engine.scanner.scan_output("multi-a1", watched, False, events)
    assert "".join(e.text for e in events) == "total: €12\n"
    assert "\ufffd" not in "".join(e.text for e in events)
    # The byte offsets cover exactly each event's text, so the dashboard can splice them.
    assert [(e.offset, e.end) for e in events] == [(0, 7), (7, 7 + 3 + 3)]


async def test_the_output_pane_receives_the_character_whole(repo: Path) -> None:
    from lanes_tui.app.dashboard.bridge import EngineBridge

    engine, output = _two_chunk_output(repo)
    posted: list[Any] = []

    class Target:
        def post_message(self, message: Any) -> bool:
            posted.append(message)
            return True

    bridge = EngineBridge(Target(), engine, flush_s=60)
    bridge.select("multi-a1")
    engine.output_lanes = {"multi-a1"}
    output.write_bytes(b"start " + EURO[:1])
    text, end = await engine.output_tail_at("multi-a1")
    assert (text, end) == ("start ", 6)  # the tail stops before the unfinished character
    bridge.shown("multi-a1", end)
    watched = Watched(output_offset=output.stat().st_size)
    watched.text.feed(EURO[:1])  # the follower already read the first byte, like the live engine
    with open(output, "ab") as handle:
        handle.write(EURO[1:] + b" end\n")
    events: list[Any] = []
    engine.scanner.scan_output("multi-a1", watched, False, events)
    for event in events:
        bridge.fold(event)
    bridge.flush()
    shown = "".join(m.text for m in posted if hasattr(m, "text"))
    assert text + shown == "start € end\n"


def test_completion_from_a_linked_worktree_lists_the_main_repositorys_lanes(repo: Path, tmp_path: Path) -> None:
    lane = repo / ".lanes" / "state" / "lanes" / "fix-login-a1"
    lane.mkdir(parents=True)
    (lane / "lane.json").write_text("{}")  # completion lists folder names only
    linked = tmp_path / "second-checkout"
    git(repo, "worktree", "add", "-q", "-b", "lead-side", str(linked))
    found = _cli(linked, "__complete", "lanes")
    assert found.returncode == 0, found.stderr
    assert found.stdout.split() == ["fix-login-a1"]
