"""The text of the bash, zsh and fish completion scripts `lanes-tui completion SHELL` prints.

Each script is written from a spec that `shell` reads off the real parser (the commands, their
one-line help and options, which ones take a lane or question id), so a new option completes as soon
as it exists. The three follow one plan: find the command word (skipping global options and `--repo`'s
value, before or after the command), complete options from the static lists, and ids by running
`lanes-tui __complete KIND` (with the typed `--repo`, if any); lane ids as `__complete lanes COMMAND`,
so a command is offered only the lanes it can act on. Every value put into a script is quoted for that shell here.
"""

from __future__ import annotations

from typing import Any

Spec = dict[str, Any]

#: (command, option) pairs whose value completes from `__complete KIND`.
VALUE_KINDS = (("run", "--type", "types"), ("run", "--lane", "providers"), ("show-chain", "--lane", "providers"),
               ("inbox", "--lane", "lanes"))
#: Commands whose positional completes from a fixed word list or `__complete KIND`.
POSITIONAL_KINDS = (("show-chain", "types"), ("providers", "providers"))


def _words(items: list[str]) -> str:
    """Words for bash's `compgen -W` (options and command names: no quoting needed inside "…")."""
    return " ".join(items)


def _sq(text: str) -> str:
    """`text` in POSIX single quotes (bash and zsh)."""
    return "'" + text.replace("'", "'\\''") + "'"


def _fish(text: str) -> str:
    """`text` in fish single quotes (only \\ and ' are special there)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _top_commands(spec: Spec) -> list[str]:
    return [name for name in spec["commands"] if " " not in name]


def _plan_subcommands(spec: Spec) -> list[str]:
    return [name.split(" ", 1)[1] for name in spec["commands"] if name.startswith("plan ")]


# --- bash ---------------------------------------------------------------------------------------------

def bash_script(spec: Spec) -> str:
    opts = "\n".join(f'        {_sq(name)}) opts={_sq(_words([o for o, _ in options]))} ;;'
                     for name, (_, options) in spec["commands"].items())
    values = "\n".join(f'        {_sq(f"{cmd} {opt}")}) COMPREPLY=($(compgen -W "$(_lanes_tui_ids {kind})" '
                       '-- "$cur")); return 0 ;;' for cmd, opt, kind in VALUE_KINDS)
    positional = "\n".join(f'        {cmd}) [[ $npos -eq 0 ]] && words="$(_lanes_tui_ids {kind})" ;;'
                           for cmd, kind in POSITIONAL_KINDS)
    return f"""# bash completion for lanes-tui, written by `lanes-tui completion bash`.
# Load it in ~/.bashrc:  eval "$(lanes-tui completion bash)"
_lanes_tui_ids() {{
    command lanes-tui ${{_lanes_tui_repo:+--repo "$_lanes_tui_repo"}} __complete "$@" 2>/dev/null
}}

_lanes_tui() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    local cmd="" sub="" word words="" opts="" npos=0 i _lanes_tui_repo=""
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${{COMP_WORDS[i]}}"
        case "$word" in  # before or after the command
            --repo) _lanes_tui_repo="${{COMP_WORDS[i+1]}}"; ((i++)); continue ;;
            --demo-dir) ((i++)); continue ;;
        esac
        if [[ -z "$cmd" ]]; then
            [[ "$word" != -* ]] && cmd="$word"
        elif [[ "$cmd" == plan && -z "$sub" && "$word" != -* ]]; then
            sub="$word"
        elif [[ "$word" != -* ]]; then
            ((npos++))
        fi
    done
    local key="$cmd"
    [[ -n "$sub" ]] && key="$cmd $sub"
    case "$prev" in
        {"|".join(spec["path_options"])}) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
    esac
    case "$cmd $prev" in
{values}
    esac
    if [[ -z "$cmd" ]]; then
        COMPREPLY=($(compgen -W {_sq(_words([o for o, _ in spec["globals"]] + _top_commands(spec)))} -- "$cur"))
        return 0
    fi
    if [[ "$cur" == -* ]]; then
        case "$key" in
{opts}
        esac
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return 0
    fi
    case "$key" in
        {"|".join(spec["lane_commands"]) or "_none_"}) [[ $npos -eq 0 ]] && words="$(_lanes_tui_ids lanes "$cmd")" ;;
        {"|".join(spec["question_commands"]) or "_none_"}) [[ $npos -eq 0 ]] && words="$(_lanes_tui_ids questions)" ;;
{positional}
        completion) words="bash zsh fish" ;;
        help) words={_sq(_words(["KEYS", *_top_commands(spec)]))} ;;
        plan) words={_sq(_words(_plan_subcommands(spec)))} ;;
    esac
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
    return 0
}}

