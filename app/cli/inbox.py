"""`lanes-tui ask`, `answer` and `inbox`: the inbox from the command line (INBOX.md, "The helper").

`ask` runs inside a lane, often from an agent's shell tool, so this module imports only the engine's
inbox (no Textual, no Rich) to start fast. Exit codes of `ask` are a contract with scripts:

* 0 — answered yes (yes/no), or the choice id / text was printed;
* 1 — answered no;
* 2 — refused (bad arguments, no `LANES_HOME` / `LANES_LANE`, unknown question): one stderr line;
* 3 — still open when `--timeout` passed and no default to apply: the question id is printed so the
  agent can keep waiting with `lanes-tui ask --wait QID`;
* 4 — cancelled, orphaned, or expired without a default: no answer will come.

The default `--timeout` is 600 s because agents' shell tools kill long-running commands; a question
left open by a timeout (or by the tool killing the helper) stays in the inbox, and `--wait` picks it up.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

from lanes_tui.app.cli import args as cli_args
from lanes_tui.app.cli import voice
from lanes_tui.engine import (
    QUESTION_STATES,
    InboxStore,
    LanesError,
    QuestionView,
    RealClock,
    StatePaths,
    confined,
    find_repo_root,
    relayed_create,
    split_lane_id,
    validate_lane_id,
    validate_qid,
    wait_for_answer,
)

DEFAULT_TIMEOUT_S = 600.0
POLL_S = 0.1
EXIT_NO = 1
EXIT_REFUSED = 2
EXIT_STILL_OPEN = 3
EXIT_NO_ANSWER = 4

Handler = Callable[[argparse.Namespace], int]


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `ask`, `answer` and `inbox` into a `lanes-tui` subparser set."""
    ask = sub.add_parser(
        "ask", help="ask the lead a question from inside a lane and wait for the answer",
        description="Ask the lead and block until answered. Exit 0 yes / 1 no (or the choice or text "
                    "printed), 3 still open at --timeout (the id is printed), 4 cancelled or orphaned.",
        epilog='examples:\n  lanes-tui ask "Drop the legacy table?" --yes-no\n'
               '  lanes-tui ask "Which database?" --choice postgres,sqlite --default sqlite --timeout 300\n'
               "  lanes-tui ask --wait q_0123456789ab",
        formatter_class=cli_args.HelpText,
    )
    ask.add_argument("title", nargs="?", help="the question, one line")
    kinds = ask.add_mutually_exclusive_group()
    kinds.add_argument("--yes-no", dest="kind", action="store_const", const="yesno",
                       help="a yes/no question (the default): exit 0 for yes, 1 for no")
    kinds.add_argument("--choice", metavar="A,B,...", help="offer these options; prints the chosen id")
    kinds.add_argument("--text", dest="kind", action="store_const", const="text",
                       help="a free-text answer, printed on stdout")
    ask.add_argument("--body", default="", help="details shown under the title")
    ask.add_argument("--default", help="applied (and the result) if nobody answers within --timeout")
    ask.add_argument("--timeout", type=cli_args.seconds, default=DEFAULT_TIMEOUT_S, metavar="S",
                     help="seconds to wait (default 600: agents' shell tools kill long commands; "
                          "use --wait to keep waiting)")
    ask.add_argument("--wait", metavar="QID", help="wait again on a question this lane asked before")
    ask.set_defaults(func=_guarded(_cmd_ask))

    answer = sub.add_parser("answer", help="answer a question in the inbox",
                            description="yes/no for yes/no and permission questions (yes = allow), an "
                                        "option id or label for a choice, any text for a text question.",
                            epilog="examples:\n  lanes-tui answer q_0123456789ab yes\n"
                                   "  lanes-tui answer q_0123456789ab use the staging database\n"
                                   "  lanes-tui answer q_0123456789ab no --json",
                            formatter_class=cli_args.HelpText)
    answer.add_argument("qid", metavar="QID")
    answer.add_argument("value", metavar="VALUE", nargs="+", help="the answer (words are joined by spaces)")
    answer.add_argument("--by", default="lead", help="who answers (default: lead)")
    answer.add_argument("--repo", metavar="PATH", default=argparse.SUPPRESS,
                        help="the repository (default: LANES_HOME or this one)")
    answer.add_argument("--relaunch", action="store_true",
                        help="if the question's lane is gone (orphaned), start its next attempt with the answer")
    answer.add_argument("--json", action="store_true",
                        help="one JSON object: qid, lane, answer, state, lane_gone, relaunched")
    answer.set_defaults(func=_guarded(_cmd_answer))

    inbox = sub.add_parser("inbox", help="list the questions of every lane (inside a lane: its own)",
                           description="Every lane's questions with their state (inside a lane: its own); "
                                       "answer one with `lanes-tui answer QID VALUE`.",
                           epilog="examples:\n  lanes-tui inbox\n  lanes-tui inbox --state open --json",
                           formatter_class=cli_args.HelpText)
    inbox.add_argument("--json", action="store_true", help="print a JSON list of question objects")
    inbox.add_argument("--lane", metavar="ID", help="only this lane's questions")
    inbox.add_argument("--state", metavar="S,...", help=f"only these states ({', '.join(QUESTION_STATES)})")
    inbox.add_argument("--repo", metavar="PATH", default=argparse.SUPPRESS,
                        help="the repository (default: LANES_HOME or this one)")
    inbox.set_defaults(func=_guarded(_cmd_inbox))


