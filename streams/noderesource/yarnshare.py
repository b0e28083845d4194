"""The YARN share of a node's batch resources: node-level sharing between Kubernetes BE pods and YARN.

Koordinator's yarn-copilot (``pkg/controller/noderesource``), followed: the NodeManager's total is
the node's batch capacity before third-party allocations (``originExtendedAllocatable``), and what
YARN allocated comes back as the koord-batch third-party allocation named ``hadoop-yarn``::

    yarn vcores    = ceil(batch-cpu milli-cores / 1000)        (calculate: ScaledValue(Kilo))
    yarn memory MB = ceil(batch-memory bytes / 10^6)            (calculate: ScaledValue(Mega))
    allocation     = batch-cpu: allocatedVcores * 1000,
                     batch-memory: allocatedMemoryMB * 1024 * 1024   (SetYARNAllocatedResource)

so the scheduler's batch allocatable is ``origin - YARN allocations`` (BatchResource's Prepare
subtracts third-party allocations) and the pods' requests come off that.

Where yarn-copilot leaves a TODO ("exclude batch pod requested"), koordstream subtracts what
Kubernetes BE pods (priority class koord-batch) request from the NodeManager's total, so YARN and
BE pods share one pool from both sides::

    yarn total = origin batch - BE pods' batch requests   (each at least 0)

The total the YARN bridge writes is never below what YARN allocated already (``writable``):
yarn-copilot writes it unclamped with no overcommit timeout, which YARN accepts and keeps the
containers (the node shows negative available); the clamp writes what YARN ends up honouring.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping

from streams.koordinator.annotations import ANNOTATION_THIRD_PARTY_ALLOCATIONS
from streams.koordinator.classes import PRIORITY_BATCH
from streams.koordinator.resources import BATCH_CPU, BATCH_MEMORY
from streams.noderesource.views import _resources

YARN_ALLOCATION_NAME = "hadoop-yarn"
"""yarn-copilot's ``YARNAllocationName``: the third-party allocation that holds YARN's share."""
ANNOTATION_YARN_NODE_RESOURCE = "yarn.koordstream.io/node-resource"
"""Published with a node's NodeResource when a NodeManager runs on it: the total the YARN bridge writes
back (``{"nodeId", "vcores", "memoryMB"}``)."""
MEGA = 1_000_000
MIB = 1024 * 1024


@dataclasses.dataclass(frozen=True)
class YarnShare:
    """The NodeManager on a node, as its last YarnNode record said."""

    node_id: str
    state: str
    allocated_vcores: int
    allocated_memory_mb: int
    capacity_vcores: int
    capacity_memory_mb: int
    total: tuple[int, int] | None = None
    """The NodeManager total last published for the bridge; None: none yet. A calculation that moves it
    publishes the node (a BE pod bound or released changes it without changing batch allocatable)."""

    @property
    def allocated(self) -> tuple[int, int]:
        """The koord-batch allocation: (batch-cpu milli-cores, batch-memory bytes)."""
        return self.allocated_vcores * 1000, self.allocated_memory_mb * MIB

    def to_json(self) -> list:
        return [self.node_id, self.state, self.allocated_vcores, self.allocated_memory_mb, self.capacity_vcores,
                self.capacity_memory_mb, *([list(self.total)] if self.total is not None else [])]

    @classmethod
    def from_json(cls, entry: list) -> "YarnShare":
        return cls(*entry[:6], tuple(entry[6]) if len(entry) > 6 else None)


def share_of(record: Mapping) -> YarnShare:
    """The YarnShare of a decoded YarnNode record."""
    return YarnShare(record["nodeId"], record["state"], record["allocatedVcores"], record["allocatedMemoryMB"],
                     record["capacityVcores"], record["capacityMemoryMB"])


def _ceil_div(value: int, unit: int) -> int:
    return -(-value // unit)


def yarn_total(origin: tuple[int, int], be_requests: tuple[int, int]) -> tuple[int, int]:
    """(vcores, memory MB) of the NodeManager: the origin batch minus BE requests, in YARN's units."""
    cpu, memory = max(origin[0] - be_requests[0], 0), max(origin[1] - be_requests[1], 0)
    return _ceil_div(cpu, 1000), _ceil_div(memory, MEGA)


def writable(total: tuple[int, int], share: YarnShare) -> tuple[int, int]:
    """The total to write: never below what YARN allocated already."""
    return max(total[0], share.allocated_vcores), max(total[1], share.allocated_memory_mb)


def be_requests(pods: Iterable) -> tuple[int, int]:
    """Batch-cpu and batch-memory requested by the koord-batch pods (``PodView``s) bound to the node."""
    cpu = memory = 0
    for pod in pods:
        if pod.priority_class == PRIORITY_BATCH:
            cpu += pod.request_batch_cpu
            memory += pod.request_batch_memory
    return cpu, memory


def third_party_batch(annotations: Mapping[str, str], base: tuple[int, int] | None,
                      share: YarnShare) -> tuple[int, int]:
    """The node's koord-batch third-party allocation with YARN's share as its ``hadoop-yarn`` entry:
    ``base`` (every koord-batch entry of the annotation) minus an annotated ``hadoop-yarn`` one, plus
    the share."""
    cpu, memory = base if base is not None else (0, 0)
    annotated = _annotated_yarn(annotations.get(ANNOTATION_THIRD_PARTY_ALLOCATIONS))
    allocated = share.allocated
    return cpu - annotated[0] + allocated[0], memory - annotated[1] + allocated[1]


def _annotated_yarn(text: str | None) -> tuple[int, int]:
    """The koord-batch ``hadoop-yarn`` entry of a thirdPartyAllocations annotation; (0, 0) when none or malformed
    (``views`` reports the annotation itself)."""
    if not text:
        return 0, 0
    try:
        raw = json.loads(text)
        cpu = memory = 0
        for allocation in raw.get("allocations") or []:
            if allocation.get("name") == YARN_ALLOCATION_NAME and allocation.get("priority") == PRIORITY_BATCH:
                resources = _resources(allocation.get("resources"), (BATCH_CPU, BATCH_MEMORY))
                cpu += resources.get(BATCH_CPU, 0)
                memory += resources.get(BATCH_MEMORY, 0)
        return cpu, memory
    except (ValueError, AttributeError, TypeError):
        return 0, 0


def allocation_annotation(share: YarnShare) -> str:
    """``node.koordinator.sh/thirdPartyAllocations`` with YARN's share, as yarn-copilot writes it."""
    cpu, memory = share.allocated
    return json.dumps({"allocations": [{"name": YARN_ALLOCATION_NAME, "priority": PRIORITY_BATCH,
                                        "resources": {BATCH_CPU: str(cpu), BATCH_MEMORY: str(memory)}}]},
                      separators=(",", ":"))


def node_resource_annotation(share: YarnShare, total: tuple[int, int]) -> str:
    return json.dumps({"nodeId": share.node_id, "vcores": total[0], "memoryMB": total[1]}, separators=(",", ":"))
