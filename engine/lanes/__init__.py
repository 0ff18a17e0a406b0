"""Running a lane: launching its supervisor, the agent run inside it, the watchdog, the runner.

Owns: `launcher` (create the worktree and record, spawn the detached supervisor, stop a lane),
`fork_client` (ask the repository's fork server for a supervisor, by socket: no supervisor code),
`agent_run` (one provider run: output, classification, the watchdog loop), `output_pump` (the
agent's output read in coalesced chunks, framed into lines), `cadence` (how long the pump rests:
longer while nobody holds a watch lease on the lane), `watchdog` (when a
silent lane is stalled), `classify` (exit → result), `inotify` (file activity), `watch_skip` (what the
watcher leaves out: git's ignored directories, `[lanes] watch_skip`; the watch limit), `env` (the lane's
allow-list environment and the `lanes-tui` shim), `runner` (the Runner protocol and the local runner),
`control_client` (the lead's side of a lane's control socket: attach, send, peek, watch; no supervisor code),
`load_guard` (refusing prompts that ask to load the machine), `preamble` (the contract every prompt
is wrapped in, with `.lanes/rules.md`), `heavy` (`lanes-tui lock`), `guard` (what may end or pause a
run besides its own exit), `caps` (a lane's caps and which mechanism enforces each), `governor` (the
caps at work, a cap that fired named), `spend` (spend caps that pause and ask), `parking` (quota
reset times, a parked lane's wait), `notify` (`[notify] command` run once per event, claimed by a
marker file so no two processes announce the same event), `worktree_ready` (`[lanes] copy`: the
lead's uncommitted files copied into a new worktree, excluded in that worktree only).
It starts the supervisor by module name, never by import; never textual or rich.
Its place in the layers: pyproject's `[tool.importlinter]` contracts (docs/layout.md).
"""
