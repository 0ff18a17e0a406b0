"""`[notify]`: a command run once per event that needs the lead, by whichever process sees it first.

The command here is a tiny Python script that appends one line per run to a file, so every assertion
counts real runs of a real process.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import psutil
import pytest

from lanes_tui.engine.config.notify import NOTIFY_EVENTS, NotifyConfig
from lanes_tui.engine.config.settings import parse_config
from lanes_tui.engine.core.errors import ConfigError
from lanes_tui.engine.lanes.notify import NOTIFY_ENV, announce, fill
from lanes_tui.engine.live.engine import Engine
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from tests.helpers import cli, run_lane, status, text_of, wait_for, wait_state, write_config

#: Appends `argv[2:]` joined by " | " as one line to argv[1].
APPEND = "import sys; open(sys.argv[1], 'a').write(' | '.join(sys.argv[2:]) + chr(10))"


def _command(log: Path, *fields: str) -> list[str]:
    return [sys.executable, "-c", APPEND, str(log), *fields]


def _notify_table(log: Path, *fields: str, extra: str = "") -> str:
    return f"[notify]\ncommand = {json.dumps(_command(log, *fields))}\n{extra}"


def _lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def _notified_events(repo: Path, lane: str) -> list[dict[str, object]]:
    path = repo / ".lanes/state/lanes" / lane / "events.jsonl"
    return [e for e in map(json.loads, path.read_text().splitlines()) if e.get("type") == "notified"]


# --- the config -------------------------------------------------------------------------------------

def test_notify_is_off_by_default_and_parses_its_table(tmp_path: Path) -> None:
    repo = tmp_path / "project"
    repo.mkdir()
    assert not parse_config("", path=None, repo=repo).notify.enabled
    config = parse_config('[notify]\ncommand = ["notify-send", "{title}", "{body}"]\nevents = ["stall", "lost"]\n'
                          "timeout_s = 3\n", path=None, repo=repo)
    assert config.notify == NotifyConfig(("notify-send", "{title}", "{body}"), ("stall", "lost"), 3.0)
    assert parse_config('[notify]\ncommand = ["x"]\n', path=None, repo=repo).notify.events == NOTIFY_EVENTS


@pytest.mark.parametrize(("text", "said"), [
    ('[notify]\ncommand = ["notify-send", "{titel}"]\n', "did you mean 'title'"),
    ('[notify]\ncommand = ["x"]\nevents = ["stalled"]\n', "did you mean 'stall'"),
    ('[notify]\ncommand = "notify-send hi"\n', "array of strings"),
    ('[notify]\ncomand = ["x"]\n', "did you mean 'command'"),
    ('[notify]\ncommand = ["x"]\ntimeout_s = 0\n', "greater than 0"),
])
def test_a_bad_notify_table_names_the_key_and_the_fix(tmp_path: Path, text: str, said: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text, path=tmp_path / "config.toml", repo=tmp_path)
    assert said in str(info.value)
    assert info.value.line is not None


def test_placeholders_are_filled_element_by_element_in_one_pass() -> None:
    values = {"title": "lanes-tui: a asks", "body": "say {lane}; rm -rf / \x00", "lane": "a-a1", "event": "question"}
    argv = fill(["notify-send", "--app={event}", "{title}", "{body}", "{other}", '{"json": 1}'], values)
    assert argv == ["notify-send", "--app=question", "lanes-tui: a asks", "say {lane}; rm -rf / ",
                    "{other}", '{"json": 1}']


# --- announcing -------------------------------------------------------------------------------------

def _record(store: LaneStore, lane: str, state: str, result: str | None = None) -> LaneRecord:
    record = LaneRecord(id=lane, slug=lane.rsplit("-", 1)[0], attempt=1, task_type="backend", prompt="p",
                        chain=["sim"], repo=str(store.paths.repo), worktree="/nowhere", branch=f"lane/{lane}",
                        base_sha="0" * 40, target_branch="main", state=state, state_reason=f"it is {state}",
                        result=result)
    store.create(record)
    return record


def test_each_event_is_announced_once_and_only_if_chosen(tmp_path: Path) -> None:
    store = LaneStore(StatePaths(tmp_path))
    store.paths.ensure()
    log = tmp_path / "notified.txt"
    notify = NotifyConfig(tuple(_command(log, "{event}", "{lane}", "{title}", "{body}")), ("stall", "cap"))
    stalled = _record(store, "quiet-a1", "stalled", "LANE-STALLED")
    assert [a.event for a in announce(store, notify, stalled)] == ["stall"]
    assert announce(store, notify, stalled) == []  # the marker is there: never twice
    assert announce(store, notify, _record(store, "done-a1", "ready", "OK")) == []  # not chosen
    assert announce(store, notify, _record(store, "running-a1", "running")) == []  # not an event
    capped = _record(store, "big-a1", "exited", "FAILED-RESOURCE")
    assert [a.marker for a in announce(store, notify, capped)] == ["big-a1-cap-1"]
    lines = wait_for(lambda: len(_lines(log)) == 2 and _lines(log))
    assert sorted(lines) == ["cap | big-a1 | lanes-tui: big-a1 hit a cap | it is exited",
                             "stall | quiet-a1 | lanes-tui: quiet-a1 stalled | it is stalled"]
    assert (store.lane_paths("quiet-a1").dir / "notified" / "quiet-a1-stall-1").exists()
    assert [e["event"] for e in _notified_events(tmp_path, "quiet-a1")] == ["stall"]


def test_the_notifier_gets_only_the_allowed_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret")
    monkeypatch.setenv("DISPLAY", ":7")
    store = LaneStore(StatePaths(tmp_path))
    store.paths.ensure()
    out = tmp_path / "env.json"
    dump = "import json, os, sys; open(sys.argv[1], 'w').write(json.dumps(dict(os.environ)))"
    notify = NotifyConfig((sys.executable, "-c", dump, str(out)))
    announce(store, notify, _record(store, "env-a1", "lost"))
    env = wait_for(lambda: out.exists() and out.read_text() and json.loads(out.read_text()))
    assert set(env) - {"LC_CTYPE"} <= set(NOTIFY_ENV)  # Python may set LC_CTYPE itself (PEP 538)
    assert env["DISPLAY"] == ":7" and "ANTHROPIC_API_KEY" not in env


def test_a_failing_or_hanging_notifier_is_logged_and_killed(tmp_path: Path) -> None:
    store = LaneStore(StatePaths(tmp_path))
    store.paths.ensure()
    pid_file = tmp_path / "hang.pid"
    hang = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)"
    announce(store, NotifyConfig((sys.executable, "-c", hang, str(pid_file)), timeout_s=0.5),
             _record(store, "hang-a1", "stalled"))
    announce(store, NotifyConfig(("/nonexistent/notifier", "{title}")), _record(store, "gone-a1", "lost"))
    announce(store, NotifyConfig((sys.executable, "-c", "raise SystemExit(3)")), _record(store, "bad-a1", "ready"))
    hung = store.lane_paths("hang-a1").dir / "notify.log"
    assert "still running after 0.5s: killed" in wait_for(lambda: hung.exists() and hung.read_text())
    assert not psutil.pid_exists(int(pid_file.read_text())) or \
        psutil.Process(int(pid_file.read_text())).status() == psutil.STATUS_ZOMBIE
    gone = store.lane_paths("gone-a1").dir / "notify.log"
    assert "cannot run '/nonexistent/notifier'" in wait_for(lambda: gone.exists() and gone.read_text())
    bad = store.lane_paths("bad-a1").dir / "notify.log"
    assert "exited 3" in wait_for(lambda: bad.exists() and bad.read_text())


# --- end to end: no dashboard, then the dashboard --------------------------------------------------

async def _dashboard_starts_and_watches(repo: Path) -> None:
    """The dashboard's engine in-process: its start (reconcile, first scan) and two reconcile ticks."""
    engine = Engine(repo, poll_s=0.05, reconcile_every_s=0.05)
    await engine.start()
    try:
        ticks = 0
        while ticks < 3:  # the watch loop reconciles on every tick at this period
            await asyncio.sleep(0.1)
            ticks += 1
    finally:
        await engine.aclose()


