"""Announcing what needs the lead with `[notify] command`, once per event, with or without a dashboard.

Whoever sees an event first announces it: the supervisor sees its lane's questions, its stall, its
cap (the lane ended FAILED-RESOURCE) and the state its gates and review leave it in (`ready`,
`rejected`); reconcile, run by the dashboard and by `status` / `wait`, sees a lane `lost` (and a lane
it settles from a receipt its dead supervisor left). Several processes may see the same event, so
each one is claimed first by an exclusive marker file, `notified/<lane>-<event>-<seq>` in the lane's
folder (`O_CREAT | O_EXCL`: exactly one process creates it); only the claimant runs the command. A
dashboard started later finds the markers and announces nothing twice. `seq` tells occurrences apart:
a question's id, else the lane's attempt (a lane runs once; a relaunch is a new lane).

The command runs detached and bounded: a small runner (`python -I -S -c`, the standard library only)
in its own session starts it in another session with stdin on /dev/null, kills its whole group after
`timeout_s`, and appends any failure to the lane's `notify.log`. Nothing here raises into its caller:
a notifier that is missing, slow or broken never stops a lane or a reconcile.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from lanes_tui.engine.config.notify import NotifyConfig
from lanes_tui.engine.config.providers import PLACEHOLDER_RE
from lanes_tui.engine.config.settings import load_config
from lanes_tui.engine.core.atomic import PRIVATE_DIR, PRIVATE_FILE
from lanes_tui.engine.inbox.store import InboxStore
from lanes_tui.engine.state.model import LaneRecord
from lanes_tui.engine.state.store import LaneStore

__all__ = ["NOTIFIED_DIR", "NOTIFY_ENV", "Announcement", "announce", "announce_lanes", "fill", "lane_event"]

log = logging.getLogger(__name__)

#: The lane folder's markers of what was announced.
NOTIFIED_DIR = "notified"
NOTIFY_LOG = "notify.log"
#: The environment the notifier gets, and nothing else. Whoever announces holds the lead's whole
#: environment, provider credentials included, and a notifier has no business with those; nor with
#: lanes-tui's own LANES_* markers, by which a lane's leftover processes are found and stopped. It
#: needs only to find its program (PATH, HOME), the desktop session it talks to (DISPLAY, WAYLAND_DISPLAY,
#: DBUS_SESSION_BUS_ADDRESS, XDG_RUNTIME_DIR) and the language to write in (LANG).
NOTIFY_ENV = ("PATH", "HOME", "DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "LANG")
#: How much of a reason or question a notification carries (a bubble, not a report).
MAX_BODY = 500
TITLES: Mapping[str, str] = {
    "question": "{lane} asks a question", "stall": "{lane} stalled", "ready": "{lane} is ready",
    "rejected": "{lane} was rejected", "lost": "{lane} is lost", "cap": "{lane} hit a cap",
}

#: The detached runner, standard library only (`-I -S`: no site, no PYTHON* variables), so it starts
#: fast and imports nothing of lanes-tui. argv[1] is a JSON spec: argv, timeout, log, what.
_RUNNER = r"""
import json, os, signal, subprocess, sys, time
spec = json.loads(sys.argv[1])
def note(text):
    try:
        fd = os.open(spec["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (time.strftime("%Y-%m-%dT%H:%M:%S ") + spec["what"] + ": " + text + "\n").encode())
        finally:
            os.close(fd)
    except OSError:
        pass
try:
    proc = subprocess.Popen(spec["argv"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, cwd="/")
except (OSError, ValueError) as exc:
    note("cannot run %r: %s" % (spec["argv"][0], exc))
    sys.exit(1)
try:
    code = proc.wait(timeout=spec["timeout"])
except subprocess.TimeoutExpired:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()
    note("still running after %ss: killed" % spec["timeout"])
    sys.exit(1)
if code:
    note("%r exited %d" % (spec["argv"][0], code))
"""


@dataclass(frozen=True)
class Announcement:
    """One event to announce: which lane, what happened, which occurrence, and the words for it."""

    lane: str
    event: str
    seq: str
    title: str
    body: str

    @property
    def marker(self) -> str:
        return f"{self.lane}-{self.event}-{self.seq}"

    def values(self) -> dict[str, str]:
        return {"title": self.title, "body": self.body, "lane": self.lane, "event": self.event}


def lane_event(record: LaneRecord) -> str | None:
    """The event a lane's state is, if it is one the lead hears about (a question is asked separately)."""
    if record.state == "stalled":
        return "stall"
    if record.state in ("ready", "rejected", "lost"):
        return record.state
    if record.state == "exited" and record.result == "FAILED-RESOURCE":
        return "cap"
    return None


def fill(command: Sequence[str], values: Mapping[str, str]) -> list[str]:
    """The argv with `{title}`, `{body}`, `{lane}`, `{event}` filled element by element, in one pass
    (a body that itself says `{lane}` stays verbatim), and no NUL (argv cannot carry one)."""
    def one(part: str) -> str:
        text = PLACEHOLDER_RE.sub(lambda m: values.get(m.group(1), m.group(0)), part).replace("\x00", "")
        return text.encode("utf-8", "replace").decode("utf-8")  # a lone surrogate from a question's JSON

    return [one(part) for part in command]


def announce(store: LaneStore, notify: NotifyConfig, record: LaneRecord, *,
             inbox: InboxStore | None = None) -> list[Announcement]:
    """Announce the lane's state if it is an event, and (given the inbox) each open question of the
    lane, each at most once across processes. Returns what this call announced; never raises."""
    if not notify.enabled:
        return []
    try:
        wanted = [a for a in _announcements(record, inbox) if a.event in notify.events]
        return [a for a in wanted if _claim(store, a) and _run(store, notify, a)]
    except Exception:  # a notification is never worth a lane or a reconcile
        log.exception("announcing %s failed", record.id)
        return []


def announce_lanes(store: LaneStore, lane_ids: Iterable[str]) -> None:
    """Reconcile's hook: announce the lanes it just settled (lost, or stalled or capped by a receipt).

    The config is read only when a lane changed, so a reconcile with nothing to say costs nothing; a
    config that cannot be read means no notification (and a line in the log), never a failed reconcile.
    """
    lane_ids = list(lane_ids)
    if not lane_ids:
        return
    try:
        notify = load_config(store.paths.repo).notify
        if notify.enabled:
            for lane_id in lane_ids:
                announce(store, notify, store.read(lane_id))
    except Exception as exc:
        log.warning("announcing reconciled lanes failed: %s", exc)


def _announcements(record: LaneRecord, inbox: InboxStore | None) -> list[Announcement]:
    out: list[Announcement] = []
    event = lane_event(record)
    if event is not None:
        out.append(Announcement(record.id, event, str(record.attempt), _title(event, record.id),
                                _clip(record.state_reason)))
    if inbox is not None:
        for view in inbox.open_questions(record.id):
            question = view.question
            body = question.title + (f"\n{question.body}" if question.body and question.kind != "permission" else "")
            out.append(Announcement(record.id, "question", question.id, _title("question", record.id), _clip(body)))
    return out


def _title(event: str, lane: str) -> str:
    return "lanes-tui: " + TITLES[event].format(lane=lane)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_BODY else text[: MAX_BODY - 1] + "…"


def _claim(store: LaneStore, announcement: Announcement) -> bool:
    """Create the announcement's marker; True only for the one process that created it."""
    folder = store.lane_paths(announcement.lane).dir / NOTIFIED_DIR
    try:
        folder.mkdir(mode=PRIVATE_DIR, exist_ok=True)
        fd = os.open(folder / announcement.marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                     PRIVATE_FILE)
    except FileExistsError:
        return False
    except OSError as exc:  # a full disk, a lane folder removed under us: better silent than twice
        log.warning("cannot claim %s: %s", announcement.marker, exc)
        return False
    try:
        os.write(fd, json.dumps({"pid": os.getpid(), "at": store.clock.time()}).encode())
    except OSError:
        pass
    finally:
        os.close(fd)
    return True


def _run(store: LaneStore, notify: NotifyConfig, announcement: Announcement) -> bool:
    """Start the runner detached; the lane's events record that it was announced (and by whom)."""
    spec = json.dumps({"argv": fill(notify.command, announcement.values()), "timeout": notify.timeout_s,
                       "log": str(store.lane_paths(announcement.lane).dir / NOTIFY_LOG),
                       "what": announcement.marker})
    env = {name: os.environ[name] for name in NOTIFY_ENV if name in os.environ}
    try:
        runner = subprocess.Popen([sys.executable, "-I", "-S", "-c", _RUNNER, spec], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd="/",
                                  start_new_session=True)
    except (OSError, ValueError) as exc:
        log.warning("cannot start the notifier for %s: %s", announcement.marker, exc)
        return False
    # Reaped in the background: the announcing process (a supervisor is a child subreaper) keeps no zombie.
    threading.Thread(target=runner.wait, name="lanes-notify-reaper", daemon=True).start()
    store.event(announcement.lane, "notified", event=announcement.event, seq=announcement.seq, pid=runner.pid)
    return True
