"""B3's floor: the least a Python process can spend reading a trickle the way a supervisor does.

    python -m tests.bench.b3_floor asyncio|selectors SECONDS [REST_S]

Starts the built-in sim agent printing 20 lines a second (as B3's printing lane) and reads its
stdout for SECONDS with the supervisor's rhythm (`output_pump.pump_fd`: read what is there, append
it to a log file, rest REST_S; wait on the descriptor only when nothing was there), either on an
asyncio event loop or on a bare `selectors` loop. B3 runs both beside the real supervisors, so the
issue's question, whether asyncio itself is the obstacle, is answered by figures from one window.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

from lanes_tui.engine.lanes.output_pump import REST_S

SIM = [sys.executable, "-m", "lanes_tui.engine.sim"]


def _agent() -> subprocess.Popen[bytes]:
    return subprocess.Popen(SIM, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)


def _selectors_loop(fd: int, log: int, seconds: float, rest_s: float) -> int:
    import selectors

    selector = selectors.DefaultSelector()
    end = time.monotonic() + seconds
    got = 0
    while time.monotonic() < end:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            selector.register(fd, selectors.EVENT_READ)
            selector.select(max(0.0, end - time.monotonic()))
            selector.unregister(fd)
            continue
        if not chunk:
            break
        got += os.write(log, chunk)
        time.sleep(rest_s)
    return got


def _asyncio_loop(fd: int, log: int, seconds: float, rest_s: float) -> int:
    import asyncio

    from lanes_tui.engine.lanes.output_pump import pump_fd

    got = [0]

    def on_chunk(chunk: bytes) -> None:
        got[0] += os.write(log, chunk)

    async def run() -> None:
        task = asyncio.create_task(pump_fd(fd, on_chunk=on_chunk, on_block=lambda block: None, rest_s=rest_s))
        await asyncio.wait({task}, timeout=seconds)
        task.cancel()

    asyncio.run(run())
    return got[0]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    kind, seconds = args[0], float(args[1])
    rest_s = float(args[2]) if len(args) > 2 else REST_S
    agent = _agent()
    assert agent.stdin is not None and agent.stdout is not None
    agent.stdin.write(f"print {int(seconds * 20) + 100} --rate 20\n".encode())
    agent.stdin.close()
    fd = agent.stdout.fileno()
    os.set_blocking(fd, False)
    with tempfile.TemporaryFile() as log:
        try:
            loop = _selectors_loop if kind == "selectors" else _asyncio_loop
            print(f"{kind}: read {loop(fd, log.fileno(), seconds, rest_s)} bytes")
        finally:
            agent.kill()
            agent.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
