"""`lanes-tui --web`: the dashboard served to a browser by textual-serve (the `[web]` extra).

The end-to-end test runs the real server on a real repository in its own process group, fetches the
page over HTTP, opens the websocket the page's script would, and presses `?`: the help appears in the
screen the dashboard sends back. Every wait is on what the server prints or sends, with a deadline that
only guards a hang. The repository's folder name is hostile (`$(…)`, quotes, a space): textual-serve
runs its command through a shell, so the name must arrive quoted.
"""

from __future__ import annotations

import asyncio
import html
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import psutil
import pytest

from lanes_tui.app.cli.main import main

aiohttp = pytest.importorskip("aiohttp", reason="the [web] extra is not installed: pip install -e '.[web]'")
pytest.importorskip("textual_serve", reason="the [web] extra is not installed: pip install -e '.[web]'")

#: A folder name a shell would run something for, unquoted.
HOSTILE = "web $(touch pwned) 'q\" ;x"
ANSI = re.compile(r"\x1b(\[[0-9;?<=>]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Served:
    """`lanes-tui --web` in a process group of its own; its output read by a thread as it comes."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        self.proc = subprocess.Popen([sys.executable, "-m", "lanes_tui", *argv], cwd=cwd, env=env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     start_new_session=True)
        self.out: list[str] = []
        self.err: list[str] = []
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.readers = [threading.Thread(target=self._drain, args=(stream, into), daemon=True)
                        for stream, into in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))]
        for reader in self.readers:
            reader.start()

    @staticmethod
    def _drain(stream: IO[bytes], into: list[str]) -> None:
        for line in stream:
            into.append(line.decode("utf-8", "replace"))

    def printed(self) -> str:
        return "".join(self.out) + "".join(self.err)

    def dashboards(self) -> list[psutil.Process]:
        """The dashboards the server started for its websockets (its children, shell and all)."""
        try:
            return psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def stop(self) -> int:
        """SIGTERM to the group, then SIGKILL when it has not gone within its deadline; the exit code."""
        for sig, deadline in ((signal.SIGTERM, 60.0), (signal.SIGKILL, 30.0)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(deadline)
                break
            except subprocess.TimeoutExpired:
                continue
        code = self.proc.wait(30)
        for reader in self.readers:
            reader.join(30)
        return code

    def group_gone(self) -> bool:
        try:
            os.killpg(self.proc.pid, 0)
        except ProcessLookupError:
            return True
        return False


@pytest.fixture()
def hostile_repo(repo: Path) -> Path:
    """The `repo` fixture's repository, moved to a folder whose name a shell would run a command for."""
    moved = repo.parent / HOSTILE
    repo.rename(moved)
    return moved


@pytest.fixture()
def served() -> Iterator[list[Served]]:
    started: list[Served] = []
    yield started
    for server in started:
        if server.proc.poll() is None:
            server.stop()


def wait_until(predicate: object, what: str, timeout: float = 120.0) -> None:
    """Poll a condition on the real server (what it printed, its children) until true; the bound guards a hang."""
    end = time.monotonic() + timeout
    while not (callable(predicate) and predicate()):
        if time.monotonic() > end:
            raise AssertionError(f"{what}: not within {timeout}s")
        time.sleep(0.05)


async def screen_until(ws: aiohttp.ClientWebSocketResponse, seen: list[str], marker: str,
                       timeout: float = 120.0) -> str:
    """Read what the dashboard draws (binary frames: terminal output) until `marker` shows; all of it, plain."""
    end = time.monotonic() + timeout
    while marker not in ANSI.sub("", "".join(seen)):
        left = end - time.monotonic()
        if left <= 0:
            raise AssertionError(f"{marker!r} never drawn; last: {ANSI.sub('', ''.join(seen))[-1500:]!r}")
        message = await ws.receive(timeout=left)
        if message.type == aiohttp.WSMsgType.BINARY:
            seen.append(message.data.decode("utf-8", "replace"))
        elif message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
            raise AssertionError(f"the websocket closed before {marker!r}: {ANSI.sub('', ''.join(seen))[-1500:]!r}")
    return ANSI.sub("", "".join(seen))


@pytest.mark.slow
async def test_web_serves_the_page_and_the_dashboard_answers_a_key(hostile_repo: Path, tmp_path: Path,
                                                                    served: list[Served]) -> None:
    port = free_port()
    server = Served(["--repo", str(hostile_repo), "--web", "--port", str(port)], cwd=tmp_path)
    served.append(server)
    base = f"http://127.0.0.1:{port}"
    wait_until(lambda: f"{base}/" in server.printed() or server.proc.poll() is not None, "the serving line")
    printed = server.printed()
    assert f"serving the dashboard of {hostile_repo} at {base}/" in printed, printed
    assert "localhost only" in printed

    async with aiohttp.ClientSession() as session:
        page = ""
        end = time.monotonic() + 120
        while not page:  # printed just before it binds: poll until it answers
            try:
                async with session.get(f"{base}/") as response:
                    assert response.status == 200
                    page = await response.text()
            except aiohttp.ClientConnectionError:
                assert time.monotonic() < end and server.proc.poll() is None, server.printed()
                await asyncio.sleep(0.05)
        assert f"ws://127.0.0.1:{port}/ws" in page  # the page points its script at the websocket
        assert f"lanes-tui — {HOSTILE}" in html.unescape(page)  # the tab's title: the repository's name

        # A page from elsewhere (or a name rebound to 127.0.0.1) may not drive the dashboard.
        async with session.get(f"{base}/", headers={"Host": f"evil.example:{port}"}) as response:
            assert response.status == 403
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await session.ws_connect(f"ws://127.0.0.1:{port}/ws", origin="http://evil.example")
        assert refused.value.status == 403
        assert server.dashboards() == []  # refused before any dashboard was started

        ws = await session.ws_connect(f"ws://127.0.0.1:{port}/ws?width=160&height=40", origin=base)
        seen: list[str] = []
        await screen_until(ws, seen, "Lanes")
        before = await screen_until(ws, seen, HOSTILE[:12])  # the subtitle: the same repository, quoted intact
        assert "escape / q / ? close" not in before
        seen.clear()
        await ws.send_str(json.dumps(["stdin", "?"]))
        await screen_until(ws, seen, "escape / q / ? close")  # the help dialog's hint
        assert len(server.dashboards()) >= 1
        await ws.close()  # the tab closes: textual-serve tells its dashboard to quit

    wait_until(lambda: server.dashboards() == [], "the dashboard quitting after its tab closed")
    assert server.stop() == 0, server.printed()
    assert server.group_gone()
    assert not (tmp_path / "pwned").exists() and not (hostile_repo.parent / "pwned").exists()
    assert "Traceback" not in server.printed()


@pytest.mark.slow
async def test_stopping_the_server_quits_an_open_tab(repo: Path, tmp_path: Path, served: list[Served]) -> None:
    """SIGTERM to the server alone (as a service manager sends it) with a tab open: the server tells that
    tab's dashboard to quit, waits for it, and exits 0; nothing of the group is left."""
    port = free_port()
    server = Served(["--repo", str(repo), "--web", "--port", str(port)], cwd=tmp_path)
    served.append(server)
    base = f"http://127.0.0.1:{port}"
    wait_until(lambda: f"{base}/" in server.printed() or server.proc.poll() is not None, "the serving line")
    async with aiohttp.ClientSession() as session:
        ws = None
        end = time.monotonic() + 120
        while ws is None:
            try:
                ws = await session.ws_connect(f"{base}/ws?width=120&height=32", origin=base)
            except aiohttp.ClientConnectionError:
                assert time.monotonic() < end and server.proc.poll() is None, server.printed()
                await asyncio.sleep(0.05)
        await screen_until(ws, [], "Lanes")
        dashboards = server.dashboards()
        assert dashboards
        os.kill(server.proc.pid, signal.SIGTERM)  # the server only: its dashboards are not signalled
        ends = (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR)
        while (await ws.receive(timeout=120)).type not in ends:  # read on, as a browser does, until it closes
            pass
        await ws.close()
        code = await asyncio.to_thread(server.proc.wait, 120)
    assert code == 0, server.printed()
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in dashboards)
    assert server.stop() == 0
    assert server.group_gone()
    assert "Traceback" not in server.printed()


