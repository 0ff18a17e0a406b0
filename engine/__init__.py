"""The lanes-tui engine: plain asyncio, no Textual or Rich — and its one door for the app.

The app (the dashboard and the command line) uses the engine only through the names listed in
`__all__` below: the `Engine` the dashboard subscribes to, `Decisions` (every decision, one method
each, called by the CLI and offloaded by the `Engine` alike), the command functions the CLI calls, and
the typed models, events and errors they exchange. Everything else lives in subpackages that say
what they own (each `__init__` docstring is its contract):

| subpackage    | owns                                                                    |
|---------------|-------------------------------------------------------------------------|
| `core`        | errors, clocks, ids, atomic writes, file-lock slots (no lanes-tui deps) |
| `state`       | the state folder: paths, lane records, events, status, meters files     |
| `config`      | `.lanes/config.toml`: typed settings, provider presets, the writer      |
| `git`         | git on the command line, worktrees, read-only repository views         |
| `procs`       | child processes: request → handle → outcome, process trees, samples      |
| `inbox`       | questions and answers as files                                          |
| `channels`    | how a supervisor reads each provider's stream and talks back             |
| `lanes`       | launching and running a lane: launcher, agent run, watchdog, runner     |
| `decisions`   | gates, packets, check, accept, abandon, recover, finish, reconcile      |
| `supervisor`  | the detached per-lane process (`python -m lanes_tui.engine.supervisor`) |
| `remote`      | lanes on a Ray cluster (the optional `[ray]` extra)                     |
| `sim`         | the simulated agent and the demo                                        |
| `plans`       | tasks from plan files                                                   |
| `live`        | the `Engine`: the watch loop and the event stream the dashboard reads   |

What may import what, here and in the app, is stated once: the import-linter contracts in
pyproject's `[tool.importlinter]` (`.ci/lint-imports` checks them; docs/layout.md explains). Every name here is
loaded lazily on first use, as Textual's `widgets/__init__.py` does: `lanes-tui ask` touches only
the inbox, and a supervisor that imports `lanes_tui.engine.supervisor` pays nothing for this door.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import …`: the sim agent, which loads this door, keeps to a tiny budget

#: public name -> the module (under lanes_tui.engine) that defines it, or "module:name" for a rename.
_EXPORTS: dict[str, str] = {
    # errors and clocks
    "LanesError": "core.errors", "ConfigError": "core.errors",
    "Clock": "core.clock", "RealClock": "core.clock", "report_modules_at_exit": "core.debug",
    # containment
    "detect_containment": "procs.cgroup:detect",
    "split_lane_id": "core.ids", "validate_lane_id": "core.ids", "strip_ansi": "core.ansi",
    "terminal_text": "core.ansi",
    "MAX_PROMPT_BYTES": "core.limits", "MAX_PLAN_BYTES": "core.limits", "check_prompt": "core.limits",
    "read_text_file": "core.limits", "describe_limit": "core.limits", "repository_file": "core.limits",
    # the state and its typed models
    "StatePaths": "state.paths",
    "LaneRecord": "state.model", "STATES": "state.model", "RESULTS": "state.model",
    "TASK_TYPES": "state.model", "LIVE_STATES": "state.model", "SETTLED_STATES": "state.model",
    "LaneStatus": "state.status", "LaneChanged": "state.events",
    "EngineEvent": "state.events", "EngineNotice": "state.events", "GitWatchChanged": "state.events",
    "LaneRemoved": "state.events", "MetersSampled": "state.events", "OutputAppended": "state.events",
    "QuestionsChanged": "state.events", "StallDetected": "state.events",
    "MeterSample": "state.samples", "SampledProc": "state.samples", "StallReport": "state.samples",
    # config
    "Config": "config.settings", "load_config": "config.settings",
    "write_default_config": "config.write", "set_config_value": "config.write",
    "set_user_config_value": "config.write",
    "read_layers": "config.layers", "PRESETS": "config.providers", "provider_family": "config.families",
    "gemini_setup_problems": "config.gemini_setup:problems", "is_gemini": "config.gemini_setup",
    "refused_providers": "config.provider_errors",
    # git
    "find_repo_root": "core.repo",
    # lanes
    "LaunchRequest": "lanes.launcher", "launch_lane": "lanes.launcher", "stop_lane": "lanes.launcher",
    "launch_group": "lanes.launcher",
    "supervisor_alive": "lanes.launcher", "passed_env_names": "lanes.env",
    "run_locked": "lanes.heavy", "describe_heavy_slots": "lanes.heavy:describe_slots",
    "describe_watch_limit": "lanes.watch_skip",
    "scope_problem": "plans.scope",
    "governor_summary": "lanes.caps", "check_capped": "lanes.caps", "lane_caps": "lanes.caps",
    "parse_bytes": "core.sizes", "parse_percent": "core.sizes",
    "phase_prompt": "plans.phases",
    # plans
    "TicketStatus": "plans.model", "load_plan": "plans.validate", "check_report": "plans.validate",
    "plan_waves": "plans.validate:waves",
    "plan_statuses": "plans.scheduler", "plan_names": "plans.state", "PlanSummary": "plans.commands",
    "plan_summaries": "plans.commands", "plan_log": "plans.commands", "launch_plan": "plans.commands",
    "amend_plan": "plans.commands", "cancel_plan": "plans.commands", "resume_plan": "plans.commands",
    "scorecard_prepare": "plans.scorecard:prepare", "scorecard_tasks": "plans.scorecard:builtin_tasks",
    "scorecard_record": "plans.scorecard_compare:record", "scorecard_baseline": "plans.scorecard_compare:save_baseline",
    "scorecard_compare": "plans.scorecard_compare:compare",
    # decisions: one method each on `Decisions`, the command line's and the dashboard's; typed results
    "Decisions": "decisions.api", "Packet": "decisions.results", "GateLine": "decisions.results",
    "ReviewVerdict": "decisions.results", "Verification": "decisions.results",
    "AcceptOutcome": "decisions.accept", "AcceptPlan": "decisions.accept_plan",
    "AbandonPlan": "decisions.abandon", "lane_diff": "decisions.lane_diff",
    "GateReport": "decisions.gates.log", "GateStepView": "decisions.gates.log",
    "duration_text": "decisions.gates.log", "gate_files_line": "decisions.gates.log",
    "describe_gates": "decisions.gates.plan",
    "gate_runner_problems": "decisions.gates.plan:runner_problems",
    "describe_review": "decisions.review.prompt", "describe_verification": "decisions.review.prompt",
    "review_detail": "decisions.review.prompt", "verification": "decisions.review.prompt",
    "FinishReport": "decisions.finish",
    "check_gh": "decisions.shipping", "open_pr": "decisions.shipping", "install_pre_push": "decisions.shipping",
    "programme_branch": "decisions.shipping", "push_branch": "git.upstream",
    "PullRequest": "decisions.pr_checks", "ChecksOutcome": "decisions.pr_checks", "find_pr": "decisions.pr_checks",
    "follow_checks": "decisions.pr_checks", "CiFindings": "decisions.ci_findings",
    "write_ci_findings": "decisions.ci_findings:write_findings",
    "git_watch_warnings": "git.watch", "confirm_git_watch": "git.watch", "accept_git_config": "git.watch",
    "push_url": "git.watch", "trusted_hooks": "git.watch",
    "Findings": "decisions.recover", "RECOVERABLE": "decisions.recover",
    "reconcile": "decisions.reconcile",
    "StuckAccept": "decisions.accept_journal", "stuck_accepts": "decisions.accept_journal",
    "QueuePlan": "decisions.queue", "QueueReport": "decisions.queue", "rank_group": "decisions.ranking",
    # the inbox
    "InboxStore": "inbox.store", "QuestionView": "inbox.view", "wait_for_answer": "inbox.store",
    "relayed_create": "inbox.store", "confined": "core.relay", "describe_confinement": "lanes.confine:describe_here",
    "QUESTION_STATES": "inbox.files:STATES", "validate_qid": "inbox.files",
    # the live engine and its queries
    "Engine": "live.engine", "FirstLook": "live.first_look", "first_look": "live.first_look",
    "lane_statuses": "live.queries", "read_lane": "live.queries", "lane_settled": "live.queries",
    "group_members": "live.queries", "lanes_needing_lead": "live.queries", "NEEDS_LEAD_STATES": "live.queries",
    "StopReport": "decisions.stop", "stop_lanes": "decisions.stop", "live_lane_ids": "decisions.stop",
    # the lead's hands on a running lane: the control socket's client (`supervisor.control`)
    "Turn": "channels.transcript", "conversation": "lanes.control_client",
    "ReadableStream": "channels.readable", "readable_lines": "channels.readable",
    "lane_hands": "lanes.control_client", "open_attach": "lanes.control_client",
    "peek_output": "lanes.control_client", "peek_screen": "lanes.control_client",
    "send_to_lane": "lanes.control_client",
    # the lead's hunk comments and one message to several lanes
    "HunkComment": "state.comments", "new_comment": "state.comments", "Broadcast": "decisions.comment",
    "CommentOutcome": "decisions.comment", "comment_on_lane": "decisions.comment",
    "kept_comments": "decisions.comment", "running_lanes": "decisions.comment", "send_to_lanes": "decisions.comment",
    "Hunk": "core.hunks", "diff_hunks": "core.hunks", "hunk_at": "core.hunks",
    # the demo
    "Demo": "sim.demo", "build_demo": "sim.demo", "start_demo_lanes": "sim.demo",
}

if TYPE_CHECKING:  # the same names, eagerly, for mypy and editors (kept equal by a test)
    from typing import Any

    from lanes_tui.engine.channels.readable import ReadableStream, readable_lines
    from lanes_tui.engine.channels.transcript import Turn
    from lanes_tui.engine.config.families import provider_family
    from lanes_tui.engine.config.gemini_setup import is_gemini
    from lanes_tui.engine.config.gemini_setup import problems as gemini_setup_problems
    from lanes_tui.engine.config.layers import read_layers
    from lanes_tui.engine.config.provider_errors import refused_providers
    from lanes_tui.engine.config.providers import PRESETS
    from lanes_tui.engine.config.settings import Config, load_config
    from lanes_tui.engine.config.write import set_config_value, set_user_config_value, write_default_config
    from lanes_tui.engine.core.ansi import strip_ansi, terminal_text
    from lanes_tui.engine.core.clock import Clock, RealClock
    from lanes_tui.engine.core.debug import report_modules_at_exit
    from lanes_tui.engine.core.errors import ConfigError, LanesError
    from lanes_tui.engine.core.hunks import Hunk, diff_hunks, hunk_at
    from lanes_tui.engine.core.ids import split_lane_id, validate_lane_id
    from lanes_tui.engine.core.limits import (
        MAX_PLAN_BYTES,
        MAX_PROMPT_BYTES,
        check_prompt,
        describe_limit,
        read_text_file,
        repository_file,
    )
    from lanes_tui.engine.core.relay import confined
    from lanes_tui.engine.core.repo import find_repo_root
    from lanes_tui.engine.core.sizes import parse_bytes, parse_percent
    from lanes_tui.engine.decisions.abandon import AbandonPlan
    from lanes_tui.engine.decisions.accept import AcceptOutcome
    from lanes_tui.engine.decisions.accept_journal import StuckAccept, stuck_accepts
    from lanes_tui.engine.decisions.accept_plan import AcceptPlan
    from lanes_tui.engine.decisions.api import Decisions
    from lanes_tui.engine.decisions.ci_findings import CiFindings
    from lanes_tui.engine.decisions.ci_findings import write_findings as write_ci_findings
    from lanes_tui.engine.decisions.comment import (
        Broadcast,
        CommentOutcome,
        comment_on_lane,
        kept_comments,
        running_lanes,
        send_to_lanes,
    )
    from lanes_tui.engine.decisions.finish import FinishReport
    from lanes_tui.engine.decisions.gates.log import GateReport, GateStepView, duration_text, gate_files_line
    from lanes_tui.engine.decisions.gates.plan import describe_gates
    from lanes_tui.engine.decisions.gates.plan import runner_problems as gate_runner_problems
    from lanes_tui.engine.decisions.lane_diff import lane_diff
    from lanes_tui.engine.decisions.pr_checks import ChecksOutcome, PullRequest, find_pr, follow_checks
    from lanes_tui.engine.decisions.queue import QueuePlan, QueueReport
    from lanes_tui.engine.decisions.ranking import rank_group
    from lanes_tui.engine.decisions.reconcile import reconcile
    from lanes_tui.engine.decisions.recover import RECOVERABLE, Findings
    from lanes_tui.engine.decisions.results import GateLine, Packet, ReviewVerdict, Verification
    from lanes_tui.engine.decisions.review.prompt import (
        describe_review,
        describe_verification,
        review_detail,
        verification,
    )
    from lanes_tui.engine.decisions.shipping import check_gh, install_pre_push, open_pr, programme_branch
    from lanes_tui.engine.decisions.stop import StopReport, live_lane_ids, stop_lanes
    from lanes_tui.engine.git.upstream import push_branch
    from lanes_tui.engine.git.watch import (
        accept_git_config,
        confirm_git_watch,
        git_watch_warnings,
        push_url,
        trusted_hooks,
    )
    from lanes_tui.engine.inbox.files import STATES as QUESTION_STATES
    from lanes_tui.engine.inbox.files import validate_qid
    from lanes_tui.engine.inbox.store import InboxStore, relayed_create, wait_for_answer
    from lanes_tui.engine.inbox.view import QuestionView
    from lanes_tui.engine.lanes.caps import check_capped, governor_summary, lane_caps
    from lanes_tui.engine.lanes.confine import describe_here as describe_confinement
    from lanes_tui.engine.lanes.control_client import (
        conversation,
        lane_hands,
        open_attach,
        peek_output,
        peek_screen,
        send_to_lane,
    )
    from lanes_tui.engine.lanes.env import passed_env_names
    from lanes_tui.engine.lanes.heavy import describe_slots as describe_heavy_slots
    from lanes_tui.engine.lanes.heavy import run_locked
    from lanes_tui.engine.lanes.launcher import LaunchRequest, launch_group, launch_lane, stop_lane, supervisor_alive
    from lanes_tui.engine.lanes.watch_skip import describe_watch_limit
    from lanes_tui.engine.live.engine import Engine
    from lanes_tui.engine.live.first_look import FirstLook, first_look
    from lanes_tui.engine.live.queries import (
        NEEDS_LEAD_STATES,
        group_members,
        lane_settled,
        lane_statuses,
        lanes_needing_lead,
        read_lane,
    )
    from lanes_tui.engine.plans.commands import (
        PlanSummary,
        amend_plan,
        cancel_plan,
        launch_plan,
        plan_log,
        plan_summaries,
        resume_plan,
    )
    from lanes_tui.engine.plans.model import TicketStatus
    from lanes_tui.engine.plans.phases import phase_prompt
    from lanes_tui.engine.plans.scheduler import plan_statuses
    from lanes_tui.engine.plans.scope import scope_problem
    from lanes_tui.engine.plans.scorecard import builtin_tasks as scorecard_tasks
    from lanes_tui.engine.plans.scorecard import prepare as scorecard_prepare
    from lanes_tui.engine.plans.scorecard_compare import compare as scorecard_compare
    from lanes_tui.engine.plans.scorecard_compare import record as scorecard_record
    from lanes_tui.engine.plans.scorecard_compare import save_baseline as scorecard_baseline
    from lanes_tui.engine.plans.state import plan_names
    from lanes_tui.engine.plans.validate import check_report, load_plan
    from lanes_tui.engine.plans.validate import waves as plan_waves
    from lanes_tui.engine.procs.cgroup import detect as detect_containment
    from lanes_tui.engine.sim.demo import Demo, build_demo, start_demo_lanes
    from lanes_tui.engine.state.comments import HunkComment, new_comment
    from lanes_tui.engine.state.events import (
        EngineEvent,
        EngineNotice,
        GitWatchChanged,
        LaneChanged,
        LaneRemoved,
        MetersSampled,
        OutputAppended,
        QuestionsChanged,
        StallDetected,
    )
    from lanes_tui.engine.state.model import LIVE_STATES, RESULTS, SETTLED_STATES, STATES, TASK_TYPES, LaneRecord
    from lanes_tui.engine.state.paths import StatePaths
    from lanes_tui.engine.state.samples import MeterSample, SampledProc, StallReport
    from lanes_tui.engine.state.status import LaneStatus

__all__ = [  # the door's names, sorted; the same as `_EXPORTS` and the TYPE_CHECKING imports (test_layout)
    "LIVE_STATES", "MAX_PLAN_BYTES", "MAX_PROMPT_BYTES", "NEEDS_LEAD_STATES", "PRESETS", "QUESTION_STATES",
    "RECOVERABLE", "RESULTS", "SETTLED_STATES", "STATES", "TASK_TYPES", "AbandonPlan", "AcceptOutcome",
    "AcceptPlan", "Broadcast", "ChecksOutcome", "CiFindings", "Clock", "CommentOutcome", "Config", "ConfigError",
    "Decisions", "Demo", "Engine",
    "EngineEvent", "EngineNotice", "Findings", "FinishReport", "FirstLook", "GateLine", "GateReport", "GateStepView",
    "GitWatchChanged", "Hunk", "HunkComment", "InboxStore", "LaneChanged", "LaneRecord", "LaneRemoved", "LaneStatus",
    "LanesError",
    "LaunchRequest", "MeterSample", "MetersSampled", "OutputAppended", "Packet", "PlanSummary", "PullRequest",
    "QuestionView", "QuestionsChanged", "QueuePlan", "QueueReport", "ReadableStream", "RealClock", "ReviewVerdict",
    "SampledProc", "StallDetected", "StallReport",
    "StatePaths", "StopReport", "StuckAccept", "TicketStatus", "Turn", "Verification", "accept_git_config",
    "amend_plan", "build_demo", "cancel_plan", "check_capped", "check_gh", "check_prompt", "check_report",
    "comment_on_lane",
    "confined", "confirm_git_watch", "conversation", "describe_confinement", "describe_gates",
    "describe_heavy_slots", "describe_limit", "describe_review", "describe_verification", "describe_watch_limit",
    "detect_containment", "diff_hunks", "duration_text", "find_pr", "find_repo_root", "first_look", "follow_checks",
    "gate_files_line",
    "gate_runner_problems", "gemini_setup_problems", "git_watch_warnings", "governor_summary", "group_members",
    "hunk_at",
    "install_pre_push", "is_gemini", "kept_comments", "lane_caps", "lane_diff", "lane_hands", "lane_settled",
    "lane_statuses",
    "lanes_needing_lead", "launch_group", "launch_lane", "launch_plan", "live_lane_ids", "load_config", "load_plan",
    "new_comment",
    "open_attach", "open_pr", "parse_bytes", "parse_percent", "passed_env_names", "peek_output", "peek_screen",
    "phase_prompt", "plan_log", "plan_names", "plan_statuses", "plan_summaries", "plan_waves", "programme_branch",
    "provider_family", "push_branch", "push_url", "rank_group", "read_lane", "read_layers", "read_text_file",
    "readable_lines", "reconcile", "refused_providers", "relayed_create", "report_modules_at_exit",
    "repository_file", "resume_plan", "review_detail", "run_locked", "running_lanes", "scope_problem",
    "scorecard_baseline", "scorecard_compare", "scorecard_prepare", "scorecard_record", "scorecard_tasks",
    "send_to_lane", "send_to_lanes", "set_config_value", "set_user_config_value", "split_lane_id",
    "start_demo_lanes", "stop_lane", "stop_lanes", "strip_ansi",
    "stuck_accepts", "supervisor_alive", "terminal_text", "trusted_hooks", "validate_lane_id", "validate_qid",
    "verification", "wait_for_answer", "write_ci_findings", "write_default_config",
]


def __getattr__(name: str) -> Any:
    """Import the defining module on first use and cache the name here."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    module, _, attr = module.partition(":")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attr or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
