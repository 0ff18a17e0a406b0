"""The command line's conventions (issue 13, items 5, 6 and 8), each as a lead or a script meets it.

`--version` and `python -m lanes_tui`; config layers (the lead's own file under the repository's) and
`providers` / `show-chain` that show them; `--json` on every command that reports something; `--debug`
and `LANES_TUI_LOG`; the exit codes and JSON shapes of docs/cli.md; `--help` texts and `help KEYS`;
completion scripts for bash, zsh and fish run in the real shells. Real processes on real repositories.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from tests.completion_shells import bash_complete, env_with_lanes_tui, fish_complete, zsh_complete
from tests.conftest import git
from tests.helpers import cli, write_config

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def lanes(repo: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m lanes_tui ARGS`: the package's own `__main__`, as a machine without the script runs it."""
    return subprocess.run([PY, "-m", "lanes_tui", *args], cwd=repo, capture_output=True, text=True, timeout=120,
                          env=env, check=False)


def one_line(proc: subprocess.CompletedProcess[str], code: int, *parts: str) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    for part in parts:
        assert part in proc.stderr, (part, proc.stderr)


def modules_of(report: Path) -> list[str]:
    entries = [json.loads(line) for line in report.read_text().splitlines()]
    assert len(entries) == 1, entries
    modules = entries[0]["modules"]
    assert isinstance(modules, list)
    return modules


# --- --version and python -m lanes_tui -------------------------------------------------------------------

def test_version_and_python_m_lanes_tui(repo: Path, tmp_path: Path) -> None:
    report = tmp_path / "modules.jsonl"
    env = {**os.environ, "LANESTUI_DEBUG_MODULES": str(report)}
    shown = lanes(repo, "--version", env=env)
    assert (shown.returncode, shown.stdout) == (0, f"lanes-tui {metadata.version('lanes-tui')}\n"), shown.stderr
    # Answered before the parser: no command module is loaded for it, nor any third-party package.
    loaded = modules_of(report)
    assert [m for m in loaded if m.startswith("lanes_tui.app.cli.")
            and m not in ("lanes_tui.app.cli.main", "lanes_tui.app.cli.args")] == []
    assert [m for m in loaded if m.split(".")[0] in ("textual", "rich", "psutil", "git", "tomlkit")] == []
    assert cli(repo, "--version").stdout == shown.stdout  # `python -m lanes_tui.app`, the lane shim's form
    listed = lanes(repo, "status", "--json")
    assert (listed.returncode, json.loads(listed.stdout)) == (0, [])


# --- config layers, providers, show-chain ----------------------------------------------------------------

USER = """[providers.claude]
model = "sonnet"
max = 5

[providers.mine]
argv = ["my-agent", "--model", "{model}"]
model = "m1"

[lanes]
max_parallel = 3
"""


@pytest.fixture()
def user_file(tmp_path: Path) -> Path:
    """The lead's own config, at the XDG place the conftest gives every test."""
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "lanes-tui" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(USER)
    return path


