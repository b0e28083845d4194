"""PodTopologySpread's Score under kube-scheduler v1.34's ``TestPodTopologySpreadScore`` table (27 of its 28
cases, Go names as ids; "matchLabelKeys ignored when feature gate disabled" is left out: the gate is on in 1.34).

In each case the candidates passed the filters and the failed nodes are in the cluster but not scored. The
Go table's Service selecting ``foo`` for the system-defaulting case becomes a ReplicaSet owner: koordstream
derives the default selector from the labels of a ReplicaSet's pod."""

import pytest

from streams.scheduler.plugins.podtopologyspread import PodTopologySpreadArgs
from tests.streams.scheduler.plugins.podtopologyspread.builders import (
    BAR, HOSTNAME, NULL, SA, UNSCHEDULABLE_TAINT, affinity_in, existing, incoming, scores, spread)
from tests.streams.scheduler.support import node

A, B, C, D, X, Y = "node-a", "node-b", "node-c", "node-d", "node-x", "node-y"
FOO_BAR = {"foo": "", "bar": ""}


def host(name, zone=None, **labels):
    return node(name, labels={HOSTNAME: name, **({"zone": zone} if zone else {}), **labels})


def keyed(name, **labels):
    """A node with the custom ``node`` key instead of the hostname."""
    return node(name, labels={"node": name, **labels})


def on(*placements, labels=None):
    seen: dict[str, int] = {}
    out = []
    for where in placements:
        seen[where] = seen.get(where, 0) + 1
        out.append(existing(f"p-{where[-1]}{seen[where]}", where, labels))
    return out


def soft(max_skew, key, **fields):
    return spread(max_skew, key, SA, **fields)


ON_HOST = incoming(soft(1, HOSTNAME))
FOUR_HOSTS = [host(A), host(B), host(C), host(D)]
SPREAD_4_3_2_1 = on(A, A, A, A, B, B, B, C, C, D)
SPREAD_4_2_1_3 = on(A, A, A, A, B, B, X, Y, Y, Y)
ZONE_FOO_HOST_BAR = incoming(soft(1, "zone"), soft(1, HOSTNAME, selector=BAR), labels=FOO_BAR)
DIFFERENT_SELECTORS = [existing("p-a1", A), existing("p-b1", B, FOO_BAR), existing("p-y1", Y),
                       existing("p-y2", Y, {"bar": ""})]
ZONED_HOSTS = [host(A, "zone1"), host(B, "zone1"), host(X, "zone2"), host(Y, "zone2")]
INCLUSION_NODES = [keyed(A, foo=""), keyed(B, foo=""), keyed(C)]
MATCH_LABEL_KEYS_NODES = [host(A, "zone1"), host(B, "zone1"), host(C, "zone2"), host(D, "zone2")]
MATCH_LABEL_KEYS_PODS = [existing("p-a1", A), existing("p-b1", B, FOO_BAR), existing("p-y1", C),
                         existing("p-y2", C, {"bar": ""})]

