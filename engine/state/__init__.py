"""The state folder and what lives in it: `.lanes/state/lanes/<id>/` and the typed views of it.

Owns: `paths` (where every state file is, derived from the repository and the lane id), `model` (the
lane record, state and result names), `store` (lane.json written atomically, events.jsonl appended,
the per-lane operation lock), `record_cache` (every record, re-read only when its file changed),
`status` (the typed `LaneStatus` of `status --json` and the dashboard),
`events` (the frozen events the engine streams), `samples` (what the watchdog writes, typed once:
`MeterSample`s of samples.jsonl and the `StallReport`), `meters` (tokens and cost in meters.json),
`context` (how full an agent's context window is: the meter's window table and its typed reading),
`lock_events` (the `lock-*` events an agent's `lanes-tui lock` appends to its lane, and the wait and
counts read back from them), `allow` (the lead's "allow always" rules for a lane's permission
prompts, in `allow.json`), `comments` (the lead's hunk comments kept for a lane's next attempt, in
`comments.json`), `seals` (the sha256 of `lane.json`, `packet.json` and `receipt.json` as
lanes-tui last wrote them, outside the lane's folder: a record changed behind its back is refused).
Never imports a third-party package, textual or rich; of the engine, only `core` and the inbox's
`QuestionView` (which `events` carries).
Its place in the layers: pyproject's `[tool.importlinter]` contracts (docs/layout.md).
"""
