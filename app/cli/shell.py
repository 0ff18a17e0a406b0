"""The command line's conveniences: `completion bash|zsh|fish`, `help KEYS|COMMAND`, and `__complete`.

The completion scripts are generated here from the real parser (no argcomplete, nothing to install):
commands and options are written into the script, so pressing tab starts no Python for them. Lane ids
and question ids change all the time, so for those the script runs the hidden `lanes-tui __complete
lanes|questions|…`, which lists folder names of the state folder and imports nothing else: it must
answer before the lead notices the tab.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path

#: Commands whose positional argument is a lane id, and those whose is a question id.
LANE_COMMANDS = ("status", "wait", "check", "accept", "abandon", "recover", "diff", "review", "verify",
                 "attach", "send", "peek", "stop", "comment")
QUESTION_COMMANDS = ("answer",)
#: Options whose value is a path: the shell completes files for them.
PATH_OPTIONS = ("--repo", "--demo-dir", "--prompt-file", "--plan", "--note-file")
#: What `__complete` lists.
KINDS = ("lanes", "questions", "types", "providers", "states", "commands")
#: The states of the lanes each command can act on: `__complete lanes COMMAND` offers only those (a
#: command not named here takes a lane in any state). Written out, not imported, because the lister
#: must not load the engine; tests/test_cli_surface.py holds them equal to the engine's own sets
#: (RECOVERABLE, CHECKABLE, OVERRIDABLE, LIVE_STATES, the refusals of review and verify). A lane whose
#: record cannot be read is offered to every command: the command says what is wrong with it.
_LOOKED_AT = frozenset({"exited", "stalled", "ready", "rejected", "conflict", "lost"})  # ended, not settled for good
LANE_STATES: dict[str, frozenset[str]] = {
    "accept": _LOOKED_AT, "check": _LOOKED_AT, "review": _LOOKED_AT, "verify": _LOOKED_AT,
    "recover": frozenset({"exited", "stalled", "rejected", "conflict", "lost"}),  # and a parked lane (below)
    "abandon": frozenset({"queued", "launching", "running", "waiting", "stalled", "exited", "checking", "reviewing",
                          "ready", "rejected", "conflict", "lost", "unreachable"}),
    "diff": frozenset({"queued", "launching", "running", "waiting", "stalled", "exited", "checking", "reviewing",
                       "ready", "rejected", "conflict", "accepted", "lost", "unreachable"}),
    "stop": frozenset({"queued", "launching", "running", "waiting", "checking", "reviewing"}),
    "send": frozenset({"launching", "running", "waiting"}),
    "attach": frozenset({"launching", "running", "waiting"}),
}
#: A waiting lane whose reason starts so is parked (engine/lanes/parking.py): `recover` wakes it.
PARKED_PREFIX = "parked until"


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("completion", help="print a shell completion script (bash, zsh or fish)")
    p.add_argument("shell", choices=("bash", "zsh", "fish"))
    p.set_defaults(func=cmd_completion)

    p = sub.add_parser("help", help="help on a topic: KEYS (the dashboard's keys) or a command")
    p.add_argument("topic", nargs="?", metavar="KEYS|COMMAND", help="KEYS, or a command name")
    p.set_defaults(func=cmd_help)

    p = sub.add_parser("__complete")  # no help=: hidden from the command list
    p.add_argument("kind", choices=KINDS)
    p.add_argument("for_command", nargs="?", metavar="COMMAND", help="lanes: only those this command acts on")
    p.set_defaults(func=cmd_complete)


# --- __complete: fast, for the shell --------------------------------------------------------------

def _state_dir(repo: Path | None) -> Path | None:
    """The state folder: `--repo`'s, a lane's own (`LANES_HOME`), the nearest `.lanes/state` above here,
    or the main repository's (from a linked worktree)."""
    if repo is not None:
        return Path(repo) / ".lanes" / "state"
    home = os.environ.get("LANES_HOME", "")
    if home:
        return Path(home)
    here = Path.cwd()
    for folder in (here, *here.parents):
        if (folder / ".lanes" / "state").is_dir():
            return folder / ".lanes" / "state"
    # A linked worktree outside the main one: one git call, only when the walk found nothing.
    from lanes_tui.engine import LanesError, find_repo_root

    try:
        state = find_repo_root(here) / ".lanes" / "state"
    except LanesError:
        return None
    return state if state.is_dir() else None


def _lane_ids(state: Path, command: str | None = None) -> Iterator[str]:
    """The lanes' ids; with a command of `LANE_STATES`, only the lanes in a state it acts on."""
    lanes = state / "lanes"
    if not lanes.is_dir():
        return
    wanted = LANE_STATES.get(command or "")
    for path in sorted(lanes.iterdir(), key=lambda p: p.name):
        record = path / "lane.json"
        if record.is_file() and (wanted is None or _acts_on(record, wanted, command)):
            yield path.name


def _acts_on(record: Path, wanted: frozenset[str], command: str | None) -> bool:
    """Whether the lane of `record` is in one of `wanted` (True when its record cannot be read)."""
    import json  # only when a command filters: the plain listing reads no file

    try:
        data = json.loads(record.read_text(encoding="utf-8"))
        state, reason = data["state"], data.get("state_reason") or ""
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return True
    if not isinstance(state, str) or not isinstance(reason, str):
        return True
    return state in wanted or (command == "recover" and state == "waiting" and reason.startswith(PARKED_PREFIX))


