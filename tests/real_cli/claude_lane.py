"""Running the real Claude Code as a lane through the real `lanes-tui`, against the scripted model server.

The `claude` preset runs as shipped: the only changes are the environment the lead would set (a base URL,
a key, telemetry and updates off, Claude's own retries made few) and a PATH on which `claude` is the
pinned binary. HOME is a folder of the test's, so the lead's own ~/.claude is never read or written,
and the lane runs under the kernel's fence with the preset's `writable` list as it ships.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

from tests.helpers import cli, output, status, text_of, wait_for
from tests.real_cli.model_server.server import ModelServer, Recorded

#: Placeholder credentials: the scripted server accepts any.
API_KEY = "sk-ant-lanes-tui-test-key"
#: Real runs of Claude Code 2.1.328 here take under a second of their own; a lane adds its supervisor,
#: worktree and gates. Every wait is bounded by this (derived from runs at load 6 on 2 cores, x5).
LANE_S = 90.0


def gateway_token() -> str:
    """An ANTHROPIC_AUTH_TOKEN as a Claude gateway issues it (a JWT whose `aud` is `claude-gateway`): with
    it Claude Code reads the unified rate-limit headers and says when a plan's usage limit resets,
    which it does not for a plain API key. Unsigned: only the gateway would check it."""
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()
    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part({'aud': 'claude-gateway', 'exp': 4102444800})}.unsigned"


def claude_env(tmp_path: Path, claude: Path, server: ModelServer, *, retries: int = 1,
               gateway: bool = False) -> dict[str, str]:
    """The lead's environment for `lanes-tui`: what a lead running Claude against a gateway would set."""
    bin_dir = tmp_path / "claude-bin"
    bin_dir.mkdir(exist_ok=True)
    link = bin_dir / "claude"
    if not link.exists():
        link.symlink_to(claude.resolve())
    home = tmp_path / "claude-home"
    home.mkdir(exist_ok=True)
    env = dict(os.environ)
    for name in [n for n in env if n.startswith(("ANTHROPIC_", "CLAUDE_"))]:
        del env[name]  # the lead's own session, key or base URL never reach the test's claude
    env.update({
        "HOME": str(home),
        "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', os.defpath)}",
        "ANTHROPIC_BASE_URL": server.url,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_MAX_RETRIES": str(retries),
    })
    env["ANTHROPIC_AUTH_TOKEN" if gateway else "ANTHROPIC_API_KEY"] = gateway_token() if gateway else API_KEY
    return env


def start(repo: Path, env: dict[str, str], lane_id: str, prompt: str = "Do the scripted task.") -> str:
    proc = cli(repo, "run", "--prompt", prompt, "--id", lane_id, env=env, timeout=LANE_S)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


def settled(repo: Path, lane: str, env: dict[str, str]) -> dict[str, Any]:
    """Wait until the lane is settled and its supervisor finished; its status row."""
    proc = cli(repo, "wait", lane, "--timeout", str(LANE_S), env=env, timeout=LANE_S + 30)
    assert proc.returncode == 0, f"{lane} did not settle: {proc.stderr} {status(repo, lane)}\n{output(repo, lane)}"
    row: dict[str, Any] = status(repo, lane)
    return row


def question(repo: Path, lane: str) -> dict[str, Any]:
    def open_one() -> dict[str, Any] | None:
        rows = json.loads(cli(repo, "inbox", "--json", check=True).stdout)
        return next((q for q in rows if q["lane"] == lane and q["state"] == "open"), None)
    found: dict[str, Any] = wait_for(open_one, timeout=LANE_S)
    return found


def lane_dir(repo: Path, lane: str) -> Path:
    return repo / ".lanes" / "state" / "lanes" / lane


def events(repo: Path, lane: str, kind: str | None = None) -> list[dict[str, Any]]:
    lines = text_of(lane_dir(repo, lane) / "events.jsonl").splitlines()
    return [e for e in map(json.loads, lines) if kind is None or e.get("type") == kind]


def stream(repo: Path, lane: str) -> list[dict[str, Any]]:
    """Claude's stream-json lines in the lane's output.log (the supervisor's own lines left out)."""
    found = []
    for line in output(repo, lane).splitlines():
        start_at = line.find("{")
        if start_at < 0:
            continue
        try:
            value = json.loads(line[start_at:])
        except ValueError:
            continue
        if isinstance(value, dict) and "type" in value:
            found.append(value)
    return found


def main_requests(server: ModelServer) -> list[Recorded]:
    """The agent's own turns the server answered (side calls and token counts left out)."""
    from tests.real_cli.model_server.anthropic import is_main

    return [r for r in server.requests if r.path.startswith("/v1/messages") and "count_tokens" not in r.path
            and is_main(r.body)]


def tool_results(request: Recorded) -> list[dict[str, Any]]:
    body = request.body if isinstance(request.body, dict) else {}
    return [block for message in body.get("messages") or () if isinstance(message.get("content"), list)
            for block in message["content"] if isinstance(block, dict) and block.get("type") == "tool_result"]
