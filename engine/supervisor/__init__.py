"""The detached per-lane supervisor process: `python -m lanes_tui.engine.supervisor --repo R --lane ID`.

Owns: `main` (the Supervisor: queue slot, provider chain, channels, meters, the receipt), `entry`
(the process around it: arguments, detach, logging, the loop), `fork_server` (one warm interpreter per
repository that forks its lanes' supervisors, so they share its pages; `lanes.fork_client` asks it),
`after_run` (the gates, then the review by another model family, so the lane ends ready or
rejected with no lead around), `containment` (the lane's cgroup and its caps, made and undone),
`setup` (`[lanes] setup` steps run before the agent, under its caps), `state_faults` (the lane
ended FAILED-RESOURCE when its state cannot be written: a full disk, a refused write), `budget` (the spend
guard, quota parking), `detach` (the start handshake with the launcher), `resume` (a relaunched lane
continuing its provider's own session, or starting fresh and saying why), `control` (the lane's control
socket: the lead's attach, send and peek), `viewers` (what those do to the running agent: type a
message, show the screen, let viewers in); the lead's side of the socket is `lanes.control_client`.
It lives as long as its
agent, so it loads only what a lane runs: never tomlkit (the config writer), GitPython, textual or
rich, and only the channel its provider uses (a test checks `sys.modules` of a real supervisor).
Its place in the layers: pyproject's `[tool.importlinter]` contracts (docs/layout.md).
"""
