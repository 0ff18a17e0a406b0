"""The reaper shim (`procs.reaper_shim`): real processes, stopped by signals and by their parent's death.

Each test starts the shim over a small Python child that writes its pid (and its grandchild's) to
files, so the test can check afterwards that every one of them is gone; the autouse fixture of
conftest fails a test that leaves any process behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from lanes_tui.engine.lanes.launcher import SUPERVISOR_STOP_GRACE_S
from lanes_tui.engine.procs import reaper_shim
from tests.helpers import wait_for

SHIM = [sys.executable, "-m", "lanes_tui.engine.procs.reaper_shim"]


def gone(pid: int) -> bool:
    """No such process, or only a zombie waiting for its parent."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return True
    return raw[raw.rindex(b")") + 2:][:1] in (b"Z", b"X")


def pid_in(path: Path) -> int:
    text = wait_for(lambda: path.exists() and path.read_text().strip(), timeout=20)
    return int(str(text))


def script(tmp_path: Path, name: str, body: str) -> list[str]:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


def shim(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([*SHIM, *args], start_new_session=True, stdin=subprocess.DEVNULL)


def test_the_default_grace_is_the_supervisors_stop_grace() -> None:
    assert reaper_shim.DEFAULT_GRACE_S == SUPERVISOR_STOP_GRACE_S


def test_the_childs_exit_code_passes_through(tmp_path: Path) -> None:
    assert shim("--", sys.executable, "-c", "raise SystemExit(7)").wait(20) == 7
    killed = shim("--", sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert killed.wait(20) == 128 + signal.SIGKILL


def test_bad_arguments_get_one_line_and_exit_2() -> None:
    for args in (["--grace", "soon", "--", "true"], ["true"], ["--"], ["--parent", "-1", "--", "true"]):
        done = subprocess.run([*SHIM, *args], capture_output=True, text=True, timeout=20, check=False)
        assert done.returncode == 2 and done.stderr.startswith("reaper_shim: "), (args, done.stderr)


def test_sigterm_to_the_shim_reaches_the_child(tmp_path: Path) -> None:
    argv = script(tmp_path, "child", f"""
        import os, signal, sys, time
        def term(*_):
            open({str(tmp_path / 'got-term')!r}, 'w').write('yes')
            sys.exit(5)
        signal.signal(signal.SIGTERM, term)
        open({str(tmp_path / 'child.pid')!r}, 'w').write(str(os.getpid()))
        while True:
            time.sleep(1)
    """)
    proc = shim("--", *argv)
    child = pid_in(tmp_path / "child.pid")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(20) == 5
    assert (tmp_path / "got-term").read_text() == "yes"
    assert gone(child)


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    argv = script(tmp_path, "stubborn", f"""
        import os, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        open({str(tmp_path / 'child.pid')!r}, 'w').write(str(os.getpid()))
        while True:
            time.sleep(1)
    """)
    proc = shim("--grace", "0.5", "--", *argv)
    child = pid_in(tmp_path / "child.pid")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(20) == 128 + signal.SIGKILL
    assert gone(child)


def _orphaning_child(tmp_path: Path, *, stay: bool) -> list[str]:
    """A child that starts a setsid'd grandchild ignoring SIGTERM, then exits (or stays, if `stay`)."""
    grandchild = script(tmp_path, "grandchild", f"""
        import os, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        open({str(tmp_path / 'grandchild.pid')!r}, 'w').write(str(os.getpid()))
        while True:
            time.sleep(1)
    """)
    return script(tmp_path, "parent-of-one", f"""
        import os, subprocess, sys, time
        subprocess.Popen({grandchild!r}, start_new_session=True)
        while not os.path.exists({str(tmp_path / 'grandchild.pid')!r}):
            time.sleep(0.02)
        open({str(tmp_path / 'child.pid')!r}, 'w').write(str(os.getpid()))
        while {stay!r}:
            time.sleep(1)
        sys.exit(3)
    """)


def test_a_setsid_grandchild_orphaned_under_the_shim_is_killed(tmp_path: Path) -> None:
    proc = shim("--", *_orphaning_child(tmp_path, stay=False))
    assert proc.wait(30) == 3  # the child's code, after the leftover was stopped
    assert gone(pid_in(tmp_path / "grandchild.pid"))


def test_a_stop_takes_the_whole_tree(tmp_path: Path) -> None:
    proc = shim("--grace", "0.5", "--", *_orphaning_child(tmp_path, stay=True))
    child, grandchild = pid_in(tmp_path / "child.pid"), pid_in(tmp_path / "grandchild.pid")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 128 + signal.SIGTERM  # the child died of the SIGTERM the shim passed on
    assert gone(child) and gone(grandchild)


def test_the_shim_stops_its_child_when_its_parent_is_killed(tmp_path: Path) -> None:
    child = script(tmp_path, "child", f"""
        import os, time
        open({str(tmp_path / 'child.pid')!r}, 'w').write(str(os.getpid()))
        while True:
            time.sleep(1)
    """)
    parent = script(tmp_path, "parent", f"""
        import os, subprocess, sys, time
        shim = subprocess.Popen({[*SHIM, "--grace", "2", "--", *child]!r}, start_new_session=True)
        open({str(tmp_path / 'shim.pid')!r}, 'w').write(str(shim.pid))
        while True:
            time.sleep(1)
    """)
    holder = subprocess.Popen(parent, start_new_session=True)
    try:
        shim_pid, child_pid = pid_in(tmp_path / "shim.pid"), pid_in(tmp_path / "child.pid")
        holder.kill()  # as ray.kill does to an actor's worker
        holder.wait(20)
        wait_for(lambda: gone(child_pid) and gone(shim_pid), timeout=20)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    assert os.path.exists(tmp_path / "child.pid")


def test_a_shim_whose_parent_is_already_gone_starts_nothing(tmp_path: Path) -> None:
    """The race PDEATHSIG cannot cover: the parent died before the shim armed it (here: the pid it was
    told is its parent is not), so nobody would ever stop the child. The shim starts nothing."""
    marker = tmp_path / "started"
    proc = shim("--parent", str(os.getpid() + 1), "--",
                sys.executable, "-c", f"open({str(marker)!r}, 'w')")
    assert proc.wait(20) == 128 + signal.SIGTERM
    assert not marker.exists()
