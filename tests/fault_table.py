"""`python -m tests.fault_table` — the table of faults tried for docs/reliability.md, from the suite.

Every test case of the fault suite (each parametrised case counts once) is one attempt to break
containment; its outcome is the test's result in the same run. The table is written from a real
pytest run, never by hand, so the document cannot claim an attempt the suite does not make:

    python -m tests.fault_table            # runs the fault suite, prints the Markdown
    python -m tests.fault_table --collect  # only lists the attempts (no run)
    python -m tests.fault_table --junit FILE  # outcomes from a run already made (pytest --junitxml=FILE)
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

#: Fault-suite file -> category, in the order of docs/reliability.md.
CATEGORIES: dict[str, str] = {
    "tests/test_records_trust.py": "records and paths",
    "tests/test_lead_checkout.py": "lead checkout integrity",
    "tests/test_secrets.py": "secrets and file modes",
    "tests/test_cgroup.py": "escaped processes",
    "tests/test_landlock.py": "kernel confinement of a lane's writes and signals",
    "tests/test_gate_containment.py": "gates, forged records and stopped supervisors",
    "tests/test_lead_only.py": "lead-only commands",
    "tests/test_state_faults.py": "bad records, killed commands, full disks",
    "tests/test_crash_points.py": "kill -9 at every step of run and check",
    "tests/test_abandon_corrupt.py": "abandoning a lane whose record is corrupt",
    "tests/test_fuzz_files.py": "fuzzed config, record, question and state files",
    "tests/test_bad_input.py": "bad input at the command line",
    "tests/test_git_hardening.py": "git config, hooks, refs and remotes",
    "tests/test_hostile_text.py": "escape sequences in agent text",
    "tests/test_schema_versions.py": "state files of an older or newer lanes-tui",
    "tests/test_hostile_paths.py": "links an agent planted in the lead checkout",
    "tests/test_lane_faults.py": "a lane folder its agent damaged",
    "tests/test_slot_faults.py": "damaged heavy-slot locks",
    "tests/test_hostile_sizes.py": "work bounded by size",
}


def _readable(name: str) -> str:
    """`test_record_pointing_at_x[case]` -> `record pointing at x (case)`."""
    base, _, param = name.partition("[")
    text = base.removeprefix("test_").replace("_", " ")
    return f"{text} ({param.rstrip(']')})" if param else text


def present() -> list[str]:
    root = Path(__file__).resolve().parent.parent
    return [f for f in CATEGORIES if (root / f).exists()]


def collect(files: list[str]) -> list[tuple[str, str]]:
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
                         capture_output=True, text=True, check=False).stdout
    found = []
    for line in out.splitlines():
        if "::" in line:
            path, _, name = line.partition("::")
            found.append((path, name))
    return found


def run(files: list[str]) -> dict[tuple[str, str], str]:
    """Outcome per (file, test name): held, BROKE, or skipped (with its reason)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
                        *files], check=False)
        return outcomes_from(report)


def outcomes_from(report: Path) -> dict[tuple[str, str], str]:
    """Outcome per (file, test name) from a pytest --junitxml report."""
    outcomes: dict[tuple[str, str], str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        module = case.get("classname", "").replace(".", "/") + ".py"
        name = case.get("name", "")
        if case.find("failure") is not None or case.find("error") is not None:
            outcomes[(module, name)] = "BROKE"
        elif (skip := case.find("skipped")) is not None:
            outcomes[(module, name)] = "skipped: " + re.sub(r"\s+", " ", skip.get("message", ""))[:100]
        else:
            outcomes[(module, name)] = "held"
    return outcomes


def markdown(attempts: list[tuple[str, str]], outcomes: dict[tuple[str, str], str] | None) -> str:
    counts: Counter[tuple[str, str]] = Counter()
    for path, name in attempts:
        result = outcomes.get((path, name), "not run") if outcomes is not None else "collected"
        counts[(path, result.split(":")[0])] += 1
    lines = ["| category | file | attempts | held | broke | skipped |", "|---|---|---:|---:|---:|---:|"]
    for path, category in CATEGORIES.items():
        total = sum(n for (p, _), n in counts.items() if p == path)
        if total:
            lines.append(f"| {category} | `{path}` | {total} | {counts[(path, 'held')]} | {counts[(path, 'BROKE')]} "
                         f"| {counts[(path, 'skipped')]} |")
    held = sum(n for (_, r), n in counts.items() if r == "held")
    broke = sum(n for (_, r), n in counts.items() if r == "BROKE")
    lines.append(f"| **all** | | **{len(attempts)}** | **{held}** | **{broke}** | "
                 f"**{sum(n for (_, r), n in counts.items() if r == 'skipped')}** |")
    lines.append("")
    for path, category in CATEGORIES.items():
        mine = [(p, n) for p, n in attempts if p == path]
        if not mine:
            continue
        lines.append(f"<details><summary>{category} ({len(mine)})</summary>\n")
        for p, name in mine:
            result = outcomes.get((p, name), "not run") if outcomes is not None else "collected"
            lines.append(f"- {_readable(name)} — {result}")
        lines.append("\n</details>\n")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fault_table", description=__doc__.splitlines()[0])
    parser.add_argument("--collect", action="store_true", help="list the attempts without running them")
    parser.add_argument("--junit", type=Path, help="take the outcomes from this pytest --junitxml report")
    args = parser.parse_args(argv)
    files = present()
    attempts = collect(files)
    outcomes = None if args.collect else outcomes_from(args.junit) if args.junit else run(files)
    print(markdown(attempts, outcomes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
