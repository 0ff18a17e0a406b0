"""Lanes on other machines: the optional Ray runner (`[runner] kind = "ray"`, the `[ray]` extra).

Owns: `spec` (what the lead's machine sends a node to run one lane: JSON-able, no Ray), `node_lane`
(the node's side: a clone of the shared remote with the lead's config, the ordinary lane code and
supervisor in it, run under the reaper shim so nothing outlives the actor; output, meters, send, watch,
gates, publish and checkpoints answered from there; no Ray), `node_git` (the node's folders, its
shared mirror of the remote under an flock, the lane's clone, checkpoints through a temporary index,
pushes; no Ray), `ray_runner`, `ray_actors`, `ray_ends` and `ray_doctor` (the lead's side: one named, detached
actor per lane, placed by the `lane_slot` resource, with the faults of a cluster mapped to lane
states; the only modules that import ray), `mirror` (the lead's local copy of a
remote lane's record, output and samples, so the dashboard and the command line read a Ray lane
exactly as they read a local one).
Its place in the layers: pyproject's `[tool.importlinter]` contracts (docs/layout.md).
`inbox_relay` uses the inbox's own file-name pattern (one pattern, checked on both sides).
Nothing outside this package imports `ray_runner` except `decisions.runners.make_runner` (the
layers' one allowed exception), and only when the config asks for it: without the extra, lanes-tui
never imports a Ray module.
"""
