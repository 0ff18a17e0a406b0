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
