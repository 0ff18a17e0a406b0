"""Output bytes to text without breaking a character that a read boundary cut in two.

An agent's output is read in chunks (64 KiB from `output.log`, whatever a pipe read returns), and a
chunk can end inside a multibyte character. Decoding each chunk on its own with ``errors="replace"``
turns both halves into U+FFFD. `Utf8Stream` keeps one incremental decoder per stream across reads,
so the bytes of an unfinished character wait for the next read, and says how many are waiting, so
a reader that reports byte offsets (the dashboard's output events) can report exact ones.
"""

from __future__ import annotations

import codecs


class Utf8Stream:
    """One stream's decoder: `feed` chunks in order, `reset` when the reader jumps elsewhere."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes) -> str:
        """The text of the characters this chunk completes; an unfinished one is kept for the next."""
        return self._decoder.decode(data)

    @property
    def pending(self) -> int:
        """How many bytes of an unfinished character are held back (0 to 3)."""
        return len(self._decoder.getstate()[0])

    def reset(self) -> None:
        """Forget held bytes: the next chunk does not follow the previous one (a skip, a truncation)."""
        self._decoder.reset()


def whole_chars_end(data: bytes) -> int:
    """Where the last complete character of `data` ends: `len(data)` unless it stops mid-character."""
    stream = Utf8Stream()
    stream.feed(data[-4:])
    return len(data) - stream.pending


def decode_span(data: bytes) -> tuple[str, int, int]:
    """A chunk read from anywhere in a stream: its text, and how many bytes were dropped at each end.

    Leading continuation bytes belong to a character that began before the chunk, trailing ones to
    a character not yet complete; both are left out rather than shown as U+FFFD.
    """
    head = 0
    while head < min(3, len(data)) and 0x80 <= data[head] <= 0xBF:
        head += 1
    end = whole_chars_end(data) if len(data) > head else len(data)
    return data[head:end].decode("utf-8", errors="replace"), head, len(data) - end
