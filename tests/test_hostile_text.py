"""Escape and control sequences an agent writes never reach the lead's terminal (issue 28, item 7).

A real lane runs a small hostile agent: it creates files whose names hold an OSC 52 clipboard write,
a screen clear, a carriage return and a bidirectional override, fills them with the same bytes,
prints them, asks a question titled with them, writes a gate script and a plan that print and carry
them, and rewrites another lane's record with them. Then every command the lead reads that text
through (`status`, `diff --stat`, `diff`, `accept --dry-run`, `check --log`, `recover`, `peek`,
`inbox`, `plan check`) is run for real: none of their output holds an escape or a control byte
other than a line break and a tab, and each still names the hostile file or text (shown with `?`).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from lanes_tui.app.cli.main import TerminalSafe
from lanes_tui.engine.core.ansi import terminal_text
from tests.helpers import cli, run_lane, wait_state, write_config


@pytest.fixture(autouse=True)
def uncontained(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under the kernel's confinement the agent's writes here are refused outright (tests/test_landlock.py);
    these lanes run uncontained, as on a machine without Landlock, where lanes-tui must still hold."""
    monkeypatch.setenv("LANES_TUI_LANDLOCK", "off")

#: What the terminal must never receive from agent text: C0 controls but \t and \n, DEL, C1, and the
#: invisible reordering marks.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
#: Clipboard write (OSC 52), clear screen, cursor home, carriage return, right-to-left override.
PAYLOAD = "\x1b]52;c;aGFja2Vk\x07\x1b[2J\x1b[H\r\u202e"

#: The agent: every hostile thing it does is an ordinary file write, print or `lanes-tui` call.
AGENT = """\
import json, os, pathlib, subprocess, sys
P = PAYLOAD
for name in ("osc" + P + ".txt", "clear\\x1b[2Jscreen.txt", "cr\\rspoof.txt", "bidi\\u202etxt.exe"):
    pathlib.Path(name).write_text("payload " + P + " end\\n")
pathlib.Path("gate.py").write_text("print(" + repr("gate says " + P + " done") + ")\\nraise SystemExit(1)\\n")
pathlib.Path("plan.toml").write_text(
    '[plan]\\nname = "evil"\\n\\n[[tickets]]\\nid = "t1"\\ntitle = "ticket ' + json.dumps(P)[1:-1] + ' one"\\n'
    'prompt = "say hi"\\nscope = ["osc/"]\\n')
victim = pathlib.Path(os.environ["LANES_HOME"]) / "lanes" / "victim-a1" / "lane.json"
record = json.loads(victim.read_text())
record["state"] = "stolen" + P
victim.write_text(json.dumps(record))
subprocess.run(["lanes-tui", "ask", "--yes-no", "--timeout", "0", "--default", "no", "title " + P + " end"],
               check=False, capture_output=True)
print("agent says " + P + " bye", flush=True)
"""


def test_no_command_prints_an_agents_escape_sequences(repo: Path, tmp_path: Path) -> None:
    agent = tmp_path / "hostile.py"
    agent.write_text(AGENT.replace("PAYLOAD", repr(PAYLOAD), 1))
    write_config(repo, allow_uncontained=True, gates=f"commands = [{json.dumps(sys.executable + ' gate.py')}]",
                 extra=f'[providers.hostile]\nargv = ["{{python}}", "{agent}"]\nprompt = "arg"\n')
    victim = run_lane(repo, "say fine", lane_id="victim")
    wait_state(repo, victim)
    lane = run_lane(repo, "go", lane_id="evil", extra=("--lane", "hostile"))
    wait_state(repo, lane)
    worktree = Path(json.loads(cli(repo, "status", lane, "--json", check=True).stdout)[0]["worktree"])
    assert (worktree / ("osc" + PAYLOAD + ".txt")).exists()  # the hostile names are really on disk

    commands: list[tuple[list[str], str]] = [
        (["status"], "stolen"), (["status", victim], "stolen"), (["diff", lane, "--stat"], "osc?"),
        (["diff", lane], "payload"), (["accept", lane, "--dry-run"], lane), (["check", lane, "--log"], "gate says"),
        (["check", lane], "gate.py"),
        (["recover", lane], lane), (["peek", lane], "bye"), (["inbox"], "title"),
        (["plan", "check", str(worktree / "plan.toml")], "ticket"),
    ]
    for argv, shown in commands:
        proc = cli(repo, *argv)
        text = proc.stdout + proc.stderr
        assert "Traceback" not in text, (argv, text)
        found = sorted({f"U+{ord(ch):04X}" for ch in UNSAFE.findall(text)})
        assert not found, f"lanes-tui {' '.join(argv)} printed {found}: {text!r}"
        assert shown in text, (argv, text)
    # The file names are there, made visible: a `?` where each control character was.
    stat = cli(repo, "diff", lane, "--stat").stdout
    assert "cr?spoof.txt" in stat and "bidi?txt.exe" in stat and "clearscreen.txt" in stat, stat


def test_terminal_text_keeps_text_and_lines_and_drops_controls() -> None:
    assert terminal_text("plain, ünïcode ✓") == "plain, ünïcode ✓"
    assert terminal_text("a\tb\nc\r\nd") == "a\tb\nc\nd"
    assert terminal_text("x\x1b]52;c;aGk=\x07y\x1b[2Jz") == "xyz"  # whole sequences go
    assert terminal_text("cut \x1b[3") == "cut ?[3"  # a sequence cut in two still loses its ESC
    assert terminal_text("\x00\x7f\x85\x9b31m\u202e\u2028\ufeff") == "??????"
    assert not UNSAFE.search(terminal_text("".join(map(chr, range(0x20))) + "".join(map(chr, range(0x7f, 0xa0)))))


def test_the_command_lines_streams_filter_every_write() -> None:
    class Sink:
        def __init__(self) -> None:
            self.parts: list[str] = []

        def write(self, text: str) -> int:
            self.parts.append(text)
            return len(text)

        def flush(self) -> None:
            self.parts.append("<flush>")

    sink = Sink()
    stream = TerminalSafe(sink)  # type: ignore[arg-type]
    assert stream.write("a\x1b[2Jb\n") == len("a\x1b[2Jb\n")  # the caller's count, as a stream returns
    stream.writelines(["\x1b", "[31mred\n"])  # an ESC alone in its write is still caught
    stream.flush()  # everything else reaches the real stream
    assert sink.parts == ["ab\n", "?", "[31mred\n", "<flush>"]
