"""The dashboard's widgets: they are given data (status dicts, question dicts, samples, plans) and
never read files, spawn processes or call git; the App feeds them from the engine's events.

Every name is loaded on first use, as the engine's door does: the dashboard's first frame imports the
panes it draws, not the help screen (Markdown) or the dialogs (docs/benchmarks.md B7)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: public name -> the module under lanes_tui.widgets that defines it.
_EXPORTS: dict[str, str] = {
    "AcceptModal": "modals", "AllowChoice": "allow_modal", "AllowRuleModal": "allow_modal",
    "AttentionBar": "attention", "ConfirmModal": "modals", "ConflictsModal": "conflicts_modal", "DiffPane": "diff_pane",
    "GatesPane": "gates_pane", "HelpScreen": "help_screen", "InboxPane": "inbox_pane", "KeysFooter": "keys_footer",
    "LaneFilter": "lane_filter", "LanesTable": "lanes_table", "MetersPane": "meters_pane",
    "OutputPane": "output_pane", "PlanPane": "plan_pane", "ReasonModal": "modals",
    "RecoverChoice": "modals", "RecoverModal": "modals", "StallsPane": "stalls_pane",
    "StartLaneModal": "modals", "TextAnswerModal": "modals", "WorktreesPane": "worktrees_pane",
}

if TYPE_CHECKING:
    from lanes_tui.widgets.allow_modal import AllowChoice, AllowRuleModal
    from lanes_tui.widgets.attention import AttentionBar
    from lanes_tui.widgets.conflicts_modal import ConflictsModal
    from lanes_tui.widgets.diff_pane import DiffPane
    from lanes_tui.widgets.gates_pane import GatesPane
    from lanes_tui.widgets.help_screen import HelpScreen
    from lanes_tui.widgets.inbox_pane import InboxPane
    from lanes_tui.widgets.keys_footer import KeysFooter
    from lanes_tui.widgets.lane_filter import LaneFilter
    from lanes_tui.widgets.lanes_table import LanesTable
    from lanes_tui.widgets.meters_pane import MetersPane
    from lanes_tui.widgets.modals import (
        AcceptModal,
        ConfirmModal,
        ReasonModal,
        RecoverChoice,
        RecoverModal,
        StartLaneModal,
        TextAnswerModal,
    )
    from lanes_tui.widgets.output_pane import OutputPane
    from lanes_tui.widgets.plan_pane import PlanPane
    from lanes_tui.widgets.stalls_pane import StallsPane
    from lanes_tui.widgets.worktrees_pane import WorktreesPane

__all__ = [
    "AcceptModal",
    "AllowChoice",
    "AllowRuleModal",
    "AttentionBar",
    "ConfirmModal",
    "ConflictsModal",
    "DiffPane",
    "GatesPane",
    "HelpScreen",
    "InboxPane",
    "KeysFooter",
    "LaneFilter",
    "LanesTable",
    "MetersPane",
    "OutputPane",
    "PlanPane",
    "ReasonModal",
    "RecoverChoice",
    "RecoverModal",
    "StallsPane",
    "StartLaneModal",
    "TextAnswerModal",
    "WorktreesPane",
]


def __getattr__(name: str) -> Any:
    """Import the defining module on first use and cache the name here."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
