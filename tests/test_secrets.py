"""Secrets stay with the lead (issue 9, item 3): what reaches an agent and a gate, what lanes-tui writes.

Real lanes through the real command line: the sim's `env NAME` step, and a tiny provider that prints
the variables named in its prompt, show what a lane's processes actually received; a gate command
does the same for gates. Then every file under `.lanes/` is searched for the secrets' values.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
from pathlib import Path

import pytest

from lanes_tui.engine.config.providers import CLAUDE_ENV, HOST_SESSION_VARS
from lanes_tui.engine.config.settings import parse_config
from lanes_tui.engine.config.write import set_config_value, write_default_config
from lanes_tui.engine.core.atomic import write_json_atomic, write_text_atomic
from lanes_tui.engine.lanes.env import lane_environment, passed_env_names, passes
from tests.helpers import cli, output, run_lane, status, wait_state, write_config

#: The lead's secrets, with values no file could contain by chance.
SECRETS = {
    "AWS_SECRET_ACCESS_KEY": "aws-secret-7d1f0c",
    "GITHUB_TOKEN": "ghp-token-52be91",
    "MY_DB_PASSWORD": "db-password-e03a77",
    "OPENAI_API_KEY": "openai-key-9c44d2",
    "CLAUDE_CODE_SESSION_ID": "host-session-1b8e6f",
}

#: Prints `NAME=value` or `NAME is not set` for each name in its arguments (the sim's `env` step, for
#: a provider of the test's own and for gate commands).
PRINT_ENV = """import os, sys
open("env-printed.txt", "w").write("x")  # work done: the lane is judged, not NO-CHANGES
for name in " ".join(sys.argv[1:]).split():
    print(f"{name}={os.environ[name]}" if name in os.environ else f"{name} is not set")
