"""The live `Engine` the dashboard talks to: the watch loop, the event stream, the commands, queries.

Owns: `engine` (watches the state folder, streams typed events, offers the decisions of
`decisions.api`; composed of the parts below, each built with what it uses), `watch` (the lane scan:
what changed in a lane's files, which lanes' output is followed), `radar_watch` (the conflict radar
the scan reads), `schedule` (which lanes a tick scans, when reconcile is due), `remote_tick` (a remote
runner's mirror), `watch_lease` (the followed lane's supervisor told to read it at the live pace),
`git_watch_tick` (the git watch's warnings), `inbox_watch` (the inbox's questions, reread when
inotify wakes it), `lane_inotify` (which lanes changed, told by inotify),
`liveness` (pidfds on the supervisors: when reconcile is needed), `machine` (machine meters in one
sweep), `queries` (lane statuses and records for the command line), `switch_interval` (the
interpreter's thread switch interval while an engine runs: its threads hold the screen's loop up less),
`first_look` (the lanes and the inbox as on disk, for the dashboard's first frame before this package's
`engine` is even imported).
Never textual or rich: the app turns these events into Textual messages in `app/dashboard/bridge.py`.
Its place in the layers: pyproject's `[tool.importlinter]` contracts (docs/layout.md).
"""
