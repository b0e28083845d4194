"""Shadow mode's comparison: where the cluster's scheduler put each pod against where koordstream would have.

The cluster's outcome is read from the pod as the cluster holds it: ``spec.nodeName`` once bound, or the
``PodScheduled=False`` condition (reason, message) its scheduler wrote. koordstream's is its latest
``Scheduled`` or ``Unschedulable`` decision about that pod (same uid): the decision it made while the pod
was pending. Later ``Bound`` decisions only echo the cluster's binding and are not opinions.

Each pod falls in one outcome: both placed it on the same node, on another node, only koordstream could
not place it, only the cluster could not, neither could, the cluster has not decided yet (pending), or
koordstream never saw it pending (it arrived bound, e.g. before the bridge started).
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable, Mapping

SAME_NODE = "same-node"
OTHER_NODE = "other-node"
ONLY_KOORDSTREAM_UNSCHEDULABLE = "only-koordstream-unschedulable"
ONLY_CLUSTER_UNSCHEDULABLE = "only-cluster-unschedulable"
BOTH_UNSCHEDULABLE = "both-unschedulable"
CLUSTER_PENDING = "cluster-pending"
NOT_SEEN_PENDING = "not-seen-pending"
OUTCOMES = (SAME_NODE, OTHER_NODE, ONLY_KOORDSTREAM_UNSCHEDULABLE, ONLY_CLUSTER_UNSCHEDULABLE, BOTH_UNSCHEDULABLE,
            CLUSTER_PENDING, NOT_SEEN_PENDING)
OPINIONS = ("Scheduled", "Unschedulable")


@dataclasses.dataclass(frozen=True)
class Placement:
    """One side's outcome for a pod: a node, or None with the reason it could not be placed."""

    node: str | None
    reason: str = ""
    message: str = ""


@dataclasses.dataclass(frozen=True)
class PodComparison:
    namespace: str
    name: str
    outcome: str
    cluster: Placement | None
    koordstream: Placement | None


@dataclasses.dataclass(frozen=True)
class ShadowReport:
    pods: tuple[PodComparison, ...]

    @property
    def totals(self) -> dict[str, int]:
        counts = collections.Counter(pod.outcome for pod in self.pods)
        return {outcome: counts.get(outcome, 0) for outcome in OUTCOMES}

    def to_dict(self) -> dict:
        return {"totals": self.totals, "pods": [dataclasses.asdict(pod) for pod in self.pods]}


def cluster_placement(pod: Mapping) -> Placement | None:
    """Where the cluster put the pod, why it could not, or None while it has not decided."""
    if node := (pod.get("spec") or {}).get("nodeName"):
        return Placement(node)
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return Placement(None, condition.get("reason", ""), condition.get("message", ""))
    return None


def koordstream_placement(decisions: Iterable[Mapping], uid: str | None) -> Placement | None:
    """koordstream's latest opinion among ``decisions`` (oldest first) about the pod with ``uid``."""
    opinion = None
    for decision in decisions:
        same_pod = not uid or not decision.get("uid") or decision["uid"] == uid
        if same_pod and decision["result"] in OPINIONS:
            opinion = decision
    if opinion is None:
        return None
    if opinion["result"] == "Scheduled":
        return Placement(opinion["nodeName"])
    return Placement(None, opinion.get("reason") or "Unschedulable", opinion.get("message") or "")


def outcome(cluster: Placement | None, koordstream: Placement | None) -> str:
    if cluster is None:
        return CLUSTER_PENDING
    if koordstream is None:
        return NOT_SEEN_PENDING
    if cluster.node and koordstream.node:
        return SAME_NODE if cluster.node == koordstream.node else OTHER_NODE
    if cluster.node:
        return ONLY_KOORDSTREAM_UNSCHEDULABLE
    return ONLY_CLUSTER_UNSCHEDULABLE if koordstream.node else BOTH_UNSCHEDULABLE


def compare(pods: Iterable[Mapping], decisions: Mapping[str, list[Mapping]]) -> ShadowReport:
    """Compare each pod (the cluster's object) with ``decisions`` by pod key "<namespace>/<name>",
    each list oldest first; pods sorted by namespace and name."""
    rows = []
    for pod in pods:
        metadata = pod["metadata"]
        key = f"{metadata.get('namespace', 'default')}/{metadata['name']}"
        cluster = cluster_placement(pod)
        koordstream = koordstream_placement(decisions.get(key, ()), metadata.get("uid"))
        rows.append(PodComparison(metadata.get("namespace", "default"), metadata["name"],
                                  outcome(cluster, koordstream), cluster, koordstream))
    return ShadowReport(tuple(sorted(rows, key=lambda row: (row.namespace, row.name))))
