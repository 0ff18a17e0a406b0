"""The `lanes-tui` command line: the dashboard by default, headless subcommands for scripts.

Headless commands never import Textual, and each subcommand loads only its own module: the command
word is read before the parser is built, so `lanes-tui ask` inside a lane registers (and imports) the
inbox commands alone. Every refusal is one line on stderr (`lanes-tui: …`) and a non-zero exit;
nothing is half-done.
"""

from __future__ import annotations

import argparse
import errno
import gc
import importlib
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, cast

from lanes_tui.app.cli.args import HelpText, port
from lanes_tui.engine import LanesError, report_modules_at_exit, terminal_text

if TYPE_CHECKING:
    import logging  # loaded only with --debug or LANES_TUI_LOG (app/cli/log.py)

#: subcommand -> the module under lanes_tui.app.cli that defines it (and its `add_parsers`).
COMMAND_MODULES: dict[str, str] = {
    "init": "lanes", "run": "lanes", "status": "lanes", "wait": "wait",
    "check": "decisions", "accept": "decisions", "abandon": "decisions", "recover": "decisions",
    "finish": "decisions", "diff": "decisions", "ci": "ci",
    "ask": "inbox", "answer": "inbox", "inbox": "inbox",
    "lock": "lock",
    "plan": "plan",
    "review": "review", "verify": "review",
    "attach": "hands", "send": "hands", "peek": "hands", "comment": "hands",
    "stop": "stop",
    "scorecard": "scorecard",
    "providers": "config", "show-chain": "config", "doctor": "config",
    "completion": "shell", "help": "shell", "__complete": "shell",
}
#: The commands an agent runs in its shell: their `--help` is their own module's text (no `cli/help.py`).
LEAN_COMMANDS = frozenset({"ask", "answer", "inbox", "lock"})
#: Global options that take a value: their value is not the command word.
_VALUE_OPTIONS = ("--repo", "--demo-dir", "--host", "--port")
#: The commands whose output is the terminal's own (the dashboard is `None`): `attach` draws the agent's
#: screen, escapes and all. Every other command's stdout and stderr pass through `terminal_text`.
RAW_OUTPUT = frozenset({None, "attach"})
#: The lead's decisions: refused in a shell that belongs to a lane (`LANES_LANE` set). `check` is one
#: of them: it runs the gates as the lead and rewrites the packet accept trusts, so an agent could
#: otherwise bless its own (or another lane's) work. `ask`, `status`, `wait`, `inbox` and `doctor`
#: only ask or look (`inbox` lists the lane's own questions there); `lock` is the agent's own (it runs
#: the agent's heavy commands in a heavy slot).
LEAD_ONLY = frozenset({"answer", "accept", "abandon", "recover", "finish", "run", "init", "check", "review",
                       "verify", "stop", "attach", "send", "comment", "scorecard", "ci"})


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the problem and where to read more."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"lanes-tui: {message} — see `{self.prog} --help`\n")


