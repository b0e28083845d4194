"""The pod labels and annotations the node-QoS plan reads, and what they mean.

The scheduler copies exactly these keys into each SchedulingDecision
(``streams.decisions``: ``LABELS`` / ``DECISION_ANNOTATIONS``), so the node aggregate learns them with
the pod without storing whole manifests (``PodView.labels`` / ``annotations``,
and ``PodView.numa_nodes`` / ``cpuset`` from the resource status; ``pinned_cpus``
parses the cpuset strictly). ``qos_on_node`` is a pod's QoS class on its node: a Guaranteed pod without a
label is LSR only where the kubelet runs the static CPU manager policy (``cpu_manager_policy``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from streams.koordinator.annotations import ANNOTATION_KUBELET_CPU_MANAGER_POLICY
from streams.koordinator.classes import (
    CPU_MANAGER_POLICY_NONE, KUBE_GUARANTEED, KUBE_QOS_BY_DEFAULT_QOS, qos_class_by_name, qos_for_guaranteed)
from streams.koordinator.labels import LABEL_POD_QOS
from streams.noderesource.views import BAD_RESOURCE_STATUS, PodView

MAX_CPUS = 8192
"""CPU ids a pinned cpuset may name (0 .. MAX_CPUS - 1), the node agent's bound as well."""
REASON_BAD_STATUS = "resource-status annotation does not parse"
REASON_BAD_CPUSET = "resource-status cpuset is not a CPU list"


def parse_cpu_list(text: str) -> frozenset[int]:
    """A Linux CPU list (``0-3,8``) as k8s ``cpuset.Parse`` reads it, strictly: comma-separated ids or
    ``low-high`` ranges of decimal digits, no blanks, no empty part, ``low <= high < MAX_CPUS``; ValueError
    otherwise. Empty text is the empty set."""
    cpus: set[int] = set()
    if not text:
        return frozenset()
    for part in text.split(","):
        low, dash, high = part.partition("-")
        if not (low.isdigit() and low.isascii()) or dash and not (high.isdigit() and high.isascii()):
            raise ValueError(f"cpuset {text!r}: {part!r} is not a CPU id or range")
        first, last = int(low), int(high) if dash else int(low)
        if first > last or last >= MAX_CPUS:
            raise ValueError(f"cpuset {text!r}: range {part!r} is empty or beyond CPU {MAX_CPUS - 1}")
        cpus.update(range(first, last + 1))
    return frozenset(cpus)


_NOT_PINNED: tuple[frozenset[int], None] = (frozenset(), None)


def pinned_cpus(cpuset: str) -> tuple[frozenset[int], str | None]:
    """(CPUs, None) of a pod's ``PodView.cpuset``; (empty, None) when the pod is not pinned; (empty, reason)
    when its resource status or cpuset does not parse (koordlet then writes nothing for the pod and leaves its
    CPUs in the shared pools)."""
    if not cpuset:
        return _NOT_PINNED
    if cpuset == BAD_RESOURCE_STATUS:
        return frozenset(), REASON_BAD_STATUS
    try:
        return parse_cpu_list(cpuset), None
    except ValueError as err:
        return frozenset(), f"{REASON_BAD_CPUSET}: {err}"


def raw_qos(labels: Mapping[str, str] | tuple) -> str:
    """``GetPodQoSClassRaw``: the ``koordinator.sh/qosClass`` label, "" when absent or unknown."""
    mapping = dict(labels)
    return qos_class_by_name(mapping.get(LABEL_POD_QOS))


def kube_qos(qos_with_default: str, labels: Mapping[str, str] | tuple) -> str | None:
    """The pod's Kubernetes QoS class when it can be told: without a QoS label Koordinator's default maps
    Guaranteed -> LSR, Burstable -> LS, BestEffort -> BE one to one, so the class gives it back; with a
    label it is unknown (None) and only the label matters to the plan."""
    if raw_qos(labels):
        return None
    return KUBE_QOS_BY_DEFAULT_QOS.get(qos_with_default)


def cpu_manager_policy(node_annotations: Mapping[str, str]) -> str:
    """The kubelet's CPU manager policy on a node: the ``policy`` of its
    ``kubelet.koordinator.sh/cpu-manager-policy`` annotation (``GetKubeletCPUManagerPolicy``; the node agent
    publishes it as koordlet does on the NodeResourceTopology). ``none``, kubelet's default, when the annotation
    is absent, does not parse or names no policy."""
    try:
        raw = json.loads(node_annotations.get(ANNOTATION_KUBELET_CPU_MANAGER_POLICY) or "{}")
    except ValueError:
        return CPU_MANAGER_POLICY_NONE
    policy = raw.get("policy") if isinstance(raw, dict) else None
    return policy if isinstance(policy, str) and policy else CPU_MANAGER_POLICY_NONE


def qos_on_node(pod: PodView, policy: str) -> str:
    """The pod's QoS class on a node whose kubelet runs ``policy``: its label's class, else its Kubernetes QoS's,
    where a Guaranteed pod is LSR only with the ``static`` policy and LS otherwise (``qos_for_guaranteed``)."""
    if kube_qos(pod.qos, pod.labels) == KUBE_GUARANTEED:
        return qos_for_guaranteed(policy)
    return pod.qos
