"""Record what a real agent CLI prints on stdout during a session with large tool inputs and results.

    LANES_REAL_CLI_CACHE=/work/real-cli-cache python -m tests.bench.traffic.record claude|codex|gemini|all

Each CLI of the real-CLI tier (`tests/real_cli/install.py`, versions in `tests/real_cli/versions.py`) runs
once with the argv its lanes-tui channel gives it, against the tier's scripted model server, in a
throw-away git repository holding a copy of some of lanes-tui's own sources. The model's turns are the
steps of `SESSION`: it reads a large file, greps the sources, writes a long file, prints a long listing,
and sums up; every tool runs for real in the CLI, so the tool inputs and results inline in the CLI's
JSON lines are the CLI's own. Its stdout, byte for byte (what a lane's output receives from the CLI;
its stderr is left out), is written to `tests/bench/traffic/NAME.jsonl`, which `tests/bench/replay_agent.py`
plays back in the benchmarks.

Claude runs with `--allowedTools Bash Write Read` besides the channel's control-protocol flags, as a
lead's allow rule would: its Bash calls then need no permission answer, so the recording holds no
`control_request` a replay could not answer.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.real_cli.install import executable, tier_path
from tests.real_cli.model_server.script import RunCommand, Say, Script, Usage, WriteFile
from tests.real_cli.model_server.server import ModelServer
from tests.real_cli.versions import NPM

HERE = Path(__file__).parent
SOURCES = Path(__file__).resolve().parents[3]
#: Copied into the session's repository: real Python files for the agent to read and grep.
COPIED = ("engine/channels", "engine/state")
NOTES = "".join(f"## Note {i}\n\nThe channel parses line {i} of the stream; the conversation view keeps the "
                f"last turns, and each tool result is cut to what the screen can show.\n\n" for i in range(40))
SESSION = Script(
    steps=(
        RunCommand("cat src/channels/claude.py"),
        RunCommand("grep -rn 'def ' src | head -300"),
        WriteFile("NOTES.md", NOTES),
        RunCommand("ls -la src/channels src/state; seq 1 2500"),
        RunCommand("wc -l src/*/*.py"),
        Say("I read the channel, listed its functions, wrote NOTES.md with one note per parser step and "
            "checked the line counts. The stream parser keeps per-message usage and the conversation "
            "view cuts long tool results; nothing else needed to change."),
    ),
    usage=Usage(input_tokens=24_000, output_tokens=900, cached_input_tokens=18_000),
)
PROMPT = "Read src/channels/claude.py, list the functions of src, write NOTES.md and sum up."
GEMINI_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "general": {"maxAttempts": 2, "enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
}
TIMEOUT_S = 300.0


def workspace(root: Path) -> Path:
    repo = root / "project"
    for part in COPIED:
        shutil.copytree(SOURCES / part, repo / "src" / Path(part).name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=r", "-c", "user.email=r@example.invalid", "commit", "-q", "-m", "init"]):
        subprocess.run(["git", *argv], cwd=repo, check=True, capture_output=True)
    return repo


def command(name: str, binary: Path, repo: Path, root: Path, server: ModelServer) -> tuple[list[str], dict[str, str],
                                                                                          bytes | None]:
    """The argv, environment and stdin of `name`'s run: its lanes-tui preset, as its channel renders it."""
    home = root / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE", "OPENAI_", "CODEX_",
                                                                       "GEMINI_", "GOOGLE_"))}
    env.update({"HOME": str(home), "PATH": tier_path()})
    if name == "claude":
        from lanes_tui.engine.channels.claude_wire import user_message

        env.update({"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "sk-ant-record",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
                    "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1"})
        argv = [str(binary), "-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits",
                "--model", "sonnet", "--input-format", "stream-json", "--permission-prompt-tool", "stdio",
                "--allowedTools", "Bash", "Write", "Read"]
        return argv, env, user_message(PROMPT)
    if name == "codex":
        codex_home = root / "codex-home"
        codex_home.mkdir()
        (codex_home / "config.toml").write_text(
            'model_provider = "scripted"\n\n[model_providers.scripted]\nname = "scripted"\n'
            f'base_url = "{server.url}/v1"\nenv_key = "OPENAI_API_KEY"\nwire_api = "responses"\n'
            "request_max_retries = 1\nstream_max_retries = 1\n")
        env.update({"CODEX_HOME": str(codex_home), "OPENAI_API_KEY": "sk-record"})
        # Under a lane's Landlock fence lanes-tui swaps codex's bubblewrap sandbox for its off mode
        # (`cli_facts.argv_under_fence`); here, with no fence, the same: the tools run as in a lane.
        argv = [str(binary), "exec", "--json", "-m", "gpt-5.5", "-c", "model_reasoning_effort=medium",
                "-s", "danger-full-access", "-C", str(repo), "--skip-git-repo-check", "-"]
        return argv, env, PROMPT.encode()
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text(json.dumps(GEMINI_SETTINGS))
    env.update({"GEMINI_API_KEY": "record-key", "GOOGLE_GEMINI_BASE_URL": server.url})
    argv = [str(binary), "-p", PROMPT, "--output-format", "stream-json", "-m", "gemini-2.5-pro", "--skip-trust",
            "--approval-mode", "yolo"]
    return argv, env, None


def record(name: str, out: Path) -> dict[str, object]:
    binary = executable(name)
    if binary is None:
        raise SystemExit(f"{name} is not installed: python -m tests.real_cli.install --only {name}")
    with tempfile.TemporaryDirectory(prefix=f"lanes-record-{name}-") as tmp, ModelServer(SESSION) as server:
        root = Path(tmp)
        repo = workspace(root)
        argv, env, stdin = command(name, binary, repo, root, server)
        started = time.monotonic()
        proc = subprocess.Popen(argv, cwd=repo, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        assert proc.stdin is not None and proc.stdout is not None
        if stdin is not None:
            proc.stdin.write(stdin)
            proc.stdin.flush()
        if name != "claude":
            proc.stdin.close()
        lines: list[bytes] = []
        for line in proc.stdout:  # Claude's stdin stays open until its `result` line, as the channel does
            lines.append(line)
            if name == "claude" and b'"type":"result"' in line and _kind(line) == "result":
                proc.stdin.close()
        proc.wait(timeout=TIMEOUT_S)
        stderr = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
        took = time.monotonic() - started
    out.write_bytes(b"".join(lines))
    sizes = sorted(len(line) for line in lines)
    summary: dict[str, object] = {"cli": name, "version": NPM[name][1], "exit": proc.returncode, "lines": len(lines),
                                  "bytes": sum(sizes), "largest_line": sizes[-1] if sizes else 0,
                                  "median_line": sizes[len(sizes) // 2] if sizes else 0, "seconds": round(took, 2)}
    if proc.returncode != 0:
        summary["stderr_tail"] = stderr.strip()[-500:]
    return summary


def _kind(line: bytes) -> object:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value.get("type") if isinstance(value, dict) else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.traffic.record", description=__doc__.splitlines()[0])
    parser.add_argument("cli", choices=("claude", "codex", "gemini", "all"))
    parser.add_argument("--out", type=Path, default=HERE, help="folder for NAME.jsonl (this folder)")
    args = parser.parse_args(argv)
    for name in ("claude", "codex", "gemini") if args.cli == "all" else (args.cli,):
        print(json.dumps(record(name, args.out / f"{name}.jsonl")), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