def command_word(argv: Sequence[str]) -> str | None:
    """The subcommand named in `argv` (skipping global options and their values), or None."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _VALUE_OPTIONS:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


def lane_refusal(command: str | None, argv: Sequence[str], environ: Mapping[str, str]) -> str | None:
    """The one-line refusal of a lead's command run inside a lane, or None when it may run.

    A guard against an agent that runs the lead's commands from its shell (it answered its own
    question and accepted another lane), not a wall: docs/reliability.md says what an agent running
    as the lead's user can still do. The dashboard counts as the lead's too (it accepts and answers).
    """
    lane = environ.get("LANES_LANE", "")
    if not lane:
        return None
    if command is None:
        if any(a in ("-h", "--help", "--demo") for a in argv):
            return None
        what = "the lanes-tui dashboard"
    elif command in LEAD_ONLY:
        what = f"lanes-tui {command}"
    else:
        return None
    return (f"{what} is the lead's command; this shell belongs to lane {_printable(lane)} (LANES_LANE is set) "
            "— ask the lead instead: lanes-tui ask \"…\"")


def _printable(text: str) -> str:
    """The lane id as the environment has it, safe for the terminal (it may be anything)."""
    clean = "".join(ch if ch.isprintable() else "?" for ch in text)
    return clean if len(clean) <= 64 else clean[:63] + "…"


def build_parser(command: str | None = None, *, commands: bool = True) -> argparse.ArgumentParser:
    """The parser; with a known `command`, only that command's module is imported and registered;
    without `commands`, none is (the dashboard's start: its argv names no command and asks no help,
    and the command modules would add a tenth of a second before its first frame, docs/benchmarks.md B7)."""
    parser = OneLineParser(
        prog="lanes-tui",
        description="A dashboard for a lead who runs several AI coding agents, each in its own worktree. "
                    "Without a command: the dashboard.",
        epilog=EPILOG, formatter_class=HelpText,
    )
    parser.add_argument("--version", action="store_true", help="print lanes-tui's version and exit")
    parser.add_argument("--debug", action="store_true",
                        help="write a debug log to .lanes/state/logs/lanes-tui.log (also: LANES_TUI_LOG=debug)")
    parser.add_argument("--repo", type=Path, default=None, help="the repository (default: the current one)")
    parser.add_argument("--demo", action="store_true",
                        help="build a throw-away repository and run simulated lanes in it")
    parser.add_argument("--keep", action="store_true",
                        help="with --demo: keep the demo repository (and its lanes running) on exit")
    parser.add_argument("--demo-dir", type=Path, default=None, help="with --demo: build the demo under this folder")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="only results, errors and warnings: no progress or hint lines")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more detail, and the engine's log on stderr (info; -vv: debug)")
    parser.add_argument("--web", action="store_true",
                        help="serve the dashboard to a browser (textual-serve, the [web] extra; docs/dashboard.md)")
    parser.add_argument("--host", default=None, help="with --web: the address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=port, default=None, help="with --web: the port to listen on (default 8000)")
    sub = cast("argparse._SubParsersAction[argparse.ArgumentParser]",
               parser.add_subparsers(dest="command", metavar="COMMAND"))
    wanted = COMMAND_MODULES.get(command or "")
    for module in dict.fromkeys(COMMAND_MODULES.values()) if commands else ():  # in order, each once
        if wanted is None or module == wanted:
            importlib.import_module(f"lanes_tui.app.cli.{module}").add_parsers(sub)
    from lanes_tui.app.cli.options import share_globals  # not for `--version`, answered before the parser

    share_globals(parser)  # `status --repo X` as well as `--repo X status`
    return parser


EPILOG = """exit codes: 0 done, 1 done but not good (gates failed, a problem found, answered no), 2 refused
or a usage error (one line on stderr), 124 wait --timeout passed, 130 interrupted; docs/cli.md has the
full table and every --json shape.

global options: --repo, --debug, -q and -v go before or after the command (`lanes-tui status --repo ~/app`).

more:
  lanes-tui help KEYS          the dashboard's keys
  lanes-tui COMMAND --help     a command's options and examples
  lanes-tui completion bash    shell completion (also zsh, fish)"""


def package_version() -> str:
    """The installed version, from the package's metadata (read only when asked)."""
    from importlib import metadata

    try:
        return metadata.version("lanes-tui")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


