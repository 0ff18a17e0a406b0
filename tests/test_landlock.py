"""Contained by the kernel (issue 28, items 1 and 2): a lane's processes write only what they may.

The hostile agent here is a real process run as a lane's provider: a small script that tries, with
ordinary tools (git, open, kill), every write the issue found an agent could make as the lead's user
(the shared git config and hooks, the target's ref, the state folder, the lead checkout, another
lane's worktree, the heavy-slot locks, cgroupfs, its supervisor's run state) and reports each outcome
as a `RESULT` line. With Landlock every one is refused by the kernel while the agent's ordinary work
(edit, run a test, `git status`/`diff`, `lanes-tui ask`, `lanes-tui lock`, its TMPDIR, its provider's own
state under HOME) still works; without it (`LANES_TUI_LANDLOCK=off`) `run` refuses up front unless the
lead allows an uncontained lane, and the record says it ran uncontained.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lanes_tui.engine.procs import landlock
from tests.conftest import git
from tests.helpers import cli, output, status, wait_for, wait_state, write_config

pytestmark = pytest.mark.skipif(not landlock.probe().available, reason="this kernel has no Landlock")

#: The hostile agent: runs each attempt of the JSON list on the last line of its prompt and prints one
#: `RESULT {"name", "ok", "detail"}` line for each. `ok` is whether the attempt succeeded.
ROGUE = r"""
import json, os, signal, subprocess, sys
attempts = json.loads(sys.argv[-1].strip().splitlines()[-1])

def report(name, ok, detail=""):
    print("RESULT " + json.dumps({"name": name, "ok": ok, "detail": str(detail)[-300:]}), flush=True)

for item in attempts:
    kind, name = item["kind"], item["name"]
    try:
        if kind == "write":
            with open(item["path"], "a") as f:
                f.write(item.get("text", "rogue\n"))
            report(name, True)
        elif kind == "run":
            proc = subprocess.run(item["argv"], capture_output=True, text=True, timeout=120,
                                  input=item.get("input"))
            report(name, proc.returncode == 0, proc.stdout + proc.stderr)
        elif kind == "signal":
            os.kill(int(item["pid"]) if "pid" in item else os.getppid(), getattr(signal, item["sig"]))
            report(name, True)
    except Exception as exc:
        report(name, False, repr(exc))
