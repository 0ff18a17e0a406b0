"""The output tails of the lanes next to the cursor, read ahead so a move shows its lane at once.

A lead walks the Lanes table with the arrow keys, one row at a time. Reading the newly selected
lane's tail only after the cursor's frame put a thread hop and a 64 KiB read between the key and
its output (B1, issue 15: the output's p95 was twice the cursor's). So once a lane's output is on
screen, the tails of the rows just above and below it are read in the background; when the cursor
lands on one, the Output pane shows it in the next frame and the engine streams the lane's output
from where that tail ended (`Engine.follow_output`), so nothing written since is missed. A tail the
engine cannot resume from (more than one read behind, or the file shrank) is not used: the lane's
tail is then loaded as before.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

__all__ = ["Tail", "TailPrefetch"]


@dataclass(frozen=True)
class Tail:
    """A lane's output text up to byte `end` of its log."""

    text: str
    end: int


class TailPrefetch:
    """Tails read ahead for the lanes around the selected one; each is used at most once."""

    def __init__(self, read: Callable[[str], Awaitable[tuple[str, int]]]) -> None:
        self._read = read
        self._tails: dict[str, Tail] = {}

    def take(self, lane_id: str) -> Tail | None:
        """The tail read ahead for this lane, if any; it is handed out once (it ages from now on)."""
        return self._tails.pop(lane_id, None)

    async def fill(self, lane_ids: Sequence[str]) -> None:
        """Read these lanes' tails afresh; tails of any other lane are dropped (the cursor left them)."""
        for lane_id in list(self._tails):
            if lane_id not in lane_ids:
                del self._tails[lane_id]
        for lane_id in lane_ids:
            try:
                text, end = await self._read(lane_id)
            except OSError:  # unreadable now: the lane's tail is loaded the usual way if it is selected
                continue
            self._tails[lane_id] = Tail(text, end)