def test_without_the_extra_one_line_names_the_install(repo: Path) -> None:
    """textual-serve hidden from the import system: one line naming `pip install -e '.[web]'`, exit 2."""
    code = ("import sys; sys.modules['textual_serve'] = None; from lanes_tui.app.cli.main import main; "
            f"sys.exit(main(['--repo', {str(repo)!r}, '--web', '--port', '8']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "textual-serve" in lines[0] and "pip install -e '.[web]'" in lines[0]


def test_the_command_is_quoted_and_the_bind_is_local_unless_told(
        hostile_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from lanes_tui.app.cli import web_server

    calls: list[dict[str, object]] = []
    monkeypatch.setattr(web_server, "serve", lambda command, **kw: calls.append({"command": command, **kw}))
    port = free_port()
    assert main(["--repo", str(hostile_repo), "--web", "--port", str(port)]) == 0
    out, err = capsys.readouterr()
    assert calls[0]["host"] == "127.0.0.1" and calls[0]["port"] == port and calls[0]["local"] is True
    command = str(calls[0]["command"])
    assert shlex.split(command) == [sys.executable, "-m", "lanes_tui", "--repo", str(hostile_repo)]
    assert f"http://127.0.0.1:{port}/" in out and "localhost only" in out and err == ""

    assert main(["--repo", str(hostile_repo), "--web", "--host", "0.0.0.0", "--port", str(port)]) == 0
    out, err = capsys.readouterr()
    assert calls[1]["host"] == "0.0.0.0" and calls[1]["local"] is False
    assert "WARNING" in err and "not localhost" in err and "no password" in err


def test_bad_web_options_are_one_line(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["--repo", str(repo), "--web", "--port", str(port)]) == 2
        taken_line = f"lanes-tui: port {port} on 127.0.0.1 is already in use — choose another with --port N"
        assert capsys.readouterr().err.strip() == taken_line
    assert main(["--repo", str(repo), "--port", "8080"]) == 2
    assert "--host and --port go with --web" in capsys.readouterr().err
    assert main(["--repo", str(repo), "--web", "status"]) == 2
    assert "takes no command" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:
        main(["--web", "--port", "0"])
    assert usage.value.code == 2
    assert "not a port number" in capsys.readouterr().err
    assert main(["--repo", str(repo), "--web", "--host", "192.0.2.1", "--port", "8"]) == 2
    assert "is not an address of this machine" in capsys.readouterr().err


def test_local_hosts() -> None:
    from lanes_tui.app.cli import web_server as web

    assert all(web.is_local(h) for h in ("127.0.0.1", "localhost", "::1", "[::1]", "127.1.2.3", "LOCALHOST"))
    assert not any(web.is_local(h) for h in ("0.0.0.0", "::", "192.168.1.2", "example.com", ""))
