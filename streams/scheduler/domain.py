"""The scheduling-domain aggregate: state and the pure transition.

``SchedulingDomain.handle(event)`` applies one inbox event and returns the
decisions it causes. It reads no clock (time is the event's timestamp) and
iterates only in defined orders, so the same inbox gives the same decisions.

Every Pod event yields exactly one decision about that pod, stating where
the pod stands after it (``Scheduled``, ``Unschedulable``, ``Bound`` for a
pod that arrived with ``spec.nodeName``, ``Released`` for one that ended or
was deleted); that is what ``koord apply --wait`` waits for. Pods still
pending are retried when the cluster changes (a node appears or changes, a
pod releases its resources); a retry is emitted only when its outcome
changed.

State is persisted as flat entries (``entries()`` / ``restore()``): one per
node, one per pod, one per source partition (the last source offset applied,
so an event the router forwarded twice is applied once).
"""

from __future__ import annotations

import dataclasses

from streams.events import InboxEvent, decision_id
from streams.scheduler import registry
from streams.scheduler.columns import NodeColumns, PodRequest
from streams.scheduler.cycle import CycleResult, run_cycle

SCHEDULED, UNSCHEDULABLE, BOUND, RELEASED = "Scheduled", "Unschedulable", "Bound", "Released"
ENDED_PHASES = ("Succeeded", "Failed")


@dataclasses.dataclass
class PodState:
    namespace: str
    name: str
    uid: str | None
    requests: dict[str, int]
    priority: int
    seq: int
    node: str | None = None
    last_message: str = ""

    def to_entry(self) -> dict:
        return dataclasses.asdict(self)


