"""What the lead's machine sends a node to run one lane: plain data, JSON-able, no Ray.

The node trusts nothing else from the lead's disk: it clones `remote`, checks out `start_commit`
(the lane's base, or the checkpoint a relaunch continues from) and writes `config_text` (the lead's
`.lanes/config.toml`, minus what only makes sense on the lead's machine) into its clone.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class NodeLaneSpec:
    lane_id: str
    """The lane's id, as the lead's machine gave it out (`<slug>-a<attempt>`)."""
    repo_key: str
    """The lead's repository's key (`core.repo.repo_key`): names the actor and the node's folders."""
    remote: str
    """The shared git remote (URL or path) every node can reach: `[runner] remote`."""
    start_commit: str
    """The commit the lane's worktree starts from: its base, or the checkpoint a relaunch resumes."""
    base_sha: str
    """The lane's base (what accept compares against); equals `start_commit` except on a relaunch."""
    target_branch: str
    config_text: str
    """The lead's `.lanes/config.toml`; the node overrides `worktree_root` with its own folder."""
    request: dict[str, Any] = field(default_factory=dict)
    """`LaunchRequest` fields (prompt, slug, attempt, raw, caps, scope, model, resume_*, …)."""
    work_root: str | None = None
    """The node's folder for clones and worktrees; None: `$XDG_CACHE_HOME/lanes-tui/ray` (or ~/.cache)."""
    checkpoint_s: float = 300.0
    """How often the node pushes a WIP checkpoint of the worktree to `refs/lanes-wip/<id>`."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NodeLaneSpec:
        return cls(**data)


def actor_name(repo_key: str, lane_id: str) -> str:
    """The detached actor's name: one per lane of one repository, found again by it after a restart."""
    return f"lanes-tui:{repo_key}:{lane_id}"


#: The Ray namespace every lanes-tui actor lives in.
NAMESPACE = "lanes-tui"
#: Where a node pushes a lane's work-in-progress checkpoints (not a branch: nobody checks it out).
WIP_REF = "refs/lanes-wip/{lane_id}"
#: Where the lead pushes a lane's base so a node can fetch exactly that commit.
BASE_REF = "refs/lanes-base/{lane_id}"
