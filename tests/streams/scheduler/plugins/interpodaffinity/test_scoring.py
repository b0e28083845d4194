"""InterPodAffinity PreScore, Score and NormalizeScore: kube-scheduler v1.34's tables (``scoring_test.go``,
``TestPreferredAffinity`` and ``TestPreferredAffinityWithHardPodAffinitySymmetricWeight``) with their Go names as
ids. A PreScore that returns Skip leaves every node at 0; the two cases whose PreScore fails on an invalid label
value are PreFilter's (``test_filtering``): such a pod never reaches Score here."""

import dataclasses

import pytest

from streams.scheduler.framework import MAX_NODE_SCORE
from tests.streams.scheduler.plugins.interpodaffinity.wrappers import (
    affinity, cluster, expr, make_pod, run_score, term, weighted)

MAX = MAX_NODE_SCORE
CHINA, INDIA, AZ1, AZ2 = {"region": "China"}, {"region": "India"}, {"az": "az1"}, {"az": "az2"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
S1, S2 = {"security": "S1"}, {"security": "S2"}
TEAM1 = {"matchExpressions": [expr("team", "In", "team1")]}

STAY_WITH_S1_IN_REGION = affinity(preferred=[weighted(5, term(expr("security", "In", "S1"), topology="region"))])
STAY_WITH_S2_IN_REGION = affinity(preferred=[weighted(6, term(expr("security", "In", "S2"), topology="region"))])
AFFINITY3 = affinity(preferred=[
    weighted(8, term(expr("security", "NotIn", "S1"), expr("security", "In", "S2"), topology="region")),
    weighted(2, term(expr("security", "Exists"), expr("wrongkey", "DoesNotExist"), topology="region"))])
HARD_AFFINITY = affinity(required=[
    term(expr("security", "In", "S1", "value2"), topology="region"),
    term(expr("security", "Exists"), expr("wrongkey", "DoesNotExist"), topology="region")])
AWAY_FROM_S1_IN_AZ = affinity(anti_preferred=[weighted(5, term(expr("security", "In", "S1"), topology="az"))])
AWAY_FROM_S2_IN_AZ = affinity(anti_preferred=[weighted(5, term(expr("security", "In", "S2"), topology="az"))])
STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ = affinity(
    preferred=[weighted(8, term(expr("security", "In", "S1"), topology="region"))],
    anti_preferred=[weighted(5, term(expr("security", "In", "S2"), topology="az"))])
NAMESPACE_SELECTOR_TERM = term(expr("security", "In", "S1"), topology="region", namespaces=["subteam2.team2"],
                               namespace_selector=TEAM1)
AFFINITY_NAMESPACE_SELECTOR = affinity(preferred=[weighted(5, NAMESPACE_SELECTOR_TERM)])
ANTI_AFFINITY_NAMESPACE_SELECTOR = affinity(anti_preferred=[weighted(5, NAMESPACE_SELECTOR_TERM)])


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    pod: dict
    pods: tuple
    nodes: tuple
    want: tuple
    """Normalized score of each node, in ``nodes`` order."""
    args: dict | None = None


def nodes(*labels: dict) -> tuple:
    return tuple((f"node{index}", node_labels) for index, node_labels in enumerate(labels, 1))


def on(node: str, labels: dict | None = None, pod_affinity: dict | None = None, namespace: str = "") -> dict:
    return make_pod(namespace, labels, node, pod_affinity)


PREFERRED_AFFINITY = [
    Case("all nodes are same priority as Affinity is nil", make_pod(labels=S1), (), nodes(CHINA, INDIA, AZ1),
         (0, 0, 0)),
    Case("Affinity: pod that matches topology key & pods in nodes will get high score comparing to others"
         "which doesn't match either pods in nodes or in topology key",
         make_pod(labels=S1, pod_affinity=STAY_WITH_S1_IN_REGION),
         (on("node1", S1), on("node2", S2), on("node3", S1)), nodes(CHINA, INDIA, AZ1), (MAX, 0, 0)),
    Case("All the nodes that have the same topology key & label value with one of them has an existing pod that match "
         "the affinity rules, have the same score",
         make_pod(pod_affinity=STAY_WITH_S1_IN_REGION), (on("node1", S1),), nodes(CHINA, CHINA_AZ1, INDIA),
         (MAX, MAX, 0)),
    Case("Affinity: nodes in one region has more matching pods comparing to other region, so the region which has more "
         "matches will get high score",
         make_pod(labels=S1, pod_affinity=STAY_WITH_S2_IN_REGION),
         (on("node1", S2), on("node1", S2), on("node2", S2), on("node3", S2), on("node4", S2), on("node5", S2)),
         nodes(CHINA, INDIA, CHINA, CHINA, INDIA), (MAX, 0, MAX, MAX, 0)),
    Case("Affinity: different Label operators and values for pod affinity scheduling preference, including some match "
         "failures ",
         make_pod(labels=S1, pod_affinity=AFFINITY3), (on("node1", S1), on("node2", S2), on("node3", S1)),
         nodes(CHINA, INDIA, AZ1), (20, MAX, 0)),
    Case("Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod affinity "
         "symmetry",
         make_pod(labels=S2), (on("node1", S1, STAY_WITH_S1_IN_REGION), on("node2", S2, STAY_WITH_S2_IN_REGION)),
         nodes(CHINA, INDIA, AZ1), (0, MAX, 0)),
    Case("Affinity symmetry with namespace selector",
         make_pod("subteam1.team1", S1),
         (on("node1", S1, AFFINITY_NAMESPACE_SELECTOR), on("node2", S2, STAY_WITH_S2_IN_REGION)),
         nodes(CHINA, INDIA, AZ1), (MAX, 0, 0)),
    Case("AntiAffinity symmetry with namespace selector",
         make_pod("subteam1.team1", S1),
         (on("node1", S1, ANTI_AFFINITY_NAMESPACE_SELECTOR), on("node2", S2, STAY_WITH_S2_IN_REGION)),
         nodes(CHINA, INDIA, AZ1), (0, MAX, MAX)),
    Case("Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
         make_pod(labels=S1), (on("node1", S1, HARD_AFFINITY), on("node2", S2, HARD_AFFINITY)),
         nodes(CHINA, INDIA, AZ1), (MAX, MAX, 0)),
    Case("Anti Affinity: pod that does not match existing pods in node will get high score ",
         make_pod(labels=S1, pod_affinity=AWAY_FROM_S1_IN_AZ), (on("node1", S1), on("node2", S2)), nodes(AZ1, CHINA),
         (0, MAX)),
    Case("Anti Affinity: pod that does not match topology key & match the pods in nodes will get higher score "
         "comparing to others ",
         make_pod(labels=S1, pod_affinity=AWAY_FROM_S1_IN_AZ), (on("node1", S1), on("node2", S1)), nodes(AZ1, CHINA),
         (0, MAX)),
    Case("Anti Affinity: one node has more matching pods comparing to other node, so the node which has more unmatches "
         "will get high score",
         make_pod(labels=S1, pod_affinity=AWAY_FROM_S1_IN_AZ), (on("node1", S1), on("node1", S1), on("node2", S2)),
         nodes(AZ1, INDIA), (0, MAX)),
    Case("Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score",
         make_pod(labels=S2), (on("node1", S1, AWAY_FROM_S2_IN_AZ), on("node2", S2, AWAY_FROM_S1_IN_AZ)),
         nodes(AZ1, AZ2), (0, MAX)),
    Case("Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod "
         "affinity & anti affinity",
         make_pod(labels=S1, pod_affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
         (on("node1", S1), on("node2", S1)),
         nodes(CHINA, AZ1), (MAX, 0)),
    Case("Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and existing "
         "pods have the same labels",
         make_pod(labels=S1, pod_affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
         (on("node1", S1), on("node1", S1), on("node2", S1), on("node3", S1), on("node3", S1), on("node4", S1),
          on("node5", S1)),
         nodes(CHINA_AZ1, INDIA, CHINA, CHINA, INDIA), (MAX, 0, MAX, MAX, 0)),
    Case("Affinity and Anti Affinity and symmetry: considered only preferredDuringSchedulingIgnoredDuringExecution in "
         "both pod affinity & anti affinity & symmetry",
         make_pod(labels=S1, pod_affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
         (on("node1", S1), on("node2", S2), on("node3", None, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
          on("node4", None, AWAY_FROM_S1_IN_AZ)),
         nodes(CHINA, AZ1, INDIA, AZ2), (MAX, 0, MAX, 0)),
    Case("Avoid panic when partial nodes in a topology don't have pods with affinity",
         make_pod(labels=S1), (on("node1", S1), on("node2", None, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ)),
         nodes(CHINA, CHINA), (0, 0)),
    Case("Affinity with pods matching NamespaceSelector",
         make_pod("subteam1.team1", S1, pod_affinity=AFFINITY_NAMESPACE_SELECTOR),
         (on("node1", S1, namespace="subteam1.team1"), on("node1", S1, namespace="subteam1.team1"),
          on("node1", S1, namespace="subteam1.team2"), on("node2", S1, namespace="subteam2.team1")),
         nodes(CHINA, INDIA), (MAX, 0)),
    Case("Affinity with pods matching both NamespaceSelector and Namespaces fields",
         make_pod("subteam1.team1", S1, pod_affinity=AFFINITY_NAMESPACE_SELECTOR),
         (on("node1", S1, namespace="subteam1.team1"), on("node1", S1, namespace="subteam1.team1"),
          on("node1", S1, namespace="subteam2.team2"), on("node2", S1, namespace="subteam2.team1")),
         nodes(CHINA, INDIA), (MAX, 0)),
    Case("Affinity with pods matching NamespaceSelector",
         make_pod("subteam1.team1", S1, pod_affinity=ANTI_AFFINITY_NAMESPACE_SELECTOR),
         (on("node1", S1, namespace="subteam1.team1"), on("node1", S1, namespace="subteam1.team1"),
          on("node1", S1, namespace="subteam1.team2"), on("node2", S1, namespace="subteam2.team1")),
         nodes(CHINA, INDIA), (0, MAX)),
    Case("Affinity with pods matching both NamespaceSelector and Namespaces fields",
         make_pod("subteam1.team1", S1, pod_affinity=ANTI_AFFINITY_NAMESPACE_SELECTOR),
         (on("node1", S1, namespace="subteam1.team1"), on("node1", S1, namespace="subteam1.team1"),
          on("node1", S1, namespace="subteam2.team2"), on("node2", S1, namespace="subteam2.team1")),
         nodes(CHINA, INDIA), (0, MAX)),
    Case("Ignore preferred terms of existing pods",
         make_pod(labels=S2), (on("node1", S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
                               on("node2", S2, STAY_WITH_S2_IN_REGION)),
         nodes(CHINA, INDIA), (0, 0), {"ignorePreferredTermsOfExistingPods": True}),
    Case("Do not ignore preferred terms of existing pods",
         make_pod(labels=S2), (on("node1", S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
                               on("node2", S2, STAY_WITH_S2_IN_REGION)),
         nodes(CHINA, INDIA), (0, MAX), {"ignorePreferredTermsOfExistingPods": False}),
]

SERVICE_S1 = {"service": "S1"}
HARD_POD_AFFINITY = affinity(required=[term(expr("service", "In", "S1"), topology="region",
                                            namespaces=["", "subteam2.team2"], namespace_selector=TEAM1)])
HARD_NODES = nodes(CHINA, INDIA, AZ1)
HARD_PODS = (on("node1", None, HARD_POD_AFFINITY), on("node2", None, HARD_POD_AFFINITY))

HARD_POD_AFFINITY_SYMMETRIC_WEIGHT = [
    Case("with default weight", make_pod(labels=SERVICE_S1), HARD_PODS, HARD_NODES, (MAX, MAX, 0),
         {"hardPodAffinityWeight": 1}),
    Case("with zero weight", make_pod(labels=SERVICE_S1), HARD_PODS, HARD_NODES, (0, 0, 0),
         {"hardPodAffinityWeight": 0}),
    Case("with no matching namespace", make_pod("subteam1.team2", SERVICE_S1), HARD_PODS, HARD_NODES, (0, 0, 0),
         {"hardPodAffinityWeight": 1}),
    Case("with matching NamespaceSelector", make_pod("subteam1.team1", SERVICE_S1), HARD_PODS, HARD_NODES,
         (MAX, MAX, 0), {"hardPodAffinityWeight": 1}),
    Case("with matching Namespaces", make_pod("subteam2.team2", SERVICE_S1), HARD_PODS, HARD_NODES, (MAX, MAX, 0),
         {"hardPodAffinityWeight": 1}),
]


@pytest.mark.parametrize("case", PREFERRED_AFFINITY, ids=[c.name for c in PREFERRED_AFFINITY])
def test_preferred_affinity(case):
    """TestPreferredAffinity (hardPodAffinityWeight 1)."""
    domain = cluster(list(case.nodes), list(case.pods), args={"hardPodAffinityWeight": 1, **(case.args or {})})
    assert tuple(run_score(domain, case.pod)) == case.want


@pytest.mark.parametrize("case", HARD_POD_AFFINITY_SYMMETRIC_WEIGHT,
                         ids=[c.name for c in HARD_POD_AFFINITY_SYMMETRIC_WEIGHT])
def test_preferred_affinity_with_hard_pod_affinity_symmetric_weight(case):
    """TestPreferredAffinityWithHardPodAffinitySymmetricWeight."""
    domain = cluster(list(case.nodes), list(case.pods), args=case.args)
    assert tuple(run_score(domain, case.pod)) == case.want
