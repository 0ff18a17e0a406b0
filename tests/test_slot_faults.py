"""A damaged heavy-slot lock is rebuilt, reported by `doctor`, and never fatal to a gate (issue 28).

The heavy slots (`slot-N.lock` under the runtime folder) are shared by every lane of the machine, and
an agent runs as the lead's user: a real agent here replaces them with a directory, a symlink to a
file of the lead's, a mode-000 file and garbage, with plain `mkdir`, `ln -s` and `chmod`. The lane's
own gates, the lead's `check` and `lanes-tui lock` still run, the linked file is never written, and
`doctor` names and rebuilds what it finds. A process that may only read the slot folder (an agent
under a Landlock ruleset) still takes a slot, on a read-only descriptor.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lanes_tui.engine.core import slots
from tests.helpers import cli, run_lane, status, wait_state, write_config


@pytest.fixture(autouse=True)
def uncontained(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under the kernel's confinement the agent's writes here are refused outright (tests/test_landlock.py);
    these lanes run uncontained, as on a machine without Landlock, where lanes-tui must still hold."""
    monkeypatch.setenv("LANES_TUI_LANDLOCK", "off")

#: The agent: damages every heavy slot of the folder named on its prompt's last line.
VANDAL = """\
import pathlib, subprocess, sys
folder, victim = sys.argv[-1].strip().splitlines()[-1].split()
folder = pathlib.Path(folder)
for name in ("slot-0.lock", "slot-1.lock", "slot-2.lock"):
    subprocess.run(["rm", "-rf", str(folder / name)], check=True)
subprocess.run(["mkdir", str(folder / "slot-0.lock")], check=True)
subprocess.run(["ln", "-s", victim, str(folder / "slot-1.lock")], check=True)
(folder / "slot-2.lock").write_text("[1, 2, garbage")
subprocess.run(["chmod", "000", str(folder / "slot-2.lock")], check=True)
pathlib.Path("vandalised.txt").write_text("x")  # and did work, so the lane is judged by its gates
print("vandalised", flush=True)
"""


def _slot_dir(tmp_path: Path) -> Path:
    return tmp_path / "xdg-run" / "lanes-tui" / "heavy-slots"  # the `repo` fixture's XDG_RUNTIME_DIR


