"""Which model aider will run, read from where aider 0.86 reads it, so a lane's label, cost and review
family are the model's and not the preset's guess.

aider has no model of its own: it takes `--model` (or a deprecated shortcut such as `--4o`) from its
command line, else `AIDER_MODEL` from its environment (a `.env` file in its home, the git root or its
working folder sets that too, loaded over the environment), else `model:` from the first
`.aider.conf.yml` of its working folder, the git root and its home, else a default for the first API key
it finds (ANTHROPIC_API_KEY → sonnet, DEEPSEEK_API_KEY → deepseek, OPENAI_API_KEY → gpt-4o, …).

The preset's `model` is empty ("aider's own choice"); the supervisor fills it with `resolved` before a
run, from the argv and the environment the agent gets and the lane's worktree. A model the lead sets
(`[providers.aider] model`, a plan tier's model) is passed as `--model`, so the label is what ran.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from pathlib import Path

from lanes_tui.engine.config.providers import ProviderConfig, env_matches

CONF_FILE = ".aider.conf.yml"
ENV_FILE = ".env"
#: A `.aider.conf.yml` or `.env` larger than this is not read (aider's own are a few KiB).
MAX_FILE_BYTES = 256 * 1024
#: aider's deprecated model shortcuts (aider/deprecated.py) → the model each selects.
SHORTCUTS = {"--opus": "claude-3-opus-20240229", "--sonnet": "anthropic/claude-3-7-sonnet-20250219",
             "--haiku": "claude-3-5-haiku-20241022", "--4": "gpt-4-0613", "--4o": "gpt-4o", "--mini": "gpt-4o-mini",
             "--4-turbo": "gpt-4-1106-preview", "--35turbo": "gpt-3.5-turbo", "--deepseek": "deepseek/deepseek-chat",
             "--o1-mini": "o1-mini", "--o1-preview": "o1-preview"}
#: aider/onboarding.py `try_to_select_default_model`: the first key present picks the model.
DEFAULT_BY_KEY = (("OPENROUTER_API_KEY", "openrouter/anthropic/claude-sonnet-4"), ("ANTHROPIC_API_KEY", "sonnet"),
                  ("DEEPSEEK_API_KEY", "deepseek"), ("OPENAI_API_KEY", "gpt-4o"),
                  ("GEMINI_API_KEY", "gemini/gemini-2.5-pro-exp-03-25"),
                  ("VERTEXAI_PROJECT", "vertex_ai/gemini-2.5-pro-exp-03-25"))
_MODEL_LINE = re.compile(r"^model\s*:\s*(?P<value>.*?)\s*$")
_ENV_LINE = re.compile(r"^(?:export\s+)?AIDER_MODEL\s*=\s*(?P<value>.*?)\s*$")


def is_aider(provider: ProviderConfig) -> bool:
    return Path(provider.executable()).name == "aider"


def model_in_argv(argv: list[str] | tuple[str, ...]) -> str | None:
    """`--model X` / `--model=X` (the last one wins, as argparse has it) or a shortcut flag, else None."""
    found: str | None = None
    for index, part in enumerate(argv):
        if part == "--model" and index + 1 < len(argv):
            found = argv[index + 1]
        elif part.startswith("--model="):
            found = part.split("=", 1)[1]
        elif part in SHORTCUTS:
            found = SHORTCUTS[part]
    return found or None


def _unquote(value: str) -> str:
    value = value.strip()
    if value[:1] in ("'", '"'):
        end = value.find(value[0], 1)
        return value[1:end] if end > 0 else value[1:]
    return value.split(" #", 1)[0].strip()


def _read(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read(MAX_FILE_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""


def model_in_conf(path: Path) -> str | None:
    """The top-level `model:` of a `.aider.conf.yml` (a plain scalar, as aider's sample writes it)."""
    for line in _read(path).splitlines():
        match = _MODEL_LINE.match(line)
        if match:
            return _unquote(match["value"]) or None
    return None


def model_in_dotenv(path: Path) -> str | None:
    found = None
    for line in _read(path).splitlines():
        match = _ENV_LINE.match(line.strip())
        if match:
            found = _unquote(match["value"]) or None
    return found


def _folders(worktree: Path | None, home: Path | None) -> list[Path]:
    """aider's search order, the most important first: its working folder (= the git root of a lane's
    worktree), then the home folder."""
    return [p for p in (worktree, home) if p is not None]


def aider_model(argv: list[str] | tuple[str, ...], env: Mapping[str, str], worktree: Path | None) -> str | None:
    """The model aider will run given its argv, its environment and its working folder, or None."""
    from_argv = model_in_argv(argv)
    if from_argv:
        return from_argv
    home = Path(env["HOME"]) if env.get("HOME") else None
    for folder in _folders(worktree, home):  # .env is loaded over the environment
        from_dotenv = model_in_dotenv(folder / ENV_FILE)
        if from_dotenv:
            return from_dotenv
    if env.get("AIDER_MODEL"):
        return env["AIDER_MODEL"]
    for folder in _folders(worktree, home):
        from_conf = model_in_conf(folder / CONF_FILE)
        if from_conf:
            return from_conf
    for key, model in DEFAULT_BY_KEY:
        if env.get(key):
            return model
    return None


def resolved(provider: ProviderConfig, environ: Mapping[str, str], worktree: Path | None) -> ProviderConfig:
    """`provider` with the model aider will run: the lead's model passed as `--model`, or, when the preset
    leaves it to aider, the one aider reads. Anything but aider is returned as it is."""
    if not is_aider(provider):
        return provider
    argv = provider.argv
    if provider.model and not provider.uses_placeholder("model") and model_in_argv(argv) is None:
        return dataclasses.replace(provider, argv=(*argv, "--model", "{model}"))
    if provider.model:
        return provider
    env = {k: v for k, v in environ.items() if k == "HOME" or env_matches(k, provider.env)}
    model = aider_model(argv, env, worktree)
    return dataclasses.replace(provider, model=model) if model else provider


def aider_family_model(provider: ProviderConfig, cwd: Path | None = None) -> str:
    """The model an aider provider with no model set runs, for its review family outside a lane: the
    lanes-tui process's environment and folder (the repository), else ""."""
    if provider.model or not is_aider(provider):
        return provider.model
    return resolved(provider, os.environ, cwd or Path.cwd()).model
