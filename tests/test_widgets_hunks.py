"""The Diff pane's hunk marks and the Lanes pane's lane marks (issue 32, item 7), as the lead sees them.

Snapshots of the real widgets at a fixed size (a marked hunk drawn reversed, the kept count in the
border; two marked lanes), and the pane's own moves between hunks. The flows that send a comment or
a message are in tests/test_hunk_comments.py, against real lanes.
"""

from __future__ import annotations

from typing import Any

from lanes_tui.widgets import DiffPane, LanesTable
from tests.snapshot_apps.widget_apps import DIFF, LANES, NOW, WidgetHost

SIZE = (120, 30)

TWO_HUNKS = DIFF + """diff --git a/test_calc.py b/test_calc.py
--- a/test_calc.py
+++ b/test_calc.py
@@ -10,2 +10,3 @@ def test_add():
     assert add(1, 2) == 3
+    assert add(-1, 1) == 0
"""


def _marked_hunk(pane: DiffPane) -> None:
    pane.show("fix-login-a1", TWO_HUNKS, kept=2)
    pane.move_hunk(1)
    pane.move_hunk(1)


def _marked_lanes(table: LanesTable) -> None:
    table.sync(LANES, NOW)
    table.toggle_mark("fix-login-a1")
    table.toggle_mark("quiet-one-a1")


def test_diff_with_a_marked_hunk_and_kept_comments(snap_compare: Any) -> None:
    assert snap_compare(WidgetHost(DiffPane(), _marked_hunk), terminal_size=SIZE)


def test_lanes_with_two_marked(snap_compare: Any) -> None:
    assert snap_compare(WidgetHost(LanesTable(), _marked_lanes), terminal_size=SIZE)


async def test_the_diff_pane_moves_between_hunks_and_keeps_the_mark_on_reload() -> None:
    app = WidgetHost(DiffPane(), lambda pane: pane.show("fix-login-a1", TWO_HUNKS))
    async with app.run_test(size=SIZE) as pilot:
        pane = app.widget
        assert isinstance(pane, DiffPane)
        assert [(h.file, h.header) for h in pane.hunks] == [
            ("calc.py", "@@ -1,2 +1,5 @@"), ("test_calc.py", "@@ -10,2 +10,3 @@ def test_add():")]
        assert pane.marked_hunk is None and pane.border_subtitle == "2 hunks: ] [ move, C comments"
        assert pane.move_hunk(-1) is pane.hunks[1], "the first move back marks the last hunk"
        assert pane.move_hunk(1) is pane.hunks[1], "the last hunk stays marked: no wrap-around"
        assert pane.move_hunk(-1) is pane.hunks[0]
        assert pane.border_subtitle == "hunk 1/2 calc.py"
        pane.show("fix-login-a1", TWO_HUNKS, kept=1)  # the same lane again (after a comment): still marked
        await pilot.pause()
        assert pane.marked_hunk is not None and pane.marked_hunk.file == "calc.py"
        assert pane.border_subtitle == "hunk 1/2 calc.py · 1 comment kept for the next attempt"
        pane.show("other-a1", TWO_HUNKS)
        assert pane.marked_hunk is None, "another lane's diff starts unmarked"
        pane.show("other-a1", "(no changes yet)")
        assert pane.hunks == [] and pane.move_hunk(1) is None and pane.border_subtitle == ""
