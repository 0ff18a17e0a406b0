"""The fork server (`supervisor.fork_server`, `lanes.fork_client`): lanes' supervisors forked from one warm
interpreter per repository, so they share its pages (B10, issue 15), and the ordinary start whenever it
cannot serve.

Real lanes through the real command line and the engine's own launcher; the server's own rules (a
refused request, leaving when idle, a race between two launchers) against a real server process or a
`ForkServer` on a socket of the test's own.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path
from typing import Any

import psutil
import pytest

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.peer import peer_uid
from lanes_tui.engine.lanes import fork_client
from lanes_tui.engine.lanes.env import supervisor_environment
from lanes_tui.engine.lanes.launcher import LaunchRequest, launch_lane, spawn_supervisor
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.state.store import LaneStore
from lanes_tui.engine.supervisor import fork_server
from lanes_tui.engine.supervisor.fork_server import ForkServer
from tests.conftest import git
from tests.helpers import cli, output, wait_for, wait_state, write_config
from tests.test_secrets import SECRETS, lead_env, start


def _supervisor(repo: Path, lane: str) -> psutil.Process:
    path = repo / ".lanes/state/lanes" / lane / "supervisor.json"
    return psutil.Process(wait_for(lambda: path.exists() and json.loads(path.read_text())["pid"]))


def _servers(repo: Path) -> list[psutil.Process]:
    """The repository's fork servers: processes with its command line whose parent has another one.

    Supervisors forked from a server have its command line too, and so, between a fork and its exec,
    does any child a supervisor starts; the server's own parent is init (or, for a moment, the
    launcher's first fork of it, which also has the command line: `_live_servers` is polled)."""
    def is_server_cmdline(proc: psutil.Process) -> bool:
        cmdline = proc.cmdline()
        return "lanes_tui.engine.supervisor.fork_server" in cmdline and str(repo) in cmdline

    found = []
    for proc in psutil.process_iter():
        try:
            if is_server_cmdline(proc) and not ((parent := proc.parent()) and is_server_cmdline(parent)):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _live_servers(repo: Path) -> list[psutil.Process]:
    live = []
    for proc in _servers(repo):
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
                live.append(proc)
        except psutil.NoSuchProcess:
            continue
    return live