complete -o bashdefault -o default -F _lanes_tui lanes-tui
"""


# --- zsh ----------------------------------------------------------------------------------------------

def _zsh_items(pairs: list[tuple[str, str]]) -> str:
    return " ".join(_sq(f"{name.replace(':', chr(92) + ':')}:{text}") for name, text in pairs)


def zsh_script(spec: Spec) -> str:
    opts = "\n".join(f'      {_sq(name)}) opts=({_zsh_items(options)}) ;;'
                     for name, (_, options) in spec["commands"].items())
    values = "\n".join(f'    {_sq(f"{cmd} {opt}")}) compadd -- ${{(f)"$(_lanes_tui_ids {kind})"}}; return ;;'
                       for cmd, opt, kind in VALUE_KINDS)
    dynamic = [("|".join(spec["lane_commands"]) or "_none_", "lanes $cmd"),
               ("|".join(spec["question_commands"]) or "_none_", "questions"), *POSITIONAL_KINDS]
    ids = "\n".join(f'    {cmd}) (( npos == 0 )) && compadd -- ${{(f)"$(_lanes_tui_ids {kind})"}} ;;'
                     for cmd, kind in dynamic)
    commands = [(name, summary) for name, (summary, _) in spec["commands"].items() if " " not in name]
    plan = [(name.split(" ", 1)[1], summary) for name, (summary, _) in spec["commands"].items()
            if name.startswith("plan ")]
    return f"""#compdef lanes-tui
# zsh completion for lanes-tui, written by `lanes-tui completion zsh`.
# Save it as _lanes-tui in a folder on $fpath before compinit runs, or after compinit:
#   source <(lanes-tui completion zsh)
_lanes_tui_ids() {{
  local -a repo_args
  [[ -n $_lanes_tui_repo ]] && repo_args=(--repo $_lanes_tui_repo)
  command lanes-tui $repo_args __complete "$@" 2>/dev/null
}}

_lanes_tui() {{
  local cmd= sub= word _lanes_tui_repo= i
  local -i npos=0
  local -a opts cmds
  for (( i = 2; i < CURRENT; i++ )); do
    word=${{words[i]}}
    case $word in  # before or after the command
      --repo) _lanes_tui_repo=${{words[i+1]}}; (( i++ )); continue ;;
      --demo-dir) (( i++ )); continue ;;
    esac
    if [[ -z $cmd ]]; then
      [[ $word != -* ]] && cmd=$word
    elif [[ $cmd == plan && -z $sub && $word != -* ]]; then
      sub=$word
    elif [[ $word != -* ]]; then
      (( npos++ ))
    fi
  done
  local key=$cmd
  [[ -n $sub ]] && key="$cmd $sub"
  local prev=${{words[CURRENT-1]}} cur=${{words[CURRENT]}}
  case $prev in
    {"|".join(spec["path_options"])}) _files; return ;;
  esac
  case "$cmd $prev" in
{values}
  esac
  if [[ -z $cmd ]]; then
    if [[ $cur == -* ]]; then
      opts=({_zsh_items(spec["globals"])})
      _describe -t options option opts
    else
      cmds=({_zsh_items(commands)})
      _describe -t commands command cmds
    fi
    return
  fi
  if [[ $cur == -* ]]; then
    case $key in
{opts}
    esac
    _describe -t options option opts
    return
  fi
  case $key in
{ids}
    completion) compadd -- bash zsh fish ;;
    help) compadd -- KEYS {" ".join(_top_commands(spec))} ;;
    plan) cmds=({_zsh_items(plan)}); _describe -t commands 'plan command' cmds ;;
    *) _files ;;
  esac
}}

