"""The embedded demo: a throw-away repository with simulated lanes that show every pane at work.

Fully offline: the only provider is the built-in simulated agent (plus a stand-in that is always out
of budget, to show a chain falling back, and the sim again as a reviewer of another model family, so
every lane that passes its gates is reviewed: the review column is never empty, and the one lane that
adds a `FIXME` line is blocked). Every scenario reports tokens and cost (the sim's `usage` step prints
aider's meter line), so the tokens and cost columns and the spend meter show real figures.
Everything lives in one temporary folder removed on exit. Its gates never wait for the machine's load
(`[gates] max_load = 0`): the load on a small machine is the demo's own lanes.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.lanes.launcher import LaunchRequest, launch_lane

DEMO_CONFIG = """\
# lanes-tui demo: simulated agents only.
[lanes]
worktree_root = "{root}/worktrees"
max_parallel = 12
idle_timeout_s = 20
sample_s = 1
# The demo's agents are the simulated one, lanes-tui's own code: on a kernel without Landlock they run
# anyway (confined where the kernel can; `lanes-tui doctor` says which).
allow_uncontained = true

[chains]
backend = ["sim"]
hard = ["sim-broke", "sim"]

[providers.sim-broke]
# A stand-in for a provider whose quota is spent: prints a budget line and exits.
argv = ["{{python}}", "-c", "print('SIM-OUT-OF-BUDGET: Usage limit reached'); raise SystemExit(1)"]
prompt = "arg"
budget_patterns = ["SIM-OUT-OF-BUDGET"]

[providers.sim]
max = 20

[providers.sim-reviewer]
# The sim again, as a second model family: it reviews a lane's diff instead of running steps, and
# blocks added lines marked FIXME or BUG (docs/sim.md, review mode).
argv = ["{{python}}", "-m", "lanes_tui.engine.sim"]
family = "sim-review"

[review]
# Every lane whose gates pass is reviewed by a provider of another family than the one that wrote it.
mode = "cross-all"
chain = ["sim-reviewer"]

[gates]
# The demo project's tests use the standard library, so the demo needs nothing installed.
commands = ["{{python}} -m unittest -q"]
timeout_s = 120
# The demo's own lanes are the machine's load: on two cores its busy lane alone pushed the load past
# the limit, and every check sat waiting up to slot_wait_s. The demo's gates never wait for the load.
max_load = 0
"""

PROJECT = {
    "calc.py": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
    "test_calc.py": "import unittest\n\nfrom calc import add, mul\n\n\nclass CalcTest(unittest.TestCase):\n"
                    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
                    "    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n",
    "README.md": "# demo project\n\nA tiny calculator the demo lanes work on.\n",
}

SCENARIOS: dict[str, tuple[str, str]] = {
    "ready": ("backend", "Add a subtract function.\nsay adding sub()\nusage 18400 2100 0.09\nprint 20 --rate 5\n"
              "append calc.py 'def sub(a, b): return a - b'\nusage 21300 900 0.07\nsay done\n"),
    "question": ("backend", "Ask before deploying.\nsay preparing a deploy\nusage 9600 1400 0.05\nprint 5 --rate 2\n"
                 "ask --yes-no --timeout 600 Deploy the calculator to staging?\n"
                 "if yes write DEPLOYED.txt staging\nif no say not deploying\nprint 10 --rate 2\n"),
    "stall": ("backend", "Go quiet.\nsay thinking very hard\nusage 42000 300 0.13\nsleep 3600\n"),
    "fallback": ("hard", "Refactor the calculator.\nsay refactoring on the fallback provider\nusage 31000 4200 0.16\n"
                 "print 10 --rate 2\nwrite NOTES.md refactor notes\n"),
    "broken-gates": ("backend", "Break a test.\nsay changing mul\nusage 12800 800 0.05\n"
                     "write calc.py 'def add(a, b): return a + b'\nprint 5 --rate 2\n"),
    "conflict-a": ("backend", "Change the README title.\nusage 6400 500 0.03\nwrite README.md '# calculator (lane A)'\n"
                   "print 8 --rate 2\n"),
    "conflict-b": ("backend", "Change the README title too.\nusage 7100 650 0.03\n"
                   "write README.md '# calculator (lane B)'\n"
                   "print 12 --rate 2\n"),
    "review-blocked": ("backend", "Add a divide function.\nsay adding div()\nusage 15200 1700 0.08\n"
                       "print 8 --rate 2\n"
                       "write divide.py 'def div(a, b): return a / b  # FIXME: b == 0 raises'\nsay done\n"),
    "busy-cpu": ("backend", "Crunch numbers quietly.\nsay crunching without output\n"
                 "usage 27500 3100 0.14\nburn 90\nsay finished\n"),
}


#: A small plan (docs/plans.md): two tickets at once, then a third once both are accepted. Launched at
#: demo start; the dashboard's engine starts the second wave when the lead accepts the first.
DEMO_PLAN = """\
[plan]
name = "demo-plan"

