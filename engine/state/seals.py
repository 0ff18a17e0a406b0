"""Seals: the digest of each record lanes-tui wrote, so a record changed behind its back is refused.

`lane.json`, `packet.json` and `receipt.json` decide what `accept`, the accept queue and `finish` do,
and a lane's processes run as the lead's own user: a gate's daemon or an agent that outlived its
lane could rewrite `packet.json` so that failing gates read `passed`. Every lanes-tui writer of those
files goes through `write_sealed`, which writes the file and then its sha256 into a seal kept
outside the lane's folder (`.lanes/state/seals/<id>/<file>.sha256`); the decisive steps compare
the file with its seal (`seal_problem`) and refuse a difference in one line naming the file and
the fix (`lanes-tui check ID` runs the gates again and writes the packet and the record anew).

Why a plain digest and not a keyed MAC, and what it holds against: any key lanes-tui can read, a
process of the same user can read too, so a MAC would promise no more. The seal catches a record
rewritten by anything that is not lanes-tui (a hand edit, a leftover daemon that rewrites the packet
it finds, a script that flips `gates_status`); a forger that knows this scheme can write both files.
What stops that one is the kernel: under the lane's Landlock ruleset the state folder, seals
included, is not writable by lane processes at all; and the gates' and agents' cgroups are killed
before a check or a lane ends (`procs.gate_scope`, `supervisor.containment`), so nothing of the lane
is left running to try. The seal is the second line behind those.

The seal is over the content, not the bytes: the JSON is read and encoded the one way lanes-tui
writes it, so a value edited and then put back exactly as it was is the same record again.

Order and failure: the file first, then its seal. A writer killed between the two leaves a file
whose seal is older: that reads as changed, and is refused until `check` writes both again (the
safe side). A file that does not exist has nothing to check; a file without a seal is refused like
a changed one, except in a lane that has no seal at all: one written by a lanes-tui from before
seals, whose records were never sealed (an agent that could delete the folder could as well have
rewritten the seals; under Landlock it can do neither).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lanes_tui.engine.core.atomic import write_bytes_atomic
from lanes_tui.engine.core.digest import sha256_hex

#: The records that are sealed: each is written by lanes-tui alone and read by a decisive step.
SEALED = ("lane.json", "packet.json", "receipt.json")
SEALS_DIR = "seals"


def encode(value: Any) -> bytes:
    """The bytes `write_json_atomic` writes for `value` (one format, so a seal matches either way)."""
    return (json.dumps(value, indent=2, sort_keys=True) + "\n").encode("utf-8")


def digest(data: bytes) -> str:
    """CPython's own sha256 (`core.digest`): a supervisor writes lane.json often and must not load OpenSSL."""
    return sha256_hex(data)


def seal_path(path: Path) -> Path:
    """`<state>/seals/<id>/<name>.sha256` for `<state>/lanes/<id>/<name>`: beside the lanes, not in one."""
    lane_dir = path.parent
    return lane_dir.parent.parent / SEALS_DIR / lane_dir.name / f"{path.name}.sha256"


def write_sealed(path: Path, value: Any) -> None:
    """Write a record as `write_json_atomic` does, then its seal."""
    data = encode(value)
    write_bytes_atomic(path, data)
    write_bytes_atomic(seal_path(path), f"sha256 {digest(data)}\n".encode("ascii"))


def content_digest(data: bytes) -> str:
    """The digest of a record's content as lanes-tui would write it (of the raw bytes when it is not
    JSON at all: then it matches no seal)."""
    try:
        return digest(encode(json.loads(data)))
    except (ValueError, RecursionError):
        return digest(data)


def seal_problem(path: Path) -> str | None:
    """None when the file is the one lanes-tui last wrote (or there is no file, or the lane is from
    before seals); else what is wrong, as the start of a sentence naming the file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{path} cannot be read ({exc.strerror})"
    try:
        seal = seal_path(path).read_text(encoding="ascii", errors="replace").split()
    except FileNotFoundError:
        if not seal_path(path).parent.exists():
            return None  # a lane no lanes-tui with seals ever wrote
        return f"{path} has no seal ({seal_path(path)} is missing): it was not written by lanes-tui"
    except OSError as exc:
        return f"{path}'s seal cannot be read ({exc.strerror})"
    if len(seal) != 2 or seal[0] != "sha256" or seal[1] != content_digest(data):
        return (f"{path} was changed outside lanes-tui (its sha256 is not the one lanes-tui last wrote "
                f"in {seal_path(path)})")
    return None


def check_fix(lane_id: str) -> str:
    """The one fix of a changed packet or record: a check writes both again from what it finds."""
    return (f"`lanes-tui check {lane_id}` re-runs the gates and rewrites the packet and the record "
            "(look at `lanes-tui status " + lane_id + " --json` first if the record was changed)")