def _environ_names(pid: int) -> set[str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return {item.split(b"=", 1)[0].decode() for item in raw if b"=" in item}


def test_supervisors_of_a_repository_are_forked_by_one_server_that_holds_no_secret(repo: Path) -> None:
    path = write_config(repo)
    path.write_text(path.read_text().replace("[providers.sim]\n", '[providers.sim]\nenv = ["OPENAI_API_KEY"]\n'))
    env = lead_env()
    first = start(repo, "env OPENAI_API_KEY\nsleep 30\n", "forked-one", env)
    second = start(repo, "sleep 30\n", "forked-two", env)
    try:
        one, two = _supervisor(repo, first), _supervisor(repo, second)
        server = psutil.Process(one.ppid())
        assert two.ppid() == server.pid and _servers(repo) == [server]
        cmdline = server.cmdline()  # started early by the first launch (`fork_client.prestart`): a bounded wait
        assert cmdline[cmdline.index("-m") + 1:] == ["lanes_tui.engine.supervisor.fork_server", "--repo", str(repo),
                                                     "--first-request-s", f"{fork_client.PRESTART_FIRST_REQUEST_S:g}"]
        # The agent got the key its provider may have; no supervisor's /proc/PID/environ shows it, nor
        # any other secret of the lead (it is the server's, started with no provider's variables).
        wait_for(lambda: "OPENAI_API_KEY=" in output(repo, first))
        assert f"OPENAI_API_KEY={SECRETS['OPENAI_API_KEY']}" in output(repo, first)
        for pid in (one.pid, two.pid, server.pid):
            names = _environ_names(pid)
            assert not names & set(SECRETS), names & set(SECRETS)
            assert {"HOME", "PATH"} <= names
    finally:
        for lane in (first, second):
            assert cli(repo, "abandon", lane, "--force").returncode == 0
    # With no supervisor left, the server leaves by itself (a quarter of a second after the last).
    wait_for(lambda: not _live_servers(repo), timeout=15)


def test_with_the_fork_server_off_a_supervisor_is_a_fresh_interpreter(repo: Path) -> None:
    write_config(repo)
    lane = start(repo, "sleep 30\n", "fresh", {**os.environ, fork_client.FORK_SERVER_ENV: "0"})
    try:
        supervisor = _supervisor(repo, lane)
        assert "lanes_tui.engine.supervisor" in supervisor.cmdline() and "--lane" in supervisor.cmdline()
        assert not _servers(repo)
    finally:
        assert cli(repo, "abandon", lane, "--force").returncode == 0


def test_a_lane_runs_to_its_end_under_a_forked_supervisor(repo: Path) -> None:
    write_config(repo, gates='commands = ["{python} -c pass"]')
    lane = start(repo, "print 3\nwrite done.txt ok\n", "whole", dict(os.environ))
    assert wait_state(repo, lane).startswith(f"{lane} ready")
    log = (repo / ".lanes/state/lanes" / lane / "supervisor.log").read_text()
    assert "Traceback" not in log


def test_a_request_for_a_lane_that_does_not_exist_is_refused_before_any_fork(repo: Path) -> None:
    write_config(repo)
    (repo / ".lanes/state/lanes").mkdir(parents=True)
    server_env = supervisor_environment(os.environ, [])
    with pytest.raises(fork_client.Unavailable, match="no lane 'ghost-a1'"):
        fork_client.start_supervisor(repo, "ghost-a1", {"PATH": os.environ["PATH"]}, server_env, 10.0)
    with pytest.raises(fork_client.Unavailable, match=r"invalid lane id '\.\./escape'"):
        fork_client.start_supervisor(repo, "../escape", {}, server_env, 10.0)
    servers = _servers(repo)
    assert len(servers) == 1  # refused requests started nothing; it leaves after its linger
    wait_for(lambda: not _live_servers(repo), timeout=15)


def test_two_launchers_starting_a_server_at_once_get_one(repo: Path) -> None:
    write_config(repo)
    server_env = supervisor_environment(os.environ, [])
    results: list[bool] = []
    threads = [threading.Thread(target=lambda: results.append(fork_client._start_server(repo, server_env)))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [True, True]
    wait_for(lambda: len(_live_servers(repo)) == 1)  # the one that lost the race says so and leaves
    fork_client._connect(repo).close()  # served (a request that never came): it leaves after its linger
    wait_for(lambda: not _live_servers(repo), timeout=15)


def test_an_idle_server_turns_away_what_is_still_queued_as_it_leaves(tmp_path: Path) -> None:
    """A launcher whose request reaches a leaving server hears so and starts its supervisor itself."""
    name = b"\0lanes-tui-test/" + os.urandom(8).hex().encode()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(name)
    listener.listen(4)
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(name)  # queued: the server has not accepted it
    client.sendall(b'{"lane": "late-a1", "env": {}}\n')
    # Nothing to wait for: it leaves at once, before it would have accepted the queued request.
    assert ForkServer(tmp_path, listener, linger_s=0.0, first_request_s=0.0).serve() == 0
    with client:
        reply = json.loads(client.makefile("rb").readline())
    assert reply == {"ok": False, "refused": True, "error": "the fork server is leaving"}
    assert listener.fileno() == -1


def test_peer_uid_is_the_other_ends_user() -> None:
    left, right = socket.socketpair()
    with left, right:
        assert peer_uid(left) == os.getuid()


def test_a_forked_supervisor_that_cannot_start_is_an_error_naming_its_log(repo: Path) -> None:
    """Its `supervisor.json` cannot be written (a folder is in the way): the supervisor exits before it
    says it is up, and the launch fails with the log's last line and where the log is, as without a
    fork server; the launcher does not try a second start."""
    write_config(repo)
    store = LaneStore(StatePaths(repo))
    StatePaths(repo).ensure()
    store.create(LaneRecord(id="blocked-a1", slug="blocked", attempt=1, task_type="backend", prompt="p",
                            chain=["sim"], repo=str(repo), worktree=str(repo.parent / "nowhere"),
                            branch="lane/blocked-a1", base_sha="0" * 40, target_branch="main", state="queued",
                            state_reason="waiting for its supervisor"))
    store.lane_paths("blocked-a1").supervisor.mkdir()
    with pytest.raises(LanesError) as caught:
        spawn_supervisor(repo, "blocked-a1", load_config(repo))
    assert "the supervisor of blocked-a1 failed to start" in caught.value.what
    assert "supervisor.json" in caught.value.what or "Directory" in caught.value.what, caught.value.what
    assert caught.value.fix == f"see {store.lane_paths('blocked-a1').supervisor_log}"
    assert "Traceback" in store.lane_paths("blocked-a1").supervisor_log.read_text()
    wait_for(lambda: not _live_servers(repo), timeout=15)


def test_a_cold_launch_starts_its_server_before_its_git_work_and_asks_that_one(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`fork_client.prestart`: a cold server imports the supervisor while the launcher runs git (B5), and the
    launch's request goes to that server; a second launch beside the running lane finds it warm."""
    write_config(repo)
    spawned: list[dict[str, object]] = []
    real = fork_client._spawn_server

    def counted(*args: Any, **kwargs: Any) -> Any:
        spawned.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(fork_client, "_spawn_server", counted)
    config = load_config(repo)
    first = launch_lane(repo, config, LaunchRequest(prompt="sleep 30\n", slug="early"))
    assert spawned == [{"first_request_s": fork_client.PRESTART_FIRST_REQUEST_S}]  # one server, started early
    second = launch_lane(repo, config, LaunchRequest(prompt="say warm\n", slug="warm"))
    assert len(spawned) == 1  # the warm one served the second launch: none was started for it
    assert len(_live_servers(repo)) == 1
    assert _supervisor(repo, first.id).is_running()
    assert wait_state(repo, second.id).startswith(f"{second.id} ")
    assert cli(repo, "stop", first.id).returncode == 0
    wait_for(lambda: not _live_servers(repo), timeout=15)


def test_a_launch_that_fails_after_starting_a_server_early_lets_it_go(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`fork_client.release`: the early server leaves once idle, not after waiting for a request that will
    not come (set to the longest wait here, so only the release can make it leave within the bound)."""
    write_config(repo)
    monkeypatch.setattr(fork_client, "PRESTART_FIRST_REQUEST_S", fork_server.FIRST_REQUEST_S)
    git(repo, "branch", "lane/taken-a1")  # `create_worktree` refuses a branch that is already there
    with pytest.raises(LanesError):
        launch_lane(repo, load_config(repo), LaunchRequest(prompt="say never\n", slug="taken"))
    wait_for(lambda: not _live_servers(repo), timeout=fork_server.FIRST_REQUEST_S / 2)


@pytest.mark.parametrize("extra", [["--first-request-s", "nope"], ["--first-request-s", "0"],
                                   ["--first-request-s", "3600"], ["--linger", "1"]])
def test_the_servers_command_line_is_the_repository_and_a_bounded_first_wait(tmp_path: Path,
                                                                             extra: list[str]) -> None:
    assert fork_server.main(["--repo", str(tmp_path), *extra]) == 2  # refused before anything starts