def test_the_repository_wins_key_by_key_over_the_leads_own_file(repo: Path, user_file: Path) -> None:
    from lanes_tui.engine import load_config, set_config_value

    repo_file = write_config(repo, chains='backend = ["mine", "sim"]',
                             extra='[providers.claude]\nmodel = "opus"\n')
    config = load_config(repo)
    assert config.files == (user_file, repo_file) and config.path == repo_file
    claude = config.providers["claude"]
    assert (claude.model, claude.max) == ("opus", 5)  # the repository's model, the user's max: tables merge
    assert config.lanes.max_parallel == 6  # write_config sets it: the repository's value wins
    assert config.chains["backend"] == ("mine", "sim")  # a provider the user's file defines
    set_config_value(repo_file, "chains.docs", ("mine",), repo=repo)  # an edit is checked over the user's file
    assert load_config(repo).chains["docs"] == ("mine",)

    table = json.loads(cli(repo, "providers", "--json", check=True).stdout)
    assert table["files"] == [{"layer": "user", "path": str(user_file)}, {"layer": "repo", "path": str(repo_file)}]
    rows = {row["name"]: row for row in table["providers"]}
    values = rows["claude"]["values"]
    assert values["model"] == {"value": "opus", "from": "repo", "path": str(repo_file)}
    assert values["max"] == {"value": 5, "from": "user", "path": str(user_file)}
    assert values["argv"]["from"] == "preset" and values["argv"]["path"] is None
    assert rows["mine"]["values"]["effort"] == {"value": "", "from": "default", "path": None}
    assert rows["mine"]["chains"] == ["backend", "docs"] and rows["claude"]["family"] == "anthropic"
    text = cli(repo, "providers", "claude", check=True).stdout
    assert f"repo {repo_file}" in text and f"user {user_file}" in text and "preset" in text and "mine" not in text

    chain = json.loads(cli(repo, "show-chain", "backend", "--json", check=True).stdout)
    assert chain["task_type"] == "backend"
    assert [(s["provider"], s["model"], s["installed"]) for s in chain["chain"]] == [("mine", "m1", False),
                                                                                      ("sim", "sim", True)]
    assert chain["chain"][1]["family"] == "sim" and chain["chain"][1]["position"] == 2
    moved = json.loads(cli(repo, "show-chain", "backend", "--lane", "sim", "--json", check=True).stdout)
    assert [s["provider"] for s in moved["chain"]] == ["sim", "mine"]
    assert "backend: mine → sim" in cli(repo, "show-chain", "backend", check=True).stdout
    one_line(cli(repo, "show-chain", "nosuch"), 2, "unknown task type 'nosuch'")
    doctor = json.loads(cli(repo, "doctor", "--json").stdout)
    assert doctor["config"]["files"] == [str(user_file), str(repo_file)]


def test_a_broken_user_file_is_one_error_naming_it(repo: Path, user_file: Path) -> None:
    repo_file = write_config(repo)
    user_file.write_text("[providers.claude\nmodel = 1\n")
    one_line(cli(repo, "providers"), 2, f"{user_file}:1:", "malformed TOML")
    one_line(cli(repo, "run", "--prompt", "say hi"), 2, f"{user_file}:1:")
    doctor = cli(repo, "doctor")
    assert doctor.returncode == 1 and f"config: PROBLEM {user_file}:1:" in doctor.stdout
    user_file.write_text('[lanes]\nsample_s = 1\nmax_paralel = 3\n')
    one_line(cli(repo, "show-chain", "backend"), 2, f"{user_file}:3:", "max_paralel", "did you mean 'max_parallel'")
    user_file.write_text(USER)
    repo_file.write_text(repo_file.read_text() + '\n[providers.mine]\nmax = "two"\n')
    one_line(cli(repo, "providers"), 2, f"{repo_file}:", "providers.mine.max")  # the repository's own mistake


def test_lanes_tui_config_names_the_user_file(repo: Path, tmp_path: Path, user_file: Path) -> None:
    named = tmp_path / "elsewhere.toml"
    named.write_text('[providers.claude]\nmodel = "haiku"\n')
    env = {**os.environ, "LANES_TUI_CONFIG": str(named)}
    table = json.loads(cli(repo, "providers", "claude", "--json", env=env, check=True).stdout)
    assert table["files"] == [{"layer": "user", "path": str(named)}]  # instead of the XDG file, not over it
    assert table["providers"][0]["values"]["model"]["value"] == "haiku"
    missing = {**env, "LANES_TUI_CONFIG": str(tmp_path / "nope.toml")}
    one_line(cli(repo, "providers", env=missing), 2, "LANES_TUI_CONFIG", "nope.toml")


# --- --json on every command that reports -----------------------------------------------------------------

def _gate_failing_on(name: str) -> str:
    code = f"import os,sys; sys.exit(1 if os.path.exists({name!r}) else 0)"
    return f"commands = [{json.dumps(PY + ' -c ' + json.dumps(code))}]"


