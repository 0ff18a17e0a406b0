"""The simulated agent, run as the real process the supervisor, demo and benchmarks start."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from lanes_tui.engine.sim.agent import CONFIG_ERROR, OUT_OF_BUDGET, parse_script

SIM = [sys.executable, "-m", "lanes_tui.engine.sim"]


def run_sim(cwd: Path, script: str, *args: str, env: dict[str, str] | None = None,
            timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SIM, *args], input=script, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env, check=False)


def body(out: str) -> list[str]:
    """Output lines between the reading line and `sim: done`."""
    lines = out.splitlines()
    assert lines[0].startswith("sim: reading prompt (")
    return lines[1:-1] if lines[-1] == "sim: done" else lines[1:]


def test_prose_is_read_and_steps_run(tmp_path: Path) -> None:
    script = textwrap.dedent("""\
        # Phase 1: a plan written for a human
        Please print the results when you are done.
        print the results carefully
        Say hello to the reviewer.
        exit status 1 means a failure
        frobnicate 3
        print 3 --text "hi there"
        say hello   world  # a comment
        """)
    done = run_sim(tmp_path, script)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "sim: reading prompt (8 lines)"
    assert lines[1:] == ["line 1: hi there", "line 2: hi there", "line 3: hi there",
                         "hello world", "sim: done"]
    assert "line 3 is not a valid step" in done.stderr
    assert "line 5 is not a valid step" in done.stderr


def test_print_default_text_and_rate(tmp_path: Path) -> None:
    done = run_sim(tmp_path, "print 2\nprint 3 --rate 200 --text=r\n")
    assert body(done.stdout) == ["line 1: simulated output", "line 2: simulated output",
                                 "line 1: r", "line 2: r", "line 3: r"]


def test_print_fast_is_complete(tmp_path: Path) -> None:
    done = run_sim(tmp_path, "print 20000\n")
    lines = body(done.stdout)
    assert len(lines) == 20000 and lines[-1] == "line 20000: simulated output"


def test_script_from_file_and_from_argument(tmp_path: Path) -> None:
    (tmp_path / "s.txt").write_text("say from file\n")
    assert body(run_sim(tmp_path, "", "--script", "s.txt").stdout) == ["from file"]
    assert body(run_sim(tmp_path, "", "--prompt", "say from arg").stdout) == ["from arg"]
    assert body(run_sim(tmp_path, "", "--prompt=say eq").stdout) == ["eq"]
    bad = run_sim(tmp_path, "", "--script", "missing.txt")
    assert bad.returncode == 2 and "cannot read the script" in bad.stderr
    assert run_sim(tmp_path, "", "--bogus").returncode == 2


def test_write_and_append_files(tmp_path: Path) -> None:
    done = run_sim(tmp_path, "write notes/a.txt first line\nappend notes/a.txt 'second  line'\n"
                             "write b.txt only\n")
    assert done.returncode == 0
    assert (tmp_path / "notes" / "a.txt").read_text() == "first line\nsecond  line\n"
    assert (tmp_path / "b.txt").read_text() == "only\n"
    assert body(done.stdout) == []


@pytest.mark.parametrize("path", ["/tmp/escape.txt", "../escape.txt", "sub/../../escape.txt",
                                  "link/escape.txt"])
def test_writes_outside_the_worktree_are_refused(tmp_path: Path, path: str) -> None:
    wt = tmp_path / "wt"
    wt.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (wt / "link").symlink_to(tmp_path / "elsewhere")
    done = run_sim(wt, f"say before\nwrite {path} nope\nsay after\n")
    assert done.returncode == 2
    assert "refusing to write outside the worktree" in done.stderr
    assert body(done.stdout) == ["before"]
    assert not (tmp_path / "escape.txt").exists()
    assert not (tmp_path / "elsewhere" / "escape.txt").exists()


def test_out_of_budget_and_config_error(tmp_path: Path) -> None:
    done = run_sim(tmp_path, "say working\nout-of-budget\nsay never\n")
    assert done.returncode == 1
    assert body(done.stdout) == ["working", OUT_OF_BUDGET]
    assert OUT_OF_BUDGET == "SIM-OUT-OF-BUDGET: You've hit your usage limit"
    custom = run_sim(tmp_path, "out-of-budget Rate limit reached, try later\n")
    assert body(custom.stdout) == ["Rate limit reached, try later"]
    done = run_sim(tmp_path, "config-error\n")
    assert done.returncode == 1
    assert body(done.stdout) == [CONFIG_ERROR]
    assert CONFIG_ERROR == "SIM-CONFIG-ERROR: Unknown Model, please check the model code"


def test_exit_env_and_fail_if_exists(tmp_path: Path) -> None:
    env = {**os.environ, "LANES_LANE": "backend-1"}
    done = run_sim(tmp_path, "env LANES_LANE\nenv NOT_SET_ANYWHERE\nexit 7\nsay never\n", env=env)
    assert done.returncode == 7
    assert body(done.stdout) == ["LANES_LANE=backend-1", "NOT_SET_ANYWHERE is not set"]
    assert run_sim(tmp_path, "fail-if-exists marker\nsay ok\n").returncode == 0
    (tmp_path / "marker").touch()
    marked = run_sim(tmp_path, f"fail-if-exists {tmp_path / 'marker'}\nsay ok\n")
    assert marked.returncode == 3 and body(marked.stdout) == []


def test_sleep_and_burn_print_nothing(tmp_path: Path) -> None:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = run_sim(tmp_path, "sleep 0.05\nburn 0.3\n")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0 and body(done.stdout) == []
    assert after.ru_utime - before.ru_utime > 0.1  # it burned CPU, not slept


def test_touch_rewrites_an_ignored_activity_file(tmp_path: Path) -> None:
    done = run_sim(tmp_path, "touch 0.25 --every 0.05\ntouch 0\n")
    assert done.returncode == 0 and body(done.stdout) == []
    first = (tmp_path / ".sim-activity" / "1.txt").read_text().split()
    assert int(first[0]) >= 2  # rewritten several times
    assert (tmp_path / ".sim-activity" / "2.txt").exists()
    assert (tmp_path / ".sim-activity" / ".gitignore").read_text() == "*\n"


@pytest.fixture()
def fake_ask(tmp_path: Path) -> Iterator[tuple[dict[str, str], Path]]:
    """A stand-in for `lanes-tui ask`: records its argv; exit code and stdout come from files."""
    helper = tmp_path / "fake_ask.py"
    calls = tmp_path / "ask-calls.jsonl"
    helper.write_text(textwrap.dedent(f"""\
        import json, pathlib, sys
        here = pathlib.Path({str(tmp_path)!r})
        with open(here / "ask-calls.jsonl", "a") as fh:
            fh.write(json.dumps(sys.argv[1:]) + "\\n")
        out = here / "ask-stdout"
        if out.exists():
            print(out.read_text())
        sys.exit(int((here / "ask-exit").read_text()))
        """))
    env = {**os.environ, "LANES_TUI_ASK_CMD": json.dumps([sys.executable, str(helper)])}
    yield env, calls


def _answer(tmp_path: Path, code: int, stdout: str | None = None) -> None:
    (tmp_path / "ask-exit").write_text(str(code))
    if stdout is not None:
        (tmp_path / "ask-stdout").write_text(stdout)


BRANCHES = textwrap.dedent("""\
    ask --default no --timeout 30 Deploy to staging?
    if yes write deploy.txt done
    if YES say deploying
    if no say skipped
    if none say nobody answered
    if no exit 5
    say end
    """)


def test_ask_yes_branches(tmp_path: Path, fake_ask: tuple[dict[str, str], Path]) -> None:
    env, calls = fake_ask
    _answer(tmp_path, 0)
    done = run_sim(tmp_path, BRANCHES, env=env)
    assert done.returncode == 0, done.stderr
    assert body(done.stdout) == ['sim: asked "Deploy to staging?" -> yes', "deploying", "end"]
    assert (tmp_path / "deploy.txt").read_text() == "done\n"
    assert json.loads(calls.read_text()) == ["Deploy to staging?", "--yes-no", "--default", "no",
                                             "--timeout", "30"]


def test_ask_no_branches(tmp_path: Path, fake_ask: tuple[dict[str, str], Path]) -> None:
    env, _calls = fake_ask
    _answer(tmp_path, 1)
    done = run_sim(tmp_path, BRANCHES, env=env)
    assert done.returncode == 5
    assert body(done.stdout) == ['sim: asked "Deploy to staging?" -> no', "skipped"]
    assert not (tmp_path / "deploy.txt").exists()


@pytest.mark.parametrize("code", [3, 4])
def test_ask_unanswered_is_none(tmp_path: Path, fake_ask: tuple[dict[str, str], Path], code: int) -> None:
    env, _calls = fake_ask
    _answer(tmp_path, code, stdout="q_123")
    done = run_sim(tmp_path, BRANCHES, env=env)
    assert body(done.stdout) == ['sim: asked "Deploy to staging?" -> none', "nobody answered", "end"]


def test_ask_choice_and_text(tmp_path: Path, fake_ask: tuple[dict[str, str], Path]) -> None:
    env, calls = fake_ask
    _answer(tmp_path, 0, stdout="  sqlite \n")
    script = ('ask --choice postgres,sqlite "Which database?"\nif sqlite say light\nif postgres say heavy\n'
              "ask --text Name for the flag?\n")
    done = run_sim(tmp_path, script, env=env)
    assert body(done.stdout) == ['sim: asked "Which database?" -> sqlite', "light",
                                 'sim: asked "Name for the flag?" -> sqlite']
    assert [json.loads(line) for line in calls.read_text().splitlines()] == [
        ["Which database?", "--choice", "postgres,sqlite"], ["Name for the flag?", "--text"]]


def test_ask_helper_failure_is_error(tmp_path: Path, fake_ask: tuple[dict[str, str], Path]) -> None:
    env, _calls = fake_ask
    _answer(tmp_path, 2)
    done = run_sim(tmp_path, "ask Go?\nif error exit 9\n", env=env)
    assert done.returncode == 9 and "exited with 2" in done.stderr
    missing = {**env, "LANES_TUI_ASK_CMD": json.dumps([str(tmp_path / "no-such-helper")])}
    done = run_sim(tmp_path, "ask Go?\n", env=missing)
    assert body(done.stdout) == ['sim: asked "Go?" -> error'] and "cannot run" in done.stderr


def test_if_before_any_ask_does_nothing(tmp_path: Path) -> None:
    assert body(run_sim(tmp_path, "if yes say a\nif none say b\nsay c\n").stdout) == ["c"]


def _wait_gone(proc: psutil.Process) -> None:
    """Wait for a process that is not our child: gone, or a zombie its new parent has yet to reap."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.01)
    raise AssertionError(f"process {proc.pid} did not die")