"""


@pytest.fixture()
def print_env(tmp_path: Path) -> Path:
    script = tmp_path / "print_env.py"
    script.write_text(PRINT_ENV)
    return script


def printer(name: str, script: Path, *, env: str = "") -> str:
    """A `[providers.NAME]` table running the printer with the prompt as its argument; a preset keeps
    its own `env` (the lead's `env` adds to it)."""
    return (f"[providers.{name}]\nargv = [\"{{python}}\", {json.dumps(str(script))}]\nprompt = \"arg\"\n"
            f"channel = \"plain\"\n" + (f"env = {env}\n" if env else "") + "\n")


def lead_env(**extra: str) -> dict[str, str]:
    return {**os.environ, **SECRETS, **extra}


def start(repo: Path, prompt: str, lane_id: str, env: dict[str, str], *args: str) -> str:
    proc = cli(repo, "run", "--prompt", prompt, "--id", lane_id, *args, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


def files_under(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# --- what reaches a lane ---------------------------------------------------------------------------

def test_the_leads_secrets_reach_no_sim_lane_and_no_state_file(repo: Path) -> None:
    write_config(repo)
    script = "".join(f"env {name}\n" for name in SECRETS) + "env HOME\nenv LANES_LANE\n"
    lane = start(repo, script, "secrets", lead_env())
    wait_state(repo, lane)
    out = output(repo, lane)
    for name in SECRETS:
        assert f"{name} is not set" in out, out
    assert f"HOME={os.environ['HOME']}" in out and f"LANES_LANE={lane}" in out
    leaked = [(str(path), name) for path in files_under(repo / ".lanes") for name, value in SECRETS.items()
              if value.encode() in path.read_bytes()]
    assert leaked == []


def test_a_provider_gets_its_own_credentials_and_never_the_host_session(repo: Path, print_env: Path) -> None:
    extra = printer("keyed", print_env, env='["OPENAI_API_KEY"]') + printer("claude", print_env) + printer(
        "codex", print_env)
    write_config(repo, chains='backend = ["keyed"]\nhard = ["claude"]\ntests = ["codex"]', extra=extra)
    env = lead_env(ANTHROPIC_API_KEY="anthropic-key-1", CLAUDE_CONFIG_DIR="/tmp/claude-config", CLAUDECODE="1",
                   CLAUDE_CODE_ENTRYPOINT="cli", CLAUDE_CODE_SSE_PORT="4242", OPENAI_ORG_ID="org-1",
                   CODEX_HOME="/tmp/codex-home", CODEX_SANDBOX="seatbelt")
    names = ("OPENAI_API_KEY ANTHROPIC_API_KEY CLAUDE_CONFIG_DIR CLAUDECODE CLAUDE_CODE_SESSION_ID "
             "CLAUDE_CODE_ENTRYPOINT CLAUDE_CODE_SSE_PORT OPENAI_ORG_ID CODEX_HOME CODEX_SANDBOX GITHUB_TOKEN "
             "AWS_SECRET_ACCESS_KEY")
    keyed = start(repo, names, "keyed", env)
    claude = start(repo, names, "claude", env, "--type", "hard")
    codex = start(repo, names, "codex", env, "--type", "tests")
    for lane in (keyed, claude, codex):
        wait_state(repo, lane)
        assert status(repo, lane)["result"] == "OK"
    keyed_out, claude_out, codex_out = output(repo, keyed), output(repo, claude), output(repo, codex)
    # `env = ["OPENAI_API_KEY"]` on a provider of the lead's own: that one name and nothing else.
    assert f"OPENAI_API_KEY={SECRETS['OPENAI_API_KEY']}" in keyed_out
    assert "ANTHROPIC_API_KEY is not set" in keyed_out and "OPENAI_ORG_ID is not set" in keyed_out
    # The claude preset: ANTHROPIC_* and CLAUDE_* settings, but no session marker of the lead's claude.
    assert "ANTHROPIC_API_KEY=anthropic-key-1" in claude_out and "CLAUDE_CONFIG_DIR=/tmp/claude-config" in claude_out
    for marker in ("CLAUDECODE", "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SSE_PORT"):
        assert f"{marker} is not set" in claude_out, claude_out
    assert "OPENAI_API_KEY is not set" in claude_out
    # The codex preset: OPENAI_* and CODEX_*, but not the sandbox marker; never the other provider's key.
    assert f"OPENAI_API_KEY={SECRETS['OPENAI_API_KEY']}" in codex_out and "OPENAI_ORG_ID=org-1" in codex_out
    assert "CODEX_HOME=/tmp/codex-home" in codex_out and "CODEX_SANDBOX is not set" in codex_out
    assert "ANTHROPIC_API_KEY is not set" in codex_out
    for out in (keyed_out, claude_out, codex_out):
        assert "GITHUB_TOKEN is not set" in out and "AWS_SECRET_ACCESS_KEY is not set" in out


def test_provider_env_adds_names_and_prefixes_case_sensitively(repo: Path) -> None:
    path = write_config(repo)
    path.write_text(path.read_text().replace("[providers.sim]\n", '[providers.sim]\nenv = ["MY_TOOL_*"]\n'))
    env = lead_env(MY_TOOL_HOME="/opt/my-tool", MY_TOOLBOX="box", my_tool_home="lower")
    lane = start(repo, "env MY_TOOL_HOME\nenv MY_TOOLBOX\nenv my_tool_home\nenv OPENAI_API_KEY\n", "tool", env)
    wait_state(repo, lane)
    out = output(repo, lane)
    assert "MY_TOOL_HOME=/opt/my-tool" in out
    assert "MY_TOOLBOX is not set" in out and "my_tool_home is not set" in out
    assert "OPENAI_API_KEY is not set" in out


def test_gates_get_gates_env_and_never_the_providers_credentials(repo: Path, print_env: Path) -> None:
    gate = json.dumps(f"{{python}} {shlex.quote(str(print_env))} OPENAI_API_KEY GATE_ONLY_FLAG LANES_LANE "
                      "GITHUB_TOKEN")
    path = write_config(repo, gates=f'commands = [{gate}]\nenv = ["GATE_ONLY_*"]')
    # The agent itself may have the key (its provider lists it); the gate, running the agent's code, may not.
    path.write_text(path.read_text().replace("[providers.sim]\n", '[providers.sim]\nenv = ["OPENAI_API_KEY"]\n'))
    lane = start(repo, "env OPENAI_API_KEY\nenv GATE_ONLY_FLAG\nwrite done.txt ok\n", "gated",
                 lead_env(GATE_ONLY_FLAG="on"))
    assert wait_state(repo, lane).startswith(f"{lane} ready")
    out = output(repo, lane)
    assert f"OPENAI_API_KEY={SECRETS['OPENAI_API_KEY']}" in out and "GATE_ONLY_FLAG is not set" in out
    packet = json.loads((repo / ".lanes/state/lanes" / lane / "packet.json").read_text())
    tail = packet["gates"][0]["output_tail"]
    assert "GATE_ONLY_FLAG=on" in tail and f"LANES_LANE={lane}" in tail, tail
    assert "OPENAI_API_KEY is not set" in tail and "GITHUB_TOKEN is not set" in tail


# --- modes of what lanes-tui writes ----------------------------------------------------------------

def test_state_folders_are_0700_and_state_files_0600(repo: Path) -> None:
    write_config(repo, gates='commands = ["{python} -c pass"]')
    (repo / ".lanes" / "state").mkdir(mode=0o755)  # as an older lanes-tui left it: tightened on launch
    lane = run_lane(repo, "ask --yes-no --timeout 0 --default no Deploy?\nprint 3\nwrite done.txt ok\n",
                    lane_id="modes")
    assert wait_state(repo, lane).startswith(f"{lane} ready")
    state = repo / ".lanes" / "state"
    lane_dir, inbox = state / "lanes" / lane, state / "inbox" / lane
    for folder in (state, state / "lanes", state / "inbox", state / "locks", state / "bin", lane_dir, inbox):
        assert mode(folder) == 0o700, folder
    for name in ("lane.json", "events.jsonl", "output.log", "packet.json", "receipt.json", "supervisor.log",
                 "supervisor.json"):
        assert mode(lane_dir / name) == 0o600, name
    questions = files_under(inbox)
    assert questions and all(mode(p) == 0o600 for p in questions), [(p.name, oct(mode(p))) for p in questions]
    assert mode(state / "bin" / "lanes-tui") == 0o755  # the shim an agent runs
    assert mode(repo / ".lanes" / "config.toml") == 0o644  # the lead's, written by the test: untouched


def test_atomic_writes_keep_an_existing_mode_and_make_new_state_files_private(tmp_path: Path) -> None:
    shared = tmp_path / "shared.json"
    shared.write_text("{}")
    shared.chmod(0o640)
    write_json_atomic(shared, {"a": 1})
    assert mode(shared) == 0o640 and json.loads(shared.read_text()) == {"a": 1}
    fresh = tmp_path / "new-folder" / "state.json"
    write_json_atomic(fresh, {})
    assert mode(fresh) == 0o600 and mode(fresh.parent) == 0o700
    lead_file = tmp_path / "lead.txt"
    old = os.umask(0o022)
    try:
        write_text_atomic(lead_file, "x", mode=None)
    finally:
        os.umask(old)
    assert mode(lead_file) == 0o644


def test_a_tracked_0644_config_stays_0644_after_set_config_value(repo: Path) -> None:
    path = write_config(repo)
    path.chmod(0o644)
    set_config_value(path, "lanes.max_parallel", 3)
    assert mode(path) == 0o644 and "max_parallel = 3" in path.read_text()
    path.chmod(0o664)
    set_config_value(path, "gates.env", ["CI"])
    assert mode(path) == 0o664 and parse_config(path.read_text(), path=path, repo=repo).gates.env == ("CI",)


def test_init_writes_the_config_with_an_ordinary_mode(repo: Path) -> None:
    old = os.umask(0o022)
    try:
        path = write_default_config(repo)
    finally:
        os.umask(old)
    assert mode(path) == 0o644 and mode(repo / ".lanes" / ".gitignore") == 0o644


# --- the allow-list itself -------------------------------------------------------------------------

def test_allow_list_rules() -> None:
    assert passes("PATH") and passes("LC_ALL") and passes("XDG_DATA_HOME") and passes("LANESTEST_MARKER")
    for name in ("AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "MY_DB_PASSWORD", "SSH_AUTH_SOCK", "GIT_DIR",
                 "path", "LANES_TUI_SECRET", "LANES_LANE", "DATABASE_URL", "OPENAI_API_KEY"):
        assert not passes(name), name
    assert passes("ANTHROPIC_API_KEY", CLAUDE_ENV) and passes("CLAUDE_CONFIG_DIR", CLAUDE_ENV)
    for marker in HOST_SESSION_VARS:  # even where a pattern matches: the deny-list wins
        assert not passes(marker, (*CLAUDE_ENV, "CODEX_*", "GEMINI_*", marker))
    assert not passes("anthropic_api_key", CLAUDE_ENV)  # case-sensitive
    env = lane_environment({**SECRETS, "PATH": "/bin", "LANES_HOME": "/elsewhere", "PYTHONUNBUFFERED": "0"},
                           lane_id="x-a1", attempt=1, state_dir=Path("/s"), worktree=Path("/w"),
                           bin_dir=Path("/b"), allow=())
    assert env == {"PATH": "/b:/bin", "LANES_LANE": "x-a1", "LANES_ATTEMPT": "1", "LANES_HOME": "/s",
                   "LANES_WORKTREE": "/w", "PYTHONUNBUFFERED": "1"}
    assert passed_env_names({"HOME": "/h", "GITHUB_TOKEN": "t", "OPENAI_API_KEY": "k"}, ["OPENAI_*"]) == \
        ["HOME", "OPENAI_API_KEY"]
    # The lead's load limit of `lanes-tui lock` holds in the lane too (an agent runs `lock` there): a
    # loaded CI machine held a confined agent's `lock` past its test's deadline without it.
    limited = lane_environment({"PATH": "/bin", "LANES_HEAVY_LOAD": "0", "LANES_TUI_X": "1"}, lane_id="x-a1",
                               attempt=1, state_dir=Path("/s"), worktree=Path("/w"), bin_dir=Path("/b"), allow=())
    assert limited["LANES_HEAVY_LOAD"] == "0" and "LANES_TUI_X" not in limited


def test_doctor_lists_names_never_values(repo: Path, print_env: Path) -> None:
    write_config(repo, extra=printer("keyed", print_env, env='["OPENAI_API_KEY"]'),
                 gates='commands = []\nenv = ["CI"]')
    proc = cli(repo, "doctor", env=lead_env(ANTHROPIC_API_KEY="anthropic-key-1", CI="ci-value-3"))
    lines = proc.stdout.splitlines()
    rows = {line.split()[1]: line for line in lines if line.startswith("env ") and not line.startswith("env (")}
    assert "OPENAI_API_KEY" in rows["keyed"] and "ANTHROPIC_API_KEY" not in rows["keyed"]
    assert "ANTHROPIC_API_KEY" in rows["claude"] and "OPENAI_API_KEY" not in rows["claude"]
    assert "OPENAI_API_KEY" in rows["codex"] and "CI" in rows["gates"]
    assert "nothing more" in rows["sim"]
    base = next(line for line in lines if line.startswith("env ("))
    assert "PATH" in base and "GITHUB_TOKEN" not in proc.stdout
    for value in (*SECRETS.values(), "anthropic-key-1", "ci-value-3"):
        assert value not in proc.stdout + proc.stderr


@pytest.mark.parametrize(("snippet", "key"), [
    ('[providers.sim]\nenv = ["MY-TOOL"]\n', "providers.sim.env"),
    ('[providers.sim]\nenv = ["*"]\n', "providers.sim.env"),
    ('[providers.sim]\nenv = ["A*B"]\n', "providers.sim.env"),
    ('[providers.claude]\nenv = ["CLAUDECODE"]\n', "providers.claude.env"),
    ('[gates]\nenv = ["LANES_TOKEN"]\n', "gates.env"),
    ('[gates]\nenv = "CI"\n', "gates.env"),
])
def test_bad_env_patterns_are_config_errors(repo: Path, snippet: str, key: str) -> None:
    (repo / ".lanes").mkdir()
    (repo / ".lanes" / "config.toml").write_text(snippet)
    proc = cli(repo, "run", "--prompt", "say hi")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and f"[{key}]" in proc.stderr, proc.stderr


def test_lead_env_adds_to_a_presets_credentials(repo: Path) -> None:
    config = parse_config('[providers.claude]\nenv = ["AWS_*", "ANTHROPIC_*"]\n', path=None, repo=repo)
    assert config.providers["claude"].env == (*CLAUDE_ENV, "AWS_*")
    assert config.providers["sim"].env == () and config.gates.env == ()


def test_the_supervisor_itself_holds_no_secret_its_lane_may_not_have(repo: Path) -> None:
    """An agent runs as the lead's user and could read its supervisor's /proc/PID/environ: the
    supervisor is started with only what its agents and gates may get, plus lanes-tui's own settings."""
    write_config(repo)
    lane = start(repo, "sleep 30\n", "environ", lead_env(LANES_TUI_CGROUP="auto", PYTHONPATH="/nowhere-x"))
    state = repo / ".lanes" / "state" / "lanes" / lane
    try:
        pid = json.loads((state / "supervisor.json").read_text())["pid"]
        names = {item.split(b"=", 1)[0].decode() for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                 if b"=" in item}
        assert not names & set(SECRETS), names & set(SECRETS)
        assert {"HOME", "PATH", "LANES_TUI_CGROUP", "PYTHONPATH"} <= names
    finally:
        assert cli(repo, "abandon", lane, "--force").returncode == 0
