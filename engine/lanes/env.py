"""The environment an agent or a gate gets: an allow-list, never the lead's whole environment.

An agent runs untrusted steps with the lead's user id; whatever is in its environment it can print,
write into its worktree or send away. So a lane gets only:

* the base set (`BASE_ENV`): what any program needs to find itself, its home, its language and its
  terminal; the git identity its commits carry; where the TLS certificates are;
* the names its provider lists (`ProviderConfig.env`: the preset's own credentials plus the lead's
  `[providers.NAME] env`), or for a gate `[gates] env` — gates never see a provider's credentials;
* its own `LANES_*` (set here, never copied: the lead's `LANES_*` belong to lanes-tui itself);
* lanes-tui's diagnostics (`DIAGNOSTIC_ENV`), which carry a file path or a random token, never a secret.

Everything else is dropped: other services' tokens, keys and passwords, `AWS_*`, `SSH_AUTH_SOCK`,
`GIT_DIR` and friends. The host-session markers (`HOST_SESSION_VARS`) are dropped even when an
allow pattern matches them, because a nested agent must not believe it runs inside the lead's own
agent session. Patterns are exact names or `PREFIX_*`, case-sensitive (`config.providers.env_matches`).
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from lanes_tui.engine.config.providers import HOST_SESSION_VARS, env_matches
from lanes_tui.engine.core.atomic import write_text_atomic

#: What every agent and gate gets from the lead's environment when set. Beyond the usual locale,
#: terminal and user variables: the git identity (`GIT_AUTHOR_*`, `GIT_COMMITTER_*` — names and
#: emails, which an agent's commits need where no ~/.gitconfig has them) and the certificate bundles
#: (paths; without them a CLI behind a TLS-inspecting proxy cannot reach its API).
BASE_ENV = (
    "PATH", "HOME", "LANG", "LANGUAGE", "LC_*", "TERM", "COLORTERM", "USER", "LOGNAME", "SHELL", "TMPDIR",
    "TZ", "XDG_*", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
)
#: lanes-tui's own diagnostics, which must follow a lane into every process it starts:
#: `LANESTUI_DEBUG_MODULES` (core.debug: the import-budget report, a file path) and
#: `LANESTEST_MARKER` (the test suite's leak detector: a random token per test, by which
#: tests/conftest.py finds any process a test left behind, however it escaped). Neither is a secret,
#: and neither is set outside a debugging session or the test suite.
DIAGNOSTIC_ENV = ("LANESTUI_DEBUG_MODULES", "LANESTEST_MARKER")
#: Never copied from the lead: lanes-tui's own (publishing tokens, the dashboard's settings).
#: A lane's `LANES_LANE`, `LANES_ATTEMPT`, `LANES_HOME` and `LANES_WORKTREE` are set here instead.
OWN_PREFIX = "LANES_"


def passes(name: str, allow: tuple[str, ...] | list[str] = ()) -> bool:
    """True if the variable `name` of the lead's environment may reach a lane given `allow`."""
    if name.startswith(OWN_PREFIX) or name in HOST_SESSION_VARS:
        return False
    return env_matches(name, BASE_ENV) or name in DIAGNOSTIC_ENV or env_matches(name, allow)


def passed_env_names(base: Mapping[str, str], allow: tuple[str, ...] | list[str] = ()) -> list[str]:
    """The names (never the values) of `base` that a lane with `allow` would receive, sorted.

    For `doctor`; the lane's own `LANES_*` and `PYTHONUNBUFFERED` are added on top and not listed.
    """
    return sorted(name for name in base if passes(name, allow))


def lane_environment(base: Mapping[str, str], *, lane_id: str, attempt: int, state_dir: Path,
                     worktree: Path, bin_dir: Path, allow: tuple[str, ...] | list[str]) -> dict[str, str]:
    """The environment of an agent (`allow` = its provider's `env`) or a gate (`[gates] env`)."""
    env = {k: v for k, v in base.items() if passes(k, allow)}
    env["LANES_LANE"] = lane_id
    env["LANES_ATTEMPT"] = str(attempt)
    env["LANES_HOME"] = str(state_dir)
    env["LANES_WORKTREE"] = str(worktree)
    if "LANES_HEAVY_LOAD" in base:  # the lead's load limit holds for `lanes-tui lock` in the lane too
        env["LANES_HEAVY_LOAD"] = base["LANES_HEAVY_LOAD"]
    env["PATH"] = os.pathsep.join(p for p in (str(bin_dir), base.get("PATH", os.defpath)) if p)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


#: What the supervisor needs for itself beyond what its agents and gates may get: its interpreter's
#: paths and lanes-tui's own settings (`LANES_TUI_*`, read by the supervisor, never given to an agent),
#: and the load wait of its gates (`LANES_HEAVY_LOAD`, as `lanes-tui lock` reads it).
SUPERVISOR_ENV = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "LANES_TUI_*", "LANES_HEAVY_LOAD")


def supervisor_environment(base: Mapping[str, str], allow: Iterable[str]) -> dict[str, str]:
    """The supervisor's own environment: what any of its agents or gates may receive (`allow` = the
    union of its chain's provider `env` and `[gates] env`), plus `SUPERVISOR_ENV`.

    An agent runs as the lead's user and can read the supervisor's `/proc/PID/environ`; starting the
    supervisor with this allow-list means it finds nothing there it was not given anyway.
    """
    patterns = tuple(allow)
    return {k: v for k, v in base.items() if passes(k, patterns) or env_matches(k, SUPERVISOR_ENV)}


def ensure_cli_shim(bin_dir: Path) -> Path:
    """A `lanes-tui` on the agent's PATH that runs this very installation, venv or not."""
    shim = bin_dir / "lanes-tui"
    text = f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m lanes_tui.app \"$@\"\n"
    try:
        if shim.read_text(encoding="utf-8") == text:
            return shim
    except OSError:
        pass
    bin_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(shim, text)
    shim.chmod(0o755)
    return shim
