"""InterPodAffinity PreScore, Score and NormalizeScore (kube-scheduler v1.34 ``interpodaffinity/scoring.go``).

PreScore sums weights per topology pair (key, value) of the node each assigned pod ``q`` runs on (nodes
without labels contribute nothing):

    + w   for each preferred affinity term (weight w) of the incoming pod p that q matches
    - w   for each preferred anti-affinity term of p that q matches
    + H   for each required affinity term of q that p matches (H = hardPodAffinityWeight, when > 0)
    + w   for each preferred affinity term of q that p matches
    - w   for each preferred anti-affinity term of q that p matches

Only pods with some affinity term are read unless p has preferred terms (then every assigned pod is); with
``ignorePreferredTermsOfExistingPods`` and no preferred term of p, nothing is scored. Score of a node is the sum
of the pairs its labels hold; NormalizeScore over the feasible nodes::

    score = int(100 * (s - min) / (max - min))      (0 for every node when max == min)

computed in float64 and truncated, as Go's ``int64(float64(...))`` does. When no pod contributed (PreScore's
Skip) every node scores 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from streams.objects.podinfo import PodInfo
from streams.scheduler.framework import MAX_NODE_SCORE
from streams.scheduler.plugins.interpodaffinity.filtering import NamespaceLabels
from streams.scheduler.plugins.interpodaffinity.terms import AffinityTerm, PodTerms, WeightedTerm
from streams.scheduler.plugins.interpodaffinity.topology import Topology

TopologyScore = dict[str, dict[str, int]]


def _add(scores: TopologyScore, term: AffinityTerm, weight: int, pod: PodInfo, node_labels: Mapping[str, str],
         namespace_labels: NamespaceLabels) -> bool:
    """``scoreMap.processTerm``; True when the term counted (kube-scheduler then keeps the node's map)."""
    if not term.matches(pod.namespace, pod.labels, namespace_labels):
        return False
    value = node_labels.get(term.topology_key)
    if value is None:
        return False
    by_value = scores.setdefault(term.topology_key, {})
    by_value[value] = by_value.get(value, 0) + weight
    return True


def _add_weighted(scores: TopologyScore, terms: tuple[WeightedTerm, ...], sign: int, pod: PodInfo,
                  node_labels: Mapping[str, str], namespace_labels: NamespaceLabels) -> bool:
    counted = False
    for weighted in terms:
        counted |= _add(scores, weighted.term, sign * weighted.weight, pod, node_labels, namespace_labels)
    return counted


def topology_score(pod: PodInfo, terms: PodTerms, existing: Iterable[tuple[PodInfo, PodTerms, Mapping[str, str]]],
                   hard_pod_affinity_weight: int, namespace_labels: NamespaceLabels) -> TopologyScore | None:
    """PreScore's ``topologyScore``, or None when no assigned pod contributed (kube-scheduler's Skip)."""
    scores: TopologyScore = {}
    counted = False
    for other, other_terms, node_labels in existing:
        if not node_labels:
            continue
        counted |= _add_weighted(scores, terms.preferred_affinity, 1, other, node_labels, namespace_labels)
        counted |= _add_weighted(scores, terms.preferred_anti_affinity, -1, other, node_labels, namespace_labels)
        if hard_pod_affinity_weight > 0:
            for term in other_terms.required_affinity:
                counted |= _add(scores, term, hard_pod_affinity_weight, pod, node_labels, namespace_labels)
        counted |= _add_weighted(scores, other_terms.preferred_affinity, 1, pod, node_labels, namespace_labels)
        counted |= _add_weighted(scores, other_terms.preferred_anti_affinity, -1, pod, node_labels, namespace_labels)
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
