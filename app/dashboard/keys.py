"""The dashboard's keys as data: one table feeds the bindings, the footer, `?` help and the palette.

A lead remaps any of them by id in `.lanes/config.toml` (`[keys] accept = "A"`), applied with
`App.set_keymap`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Textual is loaded by `bindings()` alone: `lanes-tui help KEYS` reads this table without it
    from textual.binding import Binding


@dataclass(frozen=True)
class Key:
    id: str
    key: str
    action: str
    description: str
    help: str
    show: bool = True
    priority: bool = False


KEYS: tuple[Key, ...] = (
    Key("accept", "a", "accept", "Accept", "accept the selected lane: gates, digest, commit, fast-forward, cleanup"),
    # Not in the footer, which is full: the Lanes pane's border and `?` name them.
    Key("accept_queue", "m", "accept_queue", "Queue",
        "accept every ready lane in the conflict radar's order (the order first, then y); skips a lane with "
        "nothing to merge, stops at the first other refusal",
        show=False),
    Key("conflicts", "c", "conflicts", "Conflicts",
        "the conflict radar: lanes whose trial merges conflict, and lanes that changed the same files", show=False),
    Key("abandon", "x", "abandon", "Abandon", "abandon the selected lane: stop it, remove its worktree and branch"),
    Key("recover", "r", "recover", "Recover", "recover a lost, stalled, rejected or failed lane (recheck / relaunch)"),
    Key("answer_yes", "y", "answer('yes')", "Yes", "answer the selected question yes (allow)"),
    Key("answer_no", "n", "answer('no')", "No", "answer the selected question no (deny)"),
    Key("answer_text", "enter", "answer_text", "Answer…", "answer the selected question with text or a choice",
        show=False, priority=True),  # before the tables' own enter; modals are other screens
    Key("start", "s", "start", "Start", "start a new lane (prompt, task type, provider)"),
    Key("kill", "k", "kill", "Kill", "stop the selected lane's agent and its whole process tree"),
    Key("gates", "g", "gates", "Gates", "run the selected lane's gates again and rewrite its packet"),
    Key("review", "R", "review", "Review",
        "review the selected lane (again) by a provider of another model family; the verdict lands in its packet",
        show=False),  # the footer is full: `?` and docs/dashboard.md name these two
    Key("verify", "v", "verify", "Verify",
        "record your own verification of the selected lane, with your evidence (the accept dialog shows it)",
        show=False),
    Key("diff", "d", "diff", "Diff", "show the selected lane's diff against its base"),
    Key("advance_plans", "P", "advance_plans", "Plan",
        "launch the open plans' tickets that can start now (blockers accepted, files free); the Plan tab lists them",
        show=False),  # the footer is full: the Plan pane's border and `?` name it
    Key("output", "o", "output", "Output", "show the selected lane's output", show=False),
    # Every tab has a key, in the tabs' order (`o` and `d` above stay); `?` names them.
    Key("tab_output", "1", "show_tab('tab-output')", "Output tab", "show the Output tab", show=False),
    Key("tab_diff", "2", "show_tab('tab-diff')", "Diff tab", "show the Diff tab (the selected lane's diff)",
        show=False),
    Key("tab_gates", "3", "show_tab('tab-gates')", "Gates tab",
        "show the Gates tab: the selected lane's last gate run (g runs them again)", show=False),
    Key("tab_worktrees", "4", "show_tab('tab-worktrees')", "Worktrees tab",
        "show the Worktrees tab: where each lane works, and how far it is from its target", show=False),
    Key("tab_plan", "5", "show_tab('tab-plan')", "Plan tab", "show the Plan tab: the open plans' tickets",
        show=False),
    # The side panes, which are tabs too below 120×32 (`compact.py`): the same keys in every layout.
    Key("tab_inbox", "6", "show_side('tab-inbox')", "Inbox",
        "the Inbox: its tab on a small terminal, the focus in its pane on a wide one", show=False),
    Key("tab_stalls", "7", "show_side('tab-stalls')", "Stalls",
        "the Stalls & caps pane: its tab on a small terminal, the focus in its pane on a wide one", show=False),
    Key("tab_meters", "8", "show_side('tab-meters')", "Meters",
        "the Meters pane: its tab on a small terminal, the focus in its pane on a wide one", show=False),
    Key("raw_output", "w", "toggle_raw", "Raw/readable",
        "Output pane: a structured (claude, codex, gemini) lane's raw JSON lines, or back to the readable "
        "conversation (the pane's title says which)", show=False),
    # Many lanes: order, find, and "allow always" (docs/dashboard.md); `?` names them.
    Key("sort_lanes", "O", "sort_lanes", "Sort",
        "sort the Lanes pane: oldest first, by attention (waiting and stalled first), newest first, by id",
        show=False),
    Key("filter_lanes", "slash", "filter_lanes", "Filter",
        "filter the Lanes pane by id, task, state or provider as you type; escape clears it", show=False),
    Key("allow_always", "Y", "allow_always", "Yes, always",
        "allow the selected tool permission prompt, and from now on its lane's requests the pattern matches",
        show=False),
    # The lead's hands on a running lane (docs/dashboard.md#attach-send-peek); `?` names them.
    Key("attach", "t", "attach", "Attach",
        "attach to the selected lane: its live terminal (the detach key, ctrl+], returns) or its conversation",
        show=False),
    Key("send_line", "T", "send_line", "Send", "send the selected lane one line without attaching (the marked "
        "lanes, when some are marked: one message to each, and those that cannot take it are named)", show=False),
    # Hunk comments and one message to several lanes (docs/dashboard.md#hunk-comments-and-broadcast).
    Key("hunk_next", "right_square_bracket", "hunk(1)", "Next hunk",
        "Diff tab: mark the next hunk of the selected lane's diff (opens the Diff tab)", show=False),
    Key("hunk_prev", "left_square_bracket", "hunk(-1)", "Previous hunk", "Diff tab: mark the previous hunk",
        show=False),
    Key("comment_hunk", "C", "comment_hunk", "Comment",
        "comment on the marked hunk: sent to the lane's running agent, or kept for its next attempt (relaunch) "
        "if it has ended", show=False),
    Key("mark_lane", "space", "mark_lane", "Mark", "mark or unmark the selected lane for T (one message to several)",
        show=False),
    Key("next_pane", "tab", "app.focus_next", "Next pane", "move to the next pane", show=False),
    Key("help", "question_mark", "help", "Help", "this help"),
    Key("quit", "q", "app.quit", "Quit", "quit the dashboard; lanes keep running", priority=True),
)


#: Every binding id a lead may remap: the dashboard's and the dialogs'.
KNOWN_KEY_IDS = frozenset({k.id for k in KEYS} | {
    "confirm.yes", "confirm.no", "confirm.cancel", "recover.recheck", "recover.relaunch", "recover.cancel",
    "recover.note", "answer.cancel", "reason.cancel", "start.submit", "start.cancel", "help.close", "conflicts.close",
    "filter.clear", "allow.cancel", "attach.detach", "conversation.close",
})


def bindings() -> list[Binding]:
    from textual.binding import Binding

    return [Binding(k.key, k.action, k.description, show=k.show, id=k.id, priority=k.priority) for k in KEYS]


def help_rows(keymap: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """(key, what it does) for the help screen, with the lead's remaps applied."""
    remap = keymap or {}
    return [(remap.get(k.id, k.key).replace("question_mark", "?").replace("slash", "/")
             .replace("right_square_bracket", "]").replace("left_square_bracket", "["), k.help) for k in KEYS]