def test_spawn_setsid_child_leaves_the_session(tmp_path: Path) -> None:
    proc = subprocess.Popen([*SIM, "--prompt", "spawn-setsid 60\nsleep 60"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    child: psutil.Process | None = None
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("sim: reading prompt")
        line = proc.stdout.readline()
        assert line.startswith("sim: spawned setsid child ")
        pid = int(line.split()[-1])
        child = psutil.Process(pid)
        assert child.ppid() == proc.pid
        assert os.getsid(pid) == pid != os.getsid(proc.pid)
        assert os.getpgid(pid) != os.getpgid(proc.pid)
    finally:
        proc.kill()
        proc.communicate(timeout=10)
        if child is not None:
            child.kill()
            _wait_gone(child)


def test_sigterm_ends_it_promptly(tmp_path: Path) -> None:
    proc = subprocess.Popen([*SIM, "--prompt", "sleep 60"], cwd=tmp_path, stdout=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_IGN))
    try:
        assert proc.stdout is not None
        proc.stdout.readline()  # started: past the point where it resets the inherited "ignore"
        started = time.monotonic()
        proc.terminate()
        assert proc.wait(timeout=5) == -signal.SIGTERM
        assert time.monotonic() - started < 5
    finally:
        proc.kill()
        proc.communicate()


def test_closed_pipe_is_quiet(tmp_path: Path) -> None:
    proc = subprocess.Popen([*SIM, "--prompt", "print 1000 --rate 1000"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=10) == 141
    assert b"Traceback" not in err and b"BrokenPipe" not in err


def test_parse_is_strict_about_step_words() -> None:
    steps, notes = parse_script("print 3\nPrint 3\n  say indented\nif yes frobnicate\nprinting 3\n"
                                "sleep soon\ntouch 1 --every 0\nexit 1.5\n# say commented\n")
    assert [line for line, _action in steps] == [1, 3]
    assert len(notes) == 4  # if, sleep, touch, exit lines: step words with bad arguments


def test_import_is_light() -> None:
    code = ("import sys, lanes_tui.engine.sim.agent; "
            "print(' '.join(m for m in ('subprocess', 'json', 'shutil', 'asyncio', 'typing', 'argparse',"
            " 'textual', 'rich', 'dataclasses') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_usage_prints_aiders_meter_line_that_the_plain_channel_reads(tmp_path: Path) -> None:
    """Issue 17 item 6: `usage IN OUT COST` prints aider's own `Tokens: … Cost: …` line, so a sim lane
    (the `plain` channel) gets tokens and cost in meters.json: tokens add up, the cost is the session's."""
    from lanes_tui.engine.channels.plain import feed_aider_line
    from lanes_tui.engine.core.clock import FakeClock
    from lanes_tui.engine.state.meters import RunMeter

    proc = run_sim(tmp_path, "usage 12000 1200 0.04\nusage 345 67 $0.0015\nusage 1 two 3\n")
    assert proc.returncode == 0 and "line 3 is not a valid step" in proc.stderr
    lines = body(proc.stdout)
    assert lines == ["Tokens: 12000 sent, 1200 received. Cost: $0.04 message, $0.04 session.",
                     "Tokens: 345 sent, 67 received. Cost: $0.0015 message, $0.0415 session."]
    meter = RunMeter(tmp_path / "meters.json", FakeClock(), provider="sim", model="sim")
    assert all(feed_aider_line(meter, line) for line in lines)
    snap = meter.snapshot()
    assert snap["cost_usd"] == 0.0415, snap
    assert (snap["tokens"]["input"], snap["tokens"]["output"]) == (12345, 1267), snap
