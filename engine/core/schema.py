"""The schema version every state file carries, and the one rule for reading it (issue 28).

A lanes-tui that meets a file written by a newer one must not guess at it: a field whose meaning
changed, read the old way, could merge, delete or run the wrong thing. So each JSON state file is
written with `"schema": N`, N its format's version here. Reading:

- no `schema` key: version 1, the format every file had before the key existed; it reads as it is
  (the migration from 1 to 1 is the identity; a future version 2 adds its step to `migrate`);
- a version at most the current one: migrated step by step up to the current one;
- a newer version: refused in one line naming the file, its owner and both versions, with the fix
  (`upgrade lanes-tui`); the caller shows that one lane, question or plan as a problem and goes on;
- anything else (a string, 0, a negative number, a boolean): a damaged file, one line too.

Standard library only (`core`), so the inbox helper an agent runs stays inside its import budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lanes_tui.engine.core.errors import LanesError

__all__ = ["SCHEMA_KEY", "VERSIONS", "NewerSchema", "check_schema", "stamped"]

SCHEMA_KEY = "schema"
#: Each state file's current format version. Raise one when its format changes in a way an older
#: reader would misread, and teach `check_schema` the step from the version before.
VERSIONS: dict[str, int] = {
    "lane.json": 1, "origin.json": 1, "packet.json": 1, "receipt.json": 1, "meters.json": 1,
    "question": 1, "answer": 1, "mark": 1, "plan.json": 1, "tickets.json": 1,
}


class NewerSchema(LanesError):
    """A state file written by a newer lanes-tui: never read, never rewritten, never removed as corrupt."""


def stamped(data: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """`data` with the current schema version of `kind` first, ready to be written."""
    return {SCHEMA_KEY: VERSIONS[kind], **{k: v for k, v in data.items() if k != SCHEMA_KEY}}


def check_schema(data: Any, kind: str, what: str) -> int:
    """The version `data` (a state file's parsed JSON) was written in, or a one-line LanesError.

    `kind` is the file's key in `VERSIONS`, `what` names the file for the lead (`lane.json of
    fix-a1`). A file that is not an object is left to its own reader's message.
    """
    if not isinstance(data, dict) or SCHEMA_KEY not in data:
        return 1
    version = data[SCHEMA_KEY]
    current = VERSIONS[kind]
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise LanesError(f"{what} has schema {version!r}, not a version number",
                         "the file was edited by hand: restore it, or remove what it belongs to")
    if version > current:
        raise NewerSchema(f"{what} was written by a newer lanes-tui (schema {version} > {current})",
                          "upgrade lanes-tui")
    return version
