"""Size limits on what the lead and agents hand in, and reads that cannot grow without bound.

A prompt is stored in `lane.json`, copied into the agent's argv or stdin and into every later
attempt's prompt; a config is parsed by every command and supervisor. Neither has a reason to be
large, and `--prompt-file /dev/zero` used to read until memory ran out. So every such read takes at
most the limit plus one byte (enough to know it is too big), and every refusal names the limit.
Questions have their own limit in the inbox (`inbox.files.MAX_BODY_BYTES`, 64 KB).
"""

from __future__ import annotations

import os
from pathlib import Path

from lanes_tui.engine.core.errors import LanesError

__all__ = ["MAX_CONFIG_BYTES", "MAX_PLAN_BYTES", "MAX_PROMPT_BYTES", "check_prompt", "describe_limit",
           "read_limited", "read_tail", "read_text_file"]

#: A lane's task, whichever way it comes (`--prompt`, `--prompt-file`, a plan phase, the start form).
MAX_PROMPT_BYTES = 1_000_000
#: `.lanes/config.toml`.
MAX_CONFIG_BYTES = 1_000_000
#: A plan file holds many phases; each phase is still a prompt of at most MAX_PROMPT_BYTES.
MAX_PLAN_BYTES = 8 * MAX_PROMPT_BYTES
SHORTEN = "shorten it, or put the detail in a file in the repository and point the prompt to that file"


def read_tail(path: Path, max_bytes: int) -> tuple[bytes, int]:
    """The last `max_bytes` of a file that may be any size, and the offset where they end, in one open
    (b"" and 0 for no file). A lane's output on a key press, and `peek`'s last lines."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            start = max(0, size - max_bytes)
            handle.seek(start)
            data = handle.read(max_bytes)
    except FileNotFoundError:
        return b"", 0
    return data, start + len(data)


def describe_limit(limit: int) -> str:
    """`1 MB (1,000,000 bytes)`: the unit the lead thinks in, and the exact figure."""
    return f"{limit / 1_000_000:g} MB ({limit:,} bytes)"


def read_limited(path: Path, limit: int, what: str, fix: str = "give a smaller file") -> bytes:
    """The bytes of `path`, reading at most `limit` + 1 of them; LanesError when there are more.

    OSError (a missing file included) propagates: each caller words that its own way.
    """
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise LanesError(f"{what} is larger than the limit of {describe_limit(limit)}", fix)
    return data


def read_text_file(path: Path, limit: int, what: str) -> str:
    """A UTF-8 text file of at most `limit` bytes, or one LanesError line saying what is wrong."""
    try:
        data = read_limited(path, limit, f"{what} {path}", SHORTEN)
    except OSError as exc:
        raise LanesError(f"cannot read {what} {path}: {exc.strerror or exc}", "give a readable text file") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LanesError(f"{what} {path} is not UTF-8 text (byte {exc.start} cannot be decoded)",
                         "give a text file saved as UTF-8") from None
    if "\x00" in text:
        raise LanesError(f"{what} {path} contains NUL bytes: it looks like a binary file", "give a text file")
    return text


def check_prompt(prompt: str, what: str = "the prompt") -> str:
    """`prompt` unchanged, or LanesError: larger than MAX_PROMPT_BYTES, not encodable, or with NUL bytes.

    A NUL byte cannot be passed in an argv, and a lone surrogate (undecodable bytes in a command
    line) cannot be written to the agent: both would fail later, inside the supervisor, where
    nobody reads the error.
    """
    try:
        size = len(prompt.encode("utf-8"))
    except UnicodeEncodeError:
        raise LanesError(f"{what} is not valid UTF-8 text", "give it as UTF-8 text") from None
    if size > MAX_PROMPT_BYTES:
        raise LanesError(f"{what} is {size:,} bytes, more than the limit of {describe_limit(MAX_PROMPT_BYTES)}",
                         SHORTEN)
    if "\x00" in prompt:
        raise LanesError(f"{what} contains a NUL byte", "give plain text")
    return prompt


def repository_file(path: Path, repo: Path, what: str, fix: str) -> Path:
    """`path` with every symlink resolved, or one LanesError line when that is outside `repo` or in its
    `.git` folder (issue 28).

    A prompt file is sent to a provider and a `[lanes] copy` file is handed to an agent: a link an agent
    planted (`task.md -> ~/.aws/credentials`) must not turn either into a way to read the lead's other
    files. The caller reads the returned path: the real one when a link was involved, so that link
    cannot be swapped between this check and the read.
    """
    real = Path(os.path.realpath(path))
    root = Path(os.path.realpath(repo))
    shown = str(path) if real == Path(os.path.abspath(path)) else f"{path} (a link to {real})"
    if real != root and root not in real.parents:
        raise LanesError(f"{what} {shown} is outside the repository {root}", fix)
    if (root / ".git") == real or (root / ".git") in real.parents:
        raise LanesError(f"{what} {shown} is inside the repository's .git folder", fix)
    return path if real == Path(os.path.abspath(path)) else real  # as given, so messages name it that way
