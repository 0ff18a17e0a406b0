"""The supervisor as a process: its arguments, the detach handshake, logging, and the run on a loop.

Split from `supervisor.main` (the lane's story, `Supervisor`) because this is the process around it:
`python -m lanes_tui.engine.supervisor` calls `main`, which parses the launcher's three arguments,
detaches, becomes a child subreaper and runs `Supervisor.run` with the control socket beside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path

from lanes_tui.engine.core.atomic import write_json_atomic
from lanes_tui.engine.core.debug import report_modules_at_exit
from lanes_tui.engine.procs.process import process_create_time, set_child_subreaper
from lanes_tui.engine.state.paths import StatePaths
from lanes_tui.engine.supervisor.control import ControlServer
from lanes_tui.engine.supervisor.detach import detach, signal_ready
from lanes_tui.engine.supervisor.main import NO_SPACE, NOT_WRITABLE, SPACE_RESERVE, Supervisor

log = logging.getLogger("lanes_tui.supervisor")

USAGE = "usage: lanes-tui-supervisor --repo REPO --lane LANE [--detach]"


def parse_args(argv: list[str]) -> tuple[Path, str, bool] | str:
    """`--repo R --lane ID [--detach]` (also `--repo=R`), or the error to print.

    By hand, not argparse: the launcher is its only caller, and argparse with gettext is 0.4 MB of
    every lane's supervisor (B3, issue 15)."""
    values: dict[str, str] = {}
    detach_flag = False
    rest = list(argv)
    while rest:
        word = rest.pop(0)
        name, equals, value = word.partition("=")
        if word == "--detach":
            detach_flag = True
        elif name in ("--repo", "--lane"):
            if not equals:
                if not rest:
                    return f"{name} needs a value"
                value = rest.pop(0)
            values[name] = value
        else:
            return f"unknown argument {word!r}"
    missing = [name for name in ("--repo", "--lane") if not values.get(name)]
    if missing:
        return f"missing {' and '.join(missing)}"
    return Path(values["--repo"]), values["--lane"], detach_flag


def main(argv: list[str] | None = None) -> int:
    parsed = parse_args(sys.argv[1:] if argv is None else argv)
    if isinstance(parsed, str):
        print(f"{USAGE}\nlanes-tui-supervisor: error: {parsed}", file=sys.stderr)
        return 2
    repo, lane_id, detach_now = parsed
    if detach_now:
        detach()
    report_modules_at_exit("supervisor")
    paths = StatePaths(repo)
    logging.basicConfig(filename=str(paths.lane(lane_id).supervisor_log), level=logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    set_child_subreaper()
    return asyncio.run(_amain(repo, lane_id))


async def _amain(repo: Path, lane_id: str) -> int:
    supervisor = Supervisor(repo, lane_id)
    write_json_atomic(supervisor.lane.supervisor, {"pid": os.getpid(),
                                                   "create_time": process_create_time(os.getpid())})
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, supervisor.request_stop)
    supervisor.reserve_space()
    signal_ready()
    control = await ControlServer.open(supervisor)  # the lead's attach, send and peek (`supervisor.control`)
    try:
        return await supervisor.run()
    except OSError as exc:
        if exc.errno in NO_SPACE:
            return supervisor.out_of_space(exc)
        if exc.errno in NOT_WRITABLE:
            return supervisor.not_writable(exc)
        log.exception("supervisor failed")
        raise
    except Exception:
        log.exception("supervisor failed")
        raise
    finally:
        if control is not None:
            await control.close()
        with contextlib.suppress(OSError):
            (supervisor.lane.dir / SPACE_RESERVE).unlink()
