"""Builders for the PodTopologySpread tables, shaped after kube-scheduler's ``st.MakePod()``/``st.MakeNode()``:
``spread`` is ``SpreadConstraint(maxSkew, key, mode, selector, minDomains, nodeAffinityPolicy, nodeTaintsPolicy,
matchLabelKeys)``, ``existing`` an assigned pod, ``incoming`` the pod to place, ``run_plugin`` the plugin on a
domain holding ``nodes`` and ``pods``."""

from __future__ import annotations

import numpy as np

from streams.scheduler.framework import SKIP, CycleState
from streams.scheduler.plugins.podtopologyspread import (
    NAME, REASON_CONSTRAINTS_NOT_MATCH, REASON_NODE_LABEL_NOT_MATCH, PodTopologySpread, PodTopologySpreadArgs)
from tests.streams.scheduler.support import converted, node, pod_info, run

FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
HOSTNAME = "kubernetes.io/hostname"
UNSCHEDULABLE_TAINT = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
DNS, SA = "DoNotSchedule", "ScheduleAnyway"
NULL = "null"
"""A constraint without labelSelector."""
SUCCESS, UNSCHEDULABLE, UNRESOLVABLE = "Success", "Unschedulable", "UnschedulableAndUnresolvable"


def spread(max_skew: int, key: str, mode: str = DNS, selector=FOO, min_domains: int | None = None,
           affinity_policy: str | None = None, taints_policy: str | None = None, match_label_keys=None) -> dict:
    out = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": mode}
    if selector != NULL:
        out["labelSelector"] = selector
    for field, value in (("minDomains", min_domains), ("nodeAffinityPolicy", affinity_policy),
                         ("nodeTaintsPolicy", taints_policy), ("matchLabelKeys", match_label_keys)):
        if value is not None:
            out[field] = value
    return out


def k8s_pod(name: str, labels, namespace="default", node_name=None, constraints=(), node_selector=None,
            affinity=None, tolerations=None, terminating=False, owner=None, cpu: str | None = None, ts: int = 1000,
            priority: int | None = None):
    """A Pod as ``koord apply`` records it."""
    meta = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "labels": dict(labels)}
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner, "name": "owner", "uid": "u",
                                    "controller": True}]
    container = {"name": "main", **({"resources": {"requests": {"cpu": cpu}}} if cpu else {})}
    spec = {"containers": [container]}
    for field, value in (("nodeName", node_name), ("topologySpreadConstraints", list(constraints) or None),
                         ("nodeSelector", node_selector), ("affinity", affinity), ("tolerations", tolerations),
                         ("priority", priority)):
        if value is not None:
            spec[field] = value
    return converted({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}, ts=ts)


def existing(name: str, on: str, labels=None, namespace="default", terminating=False, priority=None):
    return k8s_pod(name, labels if labels is not None else {"foo": ""}, namespace, node_name=on,
                   terminating=terminating, priority=priority)


def incoming(*constraints, labels=None, **fields):
    return k8s_pod("p", labels if labels is not None else {"foo": ""}, constraints=constraints, **fields)


def affinity_in(key: str, values) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}]}}}


def affinity_not_in(key: str, values) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": key, "operator": "NotIn", "values": list(values)}]}]}}}


def zoned(name: str, zone: str | None, **labels):
    """A node labelled ``zone`` and ``node`` (the Go tables' custom keys)."""
    return node(name, labels={**({"zone": zone} if zone else {}), "node": name, **labels})


def run_plugin(nodes, pods, args: PodTopologySpreadArgs | None = None):
    domain, _ = run(*nodes, *pods)
    return domain, PodTopologySpread(args or PodTopologySpreadArgs(defaulting_type="List"), domain.cluster)


def filter_codes(nodes, pods, pod_event, args=None) -> dict[str, str]:
    """kube-scheduler's per-node Filter status code: from the reason each failing node carries."""
    domain, plugin = run_plugin(nodes, pods, args)
    pod = pod_info(pod_event)
    state = CycleState()
    plugin.pre_filter(state, pod)
    names = domain.cluster.columns.names
    result = plugin.filter(state, pod, np.ones(len(names), dtype=bool))
    reasons = dict(result.reasons)
    codes = {}
    for row, name in enumerate(names):
        if result.passed[row]:
            codes[name] = SUCCESS
        elif reasons.get(REASON_NODE_LABEL_NOT_MATCH, np.zeros(len(names), bool))[row]:
            codes[name] = UNRESOLVABLE
        else:
            assert reasons[REASON_CONSTRAINTS_NOT_MATCH][row]
            codes[name] = UNSCHEDULABLE
    return codes


def scores(candidate_nodes, failed_nodes, pods, pod_event, args=None) -> dict[str, int]:
    """Normalized scores of the candidates; ``failed_nodes`` are in the cluster but did not pass the filters."""
    domain, plugin = run_plugin(list(candidate_nodes) + list(failed_nodes), pods, args)
    names = domain.cluster.columns.names
    candidates = np.array([row < len(candidate_nodes) for row in range(len(names))], dtype=bool)
    got = plugin.score(CycleState(), pod_info(pod_event), candidates)
    return {name: int(got[row]) for row, name in enumerate(names) if candidates[row]}


def prefilter_counts(nodes, pods, pod_event, args=None) -> list[dict[str, int]] | None:
    """kube-scheduler's ``TpValueToMatchNum`` per DoNotSchedule constraint after PreFilter; None when it skips."""
    _, plugin = run_plugin(nodes, pods, args)
    state = CycleState()
    if plugin.pre_filter(state, pod_info(pod_event)) == SKIP:
        return None
    return [{entry.values[i]: int(entry.count[i]) for i in np.flatnonzero(entry.present)} for entry in state[NAME]]
