"""Child processes: request → handle → outcome, stopped by escalation on their process group.

Owns: `process` (ProcessRequest / ProcessHandle / ProcessOutcome, new sessions, SIGINT → SIGTERM →
SIGKILL with a deadline per step, the child subreaper, process trees read from /proc), `sampler`
(one sample of a process tree: CPU seconds, RSS, the process set).
May import: `core`, psutil. Never imports state, config or anything about lanes.
"""
