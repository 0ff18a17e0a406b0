"""What a reviewer is sent and what is read back from it: the prompt, the text of its output, the
read-only argv, and the packet's review and verification as the lead reads them.

Pure text work, no processes: `review.run` runs the reviewer with these. Kept apart so the accept
plan, `recover --relaunch` and the dashboard read a review the same way, and so a hand-edited
`review_detail` in the packet (it is a file anyone can write) is checked in one place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lanes_tui.engine.channels.base import json_line
from lanes_tui.engine.core.ansi import strip_ansi
from lanes_tui.engine.decisions.review.verdict import VERDICTS, Verdict

__all__ = [
    "REVIEW_MARKER",
    "describe_review",
    "describe_verification",
    "detail_from_verdict",
    "read_only_argv",
    "review_detail",
    "review_prompt",
    "review_prompt_block",
    "reviewer_text",
    "verification",
]

#: The prompt's first line. The simulated agent (`sim.agent`) recognises it and reviews instead of
#: running steps; a test keeps the two copies equal (the sim may import nothing from here).
REVIEW_MARKER = "lanes-tui review request"
#: Findings shown in one-line summaries and in the accept modal.
SHOWN_FINDINGS = 3

_ANSWER_FORM = """\
Answer in this form, and nothing after it:
- one line per problem that must be fixed before this change is merged, as `- path:line: what is wrong`
  (paths as in the diff; leave out the line number only when the problem is not on one line);
- then, alone on the last line, `REVIEW: BLOCKING` if any such problem exists, otherwise `REVIEW: CLEAN`.
Style preferences and ideas for later are not blocking. Do not change, create or delete any file:
this is a read-only copy of the work, and nothing you write in it reaches the lane."""


def review_prompt(lane_id: str, task: str, gates: Sequence[Mapping[str, Any]], diff_text: str,
                  notes: Sequence[str] = ()) -> str:
    """The reviewer's prompt: the task, the gate results, the scoped diff and the answer form."""
    gate_lines = [f"- `{g.get('command', '?')}`: {g.get('status', '?')}"
                  + (f" (exit {g['exit_code']})" if g.get("exit_code") is not None else "")
                  for g in gates] or ["- no gates are configured for this repository"]
    return "\n".join([
        f"{REVIEW_MARKER}: lane {lane_id}",
        "You are reviewing another agent's work before the lead merges it. Read the task, the gate "
        "results and the diff, and say whether anything in the diff must be fixed first.",
        "", "## Task", task.strip() or "(no task text)",
        "", "## Gates", *gate_lines,
        "", "## Diff", "```diff", diff_text.rstrip("\n") or "(the lane changed nothing)", "```",
        *notes,
        "", "## Answer form", _ANSWER_FORM, "",
    ])


def reviewer_text(raw: str) -> str:
    """The reviewer's words from its output as printed: the text of JSON-line streams (claude
    stream-json `assistant` and `result`, codex `--json` agent messages, gemini `message`), the
    plain lines otherwise, escape sequences removed. The verdict parser reads this."""
    out: list[str] = []
    for line in raw.splitlines():
        data = json_line(line)
        if data is None:
            out.append(strip_ansi(line))
            continue
        out.extend(_texts(data))
    return "\n".join(out)


def _texts(data: Mapping[str, Any]) -> list[str]:
    kind = data.get("type")
    if kind == "assistant":  # claude: message.content[] of {"type": "text", "text": …}
        message = data.get("message")
        content = message.get("content") if isinstance(message, Mapping) else None
        return [str(c["text"]) for c in content or () if isinstance(c, Mapping) and isinstance(c.get("text"), str)] \
            if isinstance(content, list) else []
    if kind == "result" and isinstance(data.get("result"), str):
        return [data["result"]]  # claude's final text repeats the last message: the last verdict line wins
    item = data.get("item")
    if isinstance(item, Mapping) and item.get("type") == "agent_message" and isinstance(item.get("text"), str):
        return [item["text"]]  # codex exec --json: item.completed of an agent message
    if kind == "message" and data.get("role") == "assistant" and isinstance(data.get("content"), str):
        return [data["content"]]  # gemini stream-json
    return []


#: Flags that let an agent write, and their read-only counterparts (`flag`: replacement value or None
#: to drop the flag). The review worktree is a copy either way; this keeps honest reviewers from trying.
_READ_ONLY_VALUES = {"--permission-mode": "plan", "--sandbox": "read-only", "-s": "read-only",
                     "--approval-mode": "default"}
_WRITE_FLAGS = frozenset({"--full-auto", "--yolo", "--dangerously-bypass-approvals-and-sandbox",
                          "--dangerously-skip-permissions", "--auto-commits"})


