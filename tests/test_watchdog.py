"""The watchdog against scripted sample histories and a fake clock: no sleeping, exact bounds."""

from __future__ import annotations

import pytest

from lanes_tui.engine.core.clock import FakeClock
from lanes_tui.engine.lanes.watchdog import ProcInfo, Sample, Watchdog

AGENT = ProcInfo(pid=100, create_time=1.0, name="agent", cmdline="agent", cpu_s=0.0, rss=10_000_000, ppid=1)


def proc(cpu_s: float, pid: int = 100) -> ProcInfo:
    return ProcInfo(pid=pid, create_time=1.0, name="agent", cmdline="agent", cpu_s=cpu_s, rss=10_000_000, ppid=1)


def run(history: list[dict[str, object]], *, idle_timeout: float, interval: float) -> list[tuple[float, bool]]:
    """Feed one sample per interval; returns (idle_s, stalled) per sample."""
    clock = FakeClock()
    dog = Watchdog(idle_timeout)
    out = []
    output_bytes = 0
    for step in history:
        output_bytes += int(step.get("output", 0))  # type: ignore[call-overload]
        sample = Sample(clock.monotonic(), output_bytes, bool(step.get("files", False)),
                        tuple(step.get("procs", (AGENT,))),  # type: ignore[arg-type]
                        waiting=bool(step.get("waiting", False)))
        verdict = dog.observe(sample)
        out.append((verdict.idle_s, verdict.stalled))
        clock.advance(interval)
    return out


@pytest.mark.parametrize("interval", [0.5, 1.0, 5.0])
def test_silent_lane_stalls_within_one_sample_of_the_timeout(interval: float) -> None:
    idle_timeout = 12.0
    history: list[dict[str, object]] = [{"output": 10}] + [{}] * 40
    verdicts = run(history, idle_timeout=idle_timeout, interval=interval)
    first_stall = next(i for i, (_, stalled) in enumerate(verdicts) if stalled)
    detected_after = first_stall * interval  # seconds since the last output (sample 0)
    assert idle_timeout <= detected_after < idle_timeout + interval


def test_output_resets_idle() -> None:
    verdicts = run([{"output": 1}, {}, {}, {"output": 5}, {}], idle_timeout=100, interval=1.0)
    assert [v[0] for v in verdicts] == [0.0, 1.0, 2.0, 0.0, 1.0]


def test_cpu_without_output_is_activity() -> None:
    history = [{"procs": (proc(0.5 * i),)} for i in range(30)]  # half a core, no output
    verdicts = run(history, idle_timeout=5, interval=1.0)
    assert not any(stalled for _, stalled in verdicts)


def test_trickle_of_cpu_is_not_activity() -> None:
    history = [{"procs": (proc(0.001 * i),)} for i in range(30)]  # 0.1 % of a core: an idle poller
    verdicts = run(history, idle_timeout=5, interval=1.0)
    assert any(stalled for _, stalled in verdicts)


def test_file_writes_without_output_are_activity() -> None:
    verdicts = run([{"files": True}] * 30, idle_timeout=5, interval=1.0)
    assert not any(stalled for _, stalled in verdicts)


def test_process_set_change_is_activity() -> None:
    history: list[dict[str, object]] = []
    for i in range(30):
        history.append({"procs": (AGENT, proc(0.0, pid=200 + i))})  # a new short-lived child each time
    verdicts = run(history, idle_timeout=5, interval=1.0)
    assert not any(stalled for _, stalled in verdicts)


def test_waiting_on_a_question_is_never_stalled_and_resets_idle() -> None:
    history: list[dict[str, object]] = [{}] * 3 + [{"waiting": True}] * 50 + [{}] * 3
    verdicts = run(history, idle_timeout=5, interval=1.0)
    assert not any(stalled for _, stalled in verdicts)
    assert verdicts[-1][0] == 3.0  # idle counts from the moment the answer arrived


def test_zero_timeout_turns_stalling_off_but_measures_idle() -> None:
    verdicts = run([{}] * 20, idle_timeout=0, interval=10.0)
    assert not any(stalled for _, stalled in verdicts)
    assert verdicts[-1][0] == 190.0
