"""The node agent's QoS round for YARN containers: resctrl group and memory eviction, every collect interval.

CPU suppress needs nothing here: the containers are below the BE tier, whose quota and cpuset the BE
actuations set. Usage is reported through the ``hadoop-yarn`` host application (``collectors.yarn``).
Each round:

1. finds the container cgroups (``collectors.yarn.discover``);
2. moves their threads into the BE resctrl group when it exists (``yarnresctrl``);
3. with ``resource-threshold-config`` enabled for the node (the last slo-controller-config the agent
   kept), kills the YARN containers ``yarnkill.victims`` picks when node memory crosses
   ``memoryEvictThresholdPercent``; then nothing is killed for ``cool_down_s`` (koordlet's
   ``MemoryEvictCoolTimeSeconds``, 4 s), so the NodeManager can see the containers end and the kernel
   free their memory before usage is measured again.

Node memory is measured as the agent measures it (``/proc/meminfo`` under its memory policy), each
container's memory from its ``memory.stat`` under the same policy. BE pods are evicted by the node
aggregate's plan through the API server; YARN containers are not pods, so the agent ends them itself.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol

from prometheus_client import Counter, Gauge

from node_agent.collectors.cgroups import CgroupLayout
from node_agent.collectors.memory import cgroup_usage, node_usage, parse_meminfo
from node_agent.collectors.yarn import container_threads, discover
from node_agent.hostfs import read_text
from node_agent.publisher import wait_or_stop
from node_agent.yarnkill import REASON, kill, victims
from node_agent.yarnresctrl import join_be_group
from streams.nodeqos.plugins.memoryevict import release_bytes

log = logging.getLogger(__name__)

CONTAINERS = Gauge("koord_node_agent_yarn_containers", "YARN container cgroups found under the BE tier")
KILLED = Counter("koord_node_agent_yarn_containers_killed", "YARN containers killed, by reason", ["reason"])
RESCTRL_MOVED = Counter("koord_node_agent_yarn_resctrl_threads_moved",
                        "YARN container threads moved into the BE resctrl group")
COOL_DOWN_S = 4.0


class Configs(Protocol):
    def config(self): ...


@dataclasses.dataclass(frozen=True)
class Killed:
    container_id: str
    memory_bytes: int
    message: str


class YarnQoS:
    def __init__(self, layout: CgroupLayout, cgroup_dir: str, resctrl_root: Path, proc_root: Path,
                 memory_policy: str, configs: Configs, labels: Callable[[], Mapping[str, str]], *,
                 cool_down_s: float = COOL_DOWN_S, clock: Callable[[], float] = time.monotonic,
                 send: Callable[[int, int], None] = os.kill) -> None:
        self.layout, self.cgroup_dir, self.resctrl_root, self.proc_root = layout, cgroup_dir, resctrl_root, proc_root
        self.memory_policy, self.configs, self.labels = memory_policy, configs, labels
        self.cool_down_s, self.clock, self.send = cool_down_s, clock, send
        self.last_kill: float | None = None

    def tick(self) -> list[Killed]:
        containers = discover(self.layout, self.cgroup_dir)
        CONTAINERS.set(len(containers))
        if not containers:
            return []
        threads = [tid for container in containers for tid in container_threads(self.layout, container)]
        try:
            RESCTRL_MOVED.inc(len(join_be_group(self.resctrl_root, threads)))
        except OSError as err:
            log.warning("YARN containers: moving threads into the BE resctrl group failed: %s", err)
        return self._evict(containers)

    def _evict(self, containers) -> list[Killed]:
        threshold = self.configs.config().qos.for_node(self.labels()).threshold
        if not threshold.enable:
            return []
        if self.last_kill is not None and self.clock() - self.last_kill < self.cool_down_s:
            return []
        meminfo = parse_meminfo(read_text(self.proc_root / "meminfo"))
        if meminfo is None:
            return []
        used = node_usage(meminfo, self.memory_policy)
        release = release_bytes(used, meminfo.total, threshold.memory_evict_threshold_percent,
                                threshold.memory_evict_lower_percent)
        if release <= 0:
            return []
        memory = {}
        for container in containers:
            stat = self.layout.memory_stat(container.dir)
            memory[container.id] = 0 if stat is None else cgroup_usage(stat, self.memory_policy)
        usage = used * 100 // meminfo.total
        killed = []
        for victim in victims(containers, memory, release):
            message = (f"node memory usage {usage}% >= threshold {threshold.memory_evict_threshold_percent}%, need to "
                       f"release {release} bytes; YARN container {victim.container.id} uses {victim.memory_bytes} bytes")
            try:
                signalled = kill(self.layout, victim.container, self.send)
            except OSError as err:
                log.warning("YARN container %s: kill failed: %s", victim.container.id, err)
                continue
            if signalled:
                self.last_kill = self.clock()
                KILLED.labels(REASON).inc()
                log.warning("killed YARN container %s (%s): %s", victim.container.id, REASON, message)
                killed.append(Killed(victim.container.id, victim.memory_bytes, message))
        return killed


async def run_yarn_qos(yarn: YarnQoS, interval_s: float, stop: asyncio.Event) -> None:
    """Every ``interval_s``: one round; a failed round is logged and the loop goes on."""
    while not await wait_or_stop(stop, interval_s):
        try:
            await asyncio.to_thread(yarn.tick)
        except Exception:
            log.exception("YARN containers round failed; continuing")
