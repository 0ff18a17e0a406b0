"""Plan files (docs/plans.md): every refusal with its exact message, the waves, `[tiers]` in the config.

Each refusal below is also shown, word for word, in docs/plans.md (`test_docs_show_every_message`), so
the lead reads there exactly what `plan check` prints.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from lanes_tui.engine.config.settings import Config, parse_config
from lanes_tui.engine.config.tiers import TIER_NAMES, TierConfig
from lanes_tui.engine.core.errors import ConfigError, LanesError
from lanes_tui.engine.core.limits import MAX_PROMPT_BYTES
from lanes_tui.engine.plans import validate
from lanes_tui.engine.plans.lines import PlanLines
from lanes_tui.engine.plans.model import TIERS, Plan, Ticket
from lanes_tui.engine.plans.phases import phase_prompt
from lanes_tui.engine.plans.scope import covers, overlap
from lanes_tui.engine.plans.validate import PlanError, check_report, load_plan, waves
from lanes_tui.engine.plans.waves import find_cycle

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "docs" / "examples" / "plan.toml"
DOCS = ROOT / "docs" / "plans.md"
CONFIG = '[tiers.heavy]\nprovider = "claude"\nmodel = "opus"\n'
HEAD = '[plan]\nname = "health-check"\n\n'


def ticket(tid: str, extra: str = "") -> str:
    """A valid `[[tickets]]` block of five lines (six with `extra`), then a blank line."""
    return f'[[tickets]]\nid = "{tid}"\ntitle = "Ticket {tid}"\nprompt = "Do {tid}."\n' + (
        f"{extra}\n" if extra else "") + "\n"


@pytest.fixture()
def config(repo: Path) -> Config:
    return parse_config(CONFIG, path=None, repo=repo)


@pytest.fixture()
def here(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in the repository, so a plan given as `plan.toml` is named that way in every message."""
    monkeypatch.chdir(repo)
    return repo


def load(text: str, repo: Path, config: Config, name: str = "plan.toml") -> Plan:
    (repo / name).write_text(text, encoding="utf-8")
    return load_plan(Path(name), repo, config)


def sibling(repo: Path, name: str, *, git: bool) -> Path:
    folder = repo.parent / name
    folder.mkdir()
    if git:
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=folder, check=True)
    return folder


# --- every refusal, with its line and message -------------------------------------------------------

