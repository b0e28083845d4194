"""``koord bench idle``: CPU an idle ``koord up --nodes 0`` burns, per process and in total.

Starts ``koord up --nodes 0 --detach --broker KIND`` in a temporary ``KOORD_HOME``, lets it settle, then
reads each process's CPU time (``utime + stime`` of ``/proc/PID/stat``, its descendants included) at the
start and end of a window and reports the difference as a share of one core: 100 % is one core busy for
the whole window. The processes are the supervisor (which also prints the decision stream), the
broker(s), the worker and the projection. ``koord down`` stops them afterwards. The run always starts its
own broker: KOORD_BROKER is ignored, since CPU of a broker shared with others cannot be attributed.

Nothing else is measured: on a shared machine other load does not enter these figures, but it does slow
what is measured (the load average is reported beside them).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator, Mapping

from streams import supervision

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
SETTLE_S = {"tansu": 20.0, "kafka": 180.0}
"""Default idling before the measured window, by broker. Kafka's JVM keeps compiling (C1/C2 threads) for
minutes after it starts: 40 s after ``koord up`` they still took about 3 % of a core, after 180 s nothing."""
_OWN_BROKER_AND_HOME = ("KOORD_BROKER", "KOORD_BROKER_KIND", "KOORD_HOME", "KOORD_DATABASE_URL")
"""Left out of the environment of the measured ``koord up``: it starts its own broker and read model."""


def _stat_fields(pid: int) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2:].split()  # the command name may hold spaces and parentheses


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                tree.setdefault(int(_stat_fields(int(entry.name))[1]), []).append(int(entry.name))
    return tree


def cpu_seconds(pid: int, tree: Mapping[int, list[int]] | None = None, skip: frozenset[int] = frozenset()) -> float:
    """CPU time (user + system) used so far by ``pid`` and its living descendants, in seconds; the subtrees
    of the pids in ``skip`` are left out (they are measured on their own)."""
    tree = _children() if tree is None else tree
    total, pending = 0.0, [pid]
    while pending:
        current = pending.pop()
        with contextlib.suppress(OSError, IndexError):
            fields = _stat_fields(current)
            total += (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
        pending.extend(child for child in tree.get(current, ()) if child not in skip)
    return total


def measure(pids: Mapping[str, int], seconds: float) -> dict[str, float]:
    """Each named process's CPU over ``seconds``, in percent of one core, plus ``total``."""
    named = frozenset(pids.values())

    def sample() -> dict[str, float]:
        tree = _children()
        return {name: cpu_seconds(pid, tree, named) for name, pid in pids.items()}

    before = sample()
    started = time.monotonic()
    time.sleep(seconds)
    after = sample()
    elapsed = time.monotonic() - started
    shares = {name: round(100 * (after[name] - before[name]) / elapsed, 2) for name in pids}
    return {**shares, "total": round(sum(shares.values()), 2)}


@contextlib.contextmanager
def detached_up(kind: str) -> Iterator[dict[str, int]]:
    """``koord up --nodes 0 --detach --broker kind`` in a temporary home; yields its processes' pids by name."""
    with tempfile.TemporaryDirectory(prefix="koord-idle-") as home:
        env = {key: value for key, value in os.environ.items() if key not in _OWN_BROKER_AND_HOME}
        env["KOORD_HOME"] = home
        subprocess.run(supervision.koord_command("up", "--nodes", "0", "--detach", "--broker", kind),
                       env=env, check=True, stdout=subprocess.DEVNULL)
        try:
            state = json.loads((Path(home) / "up.json").read_text())
            yield {"supervisor": state["pid"], **{name: proc["pid"] for name, proc in state["processes"].items()}}
        finally:
            subprocess.run(supervision.koord_command("down"), env=env, check=False, stdout=subprocess.DEVNULL)


def run(kind: str, settle_s: float, seconds: float) -> dict:
    with detached_up(kind) as pids:
        time.sleep(settle_s)
        load_before = os.getloadavg()[0]
        shares = measure(pids, seconds)
    return {"broker": kind, "settle_s": settle_s, "seconds": seconds, "cpu_percent": shares,
            "loadavg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
