"""InterPodAffinity PreScore, Score and NormalizeScore (kube-scheduler v1.34 ``interpodaffinity/scoring.go``).

PreScore sums weights per topology pair (key, value) of the node each assigned pod ``q`` runs on (nodes
without the term's topology key contribute nothing):

    + w   for each preferred affinity term (weight w) of the incoming pod p that q matches
    - w   for each preferred anti-affinity term of p that q matches
    + H   for each required affinity term of q that p matches (H = hardPodAffinityWeight, when > 0)
    + w   for each preferred affinity term of q that p matches
    - w   for each preferred anti-affinity term of q that p matches

Assigned pods are read as the index's groups (pods per node sharing labels, or a term), each counted times its
pods, added up as tables of pair scores per topology key from the tables the index keeps per group (updated as
pods come and go), so no loop runs over nodes or pods in Python. With ``ignorePreferredTermsOfExistingPods`` and no preferred term of p, nothing is scored. Score of a node
is the sum of the pairs its labels hold; NormalizeScore over the feasible nodes::

    score = int(100 * (s - min) / (max - min))      (0 for every node when max == min)

computed in float64 and truncated, as Go's ``int64(float64(...))`` does. When no pod contributed (PreScore's
Skip) every node scores 0, as it does here with every sum 0.
"""

from __future__ import annotations

import numpy as np

from streams.objects.podinfo import PodInfo
from streams.scheduler.framework import MAX_NODE_SCORE
from streams.scheduler.plugins.interpodaffinity.filtering import NamespaceLabels
from streams.scheduler.plugins.interpodaffinity.index import AssignedPods
from streams.scheduler.plugins.interpodaffinity.terms import PodTerms
from streams.scheduler.plugins.interpodaffinity.topology import Topology

TopologyScore = dict[str, np.ndarray]
"""Per topology key: the score of each of its pairs, as a table (``Topology``)."""


class _Scores:
    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.by_key: TopologyScore = {}

    def __getitem__(self, key: str) -> np.ndarray:
        table = self.by_key.get(key)
        if table is None:
            table = self.by_key[key] = self.topology.empty(key)
        return table


def topology_score(pod: PodInfo, terms: PodTerms, index: AssignedPods, hard_pod_affinity_weight: int,
                   namespace_labels: NamespaceLabels) -> TopologyScore:
    """PreScore's ``topologyScore``, as a table of pair scores per topology key."""
    scores = _Scores(index.topology)
    if terms.preferred:
        weighted_terms = [(w.term, w.weight) for w in terms.preferred_affinity] + \
                         [(w.term, -w.weight) for w in terms.preferred_anti_affinity]
        for group, namespace, labels in index.label_keys():
            for term, weight in weighted_terms:
                if term.matches(namespace, labels, namespace_labels):
                    index.add_to(scores[term.topology_key], term.topology_key, "labels", group, weight)
    if hard_pod_affinity_weight > 0:
        for term in index.required_affinity:
            if term.matches(pod.namespace, pod.labels, namespace_labels):
                index.add_to(scores[term.topology_key], term.topology_key, "required_affinity", term,
                             hard_pod_affinity_weight)
    for term, weight in index.preferred:
        if term.matches(pod.namespace, pod.labels, namespace_labels):
            index.add_to(scores[term.topology_key], term.topology_key, "preferred", (term, weight), weight)
    return scores.by_key


def normalized(scores: TopologyScore, topology: Topology, candidates: np.ndarray) -> np.ndarray:
    """Score then NormalizeScore over ``candidates``; 0 elsewhere."""
    count = len(candidates)
    raw = np.zeros(count, dtype=np.int64)
    for key in sorted(scores):
        raw += topology.column(key, scores[key])[:count]
    out = np.zeros(count, dtype=np.int64)
    if not scores or not candidates.any():
        return out
    low, high = int(raw[candidates].min()), int(raw[candidates].max())
    if high > low:
        scaled = float(MAX_NODE_SCORE) * ((raw - low).astype(np.float64) / float(high - low))
        out[candidates] = scaled[candidates].astype(np.int64)
    return out
