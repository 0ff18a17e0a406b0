"""`lanes-tui --web [--host H] [--port N]`: the dashboard in a browser, served by textual-serve.

textual-serve (the optional `[web]` extra) is a small web server: each browser tab that opens its page
gets a websocket, and for each websocket it starts the dashboard as a process of its own, driven by
Textual's web driver, and pipes keys in and the screen out. Nothing in the dashboard changes for it.

Why the pieces are as they are:
- textual-serve takes the command as one string and runs it through a shell
  (`asyncio.create_subprocess_shell`). The dashboard's argv is built as a list here and joined with
  `shlex.join`, so the repository path (any bytes a folder name may hold) is quoted, never interpreted.
  The argv runs this interpreter (`sys.executable -m lanes_tui`), not whatever `lanes-tui` is on PATH.
- The repository and its config are checked here, once, before anything listens: a bad config is the
  same one-line refusal the dashboard gives, not a blank page per tab.
- Localhost unless told otherwise: the page drives the lead's dashboard (accept, abandon, answer), with
  no password. `web_server` also refuses requests whose Host or Origin is foreign, so a web page the
  lead visits cannot drive a dashboard served on localhost (docs/dashboard.md "In a browser").
This module imports only the standard library; textual-serve (aiohttp, jinja2) loads in `serve_web`.
"""

from __future__ import annotations

import argparse
import errno
import shlex
import socket
import sys
from pathlib import Path

from lanes_tui.engine import LanesError, find_repo_root, load_config

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
#: The top-level modules of the `[web]` extra: one missing is "install the extra", anything else a bug.
WEB_MODULES = frozenset({"textual_serve", "aiohttp", "aiohttp_jinja2", "jinja2"})
INSTALL_FIX = "install the web extra in lanes-tui's checkout: pip install -e '.[web]'"


def url_of(host: str, port: int) -> str:
    """The address a browser opens (an IPv6 literal in brackets); a wildcard address names this machine."""
    if host in ("0.0.0.0", "::", ""):  # noqa: S104 - naming the wildcard, not binding to it
        host = socket.gethostname()
    name = f"[{host}]" if ":" in host else host
    return f"http://{name}:{port}/"


def dashboard_argv(args: argparse.Namespace, root: Path | None) -> list[str]:
    """The dashboard's own command line, as each tab runs it: the same repository (or a demo of its own)."""
    argv = [sys.executable, "-m", "lanes_tui"]
    if args.debug:
        argv.append("--debug")
    if root is not None:
        return [*argv, "--repo", str(root)]
    argv.append("--demo")  # each tab builds its own throw-away demo, removed when that tab's dashboard quits
    if args.keep:
        argv.append("--keep")
    if args.demo_dir is not None:
        argv += ["--demo-dir", str(args.demo_dir.resolve())]
    return argv


def serve_web(args: argparse.Namespace) -> int:
    """Serve the dashboard until Ctrl+C (or SIGTERM); every refusal is one LanesError before it listens."""
    if not args.web:
        raise LanesError("--host and --port go with --web", "add --web, e.g. lanes-tui --web --port 8080")
    if args.command is not None:
        raise LanesError(f"--web serves the dashboard; it takes no command (got {args.command!r})",
                         "run lanes-tui --web alone, and the command in another shell")
    try:
        from lanes_tui.app.cli import web_server
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in WEB_MODULES:
            raise
        raise LanesError(f"lanes-tui --web needs textual-serve, which is not installed ({exc.name} is missing)",
                         INSTALL_FIX) from None
    host = DEFAULT_HOST if args.host is None else args.host.strip()
    if not host:
        raise LanesError("--host is empty", "give an address to listen on, e.g. --host 127.0.0.1 (the default)")
    port = DEFAULT_PORT if args.port is None else int(args.port)
    root = None
    if not args.demo:
        root = find_repo_root(args.repo or Path.cwd())
        load_config(root)  # a bad config is refused here, once, not in every tab
    _check_free(host, port)
    command = shlex.join(dashboard_argv(args, root))
    local = web_server.is_local(host)
    what = f"the dashboard of {root}" if root is not None else "the demo (one throw-away repository per tab)"
    print(f"lanes-tui: serving {what} at {url_of(host, port)}", flush=True)
    if local:
        print(f"lanes-tui: bound to {host}, localhost only: open it in a browser on this machine, or from another "
              f"through an SSH tunnel (ssh -L {port}:127.0.0.1:{port} THIS-HOST). Ctrl+C stops it.", flush=True)
    else:
        print(f"lanes-tui: WARNING: bound to {host}, not localhost: anyone who can reach port {port} here drives "
              "your dashboard (accept, abandon, answer) with no password. Prefer the default and an SSH tunnel. "
              "Ctrl+C stops it.", file=sys.stderr, flush=True)
    title = f"lanes-tui — {root.name}" if root is not None else "lanes-tui — demo"
    try:
        web_server.serve(command, host=host, port=port, title=title, local=local)
    except OSError as exc:  # the port was taken between the check and the bind
        raise _listen_error(host, port, exc) from None
    return 0


def _check_free(host: str, port: int) -> None:
    """Bind once and let go: a taken port or an unknown address is one line before anything is printed."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise LanesError(f"--host {host!r} is not an address of this machine ({exc.strerror})",
                         "give an IP address or a name that resolves, e.g. --host 127.0.0.1") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds: TIME_WAIT is no clash
        try:
            probe.bind(address)
        except OSError as exc:
            raise _listen_error(host, port, exc) from None


def _listen_error(host: str, port: int, exc: OSError) -> LanesError:
    if exc.errno == errno.EADDRINUSE:
        return LanesError(f"port {port} on {host} is already in use", "choose another with --port N")
    if exc.errno == errno.EACCES:
        return LanesError(f"not allowed to listen on port {port}", "choose a port above 1023 with --port N")
    if exc.errno == errno.EADDRNOTAVAIL:
        return LanesError(f"--host {host!r} is not an address of this machine",
                          "give one of its addresses, or 127.0.0.1 (the default)")
    return LanesError(f"cannot listen on {host}:{port}: {exc.strerror or exc}", "choose another --host or --port")
