"""Reservation (``plugins/reservation``): resources held on a node for the pods that own them.

- **The reserve pod.** Each Reservation is scheduled as a pod ("Reservation/<name>", ``ObjectPods``) through
  the same cycle: its template's requests, nodeSelector and tolerations, ``spec.template.spec.nodeName``
  pinning it (the NodeName Filter; every other Filter still runs there), priority the template's or MaxInt32
  (never a preemption victim). Placed, the reservation is Available and holds its resources on the node;
  not placed, it is Pending and its Scheduled condition (reason Unschedulable) carries the cycle's message
  ("0/2 nodes are available: 1 Insufficient cpu, ..."), as koord-scheduler writes it.
- **Owners use it first.** PreFilter finds, per node, the Available reservations the pod may use
  (``objects``: owners, affinity by name, taints, selector, exact match; with ``allocatePolicy: Restricted``
  the pod must fit what is left of it and its pod-count limit, template request ``pods``); one per node is
  nominated (smallest non-zero ``reservation-order`` label, then name). Its unallocated resources count as
  free for the pod there (``RESTORED``), the node scores 100 (weighted so owners land there), and PreBind
  writes ``scheduling.koordinator.sh/reservation-allocated: {"name", "uid"}``. A pod with a reservation
  affinity fails elsewhere: "node(s) no reservations match reservation affinity". A pod labelled
  ``reservation-ignored`` owns nothing but may use any reservation's unallocated resources.
- **Lifecycle, in event time.** ``allocateOnce`` (default) -> Succeeded once an owner is placed; otherwise
  the reserve pod shrinks to what is left. ``ttl`` (default 24h; "0" never) from creationTimestamp (or
  first sight) and ``expires`` -> Failed, reason Expired. Succeeded and Failed release the node and are
  final. The status (phase, nodeName, allocatable, allocated, currentOwners, conditions) is written back to
  the Reservation's topic whenever it changes; a status coming back changes nothing.

Not implemented: reservation preemption (``enablePreemption``), pre-allocation, the Default-policy
conflict check between reserve pods.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

import numpy as np

from streams.koordinator.annotations import (
    ANNOTATION_RESERVATION_ALLOCATED, ANNOTATION_RESERVATION_NAME, ANNOTATION_RESERVE_POD)
from streams.objects.args import ArgsError, ArgsReader
from streams.objects.podinfo import PodInfo
from streams.scheduler.framework import (
    ASSIGNED_POD_DELETE, NODE_ADD, NODE_UPDATE, RESTORED, SKIP, SUCCESS, Code, CycleState, FilterResult, Status,
    every_action, register)
from streams.scheduler.plugins.reservation.objects import (
    RESTRICTED, ReservationInfo, affinity, ignores_reservations, is_owner, parse, usable_by)
from streams.scheduler.state import Cluster, ObjectChanged, PodAssigned, PodUnassigned

NAME = "Reservation"
KIND = "Reservation"
MAX_PRIORITY = 2**31 - 1
REASON_AFFINITY = "node(s) no reservations match reservation affinity"
FIELDS = {"enablePreemption", "minCandidateNodesPercentage", "minCandidateNodesAbsolute", "controllerWorkers",
          "gcDurationSeconds", "gcIntervalSeconds", "resyncIntervalSeconds", "ignoredResources",
          "ignoredResourceGroups"}


@dataclasses.dataclass(frozen=True)
class ReservationArgs:
    @classmethod
    def from_config(cls, raw: Mapping | None) -> "ReservationArgs":
        reader = ArgsReader(NAME, raw, FIELDS)
        if reader.boolean("enablePreemption", False):
            raise ArgsError(f"{NAME}: enablePreemption: reservation preemption is not supported by koordstream")
        return cls()


def _minus(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    return {name: max(0, value - b.get(name, 0)) for name, value in a.items()}


class Reservation:
    name = NAME
    Args = ReservationArgs
    watched_kinds = frozenset({KIND})
    pod_kinds = frozenset({KIND})
    events_to_register = register(NODE_ADD, NODE_UPDATE, ASSIGNED_POD_DELETE, *every_action(KIND))

    def __init__(self, args: ReservationArgs, cluster: Cluster) -> None:
        self.cluster = cluster
        self._infos: dict[str, ReservationInfo] = {}
        self._dirty: set[str] = set()
        self._ended: dict[str, tuple[str, str]] = {}
        """Reservations ended this worker's lifetime, until their written-back status says so."""
        self._unschedulable: dict[str, str] = {}
        """reservation -> why its reserve pod's last attempt failed."""
        self._owners: dict[str, set[str]] = {}
        """reservation -> assigned pods allocated to it (``reservation-allocated``)."""
        for key in cluster.assignment:
            self._track(key, 1)
        self._candidates: tuple[dict[tuple[str, str], list[str]], list[str]] | None = None
        self._deadlines: dict[str, float] = {}
        """(object owner (namespace, name) -> reservations naming it, reservations with other owners)."""

    def _track(self, key: str, sign: int) -> None:
        allocated = self.cluster.bind_annotations.get(key, {}).get(ANNOTATION_RESERVATION_ALLOCATED)
        if not allocated:
            return
        name = json.loads(allocated).get("name", "")
        owners = self._owners.setdefault(name, set())
        (owners.add if sign > 0 else owners.discard)(key)
        self._dirty.add(name)

    def _for_pod(self, pod: PodInfo) -> list[str]:
        """The reservations that may name ``pod`` as an owner, in name order (an index of object owners)."""
        if self._candidates is None:
            by_object: dict[tuple[str, str], list[str]] = {}
            general = []
            for name in sorted(self._records()):
                owners = self.info(name).owners
                keys = [(o["object"].get("namespace", ""), o["object"]["name"]) for o in owners
                        if isinstance(o.get("object"), dict) and o["object"].get("name") and len(o) == 1]
                if owners and len(keys) == len(owners):
                    for key in keys:
                        by_object.setdefault(key, []).append(name)
                else:
                    general.append(name)
            self._candidates = (by_object, general)
        by_object, general = self._candidates
        named = by_object.get((pod.namespace, pod.name), []) + by_object.get(("", pod.name), [])
        return sorted(set(named) | set(general))

    # -- reading ---------------------------------------------------------------------------

    def _records(self) -> Mapping[str, Mapping]:
        return self.cluster.objects.get(KIND, {})

    def info(self, name: str) -> ReservationInfo | None:
        record = self._records().get(name)
        if record is None:
            return None
        info = self._infos.get(name)
        if info is None:
            info = self._infos[name] = parse(name, record)
        return info

    def node_of(self, name: str) -> str | None:
        key = f"{KIND}/{name}"
        return self.cluster.assignment.get(key) if key not in self.cluster.waiting else None

    def owners(self, name: str) -> list[str]:
        return sorted(self._owners.get(name, ()))

    def allocated(self, name: str) -> dict[str, int]:
        total: dict[str, int] = {}
        for key in self.owners(name):
            for resource, value in self.cluster.pods[key].requests.items():
                total[resource] = total.get(resource, 0) + value
        return total

    def reservation(self, name: str) -> tuple[str, str | None, tuple[str, ...], str] | None:
        """What migration jobs read of reservation ``name`` (``ReservationHolder``)."""
        if self.info(name) is None:
            return None
        phase, _ = self.phase(name)
        return phase, self.node_of(name), tuple(self.owners(name)), f"{KIND}/{name}"

    def _first_seen(self, name: str) -> int:
        held = self.cluster.pods.get(f"{KIND}/{name}")
        if held is not None:
            return json.loads(held.record["manifest"])["metadata"]["firstSeenMs"]
        return self.cluster.now_ms

    def phase(self, name: str) -> tuple[str, str]:
        """(phase, reason) as Koordinator's status shows them."""
        info = self.info(name)
        if info.terminal_phase:
            return info.terminal_phase, (info.manifest.get("status") or {}).get("reason") or ""
        if name in self._ended:
            return self._ended[name]
        if info.expired(self.cluster.now_ms, self._first_seen(name)):
            return "Failed", "Expired"
        if info.allocate_once and self.owners(name):
            return "Succeeded", "Succeeded"
        if self.node_of(name):
            return "Available", "Available"
        return "Pending", "Unschedulable" if f"{KIND}/{name}" in self.cluster.pods else ""

    # -- the reserve pod (ObjectPods) ----------------------------------------------------------

    def unschedulable(self, name: str, message: str) -> None:
        """The reserve pod of ``name`` failed an attempt, for ``message``: its status shows it while Pending."""
        if self._unschedulable.get(name) != message:
            self._unschedulable[name] = message
            self._dirty.add(name)

    def object_pod(self, kind: str, name: str, record: dict | None) -> dict | None:
        if record is None or self.info(name) is None:
            return None
        return self._reserve_pod(name)

    def _reserve_pod(self, name: str) -> dict | None:
        info = self.info(name)
        if self.phase(name)[0] in ("Succeeded", "Failed"):
            return None
        template = info.manifest.get("spec", {}).get("template") or {}
        meta, spec = template.get("metadata") or {}, dict(template.get("spec") or {})
        spec.pop("nodeName", None)
        priority = spec.get("priority")
        remaining = info.requests if info.allocate_once else _minus(info.requests, self.allocated(name))
        return {
            "metadata": {"name": name, "namespace": meta.get("namespace") or "default", "uid": info.uid,
                         "labels": {**(meta.get("labels") or {}), **info.labels},
                         "annotations": {ANNOTATION_RESERVE_POD: "true", ANNOTATION_RESERVATION_NAME: name}},
            "manifest": json.dumps({"metadata": {"name": name, "firstSeenMs": self._first_seen(name)}, "spec": spec},
                                   sort_keys=True, separators=(",", ":")),
            "requests": dict(sorted(remaining.items())), "limits": {}, "nodeName": info.pinned_node,
            "schedulerName": spec.get("schedulerName") or "default-scheduler",
            "priority": priority if isinstance(priority, int) else MAX_PRIORITY, "priorityClassName": None,
            "nodeSelector": dict(spec.get("nodeSelector") or {}), "tolerations": list(spec.get("tolerations") or []),
            "phase": None,
        }

    def _deadline(self, name: str) -> float:
        """Event time after which ``name`` expires (inf: never), cached until the object changes."""
        deadline = self._deadlines.get(name)
        if deadline is None:
            info = self.info(name)
            created = info.created_ms if info.created_ms is not None else self._first_seen(name)
            ends = [info.expires_ms] if info.expires_ms is not None else []
            ends += [created + info.ttl_ms] if info.ttl_ms > 0 else []
            deadline = self._deadlines[name] = min(ends) if ends else float("inf")
        return deadline

    def refresh(self) -> list[tuple[str, dict | None]]:
        """Reserve pods that time or allocation changed (expired, succeeded, shrunk): those whose state changed
        this event, and those past their deadline."""
        out = []
        now = self.cluster.now_ms
        for name in sorted(self._records()):
            key = f"{KIND}/{name}"
            held = self.cluster.pods.get(key)
            if name not in self._dirty and (held is None or self._deadline(name) >= now):
                continue
            wanted = self._reserve_pod(name)
            if wanted is None and held is not None:
                self._ended[name] = self.phase(name)
            if (wanted is None) != (held is None) or (held is not None and held.record != wanted):
                out.append((key, wanted))
                self._dirty.add(name)
        return out

    def object_outputs(self) -> list[tuple[str, dict]]:
        out = []
        for name in sorted(self._dirty):
            record = self._records().get(name)
            if record is None:
                continue
            info = self.info(name)
            phase, reason = self.phase(name)
            written = info.manifest.get("status") or {}
            node = self.node_of(name) or written.get("nodeName")
            condition = {"type": "Ready" if phase != "Pending" else "Scheduled",
                         "status": "True" if phase in ("Available", "Succeeded") else "False", "reason": reason}
            if phase == "Pending" and reason:
                condition["message"] = self._unschedulable.get(name, _written_message(written))
            status = {"phase": phase, "nodeName": node,
                      "allocatable": {**info.requests, **({"pods": info.pods_limit} if info.pods_limit else {})},
                      "allocated": self.allocated(name),
                      "currentOwners": [{"namespace": key.partition("/")[0], "name": key.partition("/")[2]}
                                        for key in self.owners(name)],
                      "conditions": [condition]}
            if info.manifest.get("status") == status:
                continue
            manifest = {**info.manifest, "status": status}
            out.append((KIND, {**record, "manifest": json.dumps(manifest, sort_keys=True, separators=(",", ":")),
                               "nodeName": info.pinned_node or node}))
        self._dirty.clear()
        return out

    def observe(self, change: object) -> None:
        if isinstance(change, ObjectChanged) and change.kind == KIND:
            self._infos.pop(change.name, None)
            self._deadlines.pop(change.name, None)
            self._candidates = None
            self._dirty.add(change.name)
            if change.new is None or parse(change.name, change.new).terminal_phase:
                self._ended.pop(change.name, None)
                self._unschedulable.pop(change.name, None)
        elif isinstance(change, (PodAssigned, PodUnassigned)):
            kind, _, name = change.key.partition("/")
            if kind == KIND:
                self._dirty.add(name)
            self._track(change.key, 1 if isinstance(change, PodAssigned) else -1)

    # -- the cycle -------------------------------------------------------------------------

    def _usable(self, pod: PodInfo, wanted: dict | None) -> dict[str, str]:
        """node -> the reservation nominated for ``pod`` there."""
        chosen: dict[str, tuple] = {}
        for name in self._for_pod(pod):
            info, node = self.info(name), self.node_of(name)
            if node is None or self.phase(name)[0] != "Available":
                continue
            if not is_owner(info, pod) or not usable_by(info, pod, wanted):
                continue
            if info.policy == RESTRICTED:
                owners = self.owners(name)
                if info.pods_limit is not None and len(owners) + 1 > info.pods_limit:
                    continue
                left = _minus(info.requests, self.allocated(name))
                if any(value > left.get(resource, 0) for resource, value in pod.requests.items()
                       if value > 0 and resource in info.requests):
                    continue
            rank = (info.order if info.order > 0 else MAX_PRIORITY, name)
            if node not in chosen or rank < chosen[node][0]:
                chosen[node] = (rank, name)
        return {node: name for node, (_, name) in chosen.items()}

    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        kind = pod.key.partition("/")[0]
        if kind == KIND or not self._records():
            return SKIP
        rows = self.cluster.columns.row
        restored: dict[int, dict[str, int]] = {}
        if ignores_reservations(pod):
            for name in sorted(self._records()):
                node = self.node_of(name)
                if node in rows and self.phase(name)[0] == "Available":
                    left = _minus(self.info(name).requests, self.allocated(name))
                    bucket = restored.setdefault(rows[node], {})
                    for resource, value in left.items():
                        bucket[resource] = bucket.get(resource, 0) + value
            state[RESTORED] = restored
            state[NAME] = ({}, None)
            return SUCCESS
        wanted = affinity(pod)
        chosen = self._usable(pod, wanted)
        for node, name in chosen.items():
            if node in rows:
                restored[rows[node]] = _minus(self.info(name).requests, self.allocated(name))
        state[RESTORED] = restored
        state[NAME] = (chosen, wanted)
        return SUCCESS if chosen or wanted is not None else SKIP

    def filter(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> FilterResult:
        chosen, wanted = state.get(NAME, ({}, None))
        if wanted is None:
            return FilterResult(candidates)
        has = np.zeros(len(candidates), dtype=bool)
        has[self._rows(chosen, len(candidates))] = True
        return FilterResult(candidates & has, ((REASON_AFFINITY, ~has),), Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def score(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> np.ndarray | int:
        chosen, _ = state.get(NAME, ({}, None))
        if not chosen:
            return 0
        scores = np.zeros(len(candidates), dtype=np.int64)
        scores[self._rows(chosen, len(candidates))] = 100
        return scores

    def _rows(self, nodes, count: int) -> list[int]:
        """The rows of ``nodes`` among the first ``count``: a cost in the reservations, not in the nodes."""
        rows = self.cluster.columns.row
        return [rows[node] for node in nodes if node in rows and rows[node] < count]

    def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> dict[str, str]:
        chosen, _ = state.get(NAME, ({}, None))
        name = chosen.get(node)
        if name is None:
            return {}
        return {ANNOTATION_RESERVATION_ALLOCATED: json.dumps({"name": name, "uid": self.info(name).uid},
                                                             separators=(",", ":"))}


def _written_message(status: Mapping) -> str:
    """The message of the status last written back (a restored domain shows it until the next attempt)."""
    conditions = status.get("conditions")
    first = conditions[0] if isinstance(conditions, list) and conditions else None
    message = first.get("message") if isinstance(first, dict) else None
    return message if isinstance(message, str) else ""
