"""PodTopologySpread's PreFilter counts under kube-scheduler v1.34's ``TestPreFilterState`` table: 25 of its
cases, compared on ``TpValueToMatchNum`` (the matching pods of each domain that has an included node) or on the
Skip status. The cases with a feature gate disabled are left out (the gates are on in 1.34); the Go table's
Services become a ReplicaSet owner (koordstream derives the default selector from its pod's labels)."""

import pytest

from streams.scheduler.plugins.podtopologyspread import DefaultConstraint, PodTopologySpreadArgs
from tests.streams.scheduler.plugins.podtopologyspread.builders import (
    BAR, DNS, NULL, SA, UNSCHEDULABLE_TAINT, affinity_in, affinity_not_in, existing, incoming, prefilter_counts,
    spread, zoned)
from tests.streams.scheduler.support import node

A, B, C, X, Y = "node-a", "node-b", "node-c", "node-x", "node-y"
FOUR = [zoned(A, "zone1"), zoned(B, "zone1"), zoned(X, "zone2"), zoned(Y, "zone2")]
THREE = [zoned(A, "zone1"), zoned(B, "zone1"), zoned(Y, "zone2")]
FOO_BAR = {"foo": "", "bar": ""}


def on(*placements, labels=None):
    seen: dict[str, int] = {}
    out = []
    for where in placements:
        seen[where] = seen.get(where, 0) + 1
        out.append(existing(f"p-{where[-1]}{seen[where]}", where, labels))
    return out


def keyed(name, taints=None, **labels):
    return node(name, labels={"node": name, **labels}, taints=taints)


INCLUSION_NODES = [keyed(A, foo=""), keyed(B, foo=""), keyed(C, bar="")]
INCLUSION_PODS = [existing("p-a", A, {"bar": ""}), existing("p-b", B, {"bar": ""}), existing("p-c", B, {"bar": ""}),
                  existing("p-d", C, {})]
TAINT_NODES = [keyed(A), keyed(B), keyed(C, taints=UNSCHEDULABLE_TAINT, bar="")]
ON_NODE_BAR = spread(1, "node", selector=BAR)
TOLERATES_UNSCHEDULABLE = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]


def defaults(*constraints):
    return PodTopologySpreadArgs(tuple(DefaultConstraint(*c) for c in constraints), "List")