Setup = Callable[[Path], object] | None
#: (name, plan text, setup, line, message after `plan.toml:LINE: `)
CASES: list[tuple[str, str, Setup, int | None, str]] = [
    ("malformed", HEAD + '[[tickets]]\nid = "api\n', None, 5,
     "malformed TOML: Illegal character '\\n' — fix the syntax on that line (strings need quotes, arrays [a, b], "
     "see toml.io)"),
    ("unknown table", HEAD + "[[ticket]]\n", None, 4,
     "[ticket] unknown table or key 'ticket' — did you mean 'tickets'? (valid: plan, tickets)"),
    ("no plan table", ticket("api"), None, 1,
     'the plan has no [plan] table — add [plan] with name = "NAME" at the top of the file'),
    ("unknown plan key", '[plan]\nname = "health-check"\ntaget = "main"\n\n' + ticket("api"), None, 3,
     "[plan.taget] unknown key 'taget' in [plan] — did you mean 'target'? (valid: name, target)"),
    ("no name", "[plan]\n\n" + ticket("api"), None, 1, '[plan] the plan has no name — add name = "plan" under [plan]'),
    ("bad plan name", '[plan]\nname = "health check"\n\n' + ticket("api"), None, 2,
     "[plan.name] invalid plan name 'health check' — use 1-64 letters (any script), digits, '-' or '_', "
     "not starting with '-' (no '/', '.', spaces)"),
    ("no tickets", HEAD, None, 1,
     "the plan has no tickets — add at least one [[tickets]] section with id, title and prompt"),
    ("unknown ticket key", HEAD + ticket("api", 'scopes = ["src/api/"]'), None, 8,
     "ticket 'api' [scopes] unknown key 'scopes' — did you mean 'scope'? (valid: id, title, type, provider, tier, "
     "prompt, prompt_file, scope, blockers, attempts, repo)"),
    ("no id", HEAD + '[[tickets]]\ntitle = "Add /health"\nprompt = "Do it."\n', None, 4,
     'ticket #1 [id] the ticket has no id — add id = "short-name" (letters, digits, - or _; it names the lane)'),
    ("bad id", HEAD + ticket("api/health"), None, 5,
     "ticket 'api/health' [id] invalid ticket id 'api/health' — use 1-58 letters (any script), digits, '-' or "
     "'_', not starting with '-' (no '/', '.', spaces)"),
    ("duplicate id", HEAD + ticket("api") + ticket("api"), None, 10,
     "ticket 'api' [id] id 'api' is already used by ticket #1 — give each ticket its own id"),
    ("no title", HEAD + '[[tickets]]\nid = "api"\nprompt = "Do it."\n', None, 4,
     "ticket 'api' [title] the ticket has no title — add title = \"what the ticket does, in a line\""),
    ("no prompt", HEAD + '[[tickets]]\nid = "api"\ntitle = "Add /health"\n', None, 4,
     "ticket 'api' [prompt] the ticket has no prompt — add prompt = \"…\" or prompt_file = \"FILE\" (relative to "
     "the plan file)"),
    ("empty prompt", HEAD + '[[tickets]]\nid = "api"\ntitle = "Add /health"\nprompt = """\n\n"""\n', None, 7,
     "ticket 'api' [prompt] the prompt is empty — write what the agent must do"),
    ("prompt too big", HEAD + '[[tickets]]\nid = "api"\ntitle = "Add /health"\nprompt = "'
     + "x" * (MAX_PROMPT_BYTES + 1) + '"\n', None, 7,
     "ticket 'api' [prompt] the prompt is 1,000,001 bytes, more than the limit of 1 MB (1,000,000 bytes) — shorten "
     "it, or put the detail in a file in the repository and point the prompt to that file"),
    ("prompt and prompt_file", HEAD + ticket("api", 'prompt_file = "prompts/api.md"'), None, 8,
     "ticket 'api' [prompt_file] the ticket sets both 'prompt' and 'prompt_file' — keep one"),
    ("missing prompt_file", HEAD + '[[tickets]]\nid = "api"\ntitle = "Add /health"\nprompt_file = "prompts/api.md"\n',
     None, 7,
     "ticket 'api' [prompt_file] cannot read prompt file prompts/api.md: No such file or directory — give a "
     "readable text file"),
    ("prompt_file too big", HEAD + '[[tickets]]\nid = "api"\ntitle = "Add /health"\nprompt_file = "big.md"\n',
     lambda repo: (repo / "big.md").write_bytes(b"x" * (MAX_PROMPT_BYTES + 1)), 7,
     "ticket 'api' [prompt_file] prompt file big.md is larger than the limit of 1 MB (1,000,000 bytes) — shorten "
     "it, or put the detail in a file in the repository and point the prompt to that file"),
    ("unknown blocker", HEAD + ticket("api") + ticket("wire", 'blockers = ["apl"]'), None, 13,
     "ticket 'wire' [blockers] blocker 'apl' is not a ticket of this plan — did you mean 'api'? (valid: api, wire)"),
    ("cycle", HEAD + ticket("api", 'blockers = ["wire"]') + ticket("wire", 'blockers = ["tests"]')
     + ticket("tests", 'blockers = ["api"]'), None, 8,
     "ticket 'api' [blockers] dependency cycle: api → wire → tests → api — remove one of these blockers: each "
     "ticket waits for the next, so none can start"),
    ("blocks itself", HEAD + ticket("api", 'blockers = ["api"]'), None, 8,
     "ticket 'api' [blockers] dependency cycle: api → api — remove one of these blockers: each ticket waits for the "
     "next, so none can start"),
    ("escaping scope", HEAD + ticket("api", 'scope = ["../shared/api.py"]'), None, 8,
     "ticket 'api' [scope] scope path '../shared/api.py' escapes the repository — list only paths inside the "
     "repository (a ticket for another repository sets repo = \"../other\")"),
    ("absolute scope", HEAD + ticket("api", 'scope = ["/etc/hosts"]'), None, 8,
     "ticket 'api' [scope] scope path '/etc/hosts' is absolute — write it relative to the repository, e.g. "
     "'src/app.py' or 'src/api/'"),
    ("glob scope", HEAD + ticket("api", 'scope = ["src/api/*.py"]'), None, 8,
     "ticket 'api' [scope] scope path 'src/api/*.py' contains the glob character '*' — list exact files, or a "
     "folder ending in '/' (a file whose name holds [ ] is owned through its folder)"),
    ("protected .git", HEAD + ticket("api", 'scope = [".git/hooks/"]'), None, 8,
     "ticket 'api' [scope] scope path '.git/hooks/' is protected — no ticket may own .git/ (git's data) or .lanes/ "
     "(lanes-tui's state): remove it from the scope"),
    ("protected .lanes", HEAD + ticket("api", 'scope = [".lanes/config.toml"]'), None, 8,
     "ticket 'api' [scope] scope path '.lanes/config.toml' is protected — no ticket may own .git/ (git's data) or "
     ".lanes/ (lanes-tui's state): remove it from the scope"),
    ("not plain", HEAD + ticket("api", 'scope = ["./src/api/"]'), None, 8,
     "ticket 'api' [scope] scope path './src/api/' is not in plain form — write it as 'src/api/'"),
    ("folder without slash", HEAD + ticket("api", 'scope = ["src"]'), lambda repo: (repo / "src").mkdir(), 8,
     "ticket 'api' [scope] scope path 'src' is a folder — write it as 'src/'"),
    ("same file twice", HEAD + ticket("api", 'scope = ["src/app.py"]')
     + ticket("wire", 'scope = [\n  "src/db.py",\n  "src/app.py",\n]'), None, 16,
     "ticket 'wire' [scope] tickets 'api' and 'wire' both own 'src/app.py' — give each file to one ticket: narrow "
     "one scope, or merge the two tickets"),
    ("file in a folder", HEAD + ticket("api", 'scope = ["src/api/"]') + ticket("wire", 'scope = ["src/api/routes.py"]'),
     None, 14,
     "ticket 'wire' [scope] tickets 'api' and 'wire' both own 'src/api/routes.py': it is inside the folder "
     "'src/api/' of ticket 'api' — give each file to one ticket: narrow one scope, or merge the two tickets"),
    ("folder over a file", HEAD + ticket("api", 'scope = ["src/api/routes.py"]') + ticket("wire", 'scope = ["src/"]'),
     None, 14,
     "ticket 'wire' [scope] tickets 'api' and 'wire' both own 'src/api/routes.py': it is inside the folder 'src/' "
     "of ticket 'wire' — give each file to one ticket: narrow one scope, or merge the two tickets"),
    ("nested folders", HEAD + ticket("api", 'scope = ["src/"]') + ticket("wire", 'scope = ["src/api/"]'), None, 14,
     "ticket 'wire' [scope] tickets 'api' and 'wire' both own 'src/api/': it is inside the folder 'src/' of ticket "
     "'api' — give each file to one ticket: narrow one scope, or merge the two tickets"),
    ("unknown tier", HEAD + ticket("api", 'tier = "hevy"'), None, 8,
     "ticket 'api' [tier] unknown tier 'hevy' — did you mean 'heavy'? (valid: heavy, standard, light)"),
    ("tier not configured", HEAD + ticket("api", 'tier = "light"'), None, 8,
     "ticket 'api' [tier] tier 'light' is not configured — add [tiers.light] with provider = \"claude\" to "
     ".lanes/config.toml (docs/config.md#tiers)"),
    ("unknown provider", HEAD + ticket("api", 'provider = "claud"'), None, 8,
     "ticket 'api' [provider] unknown provider 'claud' — did you mean 'claude'? (valid: claude, codex, gemini, aider, "
     "sim) (or add [providers.claud] to the config)"),
    ("unknown type", HEAD + ticket("api", 'type = "backnd"'), None, 8,
     "ticket 'api' [type] unknown task type 'backnd' — did you mean 'backend'? (valid: backend, hard, ui, tests, "
     "docs) (or add it under [chains] in the config)"),
    ("type and provider", HEAD + ticket("api", 'type = "backend"\nprovider = "claude"'), None, 9,
     "ticket 'api' [provider] the ticket sets both 'type' and 'provider' — keep one: type picks a chain of "
     "providers, provider one provider, tier a provider and model from [tiers]"),
    ("attempts", HEAD + ticket("api", "attempts = 0"), None, 8,
     "ticket 'api' [attempts] attempts must be a whole number from 1 to 10, got integer 0 — write e.g. attempts = 3 "
     "(no quotes); the default is 2"),
    ("repo missing", HEAD + ticket("api", 'repo = "../other"'), None, 8,
     "ticket 'api' [repo] repo '../other' does not exist — write the path relative to the plan's repository, e.g. "
     "repo = \"../other\""),
    ("repo not git", HEAD + ticket("api", 'repo = "../other"'), lambda repo: sibling(repo, "other", git=False), 8,
     "ticket 'api' [repo] repo '../other' is not a git repository — create it with `git init`, or fix the path"),
    ("repo not top", HEAD + ticket("api", 'repo = "../other/src"'),
     lambda repo: (sibling(repo, "other", git=True) / "src").mkdir(), 8,
     "ticket 'api' [repo] repo '../other/src' is a folder inside a repository, not its top folder — write the path "
     "of its top folder: repo = \"../other\""),
]