def test_json_of_run_wait_check_accept_recover_abandon_finish_doctor(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "programme")  # main is protected
    write_config(repo, gates=_gate_failing_on("bad.txt"))
    started = cli(repo, "run", "--prompt", "write feature.txt v1\n", "--id", "good", "--json", check=True)
    good = json.loads(started.stdout)
    assert good["group"] is None and [lane["id"] for lane in good["lanes"]] == ["good-a1"]
    assert good["lanes"][0]["branch"] == "lane/good-a1" and good["lanes"][0]["chain"] == ["sim"]
    assert Path(good["lanes"][0]["worktree"]).is_dir()
    cli(repo, "run", "--prompt", "write bad.txt x\n", "--id", "bad", check=True)
    for lane, state in (("good-a1", "ready"), ("bad-a1", "rejected")):
        waited = cli(repo, "wait", lane, "--timeout", "60", "--json")
        assert waited.returncode == 0, waited.stderr
        assert {k: json.loads(waited.stdout)[k] for k in ("id", "state")} == {"id": lane, "state": state}

    checked = cli(repo, "check", "good-a1", "--json")
    body = json.loads(checked.stdout)
    assert checked.returncode == 0 and body["gates_status"] == "passed" and body["warnings"] == []
    assert body["gates"][0]["status"] == "passed" and body["gates"][0]["exit_code"] == 0
    failed = cli(repo, "check", "bad-a1", "--json")
    assert failed.returncode == 1 and json.loads(failed.stdout)["gates_status"] == "failed"

    refused = cli(repo, "accept", "bad-a1", "--dry-run", "--json")
    plan = json.loads(refused.stdout)
    assert refused.returncode == 2 and plan["ok"] is False and plan["refusals"] and plan["dry_run"] is True
    one_line(cli(repo, "accept", "bad-a1", "--json"), 2, "not ready")  # refused: stdout empty, one line
    dry = cli(repo, "accept", "good-a1", "--dry-run", "--json")
    assert dry.returncode == 0 and json.loads(dry.stdout)["files"] == ["feature.txt"]

    inspected = json.loads(cli(repo, "recover", "bad-a1", "--json", check=True).stdout)
    assert inspected["action"] == "inspect" and inspected["findings"]["state"] == "rejected"
    rechecked = cli(repo, "recover", "bad-a1", "--recheck", "--json")
    assert rechecked.returncode == 1 and json.loads(rechecked.stdout)["action"] == "recheck"

    accepted = cli(repo, "accept", "good-a1", "--json")
    outcome = json.loads(accepted.stdout)
    assert accepted.returncode == 0 and outcome["state"] == "accepted" and outcome["ok"] is True
    assert outcome["merged_sha"] == git(repo, "rev-parse", "HEAD")

    abandoned = json.loads(cli(repo, "abandon", "bad-a1", "--force", "--json", check=True).stdout)
    assert abandoned["id"] == "bad-a1" and abandoned["removed"]
    finished = json.loads(cli(repo, "finish", "--json", check=True).stdout)
    assert set(finished) == {"removed", "lanes", "leftovers", "deleted", "push", "pushed", "push_reason", "pr"}
    queue = json.loads(cli(repo, "accept", "--queue", "--dry-run", "--json", check=True).stdout)
    assert queue == {"dry_run": True, "order": [], "steps": [], "ok": True}

    doctor = cli(repo, "doctor", "--json")
    report = json.loads(doctor.stdout)
    assert doctor.returncode == (1 if report["problems"] else 0)
    assert {"config", "containment", "caps", "heavy_slots", "providers", "env", "stale", "lost",
            "problems"} <= set(report)
    sim = next(p for p in report["providers"] if p["name"] == "sim")
    assert (sim["installed"], Path(sim["path"]).is_file()) == (True, True)


# --- --debug and LANES_TUI_LOG -----------------------------------------------------------------------------