CASES = [
    pytest.param([host(A), host(B)], [], [], ON_HOST, {A: 100, B: 100}, id="one constraint on node, no existing pods"),
    pytest.param([host(A)], [host(B)], on(A, A, B), ON_HOST, {A: 100},
                 id="one constraint on node, only one node is candidate"),
    pytest.param([host(A), host(B)], [], on(A, B), ON_HOST, {A: 100, B: 100},
                 id="one constraint on node, all nodes have the same number of matching pods"),
    pytest.param(FOUR_HOSTS, [], on(A, A, B, D, D, D), ON_HOST, {A: 20, B: 60, C: 100, D: 0},
                 id="one constraint on node, all 4 nodes are candidates"),
    pytest.param(FOUR_HOSTS, [], on(A, A, B, D, D, D), incoming(soft(1, HOSTNAME, selector=NULL)),
                 {A: 100, B: 100, C: 100, D: 100}, id="one constraint on node, null selector"),
    pytest.param(FOUR_HOSTS, [], on(A, A, B, D, D, D), incoming(soft(2, HOSTNAME)), {A: 33, B: 66, C: 100, D: 16},
                 id="one constraint on node, all 4 nodes are candidates, maxSkew=2"),
    pytest.param(FOUR_HOSTS, [], SPREAD_4_3_2_1, incoming(soft(3, HOSTNAME)), {A: 44, B: 66, C: 77, D: 100},
                 id="one constraint on node, all 4 nodes are candidates, maxSkew=3"),
    pytest.param([host(A), host(B), host(X)], [host(Y)], SPREAD_4_2_1_3, ON_HOST, {A: 33, B: 83, X: 100},
                 id="one constraint on node, 3 out of 4 nodes are candidates"),
    pytest.param([host(A), node(B, labels={"n": B}), host(X)], [host(Y)], SPREAD_4_2_1_3, ON_HOST,
                 {A: 16, B: 0, X: 100},
                 id="one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key"),
    pytest.param([host(A, "zone1"), host(B, "zone1"), host(X, "zone2")], [host(Y, "zone2")], SPREAD_4_2_1_3,
                 incoming(soft(1, "zone")), {A: 75, B: 75, X: 100},
                 id="one constraint on zone, 3 out of 4 nodes are candidates"),
    pytest.param([host(A, "zone1"), host(X, "zone2")], [host(B, "zone1"), host(Y, "zone2")],
                 on(A, A, B, X, X, Y, Y, Y, Y), incoming(soft(1, "zone"), soft(1, HOSTNAME)), {A: 100, X: 63},
                 id="two Constraints on zone and node, 2 out of 4 nodes are candidates"),
    pytest.param([node(A, labels={"zone": "zone1"}), node(X, labels={"zone": "zone2"})],
                 [node(B, labels={"zone": "zone1"}), node(Y, labels={"zone": "zone2"})],
                 [existing("p-a1", A, FOO_BAR), existing("p-a2", A), existing("p-b1", B, FOO_BAR),
                  existing("p-y1", Y), existing("p-y2", Y, FOO_BAR), existing("p-y3", Y)],
                 incoming(soft(1, "zone"), soft(1, "zone", selector=BAR), labels=FOO_BAR), {A: 85, X: 100},
                 id="two Constraints on zone, 2 out of 4 nodes are candidates"),
    pytest.param(ZONED_HOSTS, [], DIFFERENT_SELECTORS, ZONE_FOO_HOST_BAR, {A: 60, B: 20, X: 100, Y: 60},
                 id="two Constraints on zone and node, with different labelSelectors"),
    pytest.param(ZONED_HOSTS, [], [existing("p-b1", B, {"bar": ""}), existing("p-x1", X), existing("p-y1", Y, FOO_BAR)],
                 ZONE_FOO_HOST_BAR, {A: 100, B: 60, X: 40, Y: 0},
                 id="two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods"),
    pytest.param(ZONED_HOSTS[:3], ZONED_HOSTS[3:], DIFFERENT_SELECTORS, ZONE_FOO_HOST_BAR, {A: 50, B: 25, X: 100},
                 id="two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates"),
    pytest.param([host(A), host(B)], [],
                 [existing("p-a1", A, namespace="ns1"), existing("p-a2", A), existing("p-b1", B), existing("p-b2", B)],
                 ON_HOST, {A: 100, B: 33}, id="existing pods in a different namespace do not count"),
    pytest.param([host(A), host(B)], [], [existing("p-a", A, terminating=True), existing("p-b", B)], ON_HOST,
                 {A: 100, B: 0}, id="terminating Pods should be excluded"),
    pytest.param([keyed(A), keyed(B), keyed(C)], [], on(A, A, B, B, C), incoming(soft(2, "node", min_domains=10)),
                 {A: 75, B: 75, C: 100}, id="minDomains has no effect when ScheduleAnyway"),
    pytest.param(INCLUSION_NODES, [], on(A, A, B, C), incoming(soft(1, "node"), node_selector={"foo": ""}),
                 {A: 0, B: 33, C: 100}, id="NodeAffinityPolicy honoed with labelSelectors"),
    pytest.param(INCLUSION_NODES, [], on(A, A, B, C),
                 incoming(soft(1, "node", affinity_policy="Ignore"), node_selector={"foo": ""}),
                 {A: 66, B: 100, C: 100}, id="NodeAffinityPolicy ignored with labelSelectors"),
    pytest.param(INCLUSION_NODES, [], on(A, A, B, C), incoming(soft(1, "node"), affinity=affinity_in("foo", [""])),
                 {A: 0, B: 33, C: 100}, id="NodeAffinityPolicy honoed with nodeAffinity"),
    pytest.param(INCLUSION_NODES, [], on(A, A, B, C),
                 incoming(soft(1, "node", affinity_policy="Ignore"), affinity=affinity_in("foo", [""])),
                 {A: 66, B: 100, C: 100}, id="NodeAffinityPolicy ignored with nodeAffinity"),
    pytest.param([keyed(A), keyed(B), node(C, labels={"node": C}, taints=UNSCHEDULABLE_TAINT)], [], on(A, A, B, C),
                 incoming(soft(1, "node", taints_policy="Honor")), {A: 0, B: 33, C: 100},
                 id="NodeTaintsPolicy honored"),
    pytest.param([keyed(A), keyed(B), node(C, labels={"node": C}, taints=UNSCHEDULABLE_TAINT)], [], on(A, A, B, C),
                 incoming(soft(1, "node")), {A: 66, B: 100, C: 100}, id="NodeTaintsPolicy ignored"),
    pytest.param(MATCH_LABEL_KEYS_NODES, [], MATCH_LABEL_KEYS_PODS,
                 incoming(soft(1, "zone", selector={}, match_label_keys=["foo"]),
                          soft(1, HOSTNAME, selector={}, match_label_keys=["bar"]), labels=FOO_BAR),
                 {A: 60, B: 20, C: 60, D: 100},
                 id="matchLabelKeys ANDed with LabelSelector when LabelSelector is empty"),
    pytest.param(MATCH_LABEL_KEYS_NODES, [],
                 [existing("p-a1", A), existing("p-b1", B, {**FOO_BAR, "baz": ""}), existing("p-c1", C),
                  existing("p-c2", C, {"bar": ""}), existing("p-d3", C, {"bar": "", "baz": ""})],
                 incoming(soft(1, "zone"), soft(1, HOSTNAME, selector=BAR, match_label_keys=["baz"]),
                          labels={**FOO_BAR, "baz": ""}),
                 {A: 60, B: 20, C: 60, D: 100},
                 id="matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty"),
]


@pytest.mark.parametrize("candidates, failed, pods, pod, want", CASES)
def test_TestPodTopologySpreadScore(candidates, failed, pods, pod, want):
    assert scores(candidates, failed, pods, pod, PodTopologySpreadArgs()) == want


def test_TestPodTopologySpreadScore_system_defaulting_nodes_dont_have_zone_pods_match_service():
    """"system defaulting, nodes don't have zone, pods match service": the default hostname (maxSkew 3) and zone
    constraints; nodes without a zone still get hostname spreading, as with one constraint."""
    pod = incoming(labels={"foo": ""}, owner="ReplicaSet")
    assert scores(FOUR_HOSTS, [], SPREAD_4_3_2_1, pod, PodTopologySpreadArgs()) == {A: 44, B: 66, C: 77, D: 100}
