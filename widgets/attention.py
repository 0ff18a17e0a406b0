"""The attention bar: what needs the lead right now, in one line that gets loud when it is not zero.

The counts are one reactive tuple, so setting the same counts every tick neither repaints nor
re-toggles classes; the watcher flips CSS classes and the look lives in DEFAULT_CSS (stalls and plan
tickets to take over are `$error`, questions `$warning`, only ready lanes `$success`). A `takeover`
ticket (its attempts used up) has a count of its own rather than joining the stalls: the lead acts on
it in the Plan pane, not in Stalls & caps; it is left out of the line while it is zero. The git watch's
warnings (a target moved without an accept, a remote changed: `git.watch`) lead the line in `$error`
while there are any, the first one named and the others counted.

The oldest open question comes next, always, with the lane it blocks and how long it has waited
(`set_oldest`, every second from the screen's clock): on a small terminal the Inbox is a tab, and the
bar is then the one line that says who waits for the lead. It comes before the counts so that a cut
line (ellipsis at the right edge) loses the counts, which the header's title repeats, not the question.
"""

from __future__ import annotations

from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from lanes_tui.widgets import _format as fmt

Counts = tuple[int, int, int, int]
#: The question the bar names: (lane, age as shown, title); () when no question is open.
Oldest = tuple[str, ...]


class AttentionBar(Static):
    """`set_counts(questions, stalls, ready, takeover)`; shows "all quiet" when all are zero."""

    DEFAULT_CSS = """
    AttentionBar {
        height: 1;
        width: 1fr;
        padding: 0 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        background: $panel;
        color: $text-muted;
    }
    AttentionBar.-ready {
        background: $success 40%;
        color: $text;
    }
    AttentionBar.-questions {
        background: $warning;
        color: $text;
        text-style: bold;
    }
    AttentionBar.-stalls {
        background: $error;
        color: $text;
        text-style: bold;
    }
    """

    counts: reactive[Counts] = reactive((0, 0, 0, 0))
    """(open questions, stalls, ready lanes, plan tickets in `takeover`)."""
    warnings: reactive[tuple[str, ...]] = reactive(())
    """The git watch's warnings, newest set (`GitWatchWarned`)."""
    oldest: reactive[Oldest] = reactive(())
    """The oldest open question: (lane, age, title), or () (`set_oldest`)."""

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(_describe((0, 0, 0, 0)), name=name, id=id, classes=classes)

    def set_counts(self, questions: int, stalls: int, ready: int, takeover: int = 0) -> None:
        self.counts = (questions, stalls, ready, takeover)

    def set_oldest(self, lane: str | None, title: str = "", waited_s: float = 0.0) -> None:
        """Name the oldest open question, asked `waited_s` ago by `lane` (None: no question is open).
        The age is shown as the Inbox shows it, so the same text a second later repaints nothing."""
        self.oldest = (lane, fmt.elapsed(waited_s), title) if lane is not None else ()

    def validate_counts(self, counts: Counts) -> Counts:
        """Negative counts are a caller's bug; show them as zero rather than as "-1 questions"."""
        return (max(0, int(counts[0])), max(0, int(counts[1])), max(0, int(counts[2])), max(0, int(counts[3])))

    def watch_counts(self, counts: Counts) -> None:
        self._show()

    def watch_warnings(self, warnings: tuple[str, ...]) -> None:
        self._show()

    def watch_oldest(self, oldest: Oldest) -> None:
        self._show()

    def _show(self) -> None:
        questions, stalls, ready, takeover = self.counts
        urgent = stalls + takeover + len(self.warnings)  # all `$error`: the lead must act before anything else
        self.set_class(urgent > 0, "-stalls")
        self.set_class(questions > 0 and not urgent, "-questions")
        self.set_class(ready > 0 and not questions and not urgent, "-ready")
        described = _describe(self.counts)
        if self.oldest:
            lane, age, title = self.oldest
            described = Content(f"{lane} waits {age}: {fmt.truncate(title, 60)}  ·  ") + described
        if self.warnings:
            more = f" (+{len(self.warnings) - 1} more: lanes-tui status)" if len(self.warnings) > 1 else ""
            described = Content(f"git watch: {self.warnings[0]}{more}  ·  ") + described
        self.update(described)


def _describe(counts: Counts) -> Content:
    questions, stalls, ready, takeover = counts
    if not any(counts):
        return Content("all quiet: no questions, no stalls, nothing ready")
    parts = [
        _plural(questions, "open question"),
        _plural(stalls, "stall"),
        _plural(ready, "lane ready", "lanes ready"),
    ]
    if takeover:
        parts.append(_plural(takeover, "ticket to take over", "tickets to take over"))
    return Content("  ·  ".join(parts))


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"