def test_debug_writes_a_rotating_log_in_the_state_folder(repo: Path, tmp_path: Path) -> None:
    log = repo / ".lanes" / "state" / "logs" / "lanes-tui.log"
    cli(repo, "status", check=True)
    assert not log.exists()  # off unless asked for
    assert cli(repo, "--debug", "status").returncode == 0
    text = log.read_text()
    assert "lanes-tui --debug status" in text and "exit 0" in text
    env = {**os.environ, "LANES_TUI_LOG": "debug"}
    assert cli(repo, "check", "nosuch-a1", env=env).returncode == 2
    text = log.read_text()
    assert "refused: " in text and "Traceback" in text and "exit 2" in text
    noisy = cli(repo, "status", env={**os.environ, "LANES_TUI_LOG": "loud"})
    assert noisy.returncode == 0 and "LANES_TUI_LOG='loud' is not a level" in noisy.stderr
    # The lean inbox commands may log too: the standard library's logging, no third-party package.
    report = tmp_path / "modules.jsonl"
    assert cli(repo, "--debug", "inbox", env={**os.environ, "LANESTUI_DEBUG_MODULES": str(report)}).returncode == 0
    loaded = modules_of(report)
    assert "logging.handlers" in loaded
    assert [m for m in loaded if m.split(".")[0] in ("textual", "rich", "psutil", "git", "tomlkit", "pyte")] == []


# --- exit codes, usage errors, help ------------------------------------------------------------------------

def test_usage_errors_are_one_line_and_exit_2(repo: Path) -> None:
    one_line(cli(repo, "nosuch"), 2, "invalid choice", "--help")
    one_line(cli(repo, "run"), 2, "one of the arguments --prompt --prompt-file --plan is required")
    one_line(cli(repo, "status", "nosuch-a1"), 2, "nosuch-a1")
    one_line(cli(repo, "help", "nosuch"), 2, "no help on 'nosuch'")


def test_every_subcommand_has_a_description_and_examples() -> None:
    import argparse

    from lanes_tui.app.cli.help import describe
    from lanes_tui.app.cli.main import COMMAND_MODULES, build_parser

    parser = build_parser(None)
    describe(parser)
    found: dict[str, argparse.ArgumentParser] = {}

    def walk(p: argparse.ArgumentParser, prefix: str) -> None:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found[f"{prefix}{name}"] = sub
                    walk(sub, f"{prefix}{name} ")

    walk(parser, "")
    assert set(COMMAND_MODULES) <= set(found)
    for name, sub in found.items():
        if name == "__complete":
            continue
        assert sub.description, name
        assert "example" in (sub.epilog or ""), name
        assert "lanes-tui " in sub.format_help().split("example", 1)[1], name


def test_help_keys_lists_the_dashboard_keys_without_textual(repo: Path, tmp_path: Path) -> None:
    from lanes_tui.app.dashboard.keys import KEYS

    report = tmp_path / "modules.jsonl"
    write_config(repo, extra='[keys]\naccept = "A"\n')
    shown = cli(repo, "help", "KEYS", env={**os.environ, "LANESTUI_DEBUG_MODULES": str(report)})
    assert shown.returncode == 0, shown.stderr
    for key in KEYS:
        assert key.help in shown.stdout, key.id
    assert "  A  " in shown.stdout.split("accept the selected lane")[0].splitlines()[-1] + "  "  # the remap
    assert [m for m in modules_of(report) if m.split(".")[0] in ("textual", "rich")] == []
    run_help = cli(repo, "help", "run")
    assert run_help.returncode == 0 and "examples:" in run_help.stdout and "--prompt-file" in run_help.stdout


def test_docs_cli_names_every_command_exit_code_and_json_shape() -> None:
    from lanes_tui.app.cli.main import COMMAND_MODULES

    text = (ROOT / "docs" / "cli.md").read_text()
    for command in COMMAND_MODULES:
        assert f"`{command}" in text or f"{command}|" in text or f"lanes-tui {command} " in text, command
    table = text.split("## Exit codes", 1)[1].split("##", 1)[0]
    for code in ("0", "1", "2", "3", "4", "75", "124", "127", "128+N", "130"):
        assert f"\n| {code} |" in table, code
    shapes = text.split("## JSON shapes", 1)[1]
    for command in ("status", "inbox", "run", "wait", "check", "accept", "abandon", "recover", "finish", "doctor",
                    "providers", "show-chain", "stop", "send", "peek"):
        assert f"**`{command}" in shapes, command
    assert "(cli.md)" in (ROOT / "docs" / "README.md").read_text()


# --- shell completion ----------------------------------------------------------------------------------------

