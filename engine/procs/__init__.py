"""Child processes: request → handle → outcome, stopped by escalation on their process group.

Owns: `process` (ProcessRequest / ProcessHandle / ProcessOutcome, new sessions, SIGINT → SIGTERM →
SIGKILL with a deadline per step, the child subreaper), `tree` (process identities and trees read
from /proc, processes found by their environment), `cgroup` (each lane's own cgroup: v2, v1 or an
honest "none"), `sampler` (one sample of a process tree: CPU seconds, RSS, the process set).
May import: `core`, psutil. Never imports state, config or anything about lanes.
"""
