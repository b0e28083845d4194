"""The queue of pending pods (kube-scheduler's scheduling queue, on event time).

A new or changed pending pod is tried at once. A pod that failed waits
(kube-scheduler's unschedulable pods) until an event concerns one of the plugins that
rejected it (a pod rejected by nobody in particular, e.g. "no nodes", waits for any
event; an event no plugin registers for, e.g. a new configuration, moves every pod),
and at least its backoff has passed::

    backoff = min(initial * 2 ** (attempts - 1), max)      (1 s and 10 s by default)

from the time of its last attempt. A pod unschedulable for 5 minutes is tried again even
without an event (``podMaxInUnschedulablePodsDuration``), which also covers what only time
changes (metrics expiring). Due pods are tried in kube-scheduler's queue order: higher
priority first, then earlier arrival. Each pod is tried at most once per inbox event, and
only when due, so nothing loops.

Which plugins an event concerns is what each plugin registers (``events_to_register``,
kube-scheduler's ``EventsToRegister``: (resource, action) events), gathered by
``registry.plugins_by_event``; the queue is given that map and names no plugin. A pod is moved
when one of the plugins that rejected it registered the event and its queueing hint (given by
the domain) says the event may make the pod schedulable (kube-scheduler's QueueingHint).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from streams.scheduler.framework import ClusterEvent

UNSCHEDULABLE_TIMEOUT_MS = 5 * 60 * 1000


@dataclasses.dataclass
class QueuedPod:
    priority: int
    seq: int
    attempts: int = 0
    last_attempt: int = 0
    backoff_until: int = 0
    moved: bool = False
    rejected_by: tuple[str, ...] = ()

    def to_entry(self) -> dict:
        return {**dataclasses.asdict(self), "rejected_by": list(self.rejected_by)}


class SchedulingQueue:
    def __init__(self, plugins_by_event: Mapping[ClusterEvent, frozenset[str]], initial_backoff_ms: int = 1000,
                 max_backoff_ms: int = 10_000) -> None:
        self.plugins_by_event = plugins_by_event
        """Cluster event -> the plugins that registered for it."""
        self.initial_backoff_ms = initial_backoff_ms
        self.max_backoff_ms = max_backoff_ms
        self.pods: dict[str, QueuedPod] = {}

    def add(self, key: str, priority: int, seq: int) -> QueuedPod:
        entry = self.pods.get(key)
        if entry is None:
            entry = self.pods[key] = QueuedPod(priority, seq)
        entry.priority = priority
        return entry

    def remove(self, key: str) -> None:
        self.pods.pop(key, None)

    def failed(self, key: str, now: int, rejected_by: frozenset[str]) -> None:
        entry = self.pods[key]
        entry.attempts += 1
        entry.last_attempt = now
        entry.backoff_until = now + min(self.initial_backoff_ms * 2 ** (entry.attempts - 1), self.max_backoff_ms)
        entry.moved = False
        entry.rejected_by = tuple(sorted(rejected_by))

    def on_event(self, event: ClusterEvent, hint: Callable[[ClusterEvent, str, str], bool] | None = None
                 ) -> list[str]:
        """Mark the pods the event may help; returns their keys. ``hint(event, key, plugin)``: whether the
        event may make pod ``key``, which ``plugin`` rejected, schedulable (None: it may)."""
        interested = self.plugins_by_event.get(event)
        moved = []
        for key, entry in self.pods.items():
            if entry.moved:
                continue
            if interested is None or not entry.rejected_by or any(
                    plugin in interested and (hint is None or hint(event, key, plugin))
                    for plugin in entry.rejected_by):
                entry.moved = True
                moved.append(key)
        return moved

    def due(self, now: int) -> list[str]:
        """Pods to try now, in queue order."""
        ready = [(-e.priority, e.seq, key) for key, e in self.pods.items()
                 if (e.moved and e.backoff_until <= now) or now - e.last_attempt >= UNSCHEDULABLE_TIMEOUT_MS]
        return [key for _, _, key in sorted(ready)]
