"""Inbox latency: from a question file appearing to the engine's QuestionsChanged event (target 100 ms).

The engine watches the inbox folder with inotify; its polling tick is set to a minute here so only
the inotify path can deliver in time.

    python -m tests.bench.inbox_latency [--questions 50]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from lanes_tui.engine.inbox.store import InboxStore
from lanes_tui.engine.live.engine import Engine
from lanes_tui.engine.state.events import QuestionsChanged
from tests.bench.env import machine_info
from tests.bench.report import command_line, markdown, percentile, table, write_json

HEADERS = ("questions", "p50 ms", "p95 ms", "max ms")


async def measure(count: int) -> list[float]:
    with tempfile.TemporaryDirectory(prefix="lanes-bench-inbox-") as tmp:
        repo = Path(tmp)
        (repo / ".lanes").mkdir()
        (repo / ".lanes/config.toml").write_text(f'[lanes]\nworktree_root = "{repo.parent / "wt-unused"}"\n')
        engine = Engine(repo, poll_s=60)
        await engine.start()
        asker = InboxStore(repo / ".lanes/state/inbox")
        latencies: list[float] = []
        arrivals: dict[str, float] = {}

        async def follow() -> None:
            async for event in engine.events():
                if isinstance(event, QuestionsChanged):
                    for q in event.questions:
                        arrivals.setdefault(q.question.id, time.perf_counter())

        follower = asyncio.create_task(follow())
        await asyncio.sleep(0.1)  # subscribed before the first question
        try:
            for index in range(count):
                started = time.perf_counter()
                question = await asyncio.to_thread(asker.ask, f"bench{index % 5}-a1", kind="yesno",
                                                   title=f"Question {index}?")
                deadline = started + 5
                while question.id not in arrivals and time.perf_counter() < deadline:
                    await asyncio.sleep(0.001)
                latencies.append((arrivals.get(question.id, deadline) - started) * 1000)
                await asyncio.sleep(0.05)
        finally:
            await engine.aclose()
            await follower
    return latencies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.inbox_latency", description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=50)
    args = parser.parse_args(argv)
    latencies = asyncio.run(measure(args.questions))
    rows = [[len(latencies), f"{percentile(latencies, 50):.1f}", f"{percentile(latencies, 95):.1f}",
             f"{max(latencies):.1f}"]]
    print(table(HEADERS, rows))
    record = {"bench": "inbox_latency", "command": command_line(), "machine": machine_info(), "params": vars(args),
              "latencies_ms": latencies, "table": markdown(HEADERS, rows)}
    print(f"wrote {write_json('inbox_latency', record)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