@pytest.mark.parametrize(("text", "setup", "line", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_refusal_names_file_line_ticket_key_and_fix(here: Path, config: Config, text: str, setup: Setup,
                                                         line: int | None, message: str) -> None:
    if setup is not None:
        setup(here)
    with pytest.raises(PlanError) as caught:
        load(text, here, config)
    assert str(caught.value) == (f"plan.toml:{line}: " if line else "plan.toml: ") + message
    assert caught.value.file == "plan.toml" and caught.value.line == line


@pytest.mark.parametrize(("extra", "line", "message"), [
    ('title = ""', 7, "ticket 'api' [title] title is empty — write a value: title = \"…\""),
    ('scope = "src/"', 8, "ticket 'api' [scope] scope must be an array of strings, got string \"src/\" — write it as "
                          'scope = ["a", "b"]'),
    ('scope = ["src/app.py", "src/app.py"]', 8, "ticket 'api' [scope] scope lists 'src/app.py' twice — remove one"),
    ('scope = ["README.md/"]', 8, "ticket 'api' [scope] scope path 'README.md/' is a file — write it as 'README.md'"),
    ('tier = "heavy"\ntype = "ui"', 8, "ticket 'api' [tier] the ticket sets both 'type' and 'tier' — keep one: type "
                                      "picks a chain of providers, provider one provider, tier a provider and model "
                                      "from [tiers]"),
])
def test_smaller_refusals(here: Path, config: Config, extra: str, line: int, message: str) -> None:
    text = HEAD + ticket("api", extra)
    if extra.startswith("title"):
        text = text.replace('title = "Ticket api"\n', "", 1)
    with pytest.raises(PlanError) as caught:
        load(text, here, config)
    assert str(caught.value) == f"plan.toml:{line}: {message}"


def test_docs_show_every_message() -> None:
    """docs/plans.md shows each refusal as `plan check` prints it (after the `FILE:LINE: ` prefix)."""
    docs = DOCS.read_text(encoding="utf-8")
    missing = [name for name, _text, _setup, _line, message in CASES if message not in docs]
    assert missing == [], f"docs/plans.md lacks the messages of: {missing}"
    assert MARKDOWN_MESSAGE in docs


def test_a_plan_too_large_is_refused_unread(here: Path, config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(validate, "MAX_PLAN_BYTES", 100)
    with pytest.raises(LanesError, match=r"plan file plan.toml is larger than the limit of 0.0001 MB \(100 bytes\)"):
        load(HEAD + ticket("api") * 3, here, config)


# --- Markdown plans -----------------------------------------------------------------------------------

MARKDOWN_MESSAGE = ("plan.md is a Markdown plan: TOML plans are for `plan check` and `plan launch`, Markdown phases "
                    "for `run --plan F --phase N` — run one phase with `lanes-tui run --plan plan.md --phase N`, or "
                    "write the plan as TOML (docs/plans.md)")


def test_a_markdown_plan_is_pointed_at_run_phase(here: Path, config: Config) -> None:
    text = "# Health check\n\n## Phase 1\nAdd the endpoint.\n\n## Phase 2\nTest it.\n"
    with pytest.raises(LanesError) as caught:
        load(text, here, config, name="plan.md")
    assert str(caught.value) == MARKDOWN_MESSAGE
    assert phase_prompt(here / "plan.md", "2") == "## Phase 2\nTest it.\n"  # still works, unchanged


def test_phases_in_a_toml_file_get_the_markdown_message(here: Path, config: Config) -> None:
    with pytest.raises(LanesError, match=r"^plan.toml is a Markdown plan: TOML plans are for `plan check`"):
        load("# Plan\n\n## Phase 1\nAdd [the] endpoint.\n", here, config)


# --- what a valid plan gives ----------------------------------------------------------------------------

@pytest.fixture()
def example(repo: Path) -> Path:
    """The documented example plan, copied into the repository as a lead would keep it (a prompt file
    must be inside the repository: docs/reliability.md)."""
    shutil.copytree(EXAMPLE.parent, repo / ".lanes" / "plans")
    return repo / ".lanes" / "plans" / EXAMPLE.name


def test_the_example_plan_gives_two_waves(repo: Path, config: Config, example: Path) -> None:
    plan = load_plan(example, repo, config)
    assert (plan.name, plan.target, len(plan.tickets)) == ("health-check", "main", 5)
    assert waves(plan) == [["api", "db-ping", "docs"], ["wire", "tests"]]
    db_ping = plan.ticket("db-ping")
    assert db_ping.prompt == (EXAMPLE.parent / "prompts" / "db-ping.md").read_text(encoding="utf-8")
    assert (db_ping.provider, db_ping.type, db_ping.tier) == ("claude", None, None)
    assert plan.ticket("wire").blockers == ("api", "db-ping") and plan.ticket("wire").attempts == 3


def test_check_report_of_the_example_is_what_the_docs_show(repo: Path, config: Config, example: Path) -> None:
    report = check_report(load_plan(example, repo, config))
    assert report == [
        "plan health-check: 5 tickets in 2 waves, target branch main",
        "wave 1: api, db-ping, docs",
        "  api      Add the /health endpoint (type backend; 2 attempts)",
        "           scope: src/api/",
        "  db-ping  A database ping for the health check (provider claude; 2 attempts)",
        "           scope: src/db/ping.py tests/test_db_ping.py",
        "  docs     Document the health check (type docs; 1 attempt)",
        "           scope: docs/health.md",
        "wave 2: wire, tests",
        "  wire     Report the database in /health (type backend; 3 attempts; after api, db-ping)",
        "           scope: src/app.py",
        "  tests    Tests for /health (type tests; 2 attempts; after api)",
        "           scope: tests/test_health.py",
    ]
    assert "\n".join(report) in DOCS.read_text(encoding="utf-8")


def test_defaults_and_tiers(here: Path, config: Config) -> None:
    plan = load(HEAD + ticket("api", 'blockers = []\nscope = ["src/api/", "README.md"]')
                + ticket("wire", 'tier = "heavy"\nblockers = ["api", "api"]'), here, config)
    api, wire = plan.tickets
    assert (api.type, api.provider, api.tier, api.attempts, api.repo) == ("backend", None, None, 2, None)
    assert api.scope == ("src/api/", "README.md") and api.prompt == "Do api."
    assert (wire.type, wire.tier, wire.blockers) == (None, "heavy", ("api",))
    tier = config.tiers["heavy"]
    assert tier.provider_config(config.providers).model == "opus"
    assert plan.target is None


def test_prompt_file_is_relative_to_the_plan_file(here: Path, config: Config) -> None:
    folder = here / ".lanes" / "plans"
    (folder / "prompts").mkdir(parents=True)
    (folder / "prompts" / "api.md").write_text("Add the /health endpoint.\n", encoding="utf-8")
    plan_file = folder / "health-check.toml"
    plan_file.write_text(HEAD + '[[tickets]]\nid = "api"\ntitle = "Add /health"\nprompt_file = "prompts/api.md"\n')
    assert load_plan(plan_file, here, config).ticket("api").prompt == "Add the /health endpoint.\n"


def test_a_ticket_may_live_in_another_repository(here: Path, config: Config) -> None:
    sibling(here, "other", git=True)
    plan = load(HEAD + ticket("api", 'scope = ["src/app.py"]')
                + ticket("client", 'repo = "../other"\nscope = ["src/app.py"]\nblockers = ["api"]')
                + ticket("self", 'repo = "../project"\nscope = ["docs/"]'), here, config)
    assert [t.repo for t in plan.tickets] == [None, "../other", None]  # same path, two repositories: no overlap
    assert waves(plan) == [["api", "self"], ["client"]]


def test_line_numbers_skip_multiline_prompts() -> None:
    text = HEAD + '[[tickets]]\nid = "a"\nprompt = """\nscope = ["x"]\n[[tickets]]\n"""\nscope = [\n  "b",\n]\n'
    lines = PlanLines(text)
    assert lines.ticket_key(0, "scope") == 10
    assert lines.ticket_key(0, "scope", needle="b") == 11
    assert lines.ticket_key(1, "id") == 4  # no second ticket (that header is prompt text): the first one's line
    assert lines.plan_key("name") == 2 and lines.plan_key("target") == 1


# --- waves and scopes on their own ----------------------------------------------------------------------

def test_waves_of_a_diamond_keep_file_order() -> None:
    def t(tid: str, *blockers: str) -> Ticket:
        return Ticket(id=tid, title=tid, prompt="p", blockers=blockers)

    plan = Plan("p", (t("d", "b", "c"), t("c", "a"), t("a"), t("b", "a"), t("e")))
    assert waves(plan) == [["a", "e"], ["c", "b"], ["d"]]
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["b"]}) == ["b", "c", "b"]
    with pytest.raises(LanesError, match="dependency cycle: a → b → a"):
        waves(Plan("p", (t("a", "b"), t("b", "a"))))


def test_scope_ownership() -> None:
    assert covers("src/", "src/a.py") and covers("src/", "src/x/") and covers("a.py", "a.py")
    assert not covers("src/a.py", "src/") and not covers("src/", "srcx/a.py")
    assert overlap(["a.py", "docs/"], ["docs/x.md"]) == ("docs/", "docs/x.md")
    assert overlap(["src/"], ["srcs/", "src.py"]) is None


# --- [tiers] in the config ------------------------------------------------------------------------------

TIER_ERRORS = [
    ('[tiers.huge]\nprovider = "claude"\n',
     ".lanes/config.toml:1: [tiers.huge] unknown key 'huge' in [tiers] — valid: heavy, standard, light"),
    ('[tiers]\nheavy = "claude"\n',
     '.lanes/config.toml:2: [tiers.heavy] must be a table, got "claude" — write it as a [tiers.heavy] section with '
     'provider = "claude"'),
    ('[tiers.heavy]\nmodel = "opus"\n',
     ".lanes/config.toml:1: [tiers.heavy] tier 'heavy' has no provider — add provider = \"NAME\" (one of claude, "
     "codex, gemini, aider, sim)"),
    ('[tiers.heavy]\nprovider = "claud"\n',
     ".lanes/config.toml:2: [tiers.heavy.provider] tier 'heavy' names unknown provider 'claud' — did you mean "
     "'claude'? (valid: claude, codex, gemini, aider, sim) (or add [providers.claud])"),
    ('[tiers.heavy]\nprovider = "claude"\nmodle = "opus"\n',
     ".lanes/config.toml:3: [tiers.heavy.modle] unknown key 'modle' in [tiers.heavy] — did you mean 'model'? "
     "(valid: provider, model)"),
    ('[tiers.heavy]\nprovider = "claude"\nmodel = ""\n',
     ".lanes/config.toml:3: [tiers.heavy.model] must not be empty — give a value or delete the line for the default"),
    ("tiers = 3\n",
     ".lanes/config.toml:1: [tiers] tiers must be a table, got integer 3 — write it as a [tiers] section"),
]


@pytest.mark.parametrize(("text", "message"), TIER_ERRORS)
def test_tiers_config_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, path=Path(".lanes/config.toml"), repo=tmp_path)
    assert str(caught.value) == message


def test_tiers_config_docs_show_the_errors() -> None:
    docs = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    assert [m for _t, m in TIER_ERRORS if m in docs] == [TIER_ERRORS[0][1], TIER_ERRORS[2][1], TIER_ERRORS[3][1]]


def test_tiers_config_values(tmp_path: Path) -> None:
    config = parse_config('[providers.mine]\nargv = ["mine", "--model", "{model}"]\n\n'
                          '[tiers.light]\nprovider = "mine"\nmodel = "small"\n[tiers.heavy]\nprovider = "claude"\n',
                          path=None, repo=tmp_path)
    assert dict(config.tiers) == {"light": TierConfig("light", "mine", "small"), "heavy": TierConfig("heavy", "claude")}
    assert config.tiers["light"].provider_config(config.providers).render_argv("p", tmp_path) == [
        "mine", "--model", "small"]
    assert config.tiers["heavy"].provider_config(config.providers) == config.providers["claude"]
    assert TIER_NAMES == TIERS
    assert dict(parse_config("", path=None, repo=tmp_path).tiers) == {}
    bare = Config(**{f.name: getattr(config, f.name) for f in dataclasses.fields(Config) if f.name != "tiers"})
    assert dict(bare.tiers) == {}  # code that builds a Config by hand keeps working
