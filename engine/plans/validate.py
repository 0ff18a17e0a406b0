"""A plan file (`.lanes/plans/NAME.toml`, docs/plans.md) read into a `Plan`, or one clear error.

Everything is checked before anything is launched or frozen: the file's syntax and keys, each
ticket (id, title, what runs it, prompt, scope, attempts, repository), then the plan as a whole
(unknown blockers, dependency cycles, two tickets owning one file). The first problem found stops the
read with a `PlanError` naming the file, the line, the ticket, the key and the fix; docs/plans.md
lists every message. Markdown plans (`## Phase N`) are not read here: they stay `run --plan F --phase N`.
"""

from __future__ import annotations

import os
import posixpath
import re
import tomllib
from pathlib import Path
from typing import Any, NoReturn

from lanes_tui.engine.config.key_lines import did_you_mean, shown
from lanes_tui.engine.config.settings import Config
from lanes_tui.engine.core.errors import LanesError
from lanes_tui.engine.core.ids import validate_lane_id, validate_slug
from lanes_tui.engine.core.limits import (
    MAX_PLAN_BYTES,
    MAX_PROMPT_BYTES,
    check_prompt,
    read_text_file,
    repository_file,
)
from lanes_tui.engine.git.worktrees import find_repo_root
from lanes_tui.engine.plans.lines import PlanLines
from lanes_tui.engine.plans.model import TIERS, Plan, Ticket
from lanes_tui.engine.plans.phases import PHASE_RE
from lanes_tui.engine.plans.scope import Owners, overlap, scope_problem
from lanes_tui.engine.plans.waves import check_report, find_cycle, waves

__all__ = ["MAX_ATTEMPTS", "PlanError", "check_report", "load_plan", "waves"]

MAX_ATTEMPTS = 10
TOP_KEYS = ("plan", "tickets")
PLAN_KEYS = ("name", "target")
TICKET_KEYS = ("id", "title", "type", "provider", "tier", "prompt", "prompt_file", "scope", "blockers",
               "attempts", "repo")
RUNS_ON = ("type", "provider", "tier")
MARKDOWN_SUFFIXES = (".md", ".markdown")


class PlanError(LanesError):
    """A plan file refused: `FILE:LINE: ticket 'ID' [key] what — fix` (the parts known, in that order)."""

    def __init__(self, what: str, fix: str, *, file: str, line: int | None = None,
                 ticket: str | None = None, key: str | None = None) -> None:
        self.file, self.line, self.ticket, self.key = file, line, ticket, key
        where = f"{file}:{line}" if line is not None else file
        subject = " ".join(part for part in (f"ticket {ticket}" if ticket else "", f"[{key}]" if key else "")
                           if part)
        super().__init__(f"{where}: {subject + ' ' if subject else ''}{what}", fix)


def load_plan(path: Path, repo: Path, config: Config) -> Plan:
    """The validated plan in `path` (TOML), for the repository `repo` and its `config`.

    Raises PlanError (a LanesError) at the first problem found, LanesError if the file cannot be read.
    """
    if path.suffix.lower() in MARKDOWN_SUFFIXES:
        raise _markdown_plan(path)
    text = read_text_file(path, MAX_PLAN_BYTES, "plan file")
    return _Reader(text, path, repo.resolve(), config).read()


def _markdown_plan(path: Path) -> LanesError:
    return LanesError(f"{path} is a Markdown plan: TOML plans are for `plan check` and `plan launch`, "
                      "Markdown phases for `run --plan F --phase N`",
                      f"run one phase with `lanes-tui run --plan {path} --phase N`, or write the plan as "
                      "TOML (docs/plans.md)")




def _brief(value: object) -> str:
    return shown(value, 60)


