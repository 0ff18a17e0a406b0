"""What each subcommand's `--help` says beyond its options: a description and examples.

Kept apart from the parsers so that a command pays for this text only when `--help` (or `lanes-tui
help COMMAND`) is asked: `cli.main` calls `describe` then, and never otherwise. The lean commands an
agent runs (`ask`, `answer`, `inbox`, `lock`) carry their own text instead, so that even their help
loads nothing beyond their budget. A parser that already has a description or an epilog keeps it: the
module that defines a command may say more than this table. docs/cli.md lists the same commands.
"""

from __future__ import annotations

import argparse

from lanes_tui.app.cli.args import HelpText

#: command (`plan check` for a plan subcommand) -> (description, example lines).
HELP: dict[str, tuple[str, tuple[str, ...]]] = {
    "init": ("Write .lanes/config.toml with every key explained (set or commented out), and make git ignore "
             ".lanes/state/. Refuses to overwrite a config without --force. --hooks installs a pre-push hook "
             "that runs the gates before the programme branch is pushed (instead of the config).",
             ("lanes-tui init", "lanes-tui init --force", "lanes-tui init --hooks")),
    "run": ("Start a lane: a worktree on a new lane/ branch and a detached supervisor that runs the task "
            "type's provider chain, its gates and its review. Prints the lane id on its last line (with "
            "--json: one object, docs/cli.md).",
            ('lanes-tui run --prompt "fix the login redirect" --id fix-login',
             "lanes-tui run --prompt-file task.md --type ui --lane claude",
             "lanes-tui run --plan plan.md --phase 2",
             'lanes-tui run --prompt "speed up the parser" --best-of 3 --providers claude,codex',
             "id=$(lanes-tui run --prompt-file task.md --json | jq -r '.lanes[0].id')")),
    "status": ("Every lane (or one) with its state, result, provider, idle time and resources. Reading it "
               "also reconciles lanes whose supervisor died (they turn lost). Exit 1 (after the lanes, one "
               "stderr line naming the file and the fix) when the config cannot be read.",
               ("lanes-tui status", "lanes-tui status fix-login-a1 --json", "lanes-tui status --repo ~/src/app")),
    "wait": ("Block until a lane reaches one of the given states (by default: settled, with its supervisor "
             "finished) and print it. When --timeout passes first: exit 124, as timeout(1) does.",
             ("lanes-tui wait fix-login-a1", "lanes-tui wait fix-login-a1 --until waiting,ready --timeout 600",
              "lanes-tui wait fix-login-a1 --json")),
    "doctor": ("Check the machine against the config: config files, containment and caps, heavy slots, "
               "providers installed, the environment names lanes receive, stale and lost lanes. Exit 1 when "
               "it found a problem.",
               ("lanes-tui doctor", "lanes-tui doctor --json | jq '.problems'")),
    "check": ("Run a lane's gates again, as the lead, and rewrite its packet (what accept trusts). Exit 0 "
              "when they pass (or there are none), 1 when one fails.",
              ("lanes-tui check fix-login-a1", "lanes-tui check fix-login-a1 --json")),
    "accept": ("The guarded accept: the gates and the digest checked, the work committed, rebased (and the "
               "gates run again) if the target moved, fast-forwarded into the target, the worktree and "
               "branch removed. Exit 0 accepted, 1 stopped on the way (a conflict, gates failed after the "
               "rebase, a queue that stopped; the queue skips a lane with nothing to merge and goes on), 2 "
               "refused before anything changed; --dry-run exits as the accept would.",
               ("lanes-tui accept fix-login-a1", "lanes-tui accept fix-login-a1 --dry-run",
                'lanes-tui accept fix-login-a1 --override "gates flaky on CI only, checked by hand"',
                "lanes-tui accept --queue --dry-run", "lanes-tui accept fix-login-a1 --json")),
    "abandon": ("Stop a lane's agent, remove its worktree and lane/ branch; its packet and logs stay in the "
                "state folder. Refuses a branch with commits found nowhere else without --force.",
                ("lanes-tui abandon fix-login-a1", "lanes-tui abandon fix-login-a1 --force --json")),
    "recover": ("Bring a lost, stalled, rejected or failed lane back to a known state: without an option, "
                "what happened (stray processes stopped) and the choices; --recheck runs the gates on the "
                "worktree as it is; --relaunch starts the next attempt with the findings (and your --note), "
                "up to [lanes] attempts for a task started by hand. A lane parked on its provider's quota "
                "starts again.",
                ("lanes-tui recover fix-login-a1", "lanes-tui recover fix-login-a1 --recheck",
                 "lanes-tui recover fix-login-a1 --relaunch --note \"the date parser is the bug\"",
                 "lanes-tui recover fix-login-a1 --relaunch --json")),
    "finish": ("Remove the worktrees and lane/ branches of lanes already merged (squash-merged and cherry-picked "
               "work too: the target holds the branch's version of every file it changed), list what is left "
               "with the command that deals with each (LEFTOVERS: N), each removed lane with why, then push "
               "the programme branch to its upstream when nothing is left over (PUSHED, PUSH-FAILED, or "
               "NOT-PUSHED: why; --push-anyway pushes past leftovers). Exit 1 when anything is left over or "
               "the push failed.",
               ("lanes-tui finish", "lanes-tui finish --no-push --json", "lanes-tui finish --push-anyway",
                "lanes-tui finish --pr", "lanes-tui finish --pr --watch")),
    "ci": ("Follow a pull request's CI checks with gh until every one has finished, printing each check's change "
           "of state. A failed check becomes findings: the failed steps' log (last 80 lines) in "
           ".lanes/state/ci/PR-N.md, and the command that relaunches the lanes the PR carries with them. Exit 0 "
           "all passed, 1 one failed, 2 no answer (--timeout passed, no check appeared, gh missing or not logged "
           "in), 130 Ctrl-C.",
           ("lanes-tui ci", "lanes-tui ci 7", "lanes-tui ci https://github.com/o/r/pull/7 --timeout 1800",
            "lanes-tui ci --json")),
    "diff": ("A lane's diff against its base (read-only), with per-file and overall digests.",
             ("lanes-tui diff fix-login-a1", "lanes-tui diff fix-login-a1 --stat",
              "lanes-tui diff fix-login-a1 --json")),
    "plan": ("Plans: tickets with scopes and blockers (docs/plans.md), launched as they unblock.",
             ("lanes-tui plan check plan.md", "lanes-tui plan launch plan.md", "lanes-tui plan status --json")),
    "plan check": ("Validate a plan file and print the waves its blockers give; changes nothing.",
                   ("lanes-tui plan check plan.md", "lanes-tui plan check plan.md --json | jq '.waves'")),
    "plan launch": ("Freeze a plan into the state folder and start the tickets that can start now.",
                    ("lanes-tui plan launch plan.md", "lanes-tui plan launch plan.md --json")),
    "plan status": ("Each ticket of the open plans (or one): state, lane, attempts, blocked by, owned files.",
                    ("lanes-tui plan status", "lanes-tui plan status auth --json")),
    "plan amend": ("Change a launched plan; the reason is recorded in its decision log with the diff.",
                   ('lanes-tui plan amend auth --reason "split ticket 3" plan.md',)),
    "plan cancel": ("Stop scheduling a plan; its lanes stay, yours to accept or abandon.",
                    ('lanes-tui plan cancel auth --reason "superseded"',)),
    "plan resume": ("Start a plan's supervisor again, e.g. after the machine restarted.",
                    ("lanes-tui plan resume auth",)),
    "plan log": ("A plan's decision log: who did what, when and why.",
                 ("lanes-tui plan log auth", "lanes-tui plan log auth --json")),
    "review": ("", ("lanes-tui review fix-login-a1", "lanes-tui review fix-login-a1 --json | jq -r .verdict")),
    "verify": ("", ('lanes-tui verify fix-login-a1 --evidence "logged in and out twice on staging"',
                    'lanes-tui verify fix-login-a1 --evidence "ran it" --json')),
    "providers": ("The effective provider table: the presets with the lead's own config file and the "
                  "repository's .lanes/config.toml merged on top, and where each value came from (preset, "
                  "default, user or repo, with the file).",
                  ("lanes-tui providers", "lanes-tui providers claude", "lanes-tui providers --json")),
    "show-chain": ("The providers a task type tries, in order, each with its model family, model and most "
                   "attempts, and whether it is installed.",
                   ("lanes-tui show-chain backend", "lanes-tui show-chain ui --lane codex --json")),
    "completion": ("Print a completion script for bash, zsh or fish: commands, options, lane ids and "
                   "question ids complete (ids are read from the state folder when you press tab).",
                   ('eval "$(lanes-tui completion bash)"          # in ~/.bashrc',
                    "lanes-tui completion zsh > ~/.zfunc/_lanes-tui   # a folder on $fpath",
                    "lanes-tui completion fish > ~/.config/fish/completions/lanes-tui.fish")),
    "help": ("Help on a topic: KEYS lists the dashboard's keys (with this repository's [keys] remaps), a "
             "command name prints that command's help.",
             ("lanes-tui help KEYS", "lanes-tui help run")),
    # The lead's hands on a lane (docs/dashboard.md); used only when their modules give no text of their own.
    "attach": ("Step into a running lane: its live terminal (pty lanes) or its conversation; the lane keeps "
               "running when you detach.", ("lanes-tui attach fix-login-a1",)),
    "send": ("Send a line to a running lane: a user message, or the text and Enter for a terminal lane.",
             ('lanes-tui send fix-login-a1 "use the existing session helper"',)),
    "peek": ("The last lines of a lane's output (a claude, codex or gemini lane's JSON made readable; --raw as "
             "written), or a terminal lane's live screen, without attaching.",
             ("lanes-tui peek fix-login-a1", "lanes-tui peek fix-login-a1 --raw",
              "lanes-tui peek fix-login-a1 --screen")),
    # The scorecard (docs/benchmarks.md, "Scorecard"): fixed tasks, scored lanes, a baseline and a pass bar.
    "scorecard": ("Benchmark the orchestration: run fixed tasks in fresh repositories, score the lanes, and "
                  "compare the newest records against a stored baseline.",
                  ("lanes-tui scorecard prepare add-function", "lanes-tui scorecard record add-function-r1-a1",
                   "lanes-tui scorecard compare before-change --json")),
    "scorecard prepare": ("Build the task's repository at its commit in a work folder, run its setup steps and "
                          "start a lane on it; prints the lane id on its last line.",
                          ("lanes-tui scorecard prepare fix-test", "lanes-tui scorecard prepare ./my-task.toml")),
    "scorecard record": ("Score a finished lane (or a plan's lanes): finished, pass check, interventions, review "
                         "rounds, wall minutes, first try, tokens and cost; appended to the scorecard's records.",
                         ("lanes-tui scorecard record fix-test-r1-a1 --label before-change",)),
    "scorecard baseline": ("Keep the newest record of each task as a named baseline that later runs cannot move.",
                           ("lanes-tui scorecard baseline before-change",)),
    "scorecard compare": ("Hold the newest records to a baseline: exit 1 when a task that passed fails or is "
                          "missing, or its cost or wall time grew past --factor.",
                          ("lanes-tui scorecard compare before-change", "lanes-tui scorecard compare v1 --factor 2")),
    "scorecard tasks": ("The task files shipped with lanes-tui (sim tasks that run offline).",
                        ("lanes-tui scorecard tasks",)),
    "stop": ("Stop a lane's agent and keep its worktree and work; waits until its whole process tree is gone.",
             ("lanes-tui stop fix-login-a1", "lanes-tui stop --all")),
}


def describe(parser: argparse.ArgumentParser, prefix: str = "") -> None:
    """Give every subcommand parser under `parser` its description and examples (in place)."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for name, sub in action.choices.items():
            key = f"{prefix}{name}"
            description, examples = HELP.get(key, ("", ()))
            sub.formatter_class = HelpText
            if description and not sub.description:
                sub.description = description
            if examples and not sub.epilog:
                sub.epilog = "examples:\n" + "\n".join(f"  {line}" for line in examples)
            describe(sub, f"{key} ")