if [[ ${{zsh_eval_context[-1]}} == loadautofunc ]]; then
  _lanes_tui "$@"
else
  compdef _lanes_tui lanes-tui
fi
"""


# --- fish ---------------------------------------------------------------------------------------------

def _fish_option(condition: str, option: str, text: str, spec: Spec) -> str:
    flag = f"-l {option[2:]}" if option.startswith("--") else f"-s {option[1:]}"
    files = " -r -F" if option in spec["path_options"] else ""
    return f"complete -c lanes-tui -n {_fish(condition)} {flag}{files} -d {_fish(text)}"


def fish_script(spec: Spec) -> str:
    lines = [
        "# fish completion for lanes-tui, written by `lanes-tui completion fish`.",
        "# Save it as ~/.config/fish/completions/lanes-tui.fish",
        "function __lanes_tui_key --description 'the command typed so far (plan check for a plan subcommand)'",
        "    set -l words (commandline -opc)",
        "    set -e words[1]",
        "    set -l found",
        "    while set -q words[1]",
        "        switch $words[1]",
        "            case --repo --demo-dir",
        "                set -e words[1]",
        "            case '-*'",
        "            case '*'",
        "                set -a found $words[1]",
        "                if test \"$found[1]\" != plan; or test (count $found) -ge 2",
        "                    break",
        "                end",
        "        end",
        "        set -e words[1]",
        "    end",
        "    string join ' ' -- $found",
        "end",
        "function __lanes_tui_is --description 'true when the command typed so far is $argv (none: no command yet)'",
        "    set -l key (__lanes_tui_key)",
        "    test \"$key\" = \"$argv\"",
        "end",
        "function __lanes_tui_ids --description 'lane ids, question ids, … from lanes-tui __complete'",
        "    set -l words (commandline -opc)",
        "    set -l repo",
        "    if set -l i (contains -i -- --repo $words); and set -q words[(math $i + 1)]",
        "        set repo --repo $words[(math $i + 1)]",
        "    end",
        "    command lanes-tui $repo __complete $argv 2>/dev/null",
        "end",
        "complete -c lanes-tui -f",
    ]
    for option, text in spec["globals"]:
        lines.append(_fish_option("__lanes_tui_is", option, text, spec))
    for name, (summary, _) in spec["commands"].items():
        parent, _, leaf = name.rpartition(" ")
        lines.append(f"complete -c lanes-tui -n {_fish(f'__lanes_tui_is {parent}'.strip())} -a {_fish(leaf)} "
                     f"-d {_fish(summary)}")
    for name, (_, options) in spec["commands"].items():
        for option, text in options:
            lines.append(_fish_option(f"__lanes_tui_is {name}", option, text, spec))
    for cmd, option, kind in VALUE_KINDS:
        lines.append(f"complete -c lanes-tui -n {_fish(f'__lanes_tui_is {cmd}')} -l {option[2:]} -x "
                     f"-a {_fish(f'(__lanes_tui_ids {kind})')}")
    dynamic = [(cmd, f"lanes {cmd}") for cmd in spec["lane_commands"]] + [(cmd, "questions") for cmd in
                                                                    spec["question_commands"]]
    for cmd, kind in [*dynamic, *POSITIONAL_KINDS]:
        lines.append(f"complete -c lanes-tui -n {_fish(f'__lanes_tui_is {cmd}')} "
                     f"-a {_fish(f'(__lanes_tui_ids {kind})')}")
    lines.append(f"complete -c lanes-tui -n {_fish('__lanes_tui_is completion')} -a 'bash zsh fish'")
    lines.append(f"complete -c lanes-tui -n {_fish('__lanes_tui_is help')} "
                 f"-a {_fish(' '.join(['KEYS', *_top_commands(spec)]))}")
    return "\n".join(lines) + "\n"
