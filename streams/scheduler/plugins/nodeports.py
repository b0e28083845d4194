"""NodePorts: a pod's host ports must be free on the node (kube-scheduler v1.34 ``nodeports/node_ports.go``).

The ports are those with ``hostPort`` > 0 of the pod's containers and restartable (sidecar) init containers,
as (host IP, protocol, port) with an empty IP read as 0.0.0.0 and an empty protocol as TCP. A wanted port
conflicts with a port of a pod assigned to the node (``HostPortInfo.CheckConflict``) when protocol and port
are equal and either IP is 0.0.0.0 or both IPs are equal. A node with a conflict fails with "node(s) didn't
have free ports for the requested pod ports" (Unschedulable: removing the pod that holds the port helps).

PreFilter skips a pod without host ports, so the common path costs one substring test of the manifest. An
assigned pod's ports are read from its manifest once and kept until its record changes.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

import numpy as np

from streams.objects.args import no_args
from streams.objects.podinfo import PodInfo
from streams.scheduler.framework import (
    ASSIGNED_POD_DELETE, SKIP, SUCCESS, Code, CycleState, FilterResult, Status, register)
from streams.scheduler.state import Cluster

NAME = "NodePorts"
REASON = "node(s) didn't have free ports for the requested pod ports"
BIND_ALL = "0.0.0.0"

Port = tuple[str, str, int]
"""(host IP, protocol, host port)."""


@dataclasses.dataclass(frozen=True)
class NodePortsArgs:
    """No args."""

    @classmethod
    def from_config(cls, raw) -> "NodePortsArgs":
        no_args(NAME, raw)
        return cls()

    def validate(self) -> None:
        pass


def host_ports(record: Mapping | None) -> tuple[Port, ...]:
    """The host ports of a Pod record's manifest (``util.GetHostPorts``)."""
    text = (record or {}).get("manifest")
    if not isinstance(text, str) or '"hostPort"' not in text:
        return ()
    try:
        spec = json.loads(text).get("spec") or {}
    except (ValueError, AttributeError):
        return ()
    containers = [c for c in spec.get("initContainers") or () if isinstance(c, dict)
                  and c.get("restartPolicy") == "Always"]
    containers += [c for c in spec.get("containers") or () if isinstance(c, dict)]
    found = []
    for container in containers:
        for port in container.get("ports") or ():
            number = port.get("hostPort") if isinstance(port, dict) else None
            if isinstance(number, int) and not isinstance(number, bool) and number > 0:
                found.append((port.get("hostIP") or BIND_ALL, port.get("protocol") or "TCP", number))
    return tuple(found)


def conflicts(wanted: tuple[Port, ...], used: set[Port]) -> bool:
    """Whether any of ``wanted`` conflicts with the ``used`` ports of a node (``HostPortInfo.CheckConflict``)."""
    for ip, protocol, port in wanted:
        if ip == BIND_ALL:
            if any(p == port and proto == protocol for _, proto, p in used):
                return True
        elif (BIND_ALL, protocol, port) in used or (ip, protocol, port) in used:
            return True
    return False


class NodePorts:
    name = NAME
    Args = NodePortsArgs
    events_to_register = register(ASSIGNED_POD_DELETE)

    def __init__(self, args: NodePortsArgs, cluster: Cluster) -> None:
        self.cluster = cluster
        self._ports: dict[str, tuple[Mapping | None, tuple[Port, ...]]] = {}
        """Pod key -> (the record read, its host ports)."""

    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        wanted = host_ports(pod.record)
        state[NAME] = wanted
        return SUCCESS if wanted else SKIP

    def filter(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> FilterResult:
        wanted = state.get(NAME) or host_ports(pod.record)
        failed = np.zeros(len(candidates), dtype=bool)
        names = self.cluster.columns.names
        for row in np.flatnonzero(candidates):
            used = {port for key in self.cluster.pods_on_node.get(names[row], ()) for port in self._of(key)}
            failed[row] = conflicts(wanted, used)
        return FilterResult(candidates & ~failed, ((REASON, failed),), Code.UNSCHEDULABLE)

    def _of(self, key: str) -> tuple[Port, ...]:
        """The host ports of assigned pod ``key``; entries of pods gone are dropped once they outnumber the pods."""
        pods = self.cluster.pods
        record = pods[key].record if key in pods else None
        cached = self._ports.get(key)
        if cached is None or cached[0] is not record:
            if len(self._ports) > 2 * len(pods) + 64:
                self._ports = {k: v for k, v in self._ports.items() if k in pods}
            cached = self._ports[key] = (record, host_ports(record))
        return cached[1]
