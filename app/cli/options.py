"""The global options a lead may also type after the command: `lanes-tui status --repo X`.

argparse reads options of the top-level parser only before the command word; after it, the
subcommand's parser answers "unrecognized arguments". Rather than a hint to move them, every
subparser (and `plan`'s own) gets a copy of `SHARED` whose default is SUPPRESS: given after the
command it wins, absent it leaves the top-level value alone. The dashboard-only options (`--demo`,
`--keep`, `--demo-dir`, `--version`) have no meaning after a command and are not copied.
"""

from __future__ import annotations

import argparse
from typing import Any

#: The destinations of the top-level options accepted after the command too.
SHARED = ("repo", "debug", "quiet", "verbose")
GROUP = "global options (also before the command)"


def share_globals(parser: argparse.ArgumentParser) -> None:
    """Copy the `SHARED` options of `parser` into every subparser below it, at every depth."""
    shared = [a for a in parser._actions if a.dest in SHARED and a.option_strings]
    for sub in _subparsers(parser):
        taken = set(sub._option_string_actions)
        group: argparse._ArgumentGroup | None = None
        for action in shared:
            if taken & set(action.option_strings):  # `answer` and `inbox` take their own --repo already
                continue
            group = group or sub.add_argument_group(GROUP)
            group.add_argument(*action.option_strings, **_copied(action))


def _copied(action: argparse.Action) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"dest": action.dest, "default": argparse.SUPPRESS, "help": action.help}
    if isinstance(action, argparse._StoreTrueAction):
        kwargs["action"] = "store_true"
    elif isinstance(action, argparse._CountAction):
        kwargs["action"] = "count"
    else:
        kwargs.update(type=action.type, metavar=action.metavar)
    return kwargs


def _subparsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found: list[argparse.ArgumentParser] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # aliases share one parser
                found.append(sub)
                found.extend(_subparsers(sub))
    return found