[[tickets]]
id = "plan-power"
title = "Add a power function"
prompt = "Add power.py.\\nsay adding power()\\nusage 8800 950 0.04\\n\
print 12 --rate 2\\nwrite power.py 'def power(a, b): return a ** b'\\n"
scope = ["power.py"]

[[tickets]]
id = "plan-docs"
title = "Document the calculator"
prompt = "Write docs/calc.md.\\nsay documenting\\nusage 11200 2600 0.07\\n\
print 16 --rate 2\\nwrite docs/calc.md '# calc: add, mul, power'\\n"
scope = ["docs/"]

[[tickets]]
id = "plan-cli"
title = "A command line for the calculator"
prompt = "Add cli.py.\\nsay wiring the command line\\nusage 9900 1100 0.05\\n\
print 10 --rate 2\\nwrite cli.py 'from power import power'\\n"
scope = ["cli.py"]
blockers = ["plan-power", "plan-docs"]
"""
DEMO_PLAN_FILE = ".lanes/plans/demo-plan.toml"


@dataclass(frozen=True)
class Demo:
    root: Path
    repo: Path

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def build_demo(parent: Path | None = None) -> Demo:
    """A small Python project with tests, on a programme branch, configured for simulated lanes."""
    root = Path(tempfile.mkdtemp(prefix="lanes-demo-", dir=parent))
    repo = root / "calculator"
    repo.mkdir()
    for name, text in PROJECT.items():
        (repo / name).write_text(text, encoding="utf-8")
    (repo / ".lanes").mkdir()
    (repo / ".lanes" / "config.toml").write_text(DEMO_CONFIG.format(root=root), encoding="utf-8")
    (repo / DEMO_PLAN_FILE).parent.mkdir()
    (repo / DEMO_PLAN_FILE).write_text(DEMO_PLAN, encoding="utf-8")
    (repo / ".gitignore").write_text(".lanes/state/\n__pycache__/\n", encoding="utf-8")
    # A local identity, so the demo's accepts can commit on a machine with no git config at all.
    for argv in (["init", "-q", "-b", "programme"], ["config", "user.name", "lanes demo"],
                 ["config", "user.email", "demo@lanes.invalid"], ["add", "-A"],
                 ["commit", "-q", "-m", "demo project"]):
        subprocess.run(["git", *argv], cwd=repo, check=True, capture_output=True)
    return Demo(root, repo)


def start_demo_lanes(demo: Demo, scenarios: list[str] | None = None) -> list[str]:
    config = load_config(demo.repo)
    ids = []
    for name in scenarios or list(SCENARIOS):
        task_type, prompt = SCENARIOS[name]
        record = launch_lane(demo.repo, config, LaunchRequest(prompt=prompt, task_type=task_type, slug=name))
        ids.append(record.id)
    if scenarios is None:
        ids.extend(start_demo_plan(demo))
    return ids


def start_demo_plan(demo: Demo) -> list[str]:
    """Launch the demo's plan (its first wave starts now); returns the lanes started.

    In its own process: `sim` sits below `plans` in the engine's layers and may not import it. No plan
    supervisor is started: the demo's dashboard ticks the plan, and nothing outlives the demo.
    """
    proc = subprocess.run([sys.executable, "-m", "lanes_tui.engine.plans", "--repo", str(demo.repo),
                           "--launch", str(demo.repo / DEMO_PLAN_FILE)],
                          capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise LanesError(f"the demo's plan did not launch: {tail}")
    return proc.stdout.split()
