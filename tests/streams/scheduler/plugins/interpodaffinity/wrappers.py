"""kube-scheduler's test wrappers (``pkg/scheduler/testing`` ``st.MakePod()``), for porting its tables: pods and
nodes as Kubernetes objects, fed to a scheduling domain as ``koord apply`` records them.

Go's empty namespace is koordstream's "default" (a pod without a namespace), in pods and in terms' namespaces;
Go's namespace names that are not RFC 1123 labels, which ``koord apply`` refuses ("subteam1.team1", "NS1"), are
lowercased with "-" for "." everywhere ("subteam1-team1", "ns1"); node and pod names are lowercased ("nodea").
"""

from __future__ import annotations

import copy
import dataclasses
import itertools

import numpy as np

from streams.events import Causation, InboxEvent
from streams.scheduler.domain import SchedulingDomain
from streams.scheduler.framework import Code, CycleState
from streams.scheduler.plugins.interpodaffinity import (
    NAME, REASON_AFFINITY, REASON_ANTI_AFFINITY, REASON_EXISTING_ANTI_AFFINITY)
from tests.streams.scheduler.support import converted, k8s_node, node_scores, plugin_of, pod_info, profile_with, run

REQUIRED, PREFERRED = "required", "preferred"
AFFINITY = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_AFFINITY)
ANTI_AFFINITY = (Code.UNSCHEDULABLE, REASON_ANTI_AFFINITY)
EXISTING_ANTI_AFFINITY = (Code.UNSCHEDULABLE, REASON_EXISTING_ANTI_AFFINITY)
SKIP = (Code.SKIP, "")
NAMESPACES = {"subteam1.team1": {"team": "team1"}, "subteam2.team1": {"team": "team1"},
              "subteam1.team2": {"team": "team2"}, "subteam2.team2": {"team": "team2"}}
"""The Namespace objects of kube-scheduler's tests (``namespaces`` in scoring_test.go)."""


def namespace(name: str) -> str:
    return name.lower().replace(".", "-") or "default"


def expr(key: str, operator: str, *values: str) -> dict:
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


def term(*expressions: dict, topology: str, namespaces: list | None = None, namespace_selector: dict | None = None,
         match_labels: dict | None = None) -> dict:
    """A PodAffinityTerm with a labelSelector of ``expressions`` (and ``match_labels``)."""
    selector: dict = {"matchExpressions": list(expressions)}
    if match_labels:
        selector["matchLabels"] = match_labels
    out = {"labelSelector": selector, "topologyKey": topology}
    if namespaces is not None:
        out["namespaces"] = [namespace(n) for n in namespaces]
    if namespace_selector is not None:
        out["namespaceSelector"] = namespace_selector
    return out


def weighted(weight: int, affinity_term: dict) -> dict:
    return {"weight": weight, "podAffinityTerm": affinity_term}


def affinity(required: list | None = None, preferred: list | None = None, anti_required: list | None = None,
             anti_preferred: list | None = None) -> dict:
    """``v1.Affinity`` with these PodAffinity / PodAntiAffinity term lists."""
    out: dict = {}
    for field, req, pref in (("podAffinity", required, preferred), ("podAntiAffinity", anti_required, anti_preferred)):
        section = {}
        if req:
            section["requiredDuringSchedulingIgnoredDuringExecution"] = req
        if pref:
            section["preferredDuringSchedulingIgnoredDuringExecution"] = pref
        if section:
            out[field] = section
    return out


class MakePod:
    """``st.MakePod()``: chain setters, then ``obj()``."""

    def __init__(self) -> None:
        self.meta: dict = {"name": "", "namespace": "default", "labels": {}}
        self.spec: dict = {"containers": [{"name": "main"}]}

    def name(self, name: str) -> "MakePod":
        self.meta["name"] = name.lower()
        return self

    def namespace(self, name: str) -> "MakePod":
        self.meta["namespace"] = namespace(name)
        return self

    def labels(self, labels: dict) -> "MakePod":
        self.meta["labels"] = dict(labels)
        return self

    def label(self, key: str, value: str) -> "MakePod":
        self.meta["labels"][key] = value
        return self

    def node(self, name: str) -> "MakePod":
        self.spec["nodeName"] = name.lower()
        return self

    def affinity(self, value: dict) -> "MakePod":
        self.spec["affinity"] = copy.deepcopy(value)
        return self

    def _term(self, field: str, kind: str, affinity_term: dict) -> "MakePod":
        section = self.spec.setdefault("affinity", {}).setdefault(field, {})
        if kind == REQUIRED:
            section.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(affinity_term)
        else:
            section.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(weighted(1, affinity_term))
        return self

    def pod_affinity_in(self, key: str, topology: str, values: list, kind: str) -> "MakePod":
        return self._term("podAffinity", kind, term(expr(key, "In", *values), topology=topology))

    def pod_affinity_not_in(self, key: str, topology: str, values: list, kind: str) -> "MakePod":
        return self._term("podAffinity", kind, term(expr(key, "NotIn", *values), topology=topology))

    def pod_affinity_exists(self, key: str, topology: str, kind: str) -> "MakePod":
        return self._term("podAffinity", kind, term(expr(key, "Exists"), topology=topology))

    def pod_anti_affinity_in(self, key: str, topology: str, values: list, kind: str) -> "MakePod":
        return self._term("podAntiAffinity", kind, term(expr(key, "In", *values), topology=topology))

    def pod_anti_affinity_not_in(self, key: str, topology: str, values: list, kind: str) -> "MakePod":
        return self._term("podAntiAffinity", kind, term(expr(key, "NotIn", *values), topology=topology))

    def pod_anti_affinity_exists(self, key: str, topology: str, kind: str) -> "MakePod":
        return self._term("podAntiAffinity", kind, term(expr(key, "Exists"), topology=topology))

    def obj(self) -> dict:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": copy.deepcopy(self.meta),
                "spec": copy.deepcopy(self.spec)}


