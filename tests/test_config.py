"""Config loading, validation, writing and the provider presets (PRODUCT.md "Config keys", PROVIDERS.md)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from lanes_tui.engine.config.providers import CHANNELS, PRESETS
from lanes_tui.engine.config.settings import (
    DEFAULT_CHAINS,
    Config,
    GatesConfig,
    LanesSettings,
    ProviderConfig,
    load_config,
    parse_config,
)
from lanes_tui.engine.config.write import (
    default_config_text,
    set_config_value,
    set_user_config_value,
    write_default_config,
)
from lanes_tui.engine.core.errors import ConfigError, LanesError
from lanes_tui.engine.state.model import TASK_TYPES
from lanes_tui.engine.state.paths import default_worktree_root

PROMPT = "Fix the login bug; don't touch {model} or $HOME"


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A plain folder standing in for a repository, with the data dir well outside it."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    root = tmp_path / "project"
    root.mkdir()
    return root


def parse(text: str, project: Path) -> Config:
    return parse_config(text, path=project / ".lanes" / "config.toml", repo=project)


# --- defaults ---------------------------------------------------------------------------------------

def test_missing_file_gives_defaults(project: Path) -> None:
    config = load_config(project)
    assert config.path is None
    assert config.lanes == LanesSettings(worktree_root=default_worktree_root().resolve())
    assert config.lanes.max_parallel == 6
    assert config.lanes.timeout_s == 3600
    assert config.lanes.idle_timeout_s == 900
    assert config.lanes.sample_s == 5
    assert config.lanes.protected_branches == ("main", "master")
    assert config.lanes.target_branch is None
    assert config.lanes.warn_after_s == 450
    assert config.gates == GatesConfig()
    assert config.gates.commands is None and config.gates.detect  # no key: detected (docs/gates.md)
    assert (config.gates.timeout_s, config.gates.slots, config.gates.slot_wait_s) == (1800, 1, 600)
    assert dict(config.chains) == {
        "backend": ("codex", "claude"), "hard": ("claude", "codex"), "ui": ("claude", "gemini"),
        "tests": ("codex", "claude"), "docs": ("gemini", "claude"),
    }
    assert tuple(config.chains) == TASK_TYPES
    assert set(config.providers) == {"claude", "codex", "gemini", "aider", "sim"}
    assert dict(config.keys) == {}


def test_empty_file_gives_defaults_with_path(project: Path) -> None:
    (project / ".lanes").mkdir()
    (project / ".lanes" / "config.toml").write_text("# nothing yet\n")
    config = load_config(project)
    assert config.path == project / ".lanes" / "config.toml"
    assert dataclasses.replace(config, path=None) == parse_config("", path=None, repo=project)


def test_default_text_round_trips_to_the_defaults(project: Path) -> None:
    text = default_config_text(project)
    assert parse_config(text, path=None, repo=project) == load_config(project)
    # every key of the contract is explained in the file, set or commented out
    for key in ("worktree_root", "max_parallel", "timeout_s", "idle_timeout_s", "sample_s",
                "protected_branches", "commands", "slots", "argv", "prompt", "model", "effort",
                "max", "channel", "budget_patterns", "config_patterns", "[keys]"):
        assert key in text, key
    assert text.count("#") > 20


def test_config_objects_are_frozen(project: Path) -> None:
    config = load_config(project)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.lanes.max_parallel = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.chains["backend"] = ("sim",)  # type: ignore[index]


def test_engine_config_does_not_import_textual() -> None:
    code = ("import sys, lanes_tui.engine.config.settings, lanes_tui.engine.config.providers; "
            "assert not {'textual', 'rich'} & set(sys.modules), sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)


# --- values -----------------------------------------------------------------------------------------

def test_values_are_read(project: Path, tmp_path: Path) -> None:
    config = parse(f"""
[lanes]
worktree_root = "{tmp_path / 'wt'}"
max_parallel = 3
timeout_s = 60.5
idle_timeout_s = 0
sample_s = 0.5
protected_branches = ["release"]
target_branch = "develop"
warn_idle_s = 30