class TerminalSafe:
    """A text stream that lets no control sequence through to the lead's terminal (issue 28).

    Headless commands print text an agent chose: file names in `diff --stat` and `accept --dry-run`,
    gate output in `check --log`, reasons in `status`, a plan's lane names. Rather than trust each of
    those `print` calls to remember `terminal_text`, the command line puts this in front of stdout and
    stderr once, so a new command cannot forget it. Everything but `write` goes to the real stream.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(terminal_text(text))
        return len(text)

    def writelines(self, lines: Sequence[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main(argv: list[str] | None = None) -> int:
    report_modules_at_exit("lanes-tui")
    arguments = sys.argv[1:] if argv is None else argv
    command = command_word(arguments)
    if command is None:
        # The dashboard's start allocates Textual's and the panes' objects by the hundred thousand, and
        # the collector's passes over them cost a tenth of its time to the first frame (B7). No cycle
        # made before that frame needs collecting: the collector comes back on with it
        # (`dashboard.app.LanesApp`), or here when the command line ends without one (`--help`, a
        # refusal, an app that never drew); `--web` turns it on before it serves (`_dispatch`): that
        # server runs for hours and starts its dashboards as processes of their own.
        gc.disable()
        try:
            return _main_terminal_safe(arguments, command)
        finally:
            gc.enable()
    return _main_terminal_safe(arguments, command)


def _main_terminal_safe(arguments: list[str], command: str | None) -> int:
    if command in RAW_OUTPUT:
        return _main(arguments, command)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = cast(TextIO, TerminalSafe(sys.stdout)), cast(TextIO, TerminalSafe(sys.stderr))
    try:
        return _main(arguments, command)
    finally:
        sys.stdout, sys.stderr = saved


def _main(arguments: list[str], command: str | None) -> int:
    if command is None and "--version" in arguments:  # before the parser: no command module is loaded
        print(f"lanes-tui {package_version()}")
        return 0
    refusal = lane_refusal(command, arguments, os.environ)
    if refusal is not None:  # before the parser: `ask` and friends import nothing more for it
        print(f"lanes-tui: {refusal}", file=sys.stderr)
        return 2
    asks_help = any(a in ("-h", "--help") for a in arguments)
    parser = build_parser(command, commands=command is not None or asks_help)
    if command not in LEAN_COMMANDS and asks_help:
        from lanes_tui.app.cli.help import describe

        describe(parser)
    args = parser.parse_args(arguments)
    if args.quiet and args.verbose:
        parser.error("-q and -v do not go together; give one of them")
    repo = Path(args.repo) if args.repo else None  # `answer --repo` and `inbox --repo` keep it a string
    log = None
    if args.debug or os.environ.get("LANES_TUI_LOG"):
        from lanes_tui.app.cli import log as cli_log

        level = cli_log.wanted_level(args.debug, os.environ)
        log = None if level is None else cli_log.start(level, repo, os.environ, arguments)
    from lanes_tui.app.cli import voice

    voice.set_level(voice.QUIET if args.quiet else voice.VERBOSE if args.verbose else voice.NORMAL)
    if args.verbose and command not in RAW_OUTPUT:  # never over the dashboard's or an attached lane's screen
        voice.log_to_stderr(args.verbose)
    code = _dispatch(args, log)
    if log is not None:
        log.info("exit %d", code)
    return code


def _dispatch(args: argparse.Namespace, log: logging.Logger | None) -> int:
    """Run the command; every refusal becomes one stderr line and its exit code (docs/cli.md)."""
    try:
        if args.version:
            print(f"lanes-tui {package_version()}")
            return 0
        if args.web or args.host is not None or args.port is not None:
            gc.enable()  # off since `main` began: no dashboard runs in this process
            from lanes_tui.app.cli.web import serve_web

            return serve_web(args)
        if args.command is None:
            from lanes_tui.app.dashboard.run import run_dashboard

            return run_dashboard(repo=args.repo, demo=args.demo, keep=args.keep, demo_dir=args.demo_dir)
        code: int = args.func(args)
        return code
    except LanesError as exc:
        if log is not None:
            log.debug("refused: %s", exc, exc_info=True)
        print(f"lanes-tui: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `lanes-tui status | head`: the reader left, nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # the machine refused (permissions, a full disk, a read-only folder)
        if log is not None:
            log.debug("refused by the machine", exc_info=True)
        print(f"lanes-tui: {os_error_line(exc)}", file=sys.stderr)
        return 2
    except Exception:  # a bug: the traceback goes to stderr as always, and into the log when there is one
        if log is not None:
            log.exception("failed")
        raise


def os_error_line(exc: OSError) -> str:
    """An OSError as the one line the command line promises: what failed, where, and the fix."""
    where = f": {exc.filename}" if exc.filename else ""
    fix = {errno.ENOSPC: "free some space on that disk", errno.EDQUOT: "free some space (quota)",
           errno.EROFS: "that folder is on a read-only filesystem"}.get(exc.errno or 0,
                                                                        "check that folder's permissions")
    return f"{exc.strerror or exc}{where} — {fix}, then try again"


if __name__ == "__main__":
    sys.exit(main())