def _main(argv: list[str] | None = None) -> int:
    """A parser with just the inbox commands; the real `lanes-tui` registers them into its own."""
    parser = argparse.ArgumentParser(prog="lanes-tui")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parsers(sub)
    args = parser.parse_args(argv)
    handler: Handler = args.func
    return handler(args)


def _guarded(handler: Handler) -> Handler:
    """Turn a refusal into the one-line stderr message and exit 2 the command line promises."""
    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except LanesError as exc:
            print(f"lanes-tui: {exc}", file=sys.stderr)
            return EXIT_REFUSED
    run.__doc__ = handler.__doc__
    return run


# --- ask ------------------------------------------------------------------------------------------


def _cmd_ask(args: argparse.Namespace) -> int:
    """Ask (or re-attach with --wait), wait, then deliver and report the answer by exit code."""
    home, lane, attempt = _lane_env()
    # Confined by the kernel, the lane cannot write the inbox folder: its supervisor writes for it.
    store = InboxStore(home / "inbox", create=relayed_create(home, lane) if confined() else None)
    qid: str | None = None
    try:
        with _sigterm_as_interrupt():  # installed first: a kill right after asking still prints the id
            with _signals_held():  # a kill between the question's file and `qid` lands once qid is known
                qid = _resume(store, args, lane) if args.wait is not None else _ask(store, args, lane, attempt)
            voice.note(f"lanes-tui: waiting up to {args.timeout:g} s for the lead to answer {qid} "
                       f"(lanes-tui answer {qid} VALUE)", err=True)
            import asyncio  # only when waiting: `ask --help`, `inbox` and `answer` never load it

            view = asyncio.run(wait_for_answer(store, qid, timeout_s=args.timeout, clock=RealClock(),
                                               poll_s=POLL_S))
    except KeyboardInterrupt:
        if qid is None:
            return 130
        print(qid, flush=True)
        print(f"lanes-tui: interrupted; {qid} stays open — lanes-tui ask --wait {qid}", file=sys.stderr)
        return 130
    return _finish(store, view)