print("ROGUE DONE", flush=True)
"""


def _results(repo: Path, lane: str) -> dict[str, dict[str, Any]]:
    found = {}
    for line in output(repo, lane).splitlines():
        if line.startswith("RESULT "):
            item = json.loads(line[len("RESULT "):])
            found[item["name"]] = item
    return found


def _rogue_config(repo: Path, tmp_path: Path, *, writable: str = "", lanes_extra: str = "") -> None:
    script = tmp_path / "rogue.py"
    script.write_text(ROGUE)
    extra = (f'[providers.rogue]\nargv = ["{{python}}", "{script}"]\nprompt = "arg"\n'
             f'{"writable = " + writable if writable else ""}\n')
    write_config(repo, extra=extra, chains='backend = ["rogue"]', lanes_extra=lanes_extra)


def _start(repo: Path, lane_slug: str, attempts: list[dict[str, Any]], *args: str,
           env: dict[str, str] | None = None, check: bool = False) -> subprocess.CompletedProcess[str]:
    prompt = "Try these.\n" + json.dumps(attempts)
    return cli(repo, "run", "--prompt", prompt, "--id", lane_slug, "--raw", *args, env=env, check=check)


def _lane_paths(repo: Path, lane: str) -> tuple[Path, Path]:
    row = status(repo, lane)
    return Path(row["worktree"]), repo / ".lanes" / "state" / "lanes" / lane


# --- the kernel's side, without lanes-tui ------------------------------------------------------------

def test_a_ruleset_lets_a_child_write_only_beneath_its_folders(tmp_path: Path) -> None:
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    probe = landlock.probe()
    with landlock.build(probe.abi, [allowed, "/dev/null", tmp_path / "not-there"]) as rules:
        assert rules.missing == (str(tmp_path / "not-there"),)
        script = (f"echo in > {allowed}/a && mkdir {allowed}/d && mv {allowed}/a {allowed}/d/a && echo ALLOWED; "
                  f"echo out > {outside}/b || echo DENIED; echo x > /dev/null && echo NULL; "
                  f"kill -0 {os.getpid()} || echo NO-SIGNAL")
        done = subprocess.run(["sh", "-c", script], preexec_fn=rules.restrict(), capture_output=True, text=True,
                              check=False)
    assert "ALLOWED" in done.stdout and "NULL" in done.stdout
    assert "DENIED" in done.stdout and not (outside / "b").exists()
    assert (allowed / "d" / "a").read_text() == "in\n"
    if landlock.scopes(probe.abi):  # ABI 6+: the child may not signal a process outside its domain
        assert "NO-SIGNAL" in done.stdout
    # the parent itself is untouched by the child's ruleset
    (outside / "c").write_text("lead")


def test_the_fallback_is_forced_by_the_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(landlock.ENV_SWITCH, "off")
    found = landlock.probe()
    assert not found.available and "LANES_TUI_LANDLOCK=off" in found.describe()


# --- a hostile agent in a real lane -----------------------------------------------------------------

def test_a_hostile_agent_writes_nothing_outside_its_lane(repo: Path, tmp_path: Path) -> None:
    _rogue_config(repo, tmp_path)
    git(repo, "checkout", "-q", "-b", "prog")
    other = cli(repo, "run", "--prompt", "Neighbour.\n[]", "--id", "neighbour", "--raw", check=True)
    neighbour = other.stdout.strip().splitlines()[-1]
    wait_state(repo, neighbour)
    neighbour_tree = Path(status(repo, neighbour)["worktree"])
    target = git(repo, "rev-parse", "prog").strip()
    config_before = (repo / ".git" / "config").read_bytes()
    slot_dir = Path(os.environ["XDG_RUNTIME_DIR"]) / "lanes-tui" / "heavy-slots"
    marker = tmp_path / "fsmonitor-ran"
    prog = tmp_path / "prog.sh"
    prog.write_text(f"#!/bin/sh\ntouch {marker}\n")
    prog.chmod(0o755)
    state = repo / ".lanes" / "state"
    attempts: list[dict[str, Any]] = [
        {"kind": "run", "name": "git config core.fsmonitor", "argv": ["git", "config", "core.fsmonitor", str(prog)]},
        {"kind": "run", "name": "git config core.hooksPath", "argv": ["git", "config", "core.hooksPath", "/tmp"]},
        {"kind": "run", "name": "git config remote pushurl",
         "argv": ["git", "config", "remote.origin.pushurl", "/tmp/elsewhere.git"]},
        {"kind": "write", "name": "shared hook", "path": str(repo / ".git" / "hooks" / "post-commit"),
         "text": "#!/bin/sh\ntouch /tmp/pwned\n"},
        {"kind": "run", "name": "update-ref target", "argv": ["git", "update-ref", "refs/heads/prog", "HEAD"]},
        {"kind": "write", "name": "info/attributes", "path": str(repo / ".git" / "info" / "attributes")},
        {"kind": "write", "name": "lead checkout", "path": str(repo / "calc.py")},
        {"kind": "write", "name": "lanes config", "path": str(repo / ".lanes" / "config.toml")},
        {"kind": "write", "name": "own packet", "path": str(state / "lanes" / "hostile-a1" / "packet.json")},
        {"kind": "write", "name": "own lane record", "path": str(state / "lanes" / "hostile-a1" / "lane.json")},
        {"kind": "write", "name": "forged answer",
         "path": str(state / "inbox" / "hostile-a1" / "q_0123456789abcdef.answer.json")},
        {"kind": "write", "name": "neighbour worktree", "path": str(neighbour_tree / "calc.py")},
        {"kind": "write", "name": "heavy slot", "path": str(slot_dir / "slot-0.lock")},
        {"kind": "write", "name": "home dotfile", "path": str(Path.home() / ".lanes-tui-landlock-test")},
        {"kind": "run", "name": "cgroup escape",
         "argv": ["sh", "-c", "for f in /sys/fs/cgroup/cgroup.procs /sys/fs/cgroup/*/cgroup.procs; do "
                              "[ -e \"$f\" ] && echo $$ > \"$f\" && exit 0; done; exit 1"]},
        {"kind": "signal", "name": "SIGSTOP the supervisor", "sig": "SIGSTOP"},
        # ordinary work still works
        {"kind": "write", "name": "edit in worktree", "path": "calc.py", "text": "# edited\n"},
        {"kind": "run", "name": "run a test",
         "argv": [sys.executable, "-c", "import calc; assert calc.add(1, 2) == 3"]},
        {"kind": "run", "name": "git status", "argv": ["git", "status", "--short"]},
        {"kind": "run", "name": "git diff", "argv": ["git", "diff", "--stat"]},
        {"kind": "run", "name": "tmpdir", "argv": ["sh", "-c", "echo t > \"$TMPDIR/t\" && mktemp"]},
        {"kind": "run", "name": "lock", "argv": ["lanes-tui", "lock", "--", sys.executable, "-c", "print('locked')"]},
        {"kind": "run", "name": "ask", "argv": ["lanes-tui", "ask", "--yes-no", "--timeout", "60", "Ship it?"]},
    ]
    lane = _start(repo, "hostile", attempts, check=True).stdout.strip().splitlines()[-1]

    def open_question() -> Any:
        rows = json.loads(cli(repo, "inbox", "--json", check=True).stdout)
        return next((q for q in rows if q["lane"] == lane and q["state"] == "open"), None)

    qid = wait_for(open_question, timeout=90)["id"]
    cli(repo, "answer", qid, "yes", check=True)
    wait_for(lambda: "ROGUE DONE" in output(repo, lane), timeout=90)
    results = _results(repo, lane)
    refused = ["git config core.fsmonitor", "git config core.hooksPath", "git config remote pushurl", "shared hook",
               "update-ref target", "info/attributes", "lead checkout", "lanes config", "own packet",
               "own lane record", "forged answer", "neighbour worktree", "heavy slot", "home dotfile",
               "cgroup escape", "SIGSTOP the supervisor"]
    for name in refused:
        assert results[name]["ok"] is False, (name, results[name])
    for name in ("edit in worktree", "run a test", "git status", "git diff", "tmpdir", "lock", "ask"):
        assert results[name]["ok"] is True, (name, results[name])
    assert "locked" in results["lock"]["detail"]
    assert (repo / ".git" / "config").read_bytes() == config_before
    assert git(repo, "rev-parse", "prog").strip() == target
    assert not (repo / ".git" / "hooks" / "post-commit").exists() and not marker.exists()
    assert "rogue" not in (repo / "calc.py").read_text() and "rogue" not in (neighbour_tree / "calc.py").read_text()
    assert not (Path.home() / ".lanes-tui-landlock-test").exists()
    wait_state(repo, lane)
    row = status(repo, lane)
    assert row["state"] == "ready"  # the supervisor was never stopped: it finished the lane
    worktree, lane_dir = _lane_paths(repo, lane)
    assert (worktree / "calc.py").read_text().endswith("# edited\n")
    record = json.loads((lane_dir / "lane.json").read_text())
    assert record["confinement"]["mechanism"].startswith("landlock-abi")
    assert str(worktree) in record["confinement"]["writable"]
    events = [json.loads(line) for line in (lane_dir / "events.jsonl").read_text().splitlines()]
    assert any(e["type"] == "lock-acquired" and e.get("relayed") for e in events)  # lock's line, via the supervisor
    tmp = Path(record["confinement"]["writable"][2])
    assert not tmp.exists()  # the lane's TMPDIR went with the run


def test_a_provider_writes_its_own_state_under_home(repo: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake CLI that keeps its state in HOME (as claude, codex and gemini do) still works, and only there."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    _rogue_config(repo, tmp_path, writable='["~/.fakecli/", "~/.fakecli.json"]')
    (home / ".fakecli.json").write_text("{}")
    attempts = [
        {"kind": "write", "name": "state folder", "path": str(home / ".fakecli" / "sessions.jsonl")},
        {"kind": "write", "name": "state file", "path": str(home / ".fakecli.json")},
        {"kind": "write", "name": "other dotfile", "path": str(home / ".bashrc")},
        {"kind": "write", "name": "sibling folder", "path": str(home / ".ssh-like")},
    ]
    lane = _start(repo, "homestate", attempts, check=True).stdout.strip().splitlines()[-1]
    wait_state(repo, lane)
    results = _results(repo, lane)
    assert results["state folder"]["ok"] and results["state file"]["ok"]
    assert not results["other dotfile"]["ok"] and not results["sibling folder"]["ok"]
    assert (home / ".fakecli" / "sessions.jsonl").read_text() == "rogue\n"
    assert not (home / ".bashrc").exists()


def test_gates_run_confined(repo: Path, tmp_path: Path) -> None:
    gate = tmp_path / "gate.py"
    gate.write_text(
        "import os, sys\n"
        "open('gate-was-here', 'w').write('x')\n"
        "open(os.path.join(os.environ['TMPDIR'], 't'), 'w').write('x')\n"
        f"try:\n    open({str(repo / 'calc.py')!r}, 'a').write('gate')\nexcept OSError:\n    sys.exit(0)\n"
        "sys.exit(1)\n")
    write_config(repo, gates=f'commands = ["{sys.executable} {gate}"]')
    lane = cli(repo, "run", "--prompt", "write new.txt hi", "--id", "gated", check=True).stdout.strip().splitlines()[-1]
    assert wait_state(repo, lane) == f"{lane} ready OK"
    assert "gate" not in (repo / "calc.py").read_text()
    events = (repo / ".lanes" / "state" / "lanes" / lane / "events.jsonl").read_text()
    assert '"of":"gates"' in events.replace(" ", "") and "landlock-abi" in events


def test_without_landlock_run_refuses_unless_allowed(repo: Path, tmp_path: Path) -> None:
    _rogue_config(repo, tmp_path)
    env = {**os.environ, landlock.ENV_SWITCH: "off"}
    attempts = [{"kind": "write", "name": "lanes config", "path": str(repo / ".lanes" / "config.toml"),
                 "text": "# rogue\n"}]
    refused = _start(repo, "plain", attempts, env=env)
    assert refused.returncode == 2
    assert "cannot confine" in refused.stderr and "--allow-uncontained" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) <= 2 and "Traceback" not in refused.stderr
    assert not (repo / ".lanes" / "state" / "lanes" / "plain-a1").exists()  # refused before anything was made
    doctor = cli(repo, "doctor", env=env)
    assert "confinement: none (LANES_TUI_LANDLOCK=off)" in doctor.stdout
    allowed = _start(repo, "plain", attempts, "--allow-uncontained", env=env)
    assert allowed.returncode == 0, allowed.stderr
    lane = allowed.stdout.strip().splitlines()[-1]
    wait_state(repo, lane)
    record = json.loads((repo / ".lanes" / "state" / "lanes" / lane / "lane.json").read_text())
    assert record["confinement"]["mechanism"] == "none"
    assert record["confinement"]["allowed_by"] == "allow_uncontained"
    assert _results(repo, lane)["lanes config"]["ok"] is True  # uncontained, as the lead chose and the record says


def test_doctor_names_the_confinement_in_force(repo: Path) -> None:
    write_config(repo)
    done = cli(repo, "doctor")
    line = next(x for x in done.stdout.splitlines() if x.startswith("confinement:"))
    assert f"landlock ABI {landlock.probe().abi}" in line
    assert "claude" in done.stdout and "~/.claude/" in done.stdout


def test_a_confined_process_cannot_stop_its_supervisor(tmp_path: Path) -> None:
    """Scopes (ABI 6+): SIGSTOP to the parent is refused by the kernel, so the deadlines keep running."""
    probe = landlock.probe()
    if not landlock.scopes(probe.abi):
        pytest.skip("this kernel's Landlock has no signal scope (ABI < 6)")
    with landlock.build(probe.abi, [tmp_path]) as rules:
        child = subprocess.run([sys.executable, "-c", f"import os, signal; os.kill({os.getpid()}, signal.SIGSTOP)"],
                               preexec_fn=rules.restrict(), capture_output=True, text=True, check=False)
    assert child.returncode != 0 and "PermissionError" in child.stderr
    assert Path("/proc/self/stat").read_text().split(") ")[1][0] in "RS"  # never stopped: the signal never came


def test_the_object_store_is_not_writable_and_what_that_costs(repo: Path, tmp_path: Path) -> None:
    """The decision in docs/reliability.md, held: under the fence the shared object store takes no object,
    even with the variables unset; `git add` writes into the lane's own store (issue 29), while what
    needs a shared ref (`stash`, `commit` on the lane's branch) is refused."""
    from lanes_tui.engine.lanes.confine import confine

    worktree = tmp_path / "lane"
    git(repo, "worktree", "add", "-q", "-b", "lane/store-a1", str(worktree))
    (worktree / "calc.py").write_text("changed\n")
    objects_before = sorted(p.name for p in (repo / ".git" / "objects").rglob("*") if p.is_file())
    fence = confine(repo, "store-a1", worktree, kind="agent", writable=[], allowed_uncontained=False)
    unset = ["env", "-u", "GIT_OBJECT_DIRECTORY", "-u", "GIT_ALTERNATE_OBJECT_DIRECTORIES"]
    try:
        env = {**os.environ, **fence.env()}
        assert env["GIT_OBJECT_DIRECTORY"] == str(repo / ".git" / "worktrees" / "lane" / "lane-objects")
        codes = {}
        for argv in (["git", "status", "--short"], ["git", "diff", "--stat"], ["git", "log", "--oneline", "-1"],
                     ["git", "add", "calc.py"], ["git", "diff", "--cached", "--stat"], ["git", "stash"],
                     ["git", "commit", "-qam", "agent commit"], [*unset, "git", "add", "--renormalize", "calc.py"],
                     [*unset, "git", "hash-object", "-w", "calc.py"], ["git", "restore", "calc.py"]):
            done = subprocess.run(argv, cwd=worktree, env=env, preexec_fn=fence.preexec(),
                                  capture_output=True, text=True, check=False)
            codes[" ".join(argv[argv.index("git") + 1:])] = (done.returncode, done.stderr)
            if argv[0] == "env":
                assert "insufficient permission for adding an object" in done.stderr, (argv, done.stderr)
    finally:
        fence.close()
    assert {name for name, (code, _) in codes.items() if code == 0} == {
        "status --short", "diff --stat", "log --oneline -1", "add calc.py", "diff --cached --stat", "restore calc.py"}
    assert (worktree / "calc.py").read_text() == "changed\n"  # restored from the index: the staged version
    assert sorted(p.name for p in (repo / ".git" / "objects").rglob("*") if p.is_file()) == objects_before
    assert git(repo, "rev-parse", "lane/store-a1") == git(repo, "rev-parse", "main")  # nothing committed
    private = repo / ".git" / "worktrees" / "lane" / "lane-objects"
    staged = git(worktree, "hash-object", "calc.py")
    assert (private / staged[:2] / staged[2:]).is_file()
