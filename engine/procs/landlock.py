"""Kernel write confinement for a lane's processes: Landlock over its three system calls.

An agent runs as the lead's own user, so file modes cannot keep it out of the shared git config, the
hooks, the refs, `.lanes/` or another lane's worktree. Landlock (Linux 5.13+) can: an unprivileged
process restricts itself and everything it will ever start, irreversibly, to a set of folders it
may write. lanes-tui builds the ruleset in the supervisor (or in `check`, for gates), and the child
applies it between fork and exec (`Ruleset.restrict`), next to the cgroup join, so the agent's very
first instruction already runs confined.

What the ruleset handles is every *write* right the kernel's ABI knows (write, truncate, create,
remove, rename across folders); reading and executing are left alone, so everything stays readable.
Where the ABI has scopes (6+), signals and abstract Unix sockets are scoped too: a lane cannot
signal (SIGSTOP, SIGKILL) its supervisor, the dashboard or another lane, nor reach another lane's
abstract sockets.

Why a module of our own and not a library: the whole interface is three system calls and two
structs, a supervisor starts for every lane (each import counts: `ctypes` is already loaded by
`procs.process`, this module adds about 0.3 ms), and the restrict step must run in the forked child
before exec, where only system calls on values computed beforehand are safe.

`LANES_TUI_LANDLOCK=off` makes `probe` answer "unavailable" (tests force the fallback with it; a lead
may too). Standard library only.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["ENV_SWITCH", "Probe", "Ruleset", "build", "probe"]

#: `off` forces the fallback (no Landlock), whatever the kernel offers.
ENV_SWITCH = "LANES_TUI_LANDLOCK"

# The system call numbers are the same on every architecture that has Landlock (the generic table).
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# Filesystem access rights (include/uapi/linux/landlock.h).
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK = 1 << 8, 1 << 9, 1 << 10, 1 << 11
MAKE_SYM, REFER, TRUNCATE = 1 << 12, 1 << 13, 1 << 14
#: The rights a rule on a regular file (not a folder) may carry.
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE
# Scopes (ABI 6).
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1


def write_rights(abi: int) -> int:
    """Every right that changes the file system, as far as this ABI knows them."""
    rights = (WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG | MAKE_SOCK
              | MAKE_FIFO | MAKE_BLOCK | MAKE_SYM)
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    return rights


def scopes(abi: int) -> int:
    return SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


@dataclass(frozen=True)
class Probe:
    """What the kernel offers here: the ABI (0 when none) and, when none, why."""

    abi: int
    reason: str = ""

    @property
    def available(self) -> bool:
        return self.abi > 0

    def describe(self) -> str:
        if not self.available:
            return f"none ({self.reason})"
        extra = ", signals and abstract sockets scoped" if scopes(self.abi) else ""
        return f"landlock ABI {self.abi} (writes confined{extra})"


def probe() -> Probe:
    """Ask the kernel for its Landlock ABI; never raises."""
    if os.environ.get(ENV_SWITCH, "").strip().lower() in {"off", "0", "no", "false"}:
        return Probe(0, f"{ENV_SWITCH}=off")
    if not sys.platform.startswith("linux"):
        return Probe(0, f"Landlock is Linux-only; this is {sys.platform}")
    try:
        libc = _libc()
    except OSError as exc:  # pragma: no cover - a libc without `syscall`
        return Probe(0, f"no libc syscall(): {exc}")
    abi = libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    if abi < 0:
        err = ctypes.get_errno()
        if err == errno.ENOSYS:
            return Probe(0, "the kernel has no Landlock (Linux 5.13+ built with CONFIG_SECURITY_LANDLOCK)")
        if err == errno.EOPNOTSUPP:
            return Probe(0, "Landlock is off in this kernel (add `landlock` to the lsm= boot parameter)")
        return Probe(0, f"landlock_create_ruleset failed: {os.strerror(err)}")
    return Probe(int(abi))


@dataclass
class Ruleset:
    """A built ruleset (a kernel fd, close-on-exec) and what it lets a process write."""

    fd: int
    abi: int
    writable: tuple[str, ...]
    #: Paths asked for that were not there (a rule needs an open file): reported, not fatal.
    missing: tuple[str, ...] = field(default=())

    def restrict(self) -> Callable[[], None]:
        """A `preexec_fn` step: no new privileges, then the ruleset on this process for good.

        Runs between fork and exec on values computed here. A failure raises, which aborts the spawn
        (subprocess reports it in the parent): a lane process never runs unconfined by accident.
        """
        libc, fd = _libc(), self.fd
        syscall, prctl = libc.syscall, libc.prctl

        def run() -> None:
            if prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
            if syscall(_SYS_RESTRICT_SELF, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
                raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")

        return run

    def close(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Ruleset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def build(abi: int, writable: Iterable[Path | str]) -> Ruleset:
    """A ruleset that lets its process write only beneath `writable` (folders, or single files).

    A path that does not exist is left out and listed in `missing`. Raises OSError when the kernel
    refuses the ruleset itself.
    """
    libc = _libc()
    handled = write_rights(abi)
    attr = _RulesetAttr(handled, 0, scopes(abi))
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else ctypes.sizeof(ctypes.c_uint64)
    fd = int(libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"landlock_create_ruleset: {os.strerror(err)}")
    granted: list[str] = []
    missing: list[str] = []
    try:
        for item in dict.fromkeys(str(p) for p in writable):
            try:
                target = os.open(item, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                missing.append(item)
                continue
            try:
                is_dir = os.path.isdir(f"/proc/self/fd/{target}")
                rights = handled if is_dir else handled & _FILE_RIGHTS
                rule = _PathBeneathAttr(rights, target)
                if libc.syscall(_SYS_ADD_RULE, ctypes.c_int(fd), ctypes.c_int(_RULE_PATH_BENEATH),
                                ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"landlock_add_rule {item}: {os.strerror(err)}")
                granted.append(item)
            finally:
                os.close(target)
    except BaseException:
        os.close(fd)
        raise
    return Ruleset(fd, abi, tuple(granted), tuple(missing))
