"""The sim's resource steps (`alloc`, `fork-bomb`, `burn --procs`), run as the real process.

They exist for the governor's tests of per-lane caps; here they run uncapped, and every test kills
the sim's process group at the end and checks that nothing of it is left.
"""

from __future__ import annotations

import errno
import io
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import psutil
import pytest

from lanes_tui.engine.sim.agent import Sim, parse_script
from tests.helpers import wait_for

SIM = [sys.executable, "-m", "lanes_tui.engine.sim"]
MIB = 1024 * 1024


def run_sim(cwd: Path, script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(SIM, input=script, cwd=cwd, capture_output=True, text=True, timeout=20,
                          check=False)


def body(out: str) -> list[str]:
    """Output lines between the reading line and `sim: done`."""
    lines = out.splitlines()
    assert lines[0].startswith("sim: reading prompt (")
    return lines[1:-1] if lines[-1] == "sim: done" else lines[1:]


def group(pgid: int) -> list[psutil.Process]:
    """The live (not zombie) processes of a process group."""
    found = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue
    return found


def wait_group_gone(pgid: int) -> None:
    deadline = time.monotonic() + 10
    while group(pgid):
        if time.monotonic() > deadline:
            raise AssertionError(f"process group {pgid} still has {group(pgid)}")
        time.sleep(0.02)


@contextmanager
def sim_group(cwd: Path, script: str) -> Iterator[subprocess.Popen[str]]:
    """The sim in a process group of its own, killed with the whole group on the way out."""
    proc = subprocess.Popen([*SIM, "--prompt", script], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        yield proc
    finally:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=10)
        wait_group_gone(proc.pid)


def read_until(proc: subprocess.Popen[str], last: str) -> list[str]:
    assert proc.stdout is not None
    lines: list[str] = []
    while not lines or lines[-1] != last:
        line = proc.stdout.readline()
        assert line, f"EOF before {last!r}; got {lines}"
        lines.append(line.rstrip("\n"))
    return lines


def test_alloc_reports_each_step_and_never_more(tmp_path: Path) -> None:
    done = run_sim(tmp_path, "alloc 40 --step 16 --every 0\nalloc 3 --step=16 --hold 0.01\nsay after\n")
    assert done.returncode == 0, done.stderr
    assert body(done.stdout) == ["sim: allocated 16 MiB", "sim: allocated 32 MiB", "sim: allocated 40 MiB",
                                 "sim: allocated 3 MiB", "after"]


def test_alloc_memory_is_resident_while_held(tmp_path: Path) -> None:
    with sim_group(tmp_path, "alloc 64 --every 0.01 --hold 30\nsay after") as proc:
        lines = read_until(proc, "sim: allocated 64 MiB")
        assert lines[1:] == [f"sim: allocated {n} MiB" for n in (16, 32, 48, 64)]
        assert psutil.Process(proc.pid).memory_info().rss >= 64 * MIB  # touched, not just mapped


def test_fork_bomb_forks_sleepers_in_the_sims_group(tmp_path: Path) -> None:
    with sim_group(tmp_path, "fork-bomb 4 --hold 30\nsay forked\nsleep 30") as proc:
        assert read_until(proc, "forked")[1:] == ["sim: forked 4 children", "forked"]
        children = psutil.Process(proc.pid).children()
        assert len(children) == 4
        for child in children:
            assert os.getpgid(child.pid) == proc.pid
            # The parent says "forked" once fork returns; each child moves its stdio to /dev/null
            # first thing, so that may still be under way: wait for it, bounded.
            wait_for(lambda pid=child.pid: os.readlink(f"/proc/{pid}/fd/1") == os.devnull, timeout=10)
        assert len(group(proc.pid)) == 5
    assert group(proc.pid) == []


def test_fork_bomb_children_do_not_hold_the_output_pipe(tmp_path: Path) -> None:
    with sim_group(tmp_path, "fork-bomb 3 --hold 30\nsay after") as proc:
        out, err = proc.communicate(timeout=5)  # EOF although the children sleep on
        assert proc.returncode == 0, err
        assert body(out) == ["sim: forked 3 children", "after"]
        assert len(group(proc.pid)) == 3  # the orphans, still in the sim's group
    assert group(proc.pid) == []


def test_fork_bomb_stops_at_a_refused_fork(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    forks: list[int] = []

    def fake_fork() -> int:  # two children, then the EAGAIN a pids cap gives
        if len(forks) == 2:
            raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))
        forks.append(1)
        return 4_000_000 + len(forks)  # a parent's view of a child; never used but counted

    monkeypatch.setattr(os, "fork", fake_fork)
    sim = Sim(tmp_path)
    out = io.BytesIO()
    sim.out = out
    sim.fork_bomb(10, 30)
    assert out.getvalue().decode() == f"sim: fork refused after 2 children: {os.strerror(errno.EAGAIN)}\n"
    assert len(forks) == 2


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def test_burn_procs_burns_in_parallel_and_reaps(tmp_path: Path) -> None:
    before = _children_cpu()
    with sim_group(tmp_path, "sleep 0.5") as proc:
        proc.communicate(timeout=30)
    sleeping = _children_cpu() - before  # what starting a sim costs, on this machine, now
    before = _children_cpu()
    with sim_group(tmp_path, "burn 0.5 --procs 2") as proc:
        helpers: set[int] = set()
        deadline = time.monotonic() + 5
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                helpers.update(c.pid for c in psutil.Process(proc.pid).children())
            except psutil.NoSuchProcess:
                break
            time.sleep(0.02)
        out, err = proc.communicate(timeout=10)
        assert proc.returncode == 0, err
        assert body(out) == []
        assert len(helpers) == 1  # one forked helper next to the sim itself
        assert not any(psutil.pid_exists(pid) for pid in helpers)  # reaped by the sim
    burning = _children_cpu() - before
    # It burned, rather than slept. The burn ends by the clock, so on a shared machine (CI saw 0.14 s
    # of CPU for 2 x 0.5 s at a load of 8 on 2 cores) only "more than a sleeping sim" is certain; that
    # two processes burned is what `helpers` shows.
    assert burning >= sleeping + 0.05, (burning, sleeping)


def test_resource_steps_with_bad_arguments_are_prose(tmp_path: Path) -> None:
    bad = ["alloc", "alloc 0", "alloc 1.5", "alloc 10 20", "alloc 10 --step 0", "alloc 10 --every -1",
           "alloc 10 --hold x", "alloc 10 --size 4", "alloc 65537", "fork-bomb", "fork-bomb 0",
           "fork-bomb 100001", "fork-bomb 3 --hold", "fork-bomb 2.5", "burn 1 --procs 0", "burn 1 --procs 65",
           "burn 1 --procs 1.5", "burn --procs 2", "burn 1 --cores 2"]
    steps, notes = parse_script("\n".join(bad))
    assert steps == [] and len(notes) == len(bad)
    good = ["alloc 1", "alloc 65536 --step 1 --every 0 --hold 0", "fork-bomb 1", "fork-bomb 100000 --hold 0",
            "burn 0", "burn 1 --procs 64", "burn 1 --procs=1"]
    steps, notes = parse_script("\n".join(good))
    assert len(steps) == len(good) and notes == []
    done = run_sim(tmp_path, "fork-bomb 100001\nburn 0 --procs 65\nsay ok\n")
    assert done.returncode == 0 and body(done.stdout) == ["ok"]
    assert "line 1 is not a valid step (fork-bomb: '100001' is out of range)" in done.stderr
    assert "line 2 is not a valid step (burn: '65' is out of range)" in done.stderr
