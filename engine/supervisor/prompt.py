"""The prompt a lane's agent receives, as the supervisor builds it for every run of the chain.

`lanes.preamble.agent_prompt` is pure (a leaf module the sim's parser test reads); this is the part
that reads: the repository's `.lanes/rules.md` and the lane's caps and wall-clock limit as the config
and the record resolve them, so the preamble can say them in numbers.
"""

from __future__ import annotations

from pathlib import Path

from lanes_tui.engine.config.settings import LanesSettings
from lanes_tui.engine.lanes.caps import lane_caps, lane_timeouts
from lanes_tui.engine.lanes.preamble import agent_prompt, read_rules
from lanes_tui.engine.state.model import LaneRecord

__all__ = ["lane_prompt"]


def lane_prompt(repo: Path, lanes: LanesSettings, record: LaneRecord, prompt: str) -> str:
    """`prompt` in the preamble with the rules and the lane's caps in numbers (LanesError: a bad cap);
    the prompt alone for a `--raw` lane."""
    return agent_prompt(prompt, None if record.raw else read_rules(repo), record.raw, lane_caps(lanes, record.caps),
                        lane_timeouts(lanes, record.caps).timeout_s)
