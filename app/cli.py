"""The `lanes-tui` command line: the dashboard by default, headless subcommands for scripts.

Headless commands never import Textual, and each subcommand loads only its own module: the command
word is read before the parser is built, so `lanes-tui ask` inside a lane registers (and imports) the
inbox commands alone. Every refusal is one line on stderr (`lanes-tui: …`) and a non-zero exit;
nothing is half-done.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn, cast

from lanes_tui.engine import LanesError, report_modules_at_exit

#: subcommand -> the module under lanes_tui.app that defines it (and its `add_parsers`).
COMMAND_MODULES: dict[str, str] = {
    "init": "cli_lanes", "run": "cli_lanes", "status": "cli_lanes", "wait": "cli_lanes", "doctor": "cli_lanes",
    "check": "cli_decisions", "accept": "cli_decisions", "abandon": "cli_decisions", "recover": "cli_decisions",
    "finish": "cli_decisions",
    "ask": "cli_inbox", "answer": "cli_inbox", "inbox": "cli_inbox",
}
#: Global options that take a value: their value is not the command word.
_VALUE_OPTIONS = ("--repo", "--demo-dir")


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


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; with a known `command`, only that command's module is imported and registered."""
    parser = OneLineParser(
        prog="lanes-tui",
        description="A dashboard for a lead who runs several AI coding agents, each in its own worktree.",
    )
    parser.add_argument("--repo", type=Path, default=None, help="the repository (default: the current one)")
    parser.add_argument("--demo", action="store_true",
                        help="build a throw-away repository and run simulated lanes in it")
    parser.add_argument("--keep", action="store_true",
                        help="with --demo: keep the demo repository (and its lanes running) on exit")
    parser.add_argument("--demo-dir", type=Path, default=None, help="with --demo: build the demo under this folder")
    sub = cast("argparse._SubParsersAction[argparse.ArgumentParser]",
               parser.add_subparsers(dest="command", metavar="COMMAND"))
    wanted = COMMAND_MODULES.get(command or "")
    for module in dict.fromkeys(COMMAND_MODULES.values()):  # in order, each once
        if wanted is None or module == wanted:
            importlib.import_module(f"lanes_tui.app.{module}").add_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    report_modules_at_exit("lanes-tui")
    arguments = sys.argv[1:] if argv is None else argv
    parser = build_parser(command_word(arguments))
    args = parser.parse_args(arguments)
    try:
        if args.command is None:
            from lanes_tui.app.run_dashboard import run_dashboard

            return run_dashboard(repo=args.repo, demo=args.demo, keep=args.keep, demo_dir=args.demo_dir)
        code: int = args.func(args)
        return code
    except LanesError as exc:
        print(f"lanes-tui: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `lanes-tui status | head`: the reader left, nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