def _open_questions(state: Path) -> Iterator[str]:
    """Question ids with no answer file yet (answered ones cannot be answered again)."""
    inbox = state / "inbox"
    if not inbox.is_dir():
        return
    for lane in sorted(inbox.iterdir()):
        if not lane.is_dir():
            continue
        for path in sorted(lane.glob("q_*.json")):
            qid = path.name.removesuffix(".json")
            if "." not in qid and not (lane / f"{qid}.answer.json").exists():
                yield qid


def cmd_complete(args: argparse.Namespace) -> int:
    """One candidate a line; nothing (and exit 0) when there is nothing to offer."""
    state = _state_dir(args.repo)
    if args.kind == "commands":
        from lanes_tui.app.cli.main import COMMAND_MODULES

        found: list[str] = [c for c in COMMAND_MODULES if not c.startswith("_")]
    elif args.kind in ("types", "providers", "states"):
        found = _from_config(args)
    elif state is None:
        found = []
    else:
        found = list(_lane_ids(state, args.for_command) if args.kind == "lanes" else _open_questions(state))
    if found:
        print("\n".join(found))
    return 0


def _from_config(args: argparse.Namespace) -> list[str]:
    """Task types and providers of this repository's config (the defaults when it cannot be read)."""
    from lanes_tui.engine import STATES, TASK_TYPES, LanesError, find_repo_root, load_config

    if args.kind == "states":
        return list(STATES)
    try:
        config = load_config(find_repo_root(Path(args.repo) if args.repo else Path.cwd()))
    except LanesError:
        return list(TASK_TYPES) if args.kind == "types" else []
    return list(config.chains) if args.kind == "types" else sorted(config.providers)


# --- help -----------------------------------------------------------------------------------------

def cmd_help(args: argparse.Namespace) -> int:
    from lanes_tui.app.cli import main as cli
    from lanes_tui.app.cli.help import describe

    topic = args.topic
    if topic is not None and topic.upper() == "KEYS":
        return _print_keys(args)
    if topic is not None and topic not in cli.COMMAND_MODULES:
        from lanes_tui.engine import LanesError

        raise LanesError(f"no help on {topic!r}", "try `lanes-tui help KEYS` or `lanes-tui help COMMAND` "
                                                  "(`lanes-tui --help` lists the commands)")
    parser = cli.build_parser(topic)
    describe(parser)
    if topic is None:
        parser.print_help()
        print("\nhelp topics: KEYS (the dashboard's keys), or any COMMAND above")
        return 0
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            action.choices[topic].print_help()
    return 0


def _print_keys(args: argparse.Namespace) -> int:
    """The dashboard's keys from the table the dashboard binds (`dashboard.keys`), with this repository's remaps."""
    from lanes_tui.app.dashboard.keys import help_rows
    from lanes_tui.engine import LanesError, find_repo_root, load_config

    keymap: dict[str, str] = {}
    try:
        root = find_repo_root(Path(args.repo) if args.repo else Path.cwd())
    except LanesError:  # outside a repository: the default keys, nothing to say about it
        root = None
    try:
        keymap = dict(load_config(root).keys) if root is not None else {}
    except LanesError as exc:  # a config it cannot read: the default keys, and why
        print(f"lanes-tui: showing the default keys: {exc}", file=sys.stderr)
    names = {"slash": "/", "question_mark": "?", "comma": ",", "full_stop": ".", "minus": "-", "plus": "+"}
    rows = [(names.get(key, key), what) for key, what in help_rows(keymap)]  # Textual's names as typed
    width = max(len(key) for key, _ in rows)
    print("The dashboard's keys (remap any of them in .lanes/config.toml under [keys]; docs/dashboard.md):")
    for key, what in rows:
        print(f"  {key:<{width}}  {what}")
    return 0


# --- completion scripts ---------------------------------------------------------------------------

def _tree() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The full parser and its visible subcommands (`plan check` for plan's own), by name."""
    from lanes_tui.app.cli import main as cli

    parser = cli.build_parser(None)
    found: dict[str, argparse.ArgumentParser] = {}

    def walk(p: argparse.ArgumentParser, prefix: str) -> None:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                visible = {c.dest for c in action._choices_actions}
                for name, sub in action.choices.items():
                    if name in visible:
                        found[f"{prefix}{name}"] = sub
                        walk(sub, f"{prefix}{name} ")

    walk(parser, "")
    return parser, found


def _options(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    """(option, its help) for every option string of `parser`."""
    return [(opt, _help_of(action)) for action in parser._actions for opt in action.option_strings
            if action.help != argparse.SUPPRESS]


def _help_of(action: argparse.Action) -> str:
    text = " ".join(str(action.help or "").replace("%%", "%").split())
    return text if len(text) <= 70 else text[:69] + "…"


def _summary(parser: argparse.ArgumentParser, name: str) -> str:
    """A subcommand's one-line help, as the parent's command list shows it."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if choice.dest == name:
                    return _help_of(choice)
    return ""


def cmd_completion(args: argparse.Namespace) -> int:
    from lanes_tui.app.cli.completion import bash_script, fish_script, zsh_script

    parser, commands = _tree()
    present = set(commands)
    spec = {"globals": _options(parser),
            "commands": {name: (_summary(parser if " " not in name else commands[name.split(" ")[0]],
                                         name.split(" ")[-1]), _options(sub)) for name, sub in commands.items()},
            "lane_commands": [c for c in LANE_COMMANDS if c in present],
            "question_commands": [c for c in QUESTION_COMMANDS if c in present],
            "path_options": list(PATH_OPTIONS), "value_options": ["--repo", "--demo-dir"]}
    make = {"bash": bash_script, "zsh": zsh_script, "fish": fish_script}[args.shell]
    sys.stdout.write(make(spec))
    return 0
