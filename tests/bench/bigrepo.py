"""A repository of F files and C commits, built in about a second with `git fast-import` (B5, B6).

The first commit holds all F files (`src/dNN/fNNNN.py`, a few lines each); each later commit changes
one of them. The world around it is `BenchRepo`'s (temporary XDG folders, bench config), so lanes
launched in it are real detached supervisors.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from tests.bench.env import BenchRepo, write_bench_config


def fast_import(repo: Path, files: int, commits: int, branch: str = "programme") -> None:
    chunks: list[bytes] = []
    t = int(time.time()) - commits * 60

    def blob_cmd(path: str, text: str) -> None:
        data = text.encode()
        chunks.append(f"M 644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n")

    def commit(i: int, message: str) -> None:
        msg = message.encode()
        chunks.append(f"commit refs/heads/{branch}\nmark :{i + 1}\n"
                      f"committer Bench Lead <bench@example.invalid> {t + i * 60} +0000\n"
                      f"data {len(msg)}\n".encode() + msg + b"\n")
        if i:
            chunks.append(f"from :{i}\n".encode())

    commit(0, "initial: many files")
    blob_cmd(".gitignore", ".lanes/state/\n")
    blob_cmd("README.md", "# bench project\n")
    for n in range(files):
        blob_cmd(path_of(n), f"def f{n}(x):\n    return x + {n}\n")
    for i in range(1, commits):
        commit(i, f"change {i}")
        n = (i * 7919) % files
        blob_cmd(path_of(n), f"def f{n}(x):\n    return x + {n} + {i}\n")
    chunks.append(b"done\n")
    subprocess.run(["git", "fast-import", "--quiet", "--done"], cwd=repo, input=b"".join(chunks), check=True)
    subprocess.run(["git", "checkout", "-q", "-f", branch], cwd=repo, check=True)


def path_of(n: int) -> str:
    return f"src/d{n % 50:02d}/f{n:05d}.py"


class BigRepo(BenchRepo):
    """`BenchRepo` whose repository has `files` files and `commits` commits."""

    def __init__(self, capacity: int, *, files: int = 5000, commits: int = 1000) -> None:
        super().__init__(capacity=capacity)
        self.files = files
        self.commits = commits

    def _setup(self) -> None:
        super()._setup()
        repo = self.repo
        # Replace BenchRepo's one-commit history with the big one (the config stays: it is untracked).
        subprocess.run(["git", "update-ref", "-d", "refs/heads/programme"], cwd=repo, check=True)
        for p in ("README.md", "calc.py", ".gitignore"):
            (repo / p).unlink(missing_ok=True)
        fast_import(repo, self.files, self.commits)
        write_bench_config(repo, self.capacity, self.sample_s)
