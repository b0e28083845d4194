"""InterPodAffinity PreScore, Score and NormalizeScore (kube-scheduler v1.34 ``interpodaffinity/scoring.go``).

PreScore sums weights per topology pair (key, value) of the node each assigned pod ``q`` runs on (nodes
without labels contribute nothing):

    + w   for each preferred affinity term (weight w) of the incoming pod p that q matches
    - w   for each preferred anti-affinity term of p that q matches
    + H   for each required affinity term of q that p matches (H = hardPodAffinityWeight, when > 0)
    + w   for each preferred affinity term of q that p matches
    - w   for each preferred anti-affinity term of q that p matches

Assigned pods are read as the index's groups (pods per node sharing labels, or a term), each counted times its
pods. With ``ignorePreferredTermsOfExistingPods`` and no preferred term of p, nothing is scored. Score of a node
is the sum of the pairs its labels hold; NormalizeScore over the feasible nodes::

    score = int(100 * (s - min) / (max - min))      (0 for every node when max == min)

computed in float64 and truncated, as Go's ``int64(float64(...))`` does. When no pod contributed (PreScore's
Skip) every node scores 0.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from streams.objects.podinfo import PodInfo
from streams.scheduler.framework import MAX_NODE_SCORE
from streams.scheduler.plugins.interpodaffinity.filtering import NamespaceLabels, NodeLabels
from streams.scheduler.plugins.interpodaffinity.index import AssignedPods
from streams.scheduler.plugins.interpodaffinity.terms import PodTerms
from streams.scheduler.plugins.interpodaffinity.topology import Topology

TopologyScore = dict[str, dict[str, int]]


def _add(scores: TopologyScore, key: str, weight: int, per_node: Mapping[str, int], node_labels: NodeLabels) -> bool:
    """``scoreMap.processTerm`` for a matching term held by ``per_node`` pods per node; True when it counted
    somewhere (kube-scheduler then keeps the node's map)."""
    counted = False
    for node, pods in per_node.items():
        labels = node_labels(node)
        value = labels.get(key) if labels else None
        if value is None:
            continue
        by_value = scores.setdefault(key, {})
        by_value[value] = by_value.get(value, 0) + weight * pods
        counted = True
    return counted


def topology_score(pod: PodInfo, terms: PodTerms, index: AssignedPods, hard_pod_affinity_weight: int,
                   node_labels: NodeLabels, namespace_labels: NamespaceLabels) -> TopologyScore | None:
    """PreScore's ``topologyScore``, or None when no assigned pod contributed (kube-scheduler's Skip)."""
    scores: TopologyScore = {}
    counted = False
    if terms.preferred:
        for namespace, labels, per_node in index.label_groups():
            for weighted, sign in [(w, 1) for w in terms.preferred_affinity] + \
                                  [(w, -1) for w in terms.preferred_anti_affinity]:
                if weighted.term.matches(namespace, labels, namespace_labels):
                    counted |= _add(scores, weighted.term.topology_key, sign * weighted.weight, per_node, node_labels)
    if hard_pod_affinity_weight > 0:
        for term, per_node in index.required_affinity.items():
            if term.matches(pod.namespace, pod.labels, namespace_labels):
                counted |= _add(scores, term.topology_key, hard_pod_affinity_weight, per_node, node_labels)
    for (term, weight), per_node in index.preferred.items():
        if term.matches(pod.namespace, pod.labels, namespace_labels):
            counted |= _add(scores, term.topology_key, weight, per_node, node_labels)
    return scores if counted else None


def normalized(scores: TopologyScore, topology: Topology, candidates: np.ndarray) -> np.ndarray:
    """Score then NormalizeScore over ``candidates``; 0 elsewhere."""
    count = len(candidates)
    raw = np.zeros(count, dtype=np.int64)
    for key in sorted(scores):
        raw += topology.per_node(key, scores[key])[:count]
    out = np.zeros(count, dtype=np.int64)
    if not scores or not candidates.any():
        return out
    low, high = int(raw[candidates].min()), int(raw[candidates].max())
    if high > low:
        scaled = float(MAX_NODE_SCORE) * ((raw - low).astype(np.float64) / float(high - low))
        out[candidates] = scaled[candidates].astype(np.int64)
    return out
