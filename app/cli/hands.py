"""The lead's hands on a running lane: `attach`, `send`, `peek`, `comment` (docs/dashboard.md#attach-send-peek).

They talk to the lane's supervisor through its control socket (`engine.supervisor.control`).
`peek` without `--screen` reads the lane's output.log and works on any lane, running or not.
`send A B C -- TEXT` and `send --all-running TEXT` send one message to several lanes; `comment ID
FILE:LINE TEXT` comments on the hunk of the lane's diff holding that line (`engine.decisions.comment`).
Exit codes: 0 done; 1 the lane refused (`send` mid-redraw, to a closed input, to a plain lane), or with
several lanes, at least one was skipped; 2 no such lane, the lane is not running, or a usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from lanes_tui.app.cli import args as cli_args
from lanes_tui.app.cli.lanes import repo_of
from lanes_tui.engine import (
    Config,
    LanesError,
    StatePaths,
    load_config,
    peek_output,
    peek_screen,
    send_to_lane,
    validate_lane_id,
)

#: The supervisor refused (it is running, but cannot take this now): exit 1, not 2.
REFUSED = 1


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "attach", help="join a running lane: its live terminal, or its conversation",
        description="A terminal (pty) lane: the agent's screen, full size, keys go to the agent until the "
                    "detach key (ctrl+] by default); the lane runs on. The first viewer holds the keyboard, "
                    "others watch. A claude stream-json lane: the conversation so far and each new turn; a "
                    "line you type is sent as a user message. Exit 0 on detach; 2: no such lane or not running.",
        epilog="example: lanes-tui attach fix-login-a1 --detach-key ctrl+g")
    p.add_argument("lane_id", metavar="ID", help="the lane")
    p.add_argument("--detach-key", default=None, metavar="KEY",
                   help='ctrl+] (default), ctrl+LETTER, ctrl+\\, ...; or [keys] "attach.detach" in the config')
    p.set_defaults(func=cmd_attach)

    p = sub.add_parser(
        "send", help="send one message to a running lane, or to several",
        usage="lanes-tui send ID TEXT | ID ID ... -- TEXT | --all-running TEXT [--json]",
        description="A claude stream-json lane gets a user message; a terminal lane gets the text and Enter, "
                    "once its screen is still (refused while it redraws, or while a prompt of it waits in the "
                    "inbox). Recorded in the lane's events. Several lanes (ID ID ... -- TEXT, or --all-running): "
                    "each that cannot take it is listed as skipped, with why. Exit 0 delivered (to every lane); "
                    "1 the lane refused (say why), or some lane was skipped; 2 no such lane or not running (one "
                    "lane), or a usage error.",
        epilog='examples: lanes-tui send fix-login-a1 "also update the changelog"  ·  lanes-tui send fix-a1 '
               'docs-a1 -- "rebase on main first"  ·  lanes-tui send --all-running "commit what you have"')
    p.add_argument("words", nargs="+", metavar="ID",
                   help="the lane (or lanes), then the message: ID TEXT, or ID ID ... -- TEXT")
    p.add_argument("--all-running", action="store_true",
                   help="every lane whose agent runs (running, or waiting on you); then TEXT alone")
    p.add_argument("--json", action="store_true", help='one object: {"lane", "sent", "via"} or {"lane", "sent": '
                                                       'false, "error"}; several lanes: {"sent": [...], "skipped": '
                                                       '[{"lane", "why"}], "ok"}')
    p.set_defaults(func=cmd_send)

    p = sub.add_parser(
        "comment", help="comment on a hunk of a lane's diff: to its agent, or kept for its next attempt",
        description="FILE:LINE names a line of the new file in the lane's diff (`lanes-tui diff ID`); the hunk "
                    "holding it, with the comment, goes to the running agent as `send` does; a lane that has "
                    "ended keeps it, and `recover ID --relaunch` puts it in the next attempt's findings. Exit 0 "
                    "sent or kept; 1 the running lane refused; 2 no such lane, no hunk there, or a usage error.",
        epilog='example: lanes-tui comment fix-login-a1 src/auth.py:42 "check the token expiry here too"')
    p.add_argument("lane_id", metavar="ID", help="the lane")
    p.add_argument("where", metavar="FILE:LINE", help="a changed line of the new file, as the diff numbers it")
    p.add_argument("text", metavar="TEXT", help="the comment")
    p.add_argument("--json", action="store_true",
                   help='one object: {"lane", "file", "header", "delivered", "via", "kept"}')
    p.set_defaults(func=cmd_comment)

    p = sub.add_parser(
        "peek", help="the last lines of a lane's output, or a terminal lane's live screen",
        description="Without --screen: the last N lines of output.log, colour codes removed (any lane, running "
                    "or not); a claude, codex or gemini lane's JSON lines are shown readable (the agent's text, "
                    "each tool call and its result on one line, questions, errors, usage and cost), --raw shows "
                    "them as written. --screen: the rows of a running terminal lane's screen, as the prompt "
                    "detector reads them. Exit 0; 2 no such lane, or --screen on a lane that is not a running "
                    "terminal.",
        epilog="examples: lanes-tui peek fix-login-a1 --lines 20  ·  lanes-tui peek fix-login-a1 --raw  ·  "
               "lanes-tui peek aider-a1 --screen --json")
    p.add_argument("lane_id", metavar="ID", help="the lane")
    p.add_argument("--lines", type=cli_args.count, default=40, metavar="N", help="how many lines (default 40)")
    p.add_argument("--screen", action="store_true", help="the live screen of a terminal lane")
    p.add_argument("--raw", action="store_true",
                   help="output.log's lines as written: a structured lane's JSON, not its readable form")
    p.add_argument("--json", action="store_true",
                   help='one object: {"lane", "source": "output"|"screen", "lines": [...]} (+ "form": '
                        '"readable"|"raw" for output; rows, columns, cursor, still for a screen)')
    p.set_defaults(func=cmd_peek)


def cmd_attach(args: argparse.Namespace) -> int:
    from lanes_tui.app.attach_client import DEFAULT_DETACH, attach

    repo = repo_of(args)
    if _remote_config(repo, args.lane_id) is not None:
        raise LanesError(f"lane {args.lane_id} runs on a cluster node: attach reaches a supervisor on this "
                         "machine only", f"`lanes-tui peek {args.lane_id}` or `lanes-tui send {args.lane_id} TEXT`")
    key = args.detach_key or load_config(repo).keys.get("attach.detach") or DEFAULT_DETACH
    print(f"lanes-tui: {attach(repo, args.lane_id, detach=key)}", file=sys.stderr)
    return 0


def cmd_send(args: argparse.Namespace) -> int:
    lanes, text = _lanes_and_text(args.words, args.all_running)
    repo = repo_of(args)
    if args.all_running or len(lanes) > 1:
        from lanes_tui.engine import running_lanes  # here: the one-lane `send` loads no more than it did

        return _send_many(repo, running_lanes(repo) if args.all_running else lanes, text, args.json)
    args.lane_id, args.text = lanes[0], text
    try:
        reply = _send(repo, args.lane_id, args.text)
    except LanesError as exc:
        code = REFUSED if getattr(exc, "refused", False) else 2
        if args.json:
            print(json.dumps({"lane": args.lane_id, "sent": False, "error": str(exc), "exit": code}))
        else:
            print(f"lanes-tui: {exc}", file=sys.stderr)
        return code
    if args.json:
        print(json.dumps({"lane": args.lane_id, "sent": True, "via": reply.get("via")}))
    else:
        print(f"sent to {args.lane_id} ({reply.get('via')})")
    return 0


def _lanes_and_text(words: list[str], all_running: bool) -> tuple[list[str], str]:
    """`ID TEXT`, `ID ID ... [--] TEXT` (argparse has taken the `--`: the text is the last word) or,
    with --all-running, `TEXT` alone."""
    if all_running:
        if len(words) != 1:
            raise LanesError("--all-running takes the message alone", 'quote it: lanes-tui send --all-running "TEXT"')
        return [], words[0]
    if len(words) < 2:
        raise LanesError("send needs a lane and a message", 'lanes-tui send ID "TEXT" (or ID ID ... -- "TEXT")')
    return [validate_lane_id(w) for w in words[:-1]], words[-1]


def _send_many(repo: Path, lanes: list[str], text: str, as_json: bool) -> int:
    """One message to each lane; every lane named must exist (nothing is sent otherwise)."""
    from lanes_tui.engine import send_to_lanes

    if not lanes:
        raise LanesError("no lane is running: nothing to send to", "`lanes-tui status` lists the lanes")
    paths = StatePaths(repo)
    unknown = [lane for lane in lanes if not paths.lane(lane).record.is_file()]
    if unknown:
        raise LanesError(f"no such lane {', '.join(unknown)}", "`lanes-tui status` lists the lanes; nothing was sent")

    async def send(lane_id: str, message: str) -> dict[str, Any]:
        return await asyncio.to_thread(_send, repo, lane_id, message)

    report = asyncio.run(send_to_lanes(lanes, text, send))
    if as_json:
        print(json.dumps({"sent": [{"lane": r.lane_id, "via": r.via} for r in report.results if r.sent],
                          "skipped": [{"lane": r.lane_id, "why": r.why} for r in report.skipped], "ok": report.ok}))
    else:
        for line in report.lines():
            print(line)
    return 0 if report.ok else REFUSED


def cmd_comment(args: argparse.Namespace) -> int:
    from lanes_tui.engine import comment_on_lane, diff_hunks, hunk_at, lane_diff, new_comment

    file, _, line = args.where.rpartition(":")
    if not file or not line.isdigit():
        raise LanesError(f"{args.where!r} is not FILE:LINE", "name a line of the new file, e.g. src/auth.py:42")
    repo = repo_of(args)
    hunks = diff_hunks(lane_diff(repo, load_config(repo), args.lane_id).text())
    hunk = hunk_at(hunks, file, int(line))
    if hunk is None:
        files = sorted({h.file for h in hunks})
        raise LanesError(f"no hunk of {args.lane_id}'s diff holds {file}:{line}",
                         "`lanes-tui diff " + args.lane_id + "` shows the hunks"
                         + (f" (files: {', '.join(files[:5])})" if files else " (it has none)"))
    comment = new_comment(hunk.file, hunk.header, hunk.lines, args.text)

    async def send(lane_id: str, message: str) -> dict[str, Any]:
        return await asyncio.to_thread(_send, repo, lane_id, message)

    try:
        outcome = asyncio.run(comment_on_lane(repo, args.lane_id, comment, send))
    except LanesError as exc:
        if not getattr(exc, "refused", False):
            raise
        print(f"lanes-tui: {exc}", file=sys.stderr)
        return REFUSED
    if args.json:
        print(json.dumps({"lane": args.lane_id, "file": hunk.file, "header": hunk.header,
                          "delivered": outcome.delivered, "via": outcome.via, "kept": outcome.kept}))
    else:
        print(outcome.describe())
    return 0


def _send(repo: Path, lane_id: str, text: str) -> dict[str, Any]:
    """To the lane's supervisor here, or through the runner to a lane on a cluster node."""
    remote = _remote_config(repo, lane_id)
    if remote is not None:
        from lanes_tui.app.cli.remote import send_remote

        return send_remote(repo, remote, lane_id, text)
    return send_to_lane(repo, lane_id, text)