[gates]
commands = ["ruff check .", "pytest -x"]
timeout_s = 100
slots = 2
slot_wait_s = 0

[keys]
accept = "A"
abandon = "ctrl+x"
""", project)
    assert config.lanes == LanesSettings(
        worktree_root=(tmp_path / "wt").resolve(), max_parallel=3, timeout_s=60.5, idle_timeout_s=0,
        sample_s=0.5, protected_branches=("release",), target_branch="develop", warn_idle_s=30,
    )
    assert config.gates == GatesConfig(("ruff check .", "pytest -x"), 100, 2, 0)
    assert dict(config.keys) == {"accept": "A", "abandon": "ctrl+x"}


def test_watchdog_off_means_no_warning_unless_asked(project: Path) -> None:
    assert parse("[lanes]\nidle_timeout_s = 0\n", project).lanes.warn_after_s is None
    assert parse("[lanes]\nidle_timeout_s = 0\nwarn_idle_s = 9\n", project).lanes.warn_after_s == 9


def test_worktree_root_relative_is_relative_to_the_repo(project: Path) -> None:
    config = parse('[lanes]\nworktree_root = "../lane-trees"\n', project)
    assert config.lanes.worktree_root == (project.parent / "lane-trees").resolve()


def test_worktree_root_expands_home(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    config = parse('[lanes]\nworktree_root = "~/trees"\n', project)
    assert config.lanes.worktree_root == (tmp_path / "home" / "trees").resolve()


@pytest.mark.parametrize("value", [".", "wt", "sub/dir", "./.lanes/trees"])
def test_worktree_root_inside_the_repo_is_refused(project: Path, value: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse(f'\n[lanes]\nworktree_root = "{value}"\n', project)
    message = str(info.value)
    assert info.value.key == "lanes.worktree_root" and info.value.line == 3
    assert "is inside the repository" in message and "choose a folder outside it, e.g." in message


def test_absolute_worktree_root_inside_a_real_repo_is_refused(repo: Path) -> None:
    with pytest.raises(ConfigError, match="inside the repository"):
        parse_config(f'[lanes]\nworktree_root = "{repo / "trees"}"\n', path=None, repo=repo)


def test_preset_override_merges_only_given_keys(project: Path) -> None:
    config = parse('[providers.codex]\nmodel = "o3"\neffort = "high"\nmax = 4\n', project)
    codex = config.provider("codex")
    assert (codex.model, codex.effort, codex.max) == ("o3", "high", 4)
    assert codex.argv == PRESETS["codex"].argv
    assert codex.channel == "codex-json" and codex.budget_patterns == PRESETS["codex"].budget_patterns
    assert config.provider("claude") == PRESETS["claude"]


def test_new_provider_and_task_type(project: Path) -> None:
    config = parse("""
[providers.mine]
argv = ["my-agent", "--model", "{model}", "--cwd", "{worktree}"]
prompt = "arg"
model = "big"