def make_pod(namespace_name: str = "", labels: dict | None = None, node: str = "",
             pod_affinity: dict | None = None) -> dict:
    """A pod literal (``&v1.Pod{ObjectMeta: ..., Spec: ...}``)."""
    pod = MakePod().namespace(namespace_name).labels(labels or {})
    if node:
        pod.node(node)
    if pod_affinity:
        pod.affinity(pod_affinity)
    return pod.obj()


def with_affinity_terms(namespace_name: str, labels: dict, required: list | None, anti_required: list | None) -> dict:
    """``createPodWithAffinityTerms`` (no node)."""
    return make_pod(namespace_name, labels, pod_affinity=affinity(required=required, anti_required=anti_required))


_namespace_offsets = itertools.count()


def namespace_event(name: str, labels: dict) -> InboxEvent:
    """A Namespace object on the inbox (no source topic carries them yet; the domain keeps them because
    InterPodAffinity watches the kind)."""
    offset = next(_namespace_offsets)
    cause = Causation("koord.inbox.scheduling", 0, offset, "koord.namespaces", 0, offset)
    return InboxEvent(cause, 1000, name, "Namespace", {"metadata": {"name": name, "labels": labels}})


def cluster(nodes: list[tuple[str, dict]], pods: list[dict], args: dict | None = None,
            namespaces: dict = NAMESPACES) -> SchedulingDomain:
    """A domain holding ``namespaces``, ``nodes`` ((name, labels)) and the bound ``pods`` (each named ``p<i>``
    unless named), with InterPodAffinity's ``args``."""
    events = [namespace_event(namespace(name), labels) for name, labels in namespaces.items()]
    if args is not None:
        events.append(profile_with(NAME, args))
    events += [k8s_node(name.lower(), {"cpu": "64", "memory": "256Gi", "pods": "110"}, labels=labels)
               for name, labels in nodes]
    for index, body in enumerate(pods):
        body = copy.deepcopy(body)
        body["metadata"]["name"] = body["metadata"]["name"] or f"p{index}"
        events.append(converted(body))
    domain, _ = run(*events)
    return domain


def incoming(body: dict):
    body = copy.deepcopy(body)
    body["metadata"]["name"] = body["metadata"]["name"] or "incoming"
    return pod_info(converted(body))


@dataclasses.dataclass(frozen=True)
class FilterOutcome:
    prefilter: tuple
    """(code, message) of PreFilter; (Success, "") when it passed."""
    nodes: tuple
    """Per node: None when it passes, else (code, reason)."""


def run_filter(domain: SchedulingDomain, body: dict) -> FilterOutcome:
    """PreFilter, then Filter on every node in the domain's row order."""
    plugin = plugin_of(domain, NAME)
    pod = incoming(body)
    state = CycleState()
    status = plugin.pre_filter(state, pod)
    if not status.ok or status.code == Code.SKIP:
        return FilterOutcome((status.code, status.message), ())
    count = len(domain.cluster.columns)
    result = plugin.filter(state, pod, np.ones(count, dtype=bool))
    out = []
    for row in range(count):
        if result.passed[row]:
            out.append(None)
            continue
        reason = next(reason for reason, mask in result.reasons if mask[row])
        unresolvable = result.unresolvable is not None and result.unresolvable[row]
        out.append((Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else result.code, reason))
    return FilterOutcome((Code.SUCCESS, ""), tuple(out))


def run_score(domain: SchedulingDomain, body: dict) -> list[int]:
    """Score (PreScore, Score, NormalizeScore) of every node, in row order."""
    plugin = plugin_of(domain, NAME)
    count = len(domain.cluster.columns)
    return node_scores(plugin, CycleState(), incoming(body), np.ones(count, dtype=bool))