def _remote_config(repo: Path, lane_id: str) -> Config | None:
    """The config when the lane runs on a cluster node (reached through the runner), else None. A
    config that cannot be read is no cluster: a local lane is still reached (as before the runner)."""
    try:
        config = load_config(repo)
    except LanesError:
        return None
    if config.runner.kind == "local":
        return None
    from lanes_tui.app.cli.remote import is_remote

    return config if is_remote(repo, lane_id) else None


def _refuse_other_lane(lane_id: str) -> None:
    """Inside a lane (`LANES_LANE` set), `peek` shows that lane's own output only, as `inbox` lists only
    its own questions: another lane's output is the lead's to read (it may quote the lead's answers,
    secrets a gate printed, or another task's code), not a neighbour agent's."""
    own = os.environ.get("LANES_LANE", "")
    if own and lane_id != own:
        raise LanesError(f"this shell belongs to lane {validate_lane_id(own)}: peek shows only that lane's "
                         f"output, not {lane_id}'s", f"peek your own: `lanes-tui peek {own}`")


def _terminal_width() -> int:
    """The agent's text is wrapped to the lead's terminal; piped, it is not (a script gets whole lines)."""
    if not sys.stdout.isatty():
        return 0
    import shutil

    return shutil.get_terminal_size((100, 24)).columns


