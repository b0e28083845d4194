"""YARN containers' threads join the BE resctrl group, as BE pods' threads do.

koordlet's resctrl reconcile puts the threads of every pod of a QoS class into that class's group
(``<resctrl root>/BE`` for BE); YARN containers are BE and are not pods, so no ``tasks.pods`` of a BE
actuation names them. This module writes their threads to the BE group's ``tasks`` when that group exists
(the planner created it: resctrl QoS is on for the node); without the group nothing is written, as a
BE pod is not moved either. A thread that exited meanwhile is skipped (``ESRCH``), as the resctrl backend does.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Iterable
from pathlib import Path

from node_agent.actuator.files import write_value
from node_agent.actuator.paths import resctrl_group_dir
from node_agent.hostfs import read_text
from streams.koordinator.classes import QOS_BE


def join_be_group(resctrl_root: Path, threads: Iterable[int],
                  writer: Callable[[Path, str], None] = write_value) -> list[int]:
    """Move ``threads`` not yet in the BE group into it; the thread ids moved."""
    group = resctrl_group_dir(resctrl_root, QOS_BE)
    if not group.is_dir():
        return []
    present = {int(t) for t in (read_text(group / "tasks") or "").split() if t.isdigit()}
    moved = []
    for tid in sorted(set(threads) - present):
        try:
            writer(group / "tasks", str(tid))
            moved.append(tid)
        except OSError as err:
            if err.errno != errno.ESRCH:
                raise
    return moved
