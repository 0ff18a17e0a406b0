"""Child processes: request → handle → outcome, stopped by escalation on their process group.

Owns: `process` (ProcessRequest / ProcessHandle / ProcessOutcome, new sessions, SIGINT → SIGTERM →
SIGKILL with a deadline per step, the child subreaper), `tree` (process identities and trees read
from /proc, processes found by their environment), `procfs` (one process's stat, statm and
cmdline read straight from /proc, so a sample needs no psutil), `cgroup` (each lane's own cgroup:
v2, v1 or an honest "none"), `gate_scope` (each check's gate cgroup, or its marker without one: nothing a
gate started outlives it), `sampler` (one sample of a process tree: CPU seconds, RSS, the
process set), `caps_cgroup` (the cpu / memory / pids controllers a lane's caps are written into,
v2 or v1), `pause` (freezing or SIGSTOPping a lane's tree while the lead decides), `reaper_shim`
(`python -m lanes_tui.engine.procs.reaper_shim -- ARGV`: a subreaper with PDEATHSIG above a Ray
lane's supervisor, so the actor's death takes the lane's whole tree with it; standard library only).
psutil is imported lazily: a supervisor never loads it. Never textual or rich.
Its place in the layers: pyproject's `[tool.importlinter]` contracts (docs/layout.md).
"""
