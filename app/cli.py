"""The `lanes-tui` command line: the dashboard by default, headless subcommands for scripts.

Headless commands never import Textual, so `lanes-tui ask` inside a lane starts fast. Every refusal
is one line on stderr (`lanes-tui: …`) and a non-zero exit; nothing is half-done.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import NoReturn, cast

from lanes_tui.app import cli_decisions, cli_inbox, cli_lanes
from lanes_tui.engine.errors import LanesError


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the problem and where to read more."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"lanes-tui: {message} — see `{self.prog} --help`\n")


def build_parser() -> argparse.ArgumentParser:
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
    cli_lanes.add_parsers(sub)
    cli_decisions.add_parsers(sub)
    cli_inbox.add_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
