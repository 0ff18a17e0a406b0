"""The lead's local copy of a Ray lane: its record, output, samples and packet, under `.lanes/state`.

A Ray lane's files live on its node. The dashboard, `status`, `wait`, `check` and `accept` read a
lane from the lead's disk, so the runner keeps a mirror there, in the very files a local lane has:
`lane.json` (through `LaneStore`, so every state change is also an event), `output.log`,
`samples.jsonl` and `packet.json`. Readers need no idea of a cluster.

The output sequence is the mirror's own size: the node's `output.log` and the mirror's are the same
bytes, so the byte offset the mirror has reached is where the next read from the node starts.
Replay after a restart of the dashboard is just continuing from the file's size, and an append only
happens at the offset it was read for (under a lock on the file), so two processes syncing at once
can neither duplicate nor skip a byte.

Beside the mirror, the rest of the lead's side that needs no cluster: `plan_launch` (a start
validated like `launch_lane`, into the mirror's record and the node's spec) and `SharedRemote` (the
lead's git with the shared remote: a lane's base pushed, its checkpoint found, its refs dropped).
This module never imports Ray: it is the part of the runner that can be tested without a cluster.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.atomic import PRIVATE_FILE, append_jsonl, read_json, write_json_atomic
from lanes_tui.engine.core.clock import Clock
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import lane_id_for, slugify, split_lane_id, validate_lane_id, validate_slug
from lanes_tui.engine.core.limits import check_prompt
from lanes_tui.engine.decisions.packet import write_packet
from lanes_tui.engine.git import worktrees
from lanes_tui.engine.git.commands import first_line, run_git_capped
from lanes_tui.engine.lanes.launcher import LaunchRequest
from lanes_tui.engine.lanes.load_guard import check_load_wording
from lanes_tui.engine.remote.spec import BASE_REF, WIP_REF, NodeLaneSpec
from lanes_tui.engine.state.model import STATES, LaneRecord, ProviderAttempt
from lanes_tui.engine.state.paths import StatePaths, repo_key
from lanes_tui.engine.state.store import LaneStore

__all__ = ["NODE_FIELDS", "LaneMirror", "SharedRemote", "node_id_of", "node_label", "plan_launch"]

#: The longest a push, fetch or ls-remote of the shared remote may take.
NETWORK_TIMEOUT_S = 600.0

#: What the node's record says better than the lead can: how the lane runs and where its files are
#: on the node. Never its pids (they mean nothing on this machine: a local check of them would judge
#: a live lane dead), never `repo` (the lead's repository, not the node's clone), `runner` or `node`.
NODE_FIELDS = ("result", "stall", "session_id", "governor", "review", "worktree", "worktree_root", "chain")


def node_label(hostname: str, node_id: str) -> str:
    """`hostname (node id)`: how `LaneRecord.node` names a cluster node (both: hostnames repeat)."""
    return f"{hostname} ({node_id})"


def node_id_of(label: str | None) -> str | None:
    """The Ray node id inside a `node_label`, or None."""
    if not label or not label.endswith(")") or " (" not in label:
        return None
    return label.rsplit(" (", 1)[1][:-1] or None


class LaneMirror:
    """The mirror of a repository's Ray lanes: one `LaneStore` plus the output and sample files."""

    def __init__(self, repo: Path, clock: Clock | None = None) -> None:
        self.paths = StatePaths(repo)
        self.store = LaneStore(self.paths, clock)

    # The record ---------------------------------------------------------------------------------
    def create(self, record: LaneRecord) -> None:
        """The lane's record before its actor exists: `run` refused later leaves nothing (see `remove`)."""
        self.paths.ensure()
        self.store.create(record)

    def read(self, lane_id: str) -> LaneRecord:
        return self.store.read(lane_id)

    def ray_lanes(self) -> list[LaneRecord]:
        """The readable records of lanes that run (or ran) on the cluster, oldest first."""
        return [record for record in self.store.all() if record.runner == "ray"]

    def from_node(self, lane_id: str, node_record: dict[str, Any], *, node: str | None = None) -> bool:
        """Copy what the node's record says into the mirror; True if the lane's state changed.

        The state goes through `LaneStore.transition` so the change is an event like any other; a
        node record that is not a lane record (an older node, a bug) changes nothing.
        """
        record = self.store.read(lane_id)
        state, reason = node_record.get("state"), node_record.get("state_reason")
        if state not in STATES or not isinstance(reason, str):
            return False
        before = (record.state, record.state_reason)
        changed = False
        for name in NODE_FIELDS:
            if name in node_record and getattr(record, name) != node_record[name]:
                setattr(record, name, node_record[name])
                changed = True
        tried = node_record.get("providers_tried")
        if isinstance(tried, list) and tried != [vars(p) for p in record.providers_tried]:
            with contextlib.suppress(TypeError):
                record.providers_tried = [ProviderAttempt(**item) for item in tried if isinstance(item, dict)]
                changed = True
        if node is not None and record.node != node:
            record.node, changed = node, True
        if (state, reason) != before:
            self.store.transition(record, state, reason, runner="ray", node=record.node)
            return bool(state != before[0])
        if changed:
            self.store.write(record)
        return False

    def mark(self, lane_id: str, state: str, reason: str) -> bool:
        """Set a state only the lead's side can know (`unreachable`, `lost`); True if it changed."""
        record = self.store.read(lane_id)
        if record.state == state and record.state_reason == reason:
            return False
        before = record.state
        self.store.transition(record, state, reason, runner="ray", node=record.node)
        return before != state

    def note(self, lane_id: str, text: str) -> None:
        """An event line for the lane's log (a fault seen, a node placed)."""
        self.store.event(lane_id, "notice", text=text)

    def write(self, record: LaneRecord) -> None:
        self.store.write(record)

    # What only the runner needs: `ray.json` -----------------------------------------------------
    def runner_info(self, lane_id: str) -> dict[str, Any]:
        """The lane's `ray.json`: the spec its node got (a later visit to the node re-opens the lane
        from it), the node's id and hostname, and `actor`: `live`, or `retired` once the lead let the
        actor go after the lane ended (not a fault: sync leaves such a lane alone). {} if none."""
        try:
            data = read_json(self._info_path(lane_id))
        except (FileNotFoundError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def set_runner_info(self, lane_id: str, **values: Any) -> dict[str, Any]:
        info = {**self.runner_info(lane_id), **values}
        write_json_atomic(self._info_path(lane_id), info)
        return info

    def _info_path(self, lane_id: str) -> Path:
        return self.paths.lane(lane_id).dir / "ray.json"

    def remove(self, lane_id: str) -> bool:
        """Drop the lane's mirror folder (discard, or a start that failed); True if there was one."""
        folder = self.paths.lane(lane_id).dir
        existed = folder.exists()
        shutil.rmtree(folder, ignore_errors=True)
        return existed

    # Output -------------------------------------------------------------------------------------
    def inbox(self, lane_id: str) -> Path:
        """The lane's folder in the lead's inbox: where its questions asked on the node are shown."""
        return self.paths.lane_inbox(lane_id)

    def seq(self, lane_id: str) -> int:
        """How many bytes of the node's output the mirror holds: where the next read starts."""
        try:
            return self.paths.lane(lane_id).output.stat().st_size
        except FileNotFoundError:
            return 0

    def append_output(self, lane_id: str, seq: int, data: bytes, next_seq: int) -> int:
        """Append the node's bytes `[seq, next_seq)`; returns the mirror's sequence afterwards.

        Written only when the mirror ends exactly at `seq` (another syncer may have got there first:
        then nothing is written and the caller reads on from the returned size). A node whose log no
        longer continues the mirror's (`next_seq` is not `seq + len(data)`: it started again from 0)
        is said in an event and the mirror starts again with it, so it never holds a splice of two logs.
        """
        path = self.paths.lane(lane_id).output
        with _locked_append(path) as fd:
            size = os.fstat(fd).st_size
            if size != seq:
                return size
            if next_seq != seq + len(data):
                os.ftruncate(fd, 0)
                self.note(lane_id, f"the node's output no longer continues the mirror at byte {seq}: "
                                   f"replayed from its start ({next_seq - len(data)})")
                if next_seq != len(data):
                    return 0
            if data:
                os.write(fd, data)
            return os.fstat(fd).st_size

    # Samples and packet -------------------------------------------------------------------------
    def add_sample(self, lane_id: str, sample: dict[str, Any] | None) -> bool:
        """Append the node's latest meters sample unless the mirror already has it; True if added."""
        if not sample:
            return False
        if self.store.last_sample(lane_id) == sample:
            return False
        append_jsonl(self.paths.lane(lane_id).samples, sample)
        return True

    def last_sample(self, lane_id: str) -> dict[str, Any] | None:
        return self.store.last_sample(lane_id)

    def write_packet(self, lane_id: str, packet: dict[str, Any]) -> None:
        """The packet the node's gates produced: `check`, `accept` and the Review tab read it here."""
        write_packet(self.paths.lane(lane_id), packet)


def plan_launch(repo: Path, config: Config, request: LaunchRequest, *, start_commit: str | None = None,
                base_sha: str | None = None, work_root: str | None = None) -> tuple[LaneRecord, NodeLaneSpec]:
    """A start checked as `launch_lane` checks it, before anything exists anywhere: the mirror's first
    record (`launching`, runner `ray`) and the spec its node gets. A relaunch passes the commit it
    continues from (`start_commit`) and the lane's original base (`base_sha`)."""
    chain = config.chain_for(request.task_type, request.lane)
    if not request.prompt.strip():
        raise LanesError("the prompt is empty", "give --prompt TEXT, --prompt-file F or --plan F --phase N")
    check_prompt(request.prompt)
    check_load_wording(request.prompt, allow_load=request.allow_load)
    remote = config.runner.remote.strip()
    if not remote:
        raise LanesError("[runner] remote is not set: a Ray lane has no way to its node and back",
                         'set remote = "URL or path every node can reach" (a bare repository)')
    slug = validate_slug(request.slug) if request.slug is not None else slugify(request.prompt)
    lane_id = lane_id_for(slug, request.attempt)
    if LaneStore(StatePaths(repo)).taken(lane_id):
        raise LanesError(f"lane {lane_id} already exists", "pick another --id, or `lanes-tui abandon` it")
    target = request.target or config.lanes.target_branch or worktrees.current_branch(repo)
    if target is None:
        raise LanesError("the repository has no branch checked out (detached HEAD)",
                         "check out the branch lanes should merge into, or set lanes.target_branch")
    base = base_sha or worktrees.rev_parse(repo, request.base or target)
    request = dataclasses.replace(request, slug=slug)
    record = LaneRecord(
        id=lane_id, slug=slug, attempt=request.attempt, task_type=request.task_type, prompt=request.prompt,
        chain=chain, repo=str(repo), worktree="", branch=f"lane/{lane_id}", base_sha=base, target_branch=target,
        state="launching", state_reason="placing it on a cluster node", allow_load=request.allow_load,
        raw=request.raw, caps=dict(request.caps), scope=list(request.scope), plan=request.plan,
        ticket=request.ticket, model=request.model, tier=request.tier, group=request.group,
        resume_from=request.resume_from, resume_provider=request.resume_provider,
        resume_session=request.resume_session, resume_fresh=request.resume_fresh, runner="ray")
    try:
        config_text = StatePaths(repo).config.read_text(encoding="utf-8")
    except FileNotFoundError:
        config_text = ""
    spec = NodeLaneSpec(lane_id=lane_id, repo_key=repo_key(repo), remote=remote, start_commit=start_commit or base,
                        base_sha=base, target_branch=target, config_text=config_text,
                        request=dataclasses.asdict(request), work_root=work_root,
                        checkpoint_s=config.runner.checkpoint_s)
    return record, spec


def relaunch_request(record: LaneRecord, taken: list[str]) -> LaunchRequest:
    """The next attempt of a lane as `recover --relaunch` makes it for a local one: the same task and
    chain, resuming its session, as the attempt after the highest of its slug in `taken` (lane ids)."""
    attempts = [split_lane_id(lane_id)[1] for lane_id in taken if split_lane_id(lane_id)[0] == record.slug]
    return LaunchRequest(
        prompt=record.prompt, task_type=record.task_type, slug=record.slug,
        attempt=max([record.attempt, *attempts]) + 1, lane=record.chain[0] if record.chain else None,
        allow_load=record.allow_load, raw=record.raw, caps=dict(record.caps), scope=tuple(record.scope),
        plan=record.plan, ticket=record.ticket, target=record.target_branch, model=record.model, tier=record.tier,
        group=record.group, resume_from=record.id, resume_provider=record.provider, resume_session=record.session_id)


class SharedRemote:
    """The lead's git with `[runner] remote`: argv only, every call capped (a remote that stops
    answering is a LanesError after `NETWORK_TIMEOUT_S`, never a hung dashboard)."""

    def __init__(self, repo: Path, remote: str) -> None:
        self.repo = repo
        self.remote = remote

    def git(self, *args: str) -> str:
        """`git ARGS` in the lead's repository; its stdout, or a LanesError naming the remote."""
        proc = run_git_capped(self.repo, *args, timeout_s=NETWORK_TIMEOUT_S)
        if proc.returncode != 0:
            raise LanesError(f"git {args[0]} with the shared remote {self.remote!r} failed: {first_line(proc.stderr)}",
                             "check [runner] remote in .lanes/config.toml: a bare repository this machine and "
                             "every node can reach and push to")
        return os.fsdecode(proc.stdout)

    def refs(self, *names: str) -> dict[str, str]:
        """{ref: commit} of those of `names` the remote has."""
        listed = self.git("ls-remote", "--", self.remote, *names)
        found: dict[str, str] = {}
        for line in listed.splitlines():
            commit, _, ref = line.partition("\t")
            found[ref] = commit
        return {name: found[name] for name in names if name in found}

    def push_base(self, lane_id: str, commit: str) -> None:
        """The commit a lane's node starts from, as `refs/lanes-base/<id>` (forced: a discarded lane's
        leftover ref of the same id is not the new lane's)."""
        self.git("push", "--quiet", "--no-verify", "--", self.remote, f"+{commit}:{BASE_REF.format(lane_id=lane_id)}")

    def last_work(self, lane_id: str) -> tuple[str, str] | None:
        """(ref, commit) a relaunch continues from: the lane's checkpoint, else its published branch;
        fetched into the lead's repository (its objects) so it can be pushed as the next base."""
        wip, branch = WIP_REF.format(lane_id=validate_lane_id(lane_id)), f"refs/heads/lane/{lane_id}"
        found = self.refs(wip, branch)
        for ref in (wip, branch):
            if ref in found:
                self.git("fetch", "--quiet", "--no-tags", "--", self.remote, found[ref])
                return ref, found[ref]
        return None

    def fetch_branch(self, lane_id: str) -> None:
        """`lane/<id>` from the remote into the lead's repository (what accept fast-forwards to)."""
        ref = f"refs/heads/lane/{validate_lane_id(lane_id)}"
        self.git("fetch", "--quiet", "--no-tags", "--", self.remote, f"+{ref}:{ref}")

    def drop_lane(self, lane_id: str) -> list[str]:
        """The lane's base, checkpoint and branch on the remote (those that exist); what was dropped."""
        refs = self.refs(BASE_REF.format(lane_id=lane_id), WIP_REF.format(lane_id=lane_id),
                         f"refs/heads/lane/{lane_id}")
        if refs:
            self.git("push", "--quiet", "--no-verify", "--", self.remote, *(f":{ref}" for ref in refs))
        return [f"{ref} on {self.remote}" for ref in refs]


@contextlib.contextmanager
def _locked_append(path: Path) -> Iterator[int]:
    """The file opened for appending under an exclusive lock (released with the descriptor)."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, PRIVATE_FILE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)
