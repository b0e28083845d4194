"""RDMADeviceResource: the node's ``koordinator.sh/rdma``, synced from its Device (Koordinator's
``pkg/slo-controller/noderesource/plugins/rdmadevicereource``)::

    koordinator.sh/rdma = healthy devices of type rdma * 100

written into capacity and allocatable; no Device, or no healthy RDMA device in it: reset (removed from the
node). Co-location disabled does not remove it. A Device event publishes the node, so no status check is
registered.
"""

from __future__ import annotations

from streams.koordinator.resources import RDMA
from streams.noderesource.framework import NodeResource, NodeStatus, ResourceItem
from streams.noderesource.resources import prepare_synced
from streams.noderesource.views import Snapshot
from streams.sloconfig.colocation import ColocationStrategy

NAME = "RDMADeviceResource"
RESET_MESSAGE = "reset node rdma resources"
UPDATE_RESOURCES_MESSAGE = "node rdma resources from device"
RDMA_TYPE = "rdma"
RESOURCE_NAMES = (RDMA,)


class RDMADeviceResource:
    name = NAME

    def calculate(self, snapshot: Snapshot) -> list[ResourceItem]:
        device = snapshot.device
        healthy = sum(1 for kind, health, _ in (device.devices if device else ()) if kind == RDMA_TYPE and health)
        if not healthy:
            return [ResourceItem(name, reset=True, message_source=RESET_MESSAGE) for name in RESOURCE_NAMES]
        return [ResourceItem(RDMA, healthy * 100, message_source=UPDATE_RESOURCES_MESSAGE)]

    def reset(self, message: str) -> list[ResourceItem]:
        return []

    def prepare(self, strategy: ColocationStrategy, status: NodeStatus, result: NodeResource) -> None:
        prepare_synced(status, result, RESOURCE_NAMES)