def read_only_argv(argv: Sequence[str]) -> list[str]:
    """The provider's argv with its write permissions turned to read-only where the CLI has a flag
    for it (claude `--permission-mode plan`, codex `--sandbox read-only`); aider gets `--dry-run`."""
    out: list[str] = []
    skip = False
    for index, part in enumerate(argv):
        if skip:
            skip = False
            continue
        flag, eq, _value = part.partition("=")
        if part in _WRITE_FLAGS:
            continue
        if flag in _READ_ONLY_VALUES and eq:
            out.append(f"{flag}={_READ_ONLY_VALUES[flag]}")
        elif part in _READ_ONLY_VALUES and index + 1 < len(argv):
            out.extend([part, _READ_ONLY_VALUES[part]])
            skip = True
        else:
            out.append(part)
    if out and out[0].rsplit("/", 1)[-1] == "aider" and "--dry-run" not in out:
        out.insert(1, "--dry-run")
    return out


def detail_from_verdict(verdict: Verdict, *, reviewer: str | None, family: str | None, diff_digest: str,
                        started: float | None, ended: float | None) -> dict[str, Any]:
    """The packet's `review_detail` for a verdict."""
    return {
        "verdict": verdict.verdict, "reviewer": reviewer, "family": family, "reason": verdict.reason,
        "findings": [{"path": f.path, "line": f.line, "text": f.text} for f in verdict.findings],
        "tail": verdict.tail, "diff_digest": diff_digest, "started": started, "ended": ended,
    }


def review_detail(packet: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The packet's `review_detail` if it is one a reader can use, else None (a hand edit that broke
    it is as good as no review: MISSING, never CLEAN)."""
    detail = packet.get("review_detail") if packet else None
    if not isinstance(detail, Mapping) or detail.get("verdict") not in VERDICTS:
        return None
    findings = detail.get("findings")
    clean: dict[str, Any] = {k: detail.get(k) if isinstance(detail.get(k), str) else ""
                             for k in ("verdict", "reviewer", "family", "reason", "tail", "diff_digest")}
    clean["findings"] = [
        {"path": str(f.get("path", "?")), "line": f["line"] if isinstance(f.get("line"), int) else None,
         "text": str(f.get("text", ""))}
        for f in (findings if isinstance(findings, list) else []) if isinstance(f, Mapping)]
    for key in ("started", "ended"):
        value = detail.get(key)
        clean[key] = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    return clean


def verification(packet: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The lead's verification from the packet (`verify ID --evidence TEXT`), checked like the review."""
    data = packet.get("verification") if packet else None
    if not isinstance(data, Mapping) or not isinstance(data.get("evidence"), str):
        return None
    at = data.get("at")
    return {"by": str(data.get("by") or "?"), "evidence": data["evidence"],
            "diff_digest": data.get("diff_digest") if isinstance(data.get("diff_digest"), str) else "",
            "at": float(at) if isinstance(at, int | float) and not isinstance(at, bool) else None}


def _finding_line(finding: Mapping[str, Any]) -> str:
    where = str(finding.get("path")) + (f":{finding['line']}" if finding.get("line") is not None else "")
    return f"{where}: {finding.get('text', '')}"


def describe_review(detail: Mapping[str, Any] | None, *, stale: bool = False,
                    shown: int = SHOWN_FINDINGS) -> list[str]:
    """`review: BLOCKING by codex (openai), 2 findings` and the first findings, for the modal and the CLI."""
    if detail is None:
        return ["review: none"]
    verdict = str(detail.get("verdict"))
    who = f" by {detail['reviewer']}" + (f" ({detail['family']})" if detail.get("family") else "") \
        if detail.get("reviewer") else ""
    findings = list(detail.get("findings") or [])
    head = f"review: {verdict}{who}"
    if verdict == "MISSING":
        head += f": {detail.get('reason') or 'no verdict'}"
    elif findings:
        head += f", {len(findings)} finding{'' if len(findings) == 1 else 's'}"
    if stale:
        head += " (STALE: the lane changed since this review)"
    return [head, *(f"  - {_finding_line(f)}" for f in findings[:shown]),
            *([f"  … and {len(findings) - shown} more"] if len(findings) > shown else [])]


def describe_verification(data: Mapping[str, Any] | None, *, stale: bool = False, when: str = "") -> str:
    """`verified by ana (2026-12-01 17:02): ran the app, login works` or `not verified by the lead`."""
    if data is None:
        return "verification: not verified by the lead (`lanes-tui verify ID --evidence TEXT`)"
    line = f"verified by {data.get('by')}" + (f" ({when})" if when else "") + f": {data.get('evidence')}"
    return line + (" (STALE: the lane changed since)" if stale else "")


def review_prompt_block(detail: Mapping[str, Any] | None) -> str:
    """The BLOCKING review's findings for the next attempt's prompt, like the failed gates' tails."""
    if detail is None or detail.get("verdict") != "BLOCKING":
        return ""
    reviewer = detail.get("reviewer") or "a reviewer"
    lines = [f"A reviewer ({reviewer}) blocked the previous attempt; fix these first:"]
    lines.extend(f"- {_finding_line(f)}" for f in detail.get("findings") or [])
    if len(lines) == 1:
        lines.append("- (the reviewer gave no findings; its reason: " + str(detail.get("reason") or "none") + ")")
    return "\n".join(lines)