async def test_a_stall_is_announced_once_without_a_dashboard_and_not_again_when_it_starts(repo: Path) -> None:
    log = repo.parent / "notified.txt"
    write_config(repo, idle_timeout_s=1.0, sample_s=0.2,
                 extra=_notify_table(log, "{event}", "{lane}", "{title}"))
    lane = await asyncio.to_thread(run_lane, repo, "say hello\nsleep 600\n", lane_id="quiet")
    await asyncio.to_thread(wait_state, repo, lane)  # settled, supervisor gone: no process is watching now
    assert (await asyncio.to_thread(status, repo, lane))["state"] == "stalled"
    lines = await asyncio.to_thread(wait_for, lambda: _lines(log))
    assert lines == [f"stall | {lane} | lanes-tui: {lane} stalled"]
    await _dashboard_starts_and_watches(repo)
    await asyncio.to_thread(cli, repo, "status", check=True)  # a reconcile from the command line too
    assert _lines(log) == lines
    assert [e["event"] for e in _notified_events(repo, lane)] == ["stall"]


async def test_a_lost_lane_is_announced_once_by_the_first_reconcile(repo: Path) -> None:
    log = repo.parent / "notified.txt"
    write_config(repo, sample_s=0.2, extra=_notify_table(log, "{event}", "{lane}", "{body}"))
    lane = await asyncio.to_thread(run_lane, repo, "say up\nsleep 600\n", lane_id="orphan")
    lane_dir = repo / ".lanes/state/lanes" / lane
    await asyncio.to_thread(wait_for, lambda: "up" in text_of(lane_dir / "output.log"))
    supervisor = json.loads((lane_dir / "supervisor.json").read_text())["pid"]
    agent = json.loads((lane_dir / "lane.json").read_text())["agent_pid"]
    os.kill(supervisor, signal.SIGKILL)
    await asyncio.to_thread(psutil.Process(supervisor).wait, 10)
    try:
        # The command line and the dashboard reconcile at once; one of them announces.
        both = asyncio.gather(asyncio.to_thread(cli, repo, "status", check=True), _dashboard_starts_and_watches(repo))
        await both
        await _dashboard_starts_and_watches(repo)
        lines = await asyncio.to_thread(wait_for, lambda: _lines(log))
        assert lines == [f"lost | {lane} | its supervisor is gone and left no receipt"]
        assert [e["event"] for e in _notified_events(repo, lane)] == ["lost"]
    finally:
        os.killpg(agent, signal.SIGKILL)


def test_a_question_is_announced_once_by_the_supervisor(repo: Path) -> None:
    log = repo.parent / "notified.txt"
    write_config(repo, sample_s=0.1, extra=_notify_table(log, "{event}", "{body}"))
    lane = run_lane(repo, "ask --yes-no Deploy to staging?\nwrite deployed.txt done\n", lane_id="asker")
    wait_state(repo, lane, "waiting", timeout=30)
    assert wait_for(lambda: _lines(log)) == ["question | Deploy to staging?"]
    question = json.loads(cli(repo, "inbox", "--json", check=True).stdout)[0]
    cli(repo, "answer", question["id"], "yes", check=True)
    wait_state(repo, lane)
    lines = wait_for(lambda: len(_lines(log)) == 2 and _lines(log))
    assert lines[1].startswith("ready | ")