class _Reader:
    """One pass over the parsed TOML with the source text at hand, so errors can name a line."""

    def __init__(self, text: str, path: Path, repo: Path, config: Config) -> None:
        self.text, self.path, self.repo, self.config = text, path, repo, config
        self.lines = PlanLines(text)
        self.labels: list[str] = []  # `'api'`, or `#3` before a ticket's id is known
        self.numbers: dict[str, int] = {}  # ticket id -> its number (1-based): a second use is refused

    # errors ---------------------------------------------------------------------------------------
    def fail(self, what: str, fix: str, *, key: str | None = None, line: int | None = None,
             ticket: int | None = None) -> NoReturn:
        label = None if ticket is None else self.labels[ticket]
        raise PlanError(what, fix, file=str(self.path), line=line, ticket=label, key=key)

    def fail_ticket(self, index: int, key: str, what: str, fix: str, needle: str | None = None) -> NoReturn:
        self.fail(what, fix, key=key, line=self.lines.ticket_key(index, key, needle), ticket=index)

    # the file -------------------------------------------------------------------------------------
    def parse(self) -> dict[str, Any]:
        try:
            return tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as exc:
            if PHASE_RE.search(self.text):
                raise _markdown_plan(self.path) from None
            match = re.search(r"\(at line (\d+), column \d+\)", str(exc))
            line = int(match.group(1)) if match else max(1, len(self.text.splitlines()))
            what = re.sub(r"\s*\(at (?:line|end of).*\)$", "", str(exc)) or "syntax error"
            self.fail(f"malformed TOML: {what}",
                      "fix the syntax on that line (strings need quotes, arrays [a, b], see toml.io)", line=line)
        except (ValueError, RecursionError):
            self.fail("malformed TOML: a number too long or arrays nested too deeply",
                      "write ordinary numbers and flat values")

    def read(self) -> Plan:
        data = self.parse()
        for key in data:
            if key not in TOP_KEYS:
                self.fail(f"unknown table or key {key!r}", did_you_mean(key, TOP_KEYS), key=key,
                          line=self.lines.top(key))
        name, target = self.plan_table(data)
        raw_tickets = data.get("tickets")
        if raw_tickets is None:
            self.fail("the plan has no tickets", "add at least one [[tickets]] section with id, title and prompt",
                      line=self.lines.top("plan"))
        if not isinstance(raw_tickets, list) or not all(isinstance(t, dict) for t in raw_tickets):
            self.fail(f"tickets must be an array of tables, got {_brief(raw_tickets)}",
                      "write each ticket as a [[tickets]] section", key="tickets", line=self.lines.top("tickets"))
        if not raw_tickets:
            self.fail("the plan has no tickets", "add at least one [[tickets]] section with id, title and prompt",
                      key="tickets", line=self.lines.top("tickets"))
        tickets: list[Ticket] = []
        homes: list[Path] = []  # each ticket's repository, resolved
        for index, raw in enumerate(raw_tickets):
            ticket, home = self.ticket(index, raw, tickets)
            tickets.append(ticket)
            homes.append(home)
        self.check_graph(tickets)
        self.check_owners(tickets, homes)
        return Plan(name=name, tickets=tuple(tickets), target=target)

    def plan_table(self, data: dict[str, Any]) -> tuple[str, str | None]:
        table = data.get("plan")
        if table is None:
            self.fail("the plan has no [plan] table", 'add [plan] with name = "NAME" at the top of the file', line=1)
        if not isinstance(table, dict):
            self.fail(f"plan must be a table, got {_brief(table)}", 'write it as a [plan] section with name = "NAME"',
                      key="plan", line=self.lines.top("plan"))
        for key in table:
            if key not in PLAN_KEYS:
                self.fail(f"unknown key {key!r} in [plan]", did_you_mean(key, PLAN_KEYS), key=f"plan.{key}",
                          line=self.lines.plan_key(key))
        if "name" not in table:
            self.fail("the plan has no name", f'add name = "{self.path.stem}" under [plan]', key="plan",
                      line=self.lines.top("plan"))
        name = self.plan_string("name", table["name"])
        try:
            validate_lane_id(name)  # the name of its folder under .lanes/state/plans/
        except LanesError as exc:
            self.fail(f"invalid plan name {name!r}", exc.fix or "", key="plan.name", line=self.lines.plan_key("name"))
        target = None if "target" not in table else self.plan_string("target", table["target"])
        if target is not None and (target.startswith("-") or any(c.isspace() for c in target)):
            self.fail(f"invalid target branch {target!r}", "name a branch: no spaces, not starting with '-'",
                      key="plan.target", line=self.lines.plan_key("target"))
        return name, target

    def plan_string(self, key: str, value: object) -> str:
        if not isinstance(value, str) or not value.strip():
            self.fail(f"{key} must be a non-empty string, got {_brief(value)}", f'write {key} = "…" in quotes',
                      key=f"plan.{key}", line=self.lines.plan_key(key))
        return value

    # one ticket -------------------------------------------------------------------------------------
    def string(self, index: int, key: str, value: object) -> str:
        if not isinstance(value, str):
            self.fail_ticket(index, key, f"{key} must be a string, got {_brief(value)}", f'write {key} = "…" in quotes')
        if not value.strip():
            self.fail_ticket(index, key, f"{key} is empty", f"write a value: {key} = \"…\"")
        return value

    def strings(self, index: int, key: str, value: object) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            self.fail_ticket(index, key, f"{key} must be an array of strings, got {_brief(value)}",
                             f'write it as {key} = ["a", "b"]')
        return tuple(value)

    def ticket(self, index: int, raw: dict[str, Any], earlier: list[Ticket]) -> tuple[Ticket, Path]:
        self.labels.append(f"#{index + 1}")
        raw_id = raw.get("id")
        if isinstance(raw_id, str) and raw_id.strip():
            self.labels[index] = repr(raw_id)
        for key in raw:
            if key not in TICKET_KEYS:
                self.fail_ticket(index, key, f"unknown key {key!r}", did_you_mean(key, TICKET_KEYS))
        if "id" not in raw:
            self.fail_ticket(index, "id", "the ticket has no id",
                             'add id = "short-name" (letters, digits, - or _; it names the lane)')
        ticket_id = self.string(index, "id", raw["id"])
        try:
            validate_slug(ticket_id)
        except LanesError as exc:
            self.fail_ticket(index, "id", f"invalid ticket id {ticket_id!r}", exc.fix or "")
        if (number := self.numbers.setdefault(ticket_id, index + 1)) != index + 1:
            self.fail_ticket(index, "id", f"id {ticket_id!r} is already used by ticket #{number}",
                             "give each ticket its own id")
        if "title" not in raw:
            self.fail_ticket(index, "title", "the ticket has no title", 'add title = "what the ticket does, in a line"')
        title = self.string(index, "title", raw["title"])
        runs_on = self.runs_on(index, raw)
        home, repo_text = self.repo_of(index, raw.get("repo"))
        return Ticket(
            id=ticket_id, title=title, prompt=self.prompt(index, raw),
            scope=self.scope(index, raw.get("scope", []), home),
            blockers=tuple(dict.fromkeys(self.strings(index, "blockers", raw.get("blockers", [])))),
            attempts=self.attempts(index, raw.get("attempts", 2)), repo=repo_text, **runs_on,
        ), home

    def runs_on(self, index: int, raw: dict[str, Any]) -> dict[str, str | None]:
        """`type`, `provider` or `tier`, at most one; none means type `backend`."""
        given = [key for key in RUNS_ON if key in raw]
        if len(given) > 1:
            self.fail_ticket(index, given[1], f"the ticket sets both {given[0]!r} and {given[1]!r}",
                             "keep one: type picks a chain of providers, provider one provider, "
                             "tier a provider and model from [tiers]")
        values: dict[str, str | None] = {"type": None, "provider": None, "tier": None}
        if not given:
            values["type"] = "backend"
            return values
        key = given[0]
        value = values[key] = self.string(index, key, raw[key])
        if key == "type" and value not in self.config.chains:
            self.fail_ticket(index, key, f"unknown task type {value!r}",
                             did_you_mean(value, list(self.config.chains))
                             + " (or add it under [chains] in the config)")
        if key == "provider" and value not in self.config.providers:
            self.fail_ticket(index, key, f"unknown provider {value!r}",
                             did_you_mean(value, list(self.config.providers))
                             + f" (or add [providers.{value}] to the config)")
        if key == "tier" and value not in TIERS:
            self.fail_ticket(index, key, f"unknown tier {value!r}", did_you_mean(value, TIERS))
        if key == "tier" and value not in self.config.tiers:
            self.fail_ticket(index, key, f"tier {value!r} is not configured",
                             f'add [tiers.{value}] with provider = "claude" to .lanes/config.toml '
                             "(docs/config.md#tiers)")
        return values

    def prompt(self, index: int, raw: dict[str, Any]) -> str:
        if "prompt" in raw and "prompt_file" in raw:
            self.fail_ticket(index, "prompt_file", "the ticket sets both 'prompt' and 'prompt_file'", "keep one")
        if "prompt" in raw:
            key, what = "prompt", "the prompt"
            if not isinstance(raw["prompt"], str):
                self.fail_ticket(index, key, f"prompt must be a string, got {_brief(raw['prompt'])}",
                                 'write prompt = """…""" in quotes')
            text = raw["prompt"]
        elif "prompt_file" in raw:
            key = "prompt_file"
            file = self.path.parent / self.string(index, key, raw[key])
            what = f"prompt file {file}"
            try:
                real = repository_file(file, self.repo, "prompt file",
                                       "keep prompt files inside the repository (a link is followed to its target)")
                text = read_text_file(real, MAX_PROMPT_BYTES, "prompt file")
            except LanesError as exc:
                self.fail_ticket(index, key, exc.what, exc.fix or "")
        else:
            self.fail_ticket(index, "prompt", "the ticket has no prompt",
                             'add prompt = "…" or prompt_file = "FILE" (relative to the plan file)')
        try:
            check_prompt(text, what)
        except LanesError as exc:
            self.fail_ticket(index, key, exc.what, exc.fix or "")
        if not text.strip():
            self.fail_ticket(index, key, f"{what} is empty", "write what the agent must do")
        return text

    def scope(self, index: int, value: object, home: Path) -> tuple[str, ...]:
        scope = self.strings(index, "scope", value)
        for number, entry in enumerate(scope):
            if problem := scope_problem(entry):
                self.fail_ticket(index, "scope", *problem, needle=entry)
            if entry in scope[:number]:
                self.fail_ticket(index, "scope", f"scope lists {entry!r} twice", "remove one", needle=entry)
            on_disk = home / entry
            if not entry.endswith("/") and on_disk.is_dir() and not on_disk.is_symlink():
                self.fail_ticket(index, "scope", f"scope path {entry!r} is a folder", f"write it as '{entry}/'",
                                 needle=entry)
            if entry.endswith("/") and (home / entry.rstrip("/")).is_file():
                self.fail_ticket(index, "scope", f"scope path {entry!r} is a file",
                                 f"write it as {entry.rstrip('/')!r}", needle=entry)
        return scope

    def attempts(self, index: int, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ATTEMPTS:
            self.fail_ticket(index, "attempts", f"attempts must be a whole number from 1 to {MAX_ATTEMPTS}, "
                             f"got {_brief(value)}", "write e.g. attempts = 3 (no quotes); the default is 2")
        return value

    def repo_of(self, index: int, value: object) -> tuple[Path, str | None]:
        """(the ticket's repository, resolved; `repo` as stored: None for the plan's own repository)."""
        if value is None:
            return self.repo, None
        written = self.string(index, "repo", value)
        if written.startswith(("/", "~")):
            self.fail_ticket(index, "repo", f"repo {written!r} is absolute",
                             "write it relative to the plan's repository, e.g. repo = \"../other\"")
        home = (self.repo / written).resolve()
        if not home.is_dir():
            self.fail_ticket(index, "repo", f"repo {written!r} does not exist",
                             "write the path relative to the plan's repository, e.g. repo = \"../other\"")
        try:
            root = find_repo_root(home)
        except LanesError:
            self.fail_ticket(index, "repo", f"repo {written!r} is not a git repository",
                             "create it with `git init`, or fix the path")
        if root != home:
            self.fail_ticket(index, "repo", f"repo {written!r} is a folder inside a repository, not its top folder",
                             f"write the path of its top folder: repo = \"{os.path.relpath(root, self.repo)}\"")
        return home, None if home == self.repo else posixpath.normpath(written)

    # the plan as a whole ----------------------------------------------------------------------------
    def check_graph(self, tickets: list[Ticket]) -> None:
        ids = [t.id for t in tickets]
        known = set(ids)
        for index, ticket in enumerate(tickets):
            for blocker in ticket.blockers:
                if blocker not in known:
                    self.fail_ticket(index, "blockers", f"blocker {blocker!r} is not a ticket of this plan",
                                     did_you_mean(blocker, ids), needle=blocker)
        if cycle := find_cycle({t.id: t.blockers for t in tickets}):
            self.fail_ticket(ids.index(cycle[0]), "blockers", f"dependency cycle: {' → '.join(cycle)}",
                             "remove one of these blockers: each ticket waits for the next, so none can start",
                             needle=cycle[1])

    def check_owners(self, tickets: list[Ticket], homes: list[Path]) -> None:
        """No two tickets own a file in common. Linear in the plan: each entry is looked up in an index
        of what the earlier tickets own (`scope.Owners`) instead of against every earlier ticket; the pair is
        then named as the pairwise search named it (the earliest earlier ticket, `overlap`'s order)."""
        owners = Owners()
        for later, ticket in enumerate(tickets):
            earlier = owners.first_clash(homes[later], ticket.scope)
            owners.add(homes[later], later, ticket.scope)
            if earlier is not None:
                found = overlap(tickets[earlier].scope, ticket.scope)
                assert found is not None  # the index and `overlap` agree on what overlaps
                first, second = tickets[earlier].id, ticket.id
                mine, theirs = found
                what = f"tickets {first!r} and {second!r} both own "
                if mine.rstrip("/") == theirs.rstrip("/"):
                    what += repr(theirs)
                elif mine.endswith("/") and theirs.startswith(mine):
                    what += f"{theirs!r}: it is inside the folder {mine!r} of ticket {first!r}"
                else:
                    what += f"{mine!r}: it is inside the folder {theirs!r} of ticket {second!r}"
                self.fail_ticket(later, "scope", what,
                                 "give each file to one ticket: narrow one scope, or merge the two tickets",
                                 needle=theirs)

