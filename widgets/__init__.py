"""The dashboard's widgets: they are given data (status dicts, question dicts, samples, plans) and
never read files, spawn processes or call git; the App feeds them from the engine's events."""

from __future__ import annotations

from lanes_tui.widgets.allow_modal import AllowChoice, AllowRuleModal
from lanes_tui.widgets.attention import AttentionBar
from lanes_tui.widgets.diff_pane import DiffPane
from lanes_tui.widgets.gates_pane import GatesPane
from lanes_tui.widgets.help_screen import HelpScreen
from lanes_tui.widgets.inbox_pane import InboxPane
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
    "DiffPane",
    "GatesPane",
    "HelpScreen",
    "InboxPane",
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
