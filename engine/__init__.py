"""The lanes-tui engine: plain asyncio, no Textual or Rich.

Everything a lane needs to run headless lives here: config, worktrees, the detached supervisor, the
watchdog, the state on disk and the `Engine` the dashboard subscribes to.
"""
