"""The bridge's view of the cluster's pods, nodes and the objects whose status it writes (``statuses``), kept by
the watches and read by the actuator."""

from __future__ import annotations

import asyncio
import dataclasses

from streams.bridge.statuses import STATUS_KINDS, ObjectView, object_key, object_view
from streams.bridge.writes import NodeView, PodView, node_view, pod_view


@dataclasses.dataclass
class ClusterView:
    pods: dict[str, PodView] = dataclasses.field(default_factory=dict)
    """By "<namespace>/<name>"."""
    nodes: dict[str, NodeView] = dataclasses.field(default_factory=dict)
    objects: dict[tuple[str, str], ObjectView] = dataclasses.field(default_factory=dict)
    """Reservations, PodMigrationJobs and ElasticQuotas by (kind, ``statuses.object_key``)."""
    synced: dict[str, asyncio.Event] = dataclasses.field(
        default_factory=lambda: {"Pod": asyncio.Event(), "Node": asyncio.Event()})
    """Set once the first list of the kind is in the view: the actuator waits for both."""

    def observe(self, kind: str, obj: dict, deleted: bool) -> None:
        if kind == "Pod":
            pod = pod_view(obj)
            key = f"{pod.namespace}/{pod.name}"
            if deleted:
                self.pods.pop(key, None)
            else:
                self.pods[key] = pod
        elif kind == "Node":
            name = obj["metadata"]["name"]
            if deleted:
                self.nodes.pop(name, None)
            else:
                self.nodes[name] = node_view(obj)
        elif kind in STATUS_KINDS:
            metadata = obj.get("metadata") or {}
            key = (kind, object_key(metadata.get("namespace"), metadata["name"]))
            if deleted:
                self.objects.pop(key, None)
            else:
                self.objects[key] = object_view(kind, obj)

    def replace(self, kind: str, objects: list[dict]) -> None:
        """A relist: the kind's view becomes exactly ``objects``."""
        if kind == "Pod":
            self.pods.clear()
        elif kind == "Node":
            self.nodes.clear()
        elif kind in STATUS_KINDS:
            for key in [key for key in self.objects if key[0] == kind]:
                del self.objects[key]
        for obj in objects:
            self.observe(kind, obj, deleted=False)
        if kind in self.synced:
            self.synced[kind].set()

    def needs_list(self, kind: str) -> bool:
        """Whether the kind is in the view but not listed yet."""
        return kind in self.synced and not self.synced[kind].is_set()

    async def wait_synced(self) -> None:
        for event in self.synced.values():
            await event.wait()