def cmd_peek(args: argparse.Namespace) -> int:
    _refuse_other_lane(args.lane_id)
    repo = repo_of(args)
    result: dict[str, Any]
    form = "raw" if args.raw else "readable"
    width = _terminal_width() if not args.json else 0
    remote = _remote_config(repo, args.lane_id)
    if remote is not None:
        if args.screen:
            raise LanesError(f"the screen of {args.lane_id} is on its cluster node, not mirrored here",
                             f"peek its output instead: `lanes-tui peek {args.lane_id}`")
        from lanes_tui.app.cli.remote import peek_remote

        result = {"lane": args.lane_id, "source": "output", "form": form,
                  "lines": peek_remote(repo, remote, args.lane_id, args.lines, readable=not args.raw, width=width)}
    elif args.screen:
        reply = peek_screen(repo, args.lane_id)
        lines = [str(line) for line in reply.get("lines", [])]
        while lines and not lines[-1].strip():
            lines.pop()
        result = {"lane": args.lane_id, "source": "screen", "lines": lines[-args.lines:] if args.lines else [],
                  **{k: reply[k] for k in ("rows", "columns", "cursor", "still") if k in reply}}
    else:
        result = {"lane": args.lane_id, "source": "output", "form": form,
                  "lines": peek_output(repo, args.lane_id, args.lines, readable=not args.raw, width=width)}
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        for line in result["lines"]:
            print(line)
    return 0