CASES = [
    pytest.param(FOUR, [], incoming(spread(5, "zone", selector={"matchLabels": {"foo": "bar"}})), None,
                 [{"zone1": 0, "zone2": 0}], id="clean cluster with one spreadConstraint"),
    pytest.param(FOUR, on(A, A, B, Y, Y), incoming(spread(1, "zone")), None, [{"zone1": 3, "zone2": 2}],
                 id="normal case with one spreadConstraint"),
    pytest.param(FOUR, on(A, A, B, Y, Y), incoming(spread(1, "zone", selector=NULL)), None,
                 [{"zone1": 0, "zone2": 0}], id="normal case with null label selector"),
    pytest.param(FOUR + [zoned("node-o", "zone3"), zoned("node-p", "zone3")], on(A, A, B, Y, Y),
                 incoming(spread(1, "zone")), None, [{"zone1": 3, "zone2": 2, "zone3": 0}],
                 id="normal case with one spreadConstraint, on a 3-zone cluster"),
    pytest.param(FOUR, [existing("p-a1", A), existing("p-a2", A, namespace="ns1"), existing("p-b1", B),
                        existing("p-y1", Y, namespace="ns2"), existing("p-y2", Y)],
                 incoming(spread(1, "zone")), None, [{"zone1": 2, "zone2": 1}], id="namespace mismatch doesn't count"),
    pytest.param(FOUR, on(A, A, B, Y, Y, Y, Y), incoming(spread(1, "zone"), spread(1, "node")), None,
                 [{"zone1": 3, "zone2": 4}, {A: 2, B: 1, X: 0, Y: 4}], id="normal case with two spreadConstraints"),
    pytest.param(THREE, on(A, A, B, Y, Y, Y, Y),
                 incoming(spread(1, "zone", SA), spread(1, "zone"), spread(1, "node", SA), spread(1, "node")), None,
                 [{"zone1": 3, "zone2": 4}, {A: 2, B: 1, Y: 4}], id="soft spreadConstraints should be bypassed"),
    pytest.param(THREE, [existing("p-a", A), existing("p-b", B, {"bar": ""})],
                 incoming(spread(1, "zone"), ON_NODE_BAR, labels=FOO_BAR), None,
                 [{"zone1": 1, "zone2": 0}, {A: 0, B: 1, Y: 0}], id="different labelSelectors - simple version"),
    pytest.param(THREE, [existing("p-a1", A), existing("p-a2", A, FOO_BAR), existing("p-b1", B), existing("p-y1", Y),
                         existing("p-y2", Y, FOO_BAR), existing("p-y3", Y), existing("p-y4", Y, FOO_BAR)],
                 incoming(spread(1, "zone"), ON_NODE_BAR, labels=FOO_BAR), None,
                 [{"zone1": 3, "zone2": 4}, {A: 1, B: 0, Y: 2}], id="different labelSelectors - complex pods"),
    pytest.param(FOUR, on(A, A, B, Y, Y, Y, Y),
                 incoming(spread(1, "zone"), spread(1, "node"), affinity=affinity_not_in("node", [X])), None,
                 [{"zone1": 3, "zone2": 4}, {A: 2, B: 1, Y: 4}], id="two spreadConstraints, and with podAffinity"),
    pytest.param([], [], incoming(labels={"foo": "bar", "baz": "kar"}, owner="ReplicaSet"),
                 defaults((3, "node", DNS), (2, "node", SA), (5, "rack", DNS)), [{}, {}],
                 id="default constraints and a service"),
    pytest.param([], [], incoming(labels={"foo": "bar"}), defaults((3, "node", DNS)), None,
                 id="default constraints and a service that doesn't match"),
    pytest.param([], [], incoming(spread(1, "zone", selector={"matchLabels": {"baz": "tar"}}),
                                  spread(2, "planet", SA, selector={"matchLabels": {"fot": "rok"}}),
                                  labels={"foo": "bar", "baz": "tar"}, owner="ReplicaSet"),
                 defaults((2, "node", DNS)), [{}], id="default constraints and a service, but pod has constraints"),
    pytest.param([], [], incoming(labels={"foo": "bar"}, owner="ReplicaSet"), defaults((2, "node", SA)), None,
                 id="default soft constraints and a service"),
    pytest.param(FOUR, on(A, A, B, Y, Y, Y, Y), incoming(spread(1, "zone"), spread(1, "node")), None,
                 [{"zone1": 3, "zone2": 4}, {A: 2, B: 1, X: 0, Y: 4}],
                 id="TpKeyToDomainsNum is calculated when MinDomains is enabled"),
    pytest.param(INCLUSION_NODES, INCLUSION_PODS, incoming(ON_NODE_BAR, node_selector={"foo": ""}), None,
                 [{A: 1, B: 2}], id="NodeAffinityPolicy honored with labelSelectors"),
    pytest.param(INCLUSION_NODES, INCLUSION_PODS,
                 incoming(spread(1, "node", selector=BAR, affinity_policy="Ignore"), node_selector={"foo": ""}), None,
                 [{A: 1, B: 2, C: 0}], id="NodeAffinityPolicy ignored with labelSelectors"),
    pytest.param(INCLUSION_NODES, INCLUSION_PODS, incoming(ON_NODE_BAR, affinity=affinity_in("foo", [""])), None,
                 [{A: 1, B: 2}], id="NodeAffinityPolicy honored with nodeAffinity"),
    pytest.param(INCLUSION_NODES, INCLUSION_PODS,
                 incoming(spread(1, "node", selector=BAR, affinity_policy="Ignore"),
                          affinity=affinity_in("foo", [""])), None,
                 [{A: 1, B: 2, C: 0}], id="NodeAffinityPolicy ignored with nodeAffinity"),
    pytest.param(TAINT_NODES, INCLUSION_PODS, incoming(ON_NODE_BAR), None, [{A: 1, B: 2, C: 0}],
                 id="NodeTaintsPolicy ignored"),
    pytest.param(TAINT_NODES, INCLUSION_PODS, incoming(spread(1, "node", selector=BAR, taints_policy="Honor")), None,
                 [{A: 1, B: 2}], id="NodeTaintsPolicy honored"),
    pytest.param(TAINT_NODES, INCLUSION_PODS, incoming(spread(1, "node", selector=BAR, taints_policy="Honor"),
                                                       tolerations=TOLERATES_UNSCHEDULABLE), None,
                 [{A: 1, B: 2, C: 0}], id="NodeTaintsPolicy honored with tolerated taints"),
    pytest.param([zoned(A, "zone1", foo=""), zoned(B, "zone1"), zoned(X, "zone2", foo="")], on(B, B, X),
                 incoming(spread(1, "zone"), spread(1, "node", affinity_policy="Ignore"), node_selector={"foo": ""}),
                 None, [{"zone1": 0, "zone2": 1}, {A: 0, B: 2, X: 1}],
                 id="two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore"),
    pytest.param([zoned(A, "zone1", foo=""), node(B, labels={"zone": "zone1", "node": B}, taints=UNSCHEDULABLE_TAINT),
                  zoned(X, "zone2", foo="")], on(B, B, X),
                 incoming(spread(1, "zone", taints_policy="Honor"), spread(1, "node")), None,
                 [{"zone1": 0, "zone2": 1}, {A: 0, B: 2, X: 1}],
                 id="two node inclusion Constraints, zone: honor/honor, node: honor/ignore"),
    pytest.param([zoned(A, "zone1"), node(B, labels={"zone": "zone1", "node": B, "foo": ""},
                                          taints=UNSCHEDULABLE_TAINT),
                  zoned(X, "zone2", foo=""), zoned(Y, "zone2")], on(A, A, X, Y),
                 incoming(spread(1, "zone"), spread(1, "node"), node_selector={"foo": ""}), None,
                 [{"zone1": 0, "zone2": 1}, {B: 0, X: 1}],
                 id="two node inclusion Constraints, zone: honor/ignore, node: honor/ignore"),
]


@pytest.mark.parametrize("nodes, pods, pod, args, want", CASES)
def test_TestPreFilterState(nodes, pods, pod, args, want):
    assert prefilter_counts(nodes, pods, pod, args or PodTopologySpreadArgs(defaulting_type="List")) == want
