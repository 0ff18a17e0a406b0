"""The sim's review mode: a review prompt makes the sim a reviewer that blocks added BUG / FIXME lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lanes_tui.engine.decisions.review.verdict import parse_verdict
from lanes_tui.engine.sim.agent import REVIEW_MARKER
from lanes_tui.engine.sim.review import diff_lines, is_review_request, review_findings

SIM = [sys.executable, "-m", "lanes_tui.engine.sim"]

DIFF = """\
diff --git a/calc.py b/calc.py
index 1111111..2222222 100644
--- a/calc.py
+++ b/calc.py
@@ -1,4 +1,6 @@
 def add(a, b):
-    return a+b  # FIXME: a removed line is not a finding
+    return a + b
+DEBUG = False
 # FIXME: a context line is not a finding either
+def sub(a, b): return a - b  # FIXME negative numbers
 x = 1
@@ -10,2 +12,3 @@ def mul(a, b):
 y = 2
+++counter  # BUG: an added line whose text starts with ++
 z = 3
diff --git a/notes/new-file.md b/notes/new-file.md
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/notes/new-file.md
@@ -0,0 +1,2 @@
+# notes
+""" + "word " * 40 + "BUG\n" + """\
diff --git a/old.py b/old.py
deleted file mode 100644
--- a/old.py
+++ /dev/null
@@ -1 +0,0 @@
-BUG = 1
"""


def run_sim(cwd: Path, prompt: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(SIM, input=prompt, cwd=cwd, capture_output=True, text=True, timeout=20, check=False)


def prompt_for(diff: str, task: str = "Add a subtract function.") -> str:
    """The engine's own review prompt (decisions.review.prompt), so the sim reads what a reviewer is sent."""
    from lanes_tui.engine.decisions.review.prompt import review_prompt

    return review_prompt("calc-a1", task, [{"command": "python -m unittest", "status": "passed",
                                            "exit_code": 0}], diff)


def test_the_sim_and_the_engine_share_the_marker() -> None:
    from lanes_tui.engine.decisions.review.prompt import REVIEW_MARKER as ENGINE_MARKER

    assert REVIEW_MARKER == ENGINE_MARKER
    assert is_review_request(prompt_for(DIFF))


def test_only_the_first_line_makes_a_review_request() -> None:
    assert is_review_request(f"\n\n  {REVIEW_MARKER}: lane x-a1\n")
    assert not is_review_request(f"say hello\n{REVIEW_MARKER}: lane x-a1\n")
    assert not is_review_request("")


def test_findings_name_the_new_file_lines() -> None:
    files, added, removed, findings = review_findings(diff_lines(prompt_for(DIFF)))
    assert files == ["calc.py", "notes/new-file.md", "old.py"]
    assert (added, removed) == (6, 2)
    assert findings == [
        "- calc.py:5: added line is marked BUG/FIXME: def sub(a, b): return a - b # FIXME negative numbers",
        "- calc.py:13: added line is marked BUG/FIXME: ++counter # BUG: an added line whose text starts with ++",
        "- notes/new-file.md:2: added line is marked BUG/FIXME: " + ("word " * 16).strip() + "…",
    ]


def test_the_task_and_the_diff_text_cannot_fake_the_section() -> None:
    """The task quotes the lane's prompt (any heading, any fence); the diff's own lines are marked."""
    task = "## Diff\n```diff\n+FIXME in the task is not in the diff\n```"
    diff = ("diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1,3 +1,4 @@\n"
            " ## Diff\n ```\n+FIXME: the one finding\n ```\n")
    files, added, removed, findings = review_findings(diff_lines(prompt_for(diff, task=task)))
    assert (files, added, removed) == (["README.md"], 1, 0)
    assert findings == ["- README.md:3: added line is marked BUG/FIXME: FIXME: the one finding"]


def test_a_blocking_review_reads_as_blocking(tmp_path: Path) -> None:
    done = run_sim(tmp_path, prompt_for(DIFF, task="Add sub.\nwrite stray.txt the task's steps never run"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"sim: {REVIEW_MARKER}: lane calc-a1"
    assert "sim: reviewing 3 files, +6 -2" in lines
    assert lines[-1] == "REVIEW: BLOCKING"
    assert not (tmp_path / "stray.txt").exists()
    verdict = parse_verdict(done.stdout)
    assert verdict.verdict == "BLOCKING"
    assert [(f.path, f.line) for f in verdict.findings] == [("calc.py", 5), ("calc.py", 13),
                                                            ("notes/new-file.md", 2)]


def test_a_clean_diff_reads_as_clean(tmp_path: Path) -> None:
    clean = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1,2 @@\n x = 1\n+DEBUG = 2\n"
    done = run_sim(tmp_path, prompt_for(clean))
    assert done.returncode == 0, done.stderr
    assert "sim: reviewing 1 file, +1 -0" in done.stdout.splitlines()
    verdict = parse_verdict(done.stdout)
    assert (verdict.verdict, verdict.findings) == ("CLEAN", ())


def test_no_diff_is_a_clean_review_that_says_so(tmp_path: Path) -> None:
    done = run_sim(tmp_path, prompt_for(""))
    assert "sim: reviewing 0 files, +0 -0" in done.stdout.splitlines()
    assert done.stdout.splitlines()[-1] == "REVIEW: CLEAN"
    bare = run_sim(tmp_path, f"{REVIEW_MARKER}: lane x-a1\nno diff section at all\n")
    assert "nothing to review" in bare.stdout and bare.stdout.splitlines()[-1] == "REVIEW: CLEAN"
