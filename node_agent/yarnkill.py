"""Memory eviction of YARN containers: which to kill, and killing one as yarn-copilot's agent does.

When node memory crosses ``memoryEvictThresholdPercent`` (the node's resource-threshold config), the release
is koordlet's (``memoryevict.release_bytes``)::

    release = capacity * (trunc(used * 100 / capacity) - lower) / 100      lower: memoryEvictLowerPercent,
                                                                            else threshold - 2

Victims follow Koordinator's YARN container eviction (proposal ``20250528-support-evict-yarn-container``,
done by yarn-copilot's agent): ApplicationMaster containers are never chosen, the others most recently
submitted first (cluster timestamp, application, attempt, container number, descending), until their summed
memory reaches ``release``. The kill is yarn-copilot's ``KillContainer``: ``SIGKILL`` to the process group
whose leader is the first process of the container's cpu cgroup (the NodeManager starts each container
with ``setsid``); the NodeManager sees its container exit and reports it to the ResourceManager, which frees
the allocation. A first process that leads no group (a container started without ``setsid``) gets the
signal itself, and so does every other process of the cgroup, so the container still ends. Processes 0 and
1 are never signalled (yarn-copilot refuses a group id ``<= 1``).
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import os
import signal
from collections.abc import Callable, Mapping

from node_agent.collectors.cgroups import CgroupLayout
from node_agent.collectors.yarn import YarnContainer, container_pids

log = logging.getLogger(__name__)

REASON = "EvictYARNContainerByNodeMemoryUsage"


@dataclasses.dataclass(frozen=True)
class Victim:
    container: YarnContainer
    memory_bytes: int


def victims(containers: list[YarnContainer], memory_bytes: Mapping[str, int], release: int) -> list[Victim]:
    """The containers to kill to release ``release`` bytes, in kill order (see the module docstring)."""
    chosen, released = [], 0
    for container in sorted(containers, reverse=True):
        if released >= release:
            break
        if container.is_application_master:
            continue
        used = memory_bytes.get(container.id, 0)
        released += used
        chosen.append(Victim(container, used))
    return chosen


def kill(layout: CgroupLayout, container: YarnContainer,
         send: Callable[[int, int], None] = os.kill) -> list[int]:
    """SIGKILL the container's process group (and any process of its cgroup outside it); the ids signalled,
    negative for a group. [] when the cgroup has no process left."""
    pids = [pid for pid in container_pids(layout, container) if pid > 1]
    if not pids:
        return []
    signalled = []
    leader = pids[0]
    try:
        send(-leader, signal.SIGKILL)
        signalled.append(-leader)
    except OSError as err:
        if err.errno != errno.ESRCH:
            raise
    for pid in pids if not signalled else pids[1:]:
        try:
            send(pid, signal.SIGKILL)
            signalled.append(pid)
        except ProcessLookupError:
            continue
    return signalled
