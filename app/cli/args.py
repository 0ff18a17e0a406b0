"""Argument types shared by the subcommand modules; standard library only, so `ask` and `lock` stay lean."""

from __future__ import annotations

import argparse
import math


def seconds(text: str) -> float:
    """A finite number of seconds, 0 or more (argparse reports anything else in one line)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds, 0 or more")
    return value


def count(text: str) -> int:
    """A whole number, 0 or more (0 turns a cap off)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative: give 0 or more")
    return value


def dollars(text: str) -> float:
    """An amount in US dollars, `5`, `5.50` or `$5` (0: no cap)."""
    try:
        value = float(text.strip().lstrip("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an amount in dollars (e.g. 5 or 2.50)") from None
    if not math.isfinite(value) or value < 0 or value >= 1e9:
        raise argparse.ArgumentTypeError(f"{text!r} is not an amount in dollars, 0 or more")
    return value


class HelpText(argparse.HelpFormatter):
    """`--help` text in paragraphs: prose is wrapped to the terminal, indented lines (examples) are kept.

    argparse's own choice is all or nothing (RawDescriptionHelpFormatter keeps every line as written),
    and a description reads best wrapped while an example must be printed exactly as it is typed.
    """

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap  # only when help is printed

        blocks = []
        for block in text.strip("\n").split("\n\n"):
            lines = block.splitlines()
            body = lines[1:] if lines[0].rstrip().endswith(":") else lines  # `examples:` heads its lines
            if body and all(line.startswith("  ") for line in body):
                blocks.append("\n".join(indent + line for line in lines))
            else:
                blocks.append(textwrap.fill(" ".join(block.split()), width, initial_indent=indent,
                                            subsequent_indent=indent))
        return "\n\n".join(blocks)


def port(text: str) -> int:
    """A TCP port to listen on, 1–65535 (`--web --port`); 0 would pick one the lead could not be told in advance."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1–65535)") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1–65535)")
    return value
