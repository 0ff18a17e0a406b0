"""Pausing a lane in place: SIGSTOP over a real process tree, and the freeze of a real lane cgroup
(v2 and v1 each where the machine has it, skipped with the reason where not)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import cast

import pytest

from lanes_tui.engine.procs import cgroup
from lanes_tui.engine.procs.cgroup import LaneCgroup
from lanes_tui.engine.procs.pause import TreePauser
from lanes_tui.engine.procs.tree import descendant_pids


def proc_state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        return handle.read().rsplit(b")", 1)[-1].split()[0].decode()


@pytest.fixture()
def tree() -> Iterator[tuple[int, int]]:
    """A parent and its child, both sleeping, as (parent pid, child pid); both killed afterwards."""
    proc = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time\n"
                             "c = subprocess.Popen(['sleep', '60']); print(c.pid, flush=True); time.sleep(60)"],
                            stdout=subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    yield proc.pid, child
    for pid in (proc.pid, child):
        try:
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()
    proc.stdout.close()


def test_tree_pauser_stops_and_continues_the_whole_tree(tree: tuple[int, int]) -> None:
    parent, child = tree
    pauser = TreePauser(None, lambda: [parent, *descendant_pids(parent)])
    pauser.pause()
    assert pauser.mechanism == "sigstop"
    assert proc_state(parent) == "T" and proc_state(child) == "T"
    pauser.pause()  # a second pause is a no-op
    pauser.resume()
    assert pauser.mechanism is None
    assert proc_state(parent) != "T" and proc_state(child) != "T"


def test_tree_pauser_ignores_vanished_pids() -> None:
    pauser = TreePauser(None, lambda: [2**22 + 7])  # above pid_max on most machines: no such process
    pauser.pause()
    pauser.resume()


@pytest.mark.parametrize("mechanism", ["cgroup-v2", "cgroup-v1"])
def test_tree_pauser_freezes_the_lane_cgroup(mechanism: str, tree: tuple[int, int]) -> None:
    support = cgroup.detect("v2" if mechanism == "cgroup-v2" else "v1")
    if support.mechanism != mechanism:
        pytest.skip(f"{mechanism} is not available here: {support.reason}")
    group = cgroup.LaneCgroup.create(support, "spendtest", f"freeze-{os.getpid()}")
    assert group is not None
    try:
        group.add(tree[0])
        pauser = TreePauser(group, lambda: [])
        pauser.pause()
        assert pauser.mechanism == "cgroup-freeze"
        if mechanism == "cgroup-v2":
            assert "frozen 1" in (group.path / "cgroup.events").read_text()
        else:
            assert (group.path / "freezer.state").read_text().strip() == "FROZEN"
        pauser.resume()
        if mechanism == "cgroup-v2":
            assert "frozen 0" in (group.path / "cgroup.events").read_text()
        else:
            assert (group.path / "freezer.state").read_text().strip() == "THAWED"
    finally:
        group.kill()
        group.remove()


class StuckGroup:
    """A cgroup whose freeze does not complete (no cgroup.freeze, or a member stuck in the kernel)."""

    def __init__(self) -> None:
        self.thawed = 0

    def freeze(self, timeout_s: float = 5.0) -> bool:
        return False

    def thaw(self) -> None:
        self.thawed += 1


def test_a_freeze_that_does_not_complete_falls_back_to_signals(tree: tuple[int, int]) -> None:
    parent, child = tree
    group = StuckGroup()
    pauser = TreePauser(cast(LaneCgroup, group), lambda: [parent, child])
    pauser.pause()
    assert pauser.mechanism == "sigstop"
    assert proc_state(parent) == "T" and proc_state(child) == "T"
    pauser.resume()
    assert group.thawed == 1  # the freeze was asked for, so it is undone too
    assert proc_state(parent) != "T" and proc_state(child) != "T"
