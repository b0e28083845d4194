"""Objects plugins watch, and objects scheduled as pods (Koordinator's reserve pods), in a scheduling domain.

A watched object (``framework.WatchesObjects``: PodGroup, Reservation, Device, ...) is admitted by its kind's
webhooks, kept in ``Cluster.objects``, observed, and raises the cluster event named after its kind; an object
that overlays its node (``NodeOverlay``: a Device) reads its node again. For an object of a plugin's
``ObjectPods.pod_kinds`` the domain keeps the pod the plugin gives for it under "<kind>/<name>" and schedules it
like any pod, without a SchedulingDecision (the plugin hears why an attempt failed, ``unschedulable``);
``refresh`` gives the object pods time or the cluster changed.
"""

from __future__ import annotations

from streams.events import InboxEvent
from streams.objects.podinfo import stored_record
from streams.scheduler.framework import NODE, ClusterEvent, ObjectPods, action_of
from streams.scheduler.outputs import Outputs
from streams.scheduler.state import NodeChanged, ObjectChanged


class ObjectPodEvents:
    """The watched-object and object-pod part of ``SchedulingDomain``."""

    def _on_object(self, event: InboxEvent, out: Outputs) -> None:
        """An object a plugin watches: admitted by its kind's webhooks, kept, observed, and an event of its kind."""
        kind, name = event.kind, event.key
        objects = self.cluster.objects.setdefault(kind, {})
        old = objects.get(name)
        if event.deleted and old is None:
            return
        if self._refused(event, name, out):
            return
        if event.deleted:
            del objects[name]
        else:
            objects[name] = dict(event.record)
        self._dirty.add(f"object/{kind}/{name}")
        self._observe(ObjectChanged(kind, name, old, objects.get(name)))
        self._queue_event(ClusterEvent(kind, action_of(old is not None, event.deleted), name))
        if kind in self.node_overlays and name in self.node_records:
            old_node, new_node = self._put_node(name)
            self._observe(NodeChanged(name, old_node, new_node))
            self._queue_event(ClusterEvent(NODE, action_of(old_node is not None, False), name))
        for source in self._enabled(ObjectPods):
            if kind in source.pod_kinds:
                self._object_pod(f"{kind}/{name}", source.object_pod(kind, name, objects.get(name)), out)

    def _object_pod(self, key: str, record: dict | None, out: Outputs) -> None:
        """The pod standing for an object (``ObjectPods``) appeared, changed or went: handled as a pod event
        unless it is the same pod (a status written back to the object's topic changes nothing)."""
        held = self.cluster.pods.get(key)
        if record is None and held is None:
            return
        if record is not None and held is not None and held.record == stored_record(record):
            return
        self._pod_event(key, record, record is None, out)

    def _object_pod_unschedulable(self, key: str, message: str) -> None:
        """Tell the plugin of object pod ``key`` why its attempt failed (a Reservation's status shows it)."""
        kind, _, name = key.partition("/")
        for source in self._enabled(ObjectPods):
            if kind in source.pod_kinds:
                source.unschedulable(name, message)

    def is_object_pod(self, key: str) -> bool:
        return key.partition("/")[0] in self.object_pod_kinds

    def _refresh_object_pods(self, out: Outputs) -> None:
        for source in self._enabled(ObjectPods):
            for key, record in source.refresh():
                self._object_pod(key, record, out)
