"""Run a completion script the way each shell's completion system would, and return what it offers:
one place for the stubs and command lines the completion tests share."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

#: zsh's completion builtins, stood in by ones that print the words they are given.
ZSH_STUBS = ('compdef() { : }\n'
             'compadd() { shift $(( ${@[(i)--]} )); print -l -- "$@" }\n'
             '_describe() { local -a arr; arr=("${(@P)4}"); print -l -- ${arr%%:*} }\n'
             '_files() { print FILES }\n')


def _quoted(words: tuple[str, ...]) -> str:
    return " ".join(f"'{w}'" for w in words)


def bash_complete(script: Path, cwd: Path, env: dict[str, str], *words: str) -> list[str]:
    """`_lanes_tui` with the cursor on the last of `words` (an empty last word: after a space)."""
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c",
                           f'source {script}; COMP_WORDS=({_quoted(words)}); COMP_CWORD={len(words) - 1}; '
                           '_lanes_tui; printf "%s\\n" "${COMPREPLY[@]}"'],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=True)
    return proc.stdout.split()


def zsh_complete(script: Path, cwd: Path, env: dict[str, str], *words: str) -> list[str]:
    proc = subprocess.run(["zsh", "-f", "-c", f"{ZSH_STUBS}source {script}\nwords=({_quoted(words)}); "
                           f"CURRENT={len(words)}; _lanes_tui"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def fish_complete(script: Path, cwd: Path, env: dict[str, str], line: str) -> list[str]:
    proc = subprocess.run(["fish", "--no-config", "-c", f"source {script}; complete -C'{line}'"], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return [row.split("\t")[0] for row in proc.stdout.splitlines()]


def env_with_lanes_tui(folder: Path) -> dict[str, str]:
    """The environment with a `lanes-tui` shim (this interpreter's `-m lanes_tui`) first on PATH, as
    an installed one would be: the completion scripts call `lanes-tui` for the lanes they offer."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "lanes-tui"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m lanes_tui "$@"\n')
    shim.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