[chains]
refactor = ["mine", "claude"]
""", project)
    mine = config.provider("mine")
    assert (mine.prompt, mine.channel, mine.max, mine.effort) == ("arg", "plain", 2, "")
    assert mine.render_argv("do it", Path("/w/t")) == ["my-agent", "--model", "big", "--cwd", "/w/t", "do it"]
    assert config.chain_for("refactor") == ["mine", "claude"]
    assert config.chain_for("backend") == ["codex", "claude"]  # untouched defaults stay


# --- chains -----------------------------------------------------------------------------------------

def test_chain_for_with_lane(project: Path) -> None:
    config = load_config(project)
    assert config.chain_for("backend") == ["codex", "claude"]
    assert config.chain_for("backend", "claude") == ["claude", "codex"]  # moved to the front
    assert config.chain_for("backend", "codex") == ["codex", "claude"]
    assert config.chain_for("ui", "sim") == ["sim", "claude", "gemini"]  # inserted
    chain = config.chain_for("hard")
    chain.append("x")
    assert config.chain_for("hard") == ["claude", "codex"]  # a copy each time


def test_chain_for_unknown_task_type_lists_valid_ones(project: Path) -> None:
    with pytest.raises(LanesError) as info:
        load_config(project).chain_for("frontend")
    assert "frontend" in str(info.value)
    assert all(task_type in str(info.value) for task_type in TASK_TYPES)


def test_chain_for_unknown_lane_and_provider_lookup(project: Path) -> None:
    config = load_config(project)
    with pytest.raises(LanesError) as info:
        config.chain_for("backend", "gpt")
    assert "'gpt'" in str(info.value) and "claude" in str(info.value) and "sim" in str(info.value)
    with pytest.raises(LanesError, match="unknown provider 'nope'"):
        config.provider("nope")


# --- bad configs: each error names the key, the line and a fix --------------------------------------

PREFIX = "# the lead's config\n\n"  # so every line number below is 2 more than inside the snippet

BAD = [
    # (snippet, key, line in snippet, text in the message)
    ("[lanes\nmax_parallel = 2\n", None, 1, "malformed TOML"),
    ("[lanes]\nmax_parallel = \n", None, 2, "malformed TOML"),
    ("[lanes]\nmax_parallel = 2\nmax_parallel = 3\n", None, 3, "malformed TOML"),
    ("[lanes]\nprotected_branches = [\"main\",\n", None, 2, "malformed TOML: Invalid value"),
    ("[lanse]\nmax_parallel = 2\n", "lanse", 1, "did you mean 'lanes'"),
    ("verbose = true\n", "verbose", 1, "unknown table or key"),
    ("lanes = 3\n", "lanes", 1, "must be a table"),
    ("[lanes]\nmax_paralel = 2\n", "lanes.max_paralel", 2, "did you mean 'max_parallel'"),
    ("[gates]\ntimeout = 5\n", "gates.timeout", 2, "did you mean 'timeout_s'"),
    ("[lanes]\n\nmax_parallel = \"6\"\n", "lanes.max_parallel", 3, "must be a whole number"),
    ("[lanes]\nmax_parallel = 0\n", "lanes.max_parallel", 2, "at least 1"),
    ("[lanes]\nmax_parallel = -2\n", "lanes.max_parallel", 2, "at least 1"),
    ("[lanes]\nmax_parallel = 2.5\n", "lanes.max_parallel", 2, "whole number"),
    ("[lanes]\nmax_parallel = true\n", "lanes.max_parallel", 2, "whole number, got boolean true"),
    ("[lanes]\ntimeout_s = \"1h\"\n", "lanes.timeout_s", 2, "must be a number"),
    ("[lanes]\ntimeout_s = 0\n", "lanes.timeout_s", 2, "greater than 0"),
    ("[lanes]\nidle_timeout_s = -1\n", "lanes.idle_timeout_s", 2, "0 or more"),
    ("[lanes]\nsample_s = 0\n", "lanes.sample_s", 2, "greater than 0"),
    ("[lanes]\nwarn_idle_s = -5\n", "lanes.warn_idle_s", 2, "greater than 0"),
    ("[lanes]\nworktree_root = 7\n", "lanes.worktree_root", 2, "must be a string"),
    ("[lanes]\nprotected_branches = \"main\"\n", "lanes.protected_branches", 2, "array of strings"),
    ("[lanes]\ntarget_branch = \"\"\n", "lanes.target_branch", 2, "must not be empty"),
    ("[gates]\nslots = 0\n", "gates.slots", 2, "at least 1"),
    ("[gates]\ncommands = [1]\n", "gates.commands", 2, "array of strings"),
    ("[gates]\nslot_wait_s = -1\n", "gates.slot_wait_s", 2, "0 or more"),
    ("[providers.codex]\nprompt = \"pipe\"\n", "providers.codex.prompt", 2, "valid: stdin, arg"),
    ("[providers.codex]\nprompt = \"args\"\n", "providers.codex.prompt", 2, "did you mean 'arg'"),
    ("[providers.codex]\nchannel = \"json\"\n", "providers.codex.channel", 2, "codex-json"),
    ("[providers.codex]\nmax = -1\n", "providers.codex.max", 2, "at least 1"),
    ("[providers.codex]\nmodel = 5\n", "providers.codex.model", 2, "must be a string"),
    ("[providers.codex]\nmodle = \"o3\"\n", "providers.codex.modle", 2, "did you mean 'model'"),
    ("[providers.claude]\nbudget_patterns = [\"ok\", \"(unclosed\"]\n", "providers.claude.budget_patterns",
     2, "'(unclosed' is not a valid regex"),
    ("[providers.claude]\nconfig_patterns = [\"[1211\"]\n", "providers.claude.config_patterns", 2,
     "'[1211' is not a valid regex"),
    ("[providers.mine]\nmodel = \"x\"\n", "providers.mine", 1, "has no argv"),
    ("[providers.mine]\nargv = []\n", "providers.mine.argv", 2, "must not be empty"),
    ("[providers.mine]\nargv = [\"a\", \"{modle}\"]\n", "providers.mine.argv", 2, "did you mean 'model'"),
    ("[providers.mine]\nargv = [\"a\", \"--x={home}\"]\n", "providers.mine.argv", 2,
     "unknown placeholder {home}"),
    ("[providers.codex]\nargv = [\"codex\", \"-s\", \"danger-full-access\"]\n", "providers.codex.argv", 2,
     "outside its worktree"),
    ("[providers]\ncodex = 3\n", "providers.codex", 2, "must be a table"),
    ("[providers.\"a b\"]\nargv = [\"x\"]\n", "providers.a b", 1, "invalid provider name"),
    ("[chains]\nbackend = [\"codx\"]\n", "chains.backend", 2, "did you mean 'codex'"),
    ("[chains]\nbackend = []\n", "chains.backend", 2, "must not be empty"),
    ("[chains]\nbackend = [\"codex\", \"codex\"]\n", "chains.backend", 2, "twice"),
    ("[chains]\nbackend = \"codex\"\n", "chains.backend", 2, "array of strings"),
    ("[keys]\naccept = 1\n", "keys.accept", 2, "must be a string"),
    ("[dashboard]\ntheme = 1\n", "dashboard.theme", 2, "must be a string"),
    ("[dashboard]\ntehme = \"nord\"\n", "dashboard.tehme", 2, "did you mean 'theme'"),
]


@pytest.mark.parametrize(("snippet", "key", "line", "text"), BAD,
                         ids=[f"{i}-{bad[1]}" for i, bad in enumerate(BAD)])
def test_bad_config_names_key_line_and_fix(project: Path, snippet: str, key: str | None, line: int,
                                           text: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse(PREFIX + snippet, project)
    error = info.value
    message = str(error)
    assert error.line == line + 2
    assert f"config.toml:{line + 2}:" in message
    if key is not None:
        assert error.key == key
        assert f"[{key}]" in message
    assert text in message
    assert error.fix, "every refusal says how to fix it"
    assert " — " in message


def test_the_dashboard_keeps_a_setting_in_the_leads_own_file(project: Path) -> None:
    """`[dashboard] theme` goes to `$XDG_CONFIG_HOME/lanes-tui/config.toml` (created, then edited with its
    comments kept), checked as the repository reads it before anything is written."""
    import os

    user = Path(os.environ["XDG_CONFIG_HOME"]) / "lanes-tui" / "config.toml"
    assert load_config(project).dashboard.theme is None
    assert set_user_config_value(project, "dashboard.theme", "nord") == user
    user.write_text("# the lead's own providers\n" + user.read_text())
    set_user_config_value(project, "dashboard.theme", "gruvbox")
    assert user.read_text().startswith("# the lead's own providers\n")
    assert load_config(project).dashboard.theme == "gruvbox"
    with pytest.raises(ConfigError, match=r"dashboard\.colour"):
        set_user_config_value(project, "dashboard.colour", "red")
    assert "colour" not in user.read_text()


def test_load_config_reports_the_file_path(project: Path) -> None:
    (project / ".lanes").mkdir()
    path = project / ".lanes" / "config.toml"
    path.write_text("[lanes]\nmax_parallel = 'x'\n")
    with pytest.raises(ConfigError) as info:
        load_config(project)
    assert str(info.value).startswith(f"{path}:2: [lanes.max_parallel]")


def test_config_error_is_a_lanes_error(project: Path) -> None:
    with pytest.raises(LanesError):
        parse("[lanes]\nmax_parallel = 0\n", project)


# --- writing ----------------------------------------------------------------------------------------

def test_write_default_config(repo: Path) -> None:
    path = write_default_config(repo)
    assert path == repo / ".lanes" / "config.toml"
    assert path.read_text() == default_config_text(repo)
    assert (repo / ".lanes" / ".gitignore").read_text() == "state/\n"
    assert load_config(repo).path == path
    with pytest.raises(LanesError, match="already exists"):
        write_default_config(repo)
    path.write_text("# mine\n")
    with pytest.raises(LanesError):
        write_default_config(repo)
    assert path.read_text() == "# mine\n"
    write_default_config(repo, force=True)
    assert path.read_text() == default_config_text(repo)
    assert (repo / ".lanes" / ".gitignore").read_text() == "state/\n"


def test_write_default_config_keeps_an_existing_gitignore(project: Path) -> None:
    (project / ".lanes").mkdir()
    (project / ".lanes" / ".gitignore").write_text("*.bak")
    write_default_config(project)
    assert (project / ".lanes" / ".gitignore").read_text() == "*.bak\nstate/\n"


def test_set_config_value_keeps_comments(project: Path) -> None:
    path = write_default_config(project)
    original = path.read_text()
    path.write_text(original.replace("[gates]", "# the lead's own note\n[gates]"))
    set_config_value(path, "lanes.max_parallel", 3)
    text = path.read_text()
    assert "max_parallel = 3 # lanes running at once" in text
    assert "# the lead's own note" in text
    assert "# lanes-tui configuration." in text
    assert load_config(project).lanes.max_parallel == 3


def test_set_config_value_adds_tables_and_converts_values(project: Path, tmp_path: Path) -> None:
    path = write_default_config(project)
    set_config_value(path, "keys.accept", "A")
    set_config_value(path, "providers.codex.effort", "high")
    set_config_value(path, "lanes.protected_branches", ("main", "release"))
    set_config_value(path, "lanes.worktree_root", tmp_path / "trees")
    config = load_config(project)
    assert dict(config.keys) == {"accept": "A"}
    assert config.provider("codex").effort == "high"
    assert config.lanes.protected_branches == ("main", "release")
    assert config.lanes.worktree_root == (tmp_path / "trees").resolve()
    assert "[providers.codex]" in path.read_text()


def test_set_config_value_on_a_missing_file(project: Path) -> None:
    path = project / ".lanes" / "config.toml"
    set_config_value(path, "gates.slots", 2)
    assert load_config(project).gates.slots == 2


def test_set_config_value_refuses_a_bad_value_and_leaves_the_file(project: Path) -> None:
    path = write_default_config(project)
    before = path.read_text()
    with pytest.raises(ConfigError) as info:
        set_config_value(path, "lanes.max_parallel", 0)
    assert info.value.key == "lanes.max_parallel"
    with pytest.raises(ConfigError, match="did you mean 'max_parallel'"):
        set_config_value(path, "lanes.max_paralel", 2)
    with pytest.raises(LanesError, match="invalid config key"):
        set_config_value(path, "max_parallel", 2)
    assert path.read_text() == before


# --- presets: the exact argv of PROVIDERS.md ---------------------------------------------------------

WT = Path("/trees/project-1234abcd/fix-login-a1")


def test_preset_argv_claude() -> None:
    claude = PRESETS["claude"]
    assert claude.render_argv(PROMPT, WT) == [
        "claude", "-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits",
        "--model", "sonnet",
    ]
    assert (claude.prompt, claude.channel, claude.max) == ("stdin", "claude-stream-json", 2)


def test_preset_argv_codex() -> None:
    codex = PRESETS["codex"]
    assert codex.render_argv(PROMPT, WT) == [
        "codex", "exec", "--json", "-m", "gpt-5.5", "-c", "model_reasoning_effort=medium",
        "-s", "workspace-write", "-C", str(WT), "--skip-git-repo-check", "-",
    ]
    assert (codex.prompt, codex.channel) == ("stdin", "codex-json")
    assert not any("danger-full-access" in part for part in codex.argv)


def test_preset_argv_gemini() -> None:
    gemini = PRESETS["gemini"]
    assert gemini.render_argv(PROMPT, WT) == [
        "gemini", "-p", PROMPT, "--output-format", "stream-json", "-m", "gemini-2.5-pro",
        "--skip-trust", "--approval-mode", "yolo",  # a new folder each lane; edit and shell tools (issue 29)
    ]
    assert (gemini.prompt, gemini.channel) == ("arg", "gemini-stream-json")


def test_preset_argv_aider() -> None:
    aider = PRESETS["aider"]
    assert aider.render_argv(PROMPT, WT) == [
        "aider", "--yes-always", "--no-auto-commits", "--no-gitignore", "--message", PROMPT,
    ]
    assert (aider.prompt, aider.channel) == ("arg", "plain")


def test_preset_argv_sim() -> None:
    sim = PRESETS["sim"]
    assert sim.render_argv(PROMPT, WT) == [sys.executable, "-m", "lanes_tui.engine.sim"]
    assert (sim.prompt, sim.channel, sim.max) == ("stdin", "plain", 100)
    assert sim.executable() == sys.executable
    assert sim.budget_patterns == ("SIM-OUT-OF-BUDGET",)
    assert sim.config_patterns == ("SIM-CONFIG-ERROR",)


def test_every_preset_is_valid_and_named_for_its_key() -> None:
    for name, preset in PRESETS.items():
        assert preset.name == name
        assert preset.channel in CHANNELS and preset.prompt in ("stdin", "arg")
        assert preset.executable() == (sys.executable if name == "sim" else name)
    assert set(PRESETS) >= {p for chain in DEFAULT_CHAINS.values() for p in chain}


def test_prompt_text_is_never_substituted_or_split() -> None:
    arg = ProviderConfig("x", ("x", "--m", "{model}"), "arg", "m1", "", 2, "plain", (), ())
    tricky = "a {model} b; rm -rf / \n$(whoami) {prompt}"
    assert arg.render_argv(tricky, WT) == ["x", "--m", "m1", tricky]
    stdin = dataclasses.replace(arg, prompt="stdin")
    assert stdin.render_argv(tricky, WT) == ["x", "--m", "m1"]
    literal = dataclasses.replace(arg, argv=("x", '{"json": 1}', "{worktree}/sub"))
    assert literal.render_argv("p", WT) == ["x", '{"json": 1}', f"{WT}/sub", "p"]


# --- budget and config patterns: the sample lines of PROVIDERS.md --------------------------------------

BUDGET_LINES = [
    ("claude", 'API Error: 429 {"type": "1113", "message": "Insufficient account balance"}'),
    ("claude", 'API Error: 429 {"error":{"type":"1308","message":"Usage limit reached for 5 hour"}}'),
    ("claude", 'API Error: 429 {"type" : "1317"}'),
    ("claude", "Insufficient balance or no resource package. Please recharge."),
    ("claude", "Usage limit reached for 5 hour. Your limit will reset at 18:00"),
    ("claude", "Limit Exhausted"),
    ("codex", "You've hit your usage limit. Upgrade to Pro or try again in 3 days."),
    ("codex", "you've HIT your usage LIMIT"),
    ("codex", "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro) or try again at 5:08 PM."),
    ("codex", "ERROR: Quota exceeded. Check your plan and billing details."),
    ("codex", "stream error: workspace is out of credits"),
    ("gemini", "[API Error: RESOURCE_EXHAUSTED: You exceeded your current quota]"),
    ("gemini", "Individual quota reached for gemini-2.5-pro"),
    ("sim", "SIM-OUT-OF-BUDGET"),
]
CONFIG_LINES = [
    ("claude", 'API Error: 400 [1211] {"error":"Unknown Model, please check the model code."}'),
    ("claude", "Unknown Model, please check the model code."),
    ("claude", "Error: no API key for provider zai"),
    ("codex", "The 'gpt-9' model is not supported when using Codex with a ChatGPT account."),
    ("codex", "unexpected status 401 Unauthorized: Incorrect API key provided: sk-test., url: http://x/v1/responses"),
    ("codex", "unexpected status 403 Forbidden: You are not allowed to sample from this model, url: http://x"),
    ("gemini", "Error: invalid model selection"),
    ("gemini", "gemini-9-ultra is not recognized as a known model"),
    ("sim", "sim: SIM-CONFIG-ERROR bad step"),
]
ORDINARY = [
    "All 42 tests passed",
    'API Error: 429 {"type": "1200"}',
    "Editing quota.py to fix the RESOURCE counter",
    "Usage: limit the output",
    "Do you want me to continue?",
    # codex 0.169 warns so (an `item.completed` of type error) for a model missing from its list, and runs on.
    "Model metadata for `gpt-9` not found. Defaulting to fallback metadata; this can degrade performance",
]


@pytest.mark.parametrize(("name", "line"), BUDGET_LINES)
def test_budget_patterns_match_the_sample_lines(name: str, line: str) -> None:
    assert PRESETS[name].budget_match(line) is not None
    assert PRESETS[name].config_match(line) is None


@pytest.mark.parametrize(("name", "line"), CONFIG_LINES)
def test_config_patterns_match_the_sample_lines(name: str, line: str) -> None:
    assert PRESETS[name].config_match(line) is not None
    assert PRESETS[name].budget_match(line) is None


@pytest.mark.parametrize("line", ORDINARY)
def test_ordinary_output_matches_no_pattern(line: str) -> None:
    for preset in PRESETS.values():
        assert preset.budget_match(line) is None, (preset.name, line)
        assert preset.config_match(line) is None, (preset.name, line)


def test_configured_patterns_replace_the_preset_ones(project: Path) -> None:
    config = parse('[providers.claude]\nbudget_patterns = ["out of tokens"]\n', project)
    claude = config.provider("claude")
    assert claude.budget_match("OUT OF TOKENS today") == "out of tokens"
    assert claude.budget_match("Limit Exhausted") is None
    assert claude.config_patterns == PRESETS["claude"].config_patterns


# --- numbers that are not numbers, homes that do not exist (issue 9, item 7) ------------------------

@pytest.mark.parametrize(("snippet", "key"), [
    ("[lanes]\nidle_timeout_s = nan\n", "lanes.idle_timeout_s"),
    ("[lanes]\ntimeout_s = inf\n", "lanes.timeout_s"),
    ("[lanes]\nsample_s = +inf\n", "lanes.sample_s"),
    ("[lanes]\nwarn_idle_s = -nan\n", "lanes.warn_idle_s"),
    ("[gates]\ntimeout_s = inf\n", "gates.timeout_s"),
    ("[gates]\nslot_wait_s = nan\n", "gates.slot_wait_s"),
])
def test_nan_and_infinity_are_refused_in_every_number(project: Path, snippet: str, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse(snippet, project)
    assert info.value.key == key and info.value.line == 2
    assert "must be a finite number" in str(info.value) and "nan and inf" in str(info.value)


def test_worktree_root_of_an_unknown_user_is_one_config_error(project: Path) -> None:
    with pytest.raises(ConfigError) as info:
        parse('[lanes]\nworktree_root = "~nouser-lanes-tui/wt"\n', project)
    assert info.value.key == "lanes.worktree_root" and info.value.line == 2
    assert "there is no user 'nouser-lanes-tui' on this machine" in str(info.value)


def test_config_errors_for_nan_and_unknown_users_reach_the_cli_as_one_line(repo: Path) -> None:
    (repo / ".lanes").mkdir()
    config = repo / ".lanes" / "config.toml"
    for text in ("[lanes]\nidle_timeout_s = nan\n", '[lanes]\nworktree_root = "~nouser-lanes-tui/wt"\n'):
        config.write_text(text)
        proc = subprocess.run([sys.executable, "-m", "lanes_tui.app", "run", "--prompt", "say hi"], cwd=repo,
                              capture_output=True, text=True, timeout=60, check=False)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "config.toml:2" in proc.stderr, proc.stderr