def _ask(store: InboxStore, args: argparse.Namespace, lane: str, attempt: int) -> str:
    if not args.title:
        raise LanesError("no question given", 'run lanes-tui ask "Deploy?" --yes-no')
    kind = "choice" if args.choice is not None else (args.kind or "yesno")
    options = [o.strip() for o in (args.choice or "").split(",") if o.strip()]
    if kind == "choice" and not options:
        raise LanesError("--choice needs options", "give them comma-separated, e.g. --choice a,b")
    question = store.ask(lane, kind=kind, title=args.title, body=args.body, options=options,
                         default=args.default, timeout_s=args.timeout, attempt=attempt)
    return question.id


def _resume(store: InboxStore, args: argparse.Namespace, lane: str) -> str:
    """`--wait QID`: only the lane's own `ask` questions, since only their asker writes the marks."""
    if args.title is not None or args.kind or args.choice or args.body or args.default is not None:
        raise LanesError("--wait takes only a question id and --timeout",
                         "drop the title and the other options")
    view = store.get(validate_qid(args.wait))
    if view.question.lane != lane:
        raise LanesError(f"{args.wait} belongs to lane {view.question.lane}, not {lane}",
                         "only the lane that asked may wait on it")
    if view.question.source != "ask-cli":
        raise LanesError(f"{args.wait} was asked by {view.question.source}",
                         "only its own asker delivers its answer")
    return view.question.id


def _finish(store: InboxStore, view: QuestionView) -> int:
    """Map the final state to output and exit code; the asker is the one who writes delivery marks."""
    qid, question = view.question.id, view.question
    if view.state == "open" and (question.default is not None or question.kind == "permission"):
        with contextlib.suppress(LanesError):  # answered in the meantime: take the answer instead
            store.expire(qid)
        view = store.get(qid)
    if view.state == "open":
        print(qid, flush=True)
        print(f"lanes-tui: {qid} is still open; keep waiting with: lanes-tui ask --wait {qid}",
              file=sys.stderr)
        return EXIT_STILL_OPEN
    if view.state == "answered" and view.answer is not None:
        store.deliver(qid)
    elif view.state not in ("delivered", "expired") or view.answer is None:
        print(f"lanes-tui: {qid} was {view.state}: {view.reason or 'no answer will come'}", file=sys.stderr)
        return EXIT_NO_ANSWER
    print(view.answer, flush=True)
    if question.kind in ("yesno", "permission") and view.answer == "no":
        return EXIT_NO
    return 0


def _lane_env() -> tuple[Path, str, int]:
    """(state dir, lane id, attempt) from the environment every lane gets (PRODUCT.md)."""
    home = os.environ.get("LANES_HOME", "")
    lane = os.environ.get("LANES_LANE", "")
    if not home or not lane:
        missing = " and ".join(n for n, v in (("LANES_HOME", home), ("LANES_LANE", lane)) if not v)
        raise LanesError(f"{missing} not set", "run lanes-tui ask inside a lane, which sets both")
    if not Path(home).is_dir():
        raise LanesError(f"LANES_HOME {home} is not a directory", "it must be the repository's .lanes/state")
    validate_lane_id(lane)
    raw_attempt = os.environ.get("LANES_ATTEMPT", "")
    if not raw_attempt:
        return Path(home), lane, split_lane_id(lane)[1]
    if not raw_attempt.isdigit() or int(raw_attempt) < 1:
        raise LanesError(f"LANES_ATTEMPT {raw_attempt!r} is not a positive number", "unset it or fix it")
    return Path(home), lane, int(raw_attempt)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGTERM and SIGINT wait (pending) until the block ends, then arrive as usual.

    The question's file is written inside `_ask`: a kill that came after the write and before its
    id was known printed nothing, and the helper could not resume the question it had asked.
    """
    held = {signal.SIGTERM, signal.SIGINT}
    try:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    except (ValueError, OSError):
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """A shell tool that kills the helper with SIGTERM still gets the qid printed to resume with."""
    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# --- answer and inbox -----------------------------------------------------------------------------


def _cmd_answer(args: argparse.Namespace) -> int:
    """Record the lead's answer; prints `answered QID VALUE` (with --json: one object, docs/cli.md)."""
    root = _inbox_root(getattr(args, "repo", None))
    store = InboxStore(root)
    value = store.answer(args.qid, " ".join(args.value), by=args.by)
    if not args.json:
        print(f"answered {args.qid} {_printable(value, 200)}")
    view = store.get(args.qid)
    lane = view.question.lane
    gone = view.state == "orphaned" and _recoverable(root, lane)
    new_id = _relaunch_with_answer(root.parent.parent.parent, lane) if gone and args.relaunch else None
    if args.json:
        print(json.dumps({"qid": args.qid, "lane": lane, "answer": value, "state": view.state,
                          "lane_gone": gone, "relaunched": new_id}, indent=2))
    elif new_id is not None:
        voice.note(f"relaunched {lane} as {new_id} with the answer in its prompt")
        print(new_id)
    elif gone:
        voice.note(f"{lane} is gone, so no agent hears this answer: `lanes-tui recover {lane} --relaunch` "
                   "(or `answer … --relaunch`) starts its next attempt with the answer in its prompt")
    return 0