@pytest.fixture()
def completing(repo: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A repository with two lanes and an open and an answered question in its state folder, and a
    PATH whose `lanes-tui` is this installation."""
    state = repo / ".lanes" / "state"
    for lane in ("fix-login-a1", "docs-a2"):
        (state / "lanes" / lane).mkdir(parents=True)
        (state / "lanes" / lane / "lane.json").write_text("{}")
    inbox = state / "inbox" / "fix-login-a1"
    inbox.mkdir(parents=True)
    (inbox / "q_0123456789ab.json").write_text("{}")
    (inbox / "q_ba9876543210.json").write_text("{}")
    (inbox / "q_ba9876543210.answer.json").write_text("{}")
    return repo, env_with_lanes_tui(tmp_path)


def _script(repo: Path, shell: str, tmp_path: Path) -> Path:
    path = tmp_path / f"lanes-tui.{shell}"
    path.write_text(cli(repo, "completion", shell, check=True).stdout)
    return path


def test_complete_lists_ids_from_the_state_folder_cheaply(completing: tuple[Path, dict[str, str]],
                                                          tmp_path: Path) -> None:
    repo, env = completing
    report = tmp_path / "modules.jsonl"
    found = cli(repo, "__complete", "lanes", env={**env, "LANESTUI_DEBUG_MODULES": str(report)})
    assert found.stdout.split() == ["docs-a2", "fix-login-a1"]
    loaded = modules_of(report)
    assert [m for m in loaded if m.startswith("lanes_tui.engine.") and not m.startswith("lanes_tui.engine.core")] == []
    assert [m for m in loaded if m.split(".")[0] in ("textual", "rich", "psutil", "git", "tomlkit", "pyte")] == []
    assert cli(repo, "__complete", "questions").stdout.split() == ["q_0123456789ab"]  # not the answered one
    assert "__complete" not in cli(repo, "--help").stdout


def test_bash_completes_commands_options_and_lane_ids(completing: tuple[Path, dict[str, str]],
                                                      tmp_path: Path) -> None:
    repo, env = completing
    script = _script(repo, "bash", tmp_path)

    def complete(*words: str) -> list[str]:
        return bash_complete(script, repo, env, *words)

    assert complete("lanes-tui", "status", "") == ["docs-a2", "fix-login-a1"]
    assert complete("lanes-tui", "accept", "fix") == ["fix-login-a1"]
    assert complete("lanes-tui", "answer", "q_") == ["q_0123456789ab"]
    assert complete("lanes-tui", "show-ch") == ["show-chain"]
    assert complete("lanes-tui", "run", "--prompt-f") == ["--prompt-file"]
    assert complete("lanes-tui", "plan", "la") == ["launch"]
    assert complete("lanes-tui", "show-chain", "ba") == ["backend"]
    assert complete("lanes-tui", "completion", "") == ["bash", "zsh", "fish"]
    assert "KEYS" in complete("lanes-tui", "help", "")
    assert complete("lanes-tui", "--repo", str(repo), "wait", "d") == ["docs-a2"]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_script_parses_and_completes(completing: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    repo, env = completing
    script = _script(repo, "zsh", tmp_path)
    subprocess.run(["zsh", "-n", str(script)], check=True, timeout=60)

    def complete(*words: str) -> list[str]:
        return zsh_complete(script, repo, env, *words)

    assert complete("lanes-tui", "status", "") == ["docs-a2", "fix-login-a1"]
    assert complete("lanes-tui", "answer", "") == ["q_0123456789ab"]
    assert "show-chain" in complete("lanes-tui", "")
    assert "--prompt-file" in complete("lanes-tui", "run", "--")


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_script_parses_and_completes(completing: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    repo, env = completing
    script = _script(repo, "fish", tmp_path)
    subprocess.run(["fish", "--no-execute", str(script)], check=True, timeout=60)

    def complete(line: str) -> list[str]:
        return fish_complete(script, repo, env, line)

    assert complete("lanes-tui status ") == ["docs-a2", "fix-login-a1"]
    assert complete("lanes-tui answer ") == ["q_0123456789ab"]
    assert complete("lanes-tui show-ch") == ["show-chain"]
    assert "--prompt-file" in complete("lanes-tui run --prompt")
    assert complete("lanes-tui run --type ba") == ["backend"]
