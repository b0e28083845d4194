"""Builders for scheduling-core tests: inbox events without a broker."""

from __future__ import annotations

import itertools

from streams.events import Causation, InboxEvent

_offsets = itertools.count()


def event(kind: str, key: str, record: dict | None, source_offset: int | None = None, ts: int = 1000) -> InboxEvent:
    offset = next(_offsets) if source_offset is None else source_offset
    topic = {"Pod": "koord.pods", "Node": "koord.nodes"}[kind]
    cause = Causation("koord.inbox.scheduling", 0, offset, topic, 0, offset)
    return InboxEvent(cause, ts, key, kind, record)


def node(name: str, cpu: int = 4000, memory: int = 8 << 30, pods: int = 110, unschedulable: bool = False) -> InboxEvent:
    alloc = {"cpu": cpu, "memory": memory, "pods": pods}
    return event("Node", name, {"metadata": {"name": name}, "capacity": alloc, "allocatable": alloc,
                                 "unschedulable": unschedulable, "taints": []})


def pod(name: str, cpu: int = 1000, memory: int = 1 << 30, node_name: str | None = None,
        phase: str | None = None, priority: int | None = None, namespace: str = "default") -> InboxEvent:
    return event("Pod", f"{namespace}/{name}", {
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "requests": {"cpu": cpu, "memory": memory}, "nodeName": node_name, "phase": phase,
        "priority": priority,
    })


def deleted(kind: str, key: str) -> InboxEvent:
    return event(kind, key, None)