class SchedulingDomain:
    def __init__(self, domain: str, plugins: list[object] | None = None) -> None:
        self.domain = domain
        self.plugins = plugins if plugins is not None else registry.build()
        self.nodes = NodeColumns()
        self.node_specs: dict[str, dict] = {}
        self.pods: dict[str, PodState] = {}
        self.source_offsets: dict[str, int] = {}
        self.seq = 0
        self.changed: dict[str, dict | None] = {}

    # -- persistence -------------------------------------------------------

    def entries(self) -> dict[str, dict]:
        """The whole state as flat entries (key -> JSON-able value)."""
        out = {f"node/{name}": spec for name, spec in self.node_specs.items()}
        out.update({f"pod/{key}": pod.to_entry() for key, pod in self.pods.items()})
        out.update({f"source/{src}": {"offset": off} for src, off in self.source_offsets.items()})
        out["meta"] = {"seq": self.seq}
        return out

    @classmethod
    def restore(cls, domain: str, entries: dict[str, dict], plugins: list[object] | None = None) -> "SchedulingDomain":
        state = cls(domain, plugins)
        for key in sorted(entries):
            value = entries[key]
            kind, _, name = key.partition("/")
            if kind == "node":
                state.node_specs[name] = value
                state.nodes.upsert(name, value["allocatable"], value["unschedulable"])
            elif kind == "pod":
                state.pods[name] = PodState(**value)
            elif kind == "source":
                state.source_offsets[name] = value["offset"]
            elif kind == "meta":
                state.seq = value["seq"]
        for pod in state.pods.values():
            if pod.node:
                state.nodes.add_requested(pod.node, pod.requests)
        return state

    def take_changes(self) -> dict[str, dict | None]:
        """Entries changed since the last call (None = removed)."""
        changed, self.changed = self.changed, {}
        return changed

    # -- the transition ----------------------------------------------------

    def handle(self, event: InboxEvent) -> list[dict]:
        """Apply one event; return the SchedulingDecision records it causes."""
        cause = event.causation
        source = f"{cause.source_topic}/{cause.source_partition}"
        if self.source_offsets.get(source, -1) >= cause.source_offset:
            return []
        self.source_offsets[source] = cause.source_offset
        self.changed[f"source/{source}"] = {"offset": cause.source_offset}
        decisions: list[dict] = []
        if event.kind == "Node":
            self._on_node(event)
            self._retry_pending(event, decisions, only_changed=True)
        elif event.kind == "Pod":
            released = self._on_pod(event, decisions)
            if released:
                self._retry_pending(event, decisions, only_changed=True)
        return decisions

    def _on_node(self, event: InboxEvent) -> None:
        name = event.key
        if event.deleted:
            if name in self.node_specs:
                del self.node_specs[name]
                self.nodes.remove(name)
                self.changed[f"node/{name}"] = None
            return
        record = event.record
        spec = {"allocatable": dict(record["allocatable"]), "unschedulable": bool(record["unschedulable"])}
        is_new = name not in self.node_specs
        self.node_specs[name] = spec
        self.nodes.upsert(name, spec["allocatable"], spec["unschedulable"])
        self.changed[f"node/{name}"] = spec
        if is_new:
            for key in sorted(self.pods):
                pod = self.pods[key]
                if pod.node == name:
                    self.nodes.add_requested(name, pod.requests)

    def _on_pod(self, event: InboxEvent, decisions: list[dict]) -> bool:
        """Handle a pod event; True when it released resources."""
        key = event.key
        known = self.pods.get(key)
        record = event.record
        if event.deleted or record["phase"] in ENDED_PHASES:
            namespace, _, name = key.partition("/")
            released = known is not None and known.node is not None
            if known is not None:
                self._forget(key, known)
            reason = "Deleted" if event.deleted else f"Pod{record['phase']}"
            pod = known or PodState(namespace, name, None, {}, 0, 0)
            decisions.append(self._decision(event, len(decisions), pod, RELEASED, None, reason, "", None))
            return released
        meta = record["metadata"]
        if known is None:
            self.seq += 1
            known = PodState(meta.get("namespace") or "default", meta["name"], meta.get("uid"),
                             dict(record["requests"]), int(record.get("priority") or 0), self.seq)
            self.pods[key] = known
        elif known.node is None:
            known.requests = dict(record["requests"])
            known.priority = int(record.get("priority") or 0)
        bound_to = record.get("nodeName")
        if bound_to and known.node is None:
            known.node = bound_to
            self.nodes.add_requested(bound_to, known.requests)
        if known.node is not None:
            result = BOUND if bound_to else SCHEDULED
            self._save(key, known)
            decisions.append(self._decision(event, len(decisions), known, result, known.node, None,
                                            _assigned(known), None))
            return False
        outcome = self._schedule(key, known)
        decisions.append(self._decision(event, len(decisions), known, *_fields(known, outcome)))
        return False

    def _retry_pending(self, event: InboxEvent, decisions: list[dict], only_changed: bool) -> None:
        pending = sorted((-pod.priority, pod.seq, key) for key, pod in self.pods.items() if pod.node is None)
        for _, _, key in pending:
            pod = self.pods[key]
            before = pod.last_message
            outcome = self._schedule(key, pod)
            if only_changed and pod.node is None and pod.last_message == before:
                continue
            decisions.append(self._decision(event, len(decisions), pod, *_fields(pod, outcome)))

    def _schedule(self, key: str, pod: PodState) -> CycleResult:
        outcome = run_cycle(PodRequest(key, pod.requests, pod.priority), self.nodes, self.plugins)
        if outcome.node is not None:
            pod.node = outcome.node
            pod.last_message = ""
            self.nodes.add_requested(outcome.node, pod.requests)
        else:
            pod.last_message = outcome.message
        self._save(key, pod)
        return outcome

    def _forget(self, key: str, pod: PodState) -> None:
        if pod.node is not None:
            self.nodes.add_requested(pod.node, pod.requests, sign=-1)
        del self.pods[key]
        self.changed[f"pod/{key}"] = None

    def _save(self, key: str, pod: PodState) -> None:
        self.changed[f"pod/{key}"] = pod.to_entry()

    def _decision(self, event: InboxEvent, index: int, pod: PodState, result: str, node: str | None,
                  reason: str | None, message: str, outcome: CycleResult | None) -> dict:
        return {
            "decisionId": decision_id(event.causation, index),
            "domain": self.domain,
            "pod": {"namespace": pod.namespace, "name": pod.name, "uid": pod.uid},
            "result": result,
            "nodeName": node,
            "reason": reason,
            "message": message,
            "filterResults": [{"plugin": p, "reason": r, "count": n}
                              for p, r, n in (outcome.filter_results if outcome else ())],
            "scores": [{"node": n, "score": s} for n, s in (outcome.scores if outcome else ())],
            "causation": event.causation.to_record(),
            "timestamp": event.timestamp_ms,
        }


def _assigned(pod: PodState) -> str:
    return f"Successfully assigned {pod.namespace}/{pod.name} to {pod.node}"


def _fields(pod: PodState, outcome: CycleResult) -> tuple:
    if outcome.node is not None:
        return SCHEDULED, outcome.node, None, _assigned(pod), outcome
    return UNSCHEDULABLE, None, "Unschedulable", outcome.message, outcome