def _damage(folder: Path, victim: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("slot-0.lock", "slot-1.lock", "slot-2.lock"):
        path = folder / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
    (folder / "slot-0.lock").mkdir()
    (folder / "slot-1.lock").symlink_to(victim)
    (folder / "slot-2.lock").write_text("[1, 2, garbage")
    (folder / "slot-2.lock").chmod(0)


def _sound(folder: Path, count: int = 3) -> bool:
    return all(slots.slot_damage(folder / f"slot-{i}.lock") is None and (folder / f"slot-{i}.lock").is_file()
               for i in range(count))


def test_a_vandalised_slot_folder_stops_no_gate(repo: Path, tmp_path: Path) -> None:
    victim = tmp_path / "lead-notes.txt"
    victim.write_text("the lead's own file\n")
    agent = tmp_path / "vandal.py"
    agent.write_text(VANDAL)
    gate = json.dumps(f"{sys.executable} -c \"print('gate ran')\"")
    write_config(repo, allow_uncontained=True, gates=f"commands = [{gate}]\nslots = 3",
                 extra=f'[providers.vandal]\nargv = ["{{python}}", "{agent}"]\nprompt = "arg"\n')
    folder = _slot_dir(tmp_path)
    lane = run_lane(repo, f"{folder} {victim}", lane_id="vandal", extra=("--lane", "vandal"))
    assert wait_state(repo, lane) == f"{lane} ready OK"  # its own gates ran after the damage
    packet = json.loads((repo / ".lanes" / "state" / "lanes" / lane / "packet.json").read_text())
    assert packet["gates_status"] == "passed", packet
    assert victim.read_text() == "the lead's own file\n"  # the link was never written through
    _damage(folder, victim)
    checked = cli(repo, "check", lane)
    assert checked.returncode == 0 and "passed" in checked.stdout, checked.stdout + checked.stderr
    _damage(folder, victim)
    locked = cli(repo, "lock", "--", sys.executable, "-c", "print('heavy run')")
    assert locked.returncode == 0 and "heavy run" in locked.stdout, locked.stderr
    assert victim.read_text() == "the lead's own file\n" and not victim.is_symlink()
    assert status(repo, lane)["state"] == "ready"


def test_doctor_reports_each_damaged_slot_and_rebuilds_it(repo: Path, tmp_path: Path) -> None:
    write_config(repo, allow_uncontained=True, gates="commands = []\nslots = 3")
    folder = _slot_dir(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    _damage(folder, victim)
    report = cli(repo, "doctor")
    line = next(x for x in report.stdout.splitlines() if x.startswith("heavy slots:"))
    assert "slot-0.lock was a directory: rebuilt" in line, line
    assert "slot-1.lock was a symbolic link: rebuilt" in line
    assert "slot-2.lock was mode 0000, not readable and writable by its owner: rebuilt" in line
    assert _sound(folder) and victim.read_text() == "keep me\n" and not (folder / "slot-1.lock").is_symlink()
    again = cli(repo, "doctor")
    assert "rebuilt" not in again.stdout  # once rebuilt, nothing more to say


def _refusing_writes(path: str, flags: int, mode: int = 0o777) -> int:
    """`os.open` as a process whose ruleset lets it read the slot folder but not write it."""
    if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
        raise PermissionError(errno.EACCES, "Permission denied", path)
    return os.open(path, flags, mode)


def test_a_slot_is_taken_on_a_read_only_descriptor(tmp_path: Path) -> None:
    folder = tmp_path / "slots"
    assert slots.try_acquire(folder, 1, {"lane": "a"}, opener=_refusing_writes) is None  # no file yet
    assert slots.ensure_slots(folder, 1) == []  # the lead's side makes it before agents run
    held = slots.try_acquire(folder, 1, {"lane": "agent-a1"}, opener=_refusing_writes)
    assert held is not None and not held.writable
    assert slots.try_acquire(folder, 1, {"lane": "lead"}) is None  # the flock counts all the same
    assert slots.holders(folder) == [{"slot": "slot-0.lock"}]  # no holder line: it could not write one
    held.release()
    lead = slots.try_acquire(folder, 1, {"lane": "lead"})
    assert lead is not None and lead.writable
    assert [h["lane"] for h in slots.holders(folder)] == ["lead"]
    lead.release()


def test_garbage_in_a_held_slot_is_a_nameless_holder(tmp_path: Path) -> None:
    folder = tmp_path / "slots"
    held = slots.try_acquire(folder, 1, {"lane": "x"})
    assert held is not None
    for garbage in (b"[1, 2]", b"7", b"\xff\xfe", b"[" * 5000):
        os.pwrite(held.fd, garbage, 0)
        os.ftruncate(held.fd, len(garbage))
        assert slots.holders(folder) == [{"slot": "slot-0.lock"}]
    held.release()


def test_lanes_tui_lock_runs_when_the_slot_folder_is_read_only(repo: Path, tmp_path: Path) -> None:
    """A real `lanes-tui lock` whose process may not write the slot folder or files (mode 0555 / 0444,
    made to apply to root by dropping CAP_DAC_OVERRIDE with setpriv): it runs on a read-only fd."""
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: file modes cannot be made to apply")
    write_config(repo, allow_uncontained=True, gates="commands = []\nslots = 1")
    folder = _slot_dir(tmp_path)
    slots.ensure_slots(folder, 1)
    (folder / "slot-0.lock").chmod(0o444)
    folder.chmod(0o555)
    caps = "-dac_override,-dac_read_search"
    prefix = ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}"] if os.geteuid() == 0 else []
    try:
        proc = subprocess.run([*prefix, sys.executable, "-m", "lanes_tui.app", "lock", "--", sys.executable, "-c",
                               "print('ran in a slot')"], cwd=repo, capture_output=True, text=True, timeout=60,
                              check=False)
    finally:
        folder.chmod(0o755)
    assert proc.returncode == 0 and "ran in a slot" in proc.stdout, proc.stderr