def _recoverable(inbox_root: Path, lane: str) -> bool:
    """Only a lane that recover can relaunch is offered the next attempt (not one that went on)."""
    from lanes_tui.engine import RECOVERABLE, read_lane

    try:
        state = read_lane(inbox_root.parent.parent.parent, lane, reconciled=False).state
    except LanesError:
        return False
    return state in RECOVERABLE


def _relaunch_with_answer(repo: Path, lane: str) -> str:
    """The orphaned lane's next attempt (its id); recover puts the lead's answers into its prompt."""
    from lanes_tui.engine import Decisions

    decide = Decisions(repo)
    return decide.run(decide.relaunch(lane)).id


def _cmd_inbox(args: argparse.Namespace) -> int:
    """List questions as a table, or as JSON for scripts; inside a lane, only that lane's own."""
    store = InboxStore(_inbox_root(getattr(args, "repo", None)))
    states = [s.strip() for s in args.state.split(",") if s.strip()] if args.state else None
    lane = args.lane
    own = os.environ.get("LANES_LANE", "")
    if own:  # another lane's questions (and the lead's answers to them) are none of this agent's business
        if lane is not None and lane != own:
            raise LanesError(f"this shell belongs to lane {validate_lane_id(own)}: its inbox lists only "
                             f"that lane's questions, not {lane}'s", "drop --lane")
        lane = validate_lane_id(own)
    views = store.list(lane, states)
    if args.json:
        print(json.dumps([v.to_json() for v in views], indent=2, sort_keys=True))
        return 0
    if not views:
        print("no questions")
        return 0
    now = store.clock.time()
    rows = [("QID", "LANE", "STATE", "SOURCE", "AGE", "TITLE")]
    rows += [(v.question.id, v.question.lane, v.state, v.question.source,
              _age(now - v.question.created), _printable(v.question.title, 60)) for v in views]
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[5])
    return 0


def _inbox_root(repo: str | None) -> Path:
    """`--repo`, else `LANES_HOME` (inside a lane), else the repository of the current directory."""
    if repo:
        path = Path(repo)
        if not path.is_dir():
            raise LanesError(f"--repo {repo} is not a directory", "give the repository's path")
        return StatePaths(path.resolve()).inbox
    home = os.environ.get("LANES_HOME")
    if home:
        return Path(home) / "inbox"
    # The main repository even from a linked worktree: its questions are in the main `.lanes/state`.
    return StatePaths(find_repo_root(Path.cwd())).inbox


def _age(seconds: float) -> str:
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def _printable(text: str, limit: int) -> str:
    """Agent-written text goes to the lead's terminal: no escape sequences, no line breaks."""
    clean = "".join(ch if ch.isprintable() else " " for ch in text)
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"
