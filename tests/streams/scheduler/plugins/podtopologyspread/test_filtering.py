"""PodTopologySpread's Filter under kube-scheduler v1.34's ``filtering_test.go`` tables: ``TestSingleConstraint``
(all 23 cases) and ``TestMultipleConstraints`` (all 13 cases), with the Go names as ids and each node's status
code as the Go tables give it (node inclusion policies on, as they are by default since 1.33)."""

import pytest

from tests.streams.scheduler.plugins.podtopologyspread.builders import (
    BAR, NULL, UNRESOLVABLE, UNSCHEDULABLE, SUCCESS, UNSCHEDULABLE_TAINT, affinity_in, affinity_not_in,
    existing, filter_codes, incoming, spread, zoned)
from tests.streams.scheduler.support import node

A, B, X, Y = "node-a", "node-b", "node-x", "node-y"


def four(**extra):
    """node-a, node-b in zone1 and node-x, node-y in zone2 (``extra``: per-node label overrides)."""
    return [zoned(A, "zone1", **extra.get(A, {})), zoned(B, "zone1", **extra.get(B, {})),
            zoned(X, "zone2", **extra.get(X, {})), zoned(Y, "zone2", **extra.get(Y, {}))]


def on(*placements, labels=None):
    """Existing pods named p-<node letter><n>, labelled foo, on the given nodes."""
    seen: dict[str, int] = {}
    out = []
    for where in placements:
        seen[where] = seen.get(where, 0) + 1
        out.append(existing(f"p-{where[-1]}{seen[where]}", where, labels))
    return out


def codes(a, b, x, y=None):
    return {name: code for name, code in ((A, a), (B, b), (X, x), (Y, y)) if code is not None}


S, U, UU = SUCCESS, UNSCHEDULABLE, UNRESOLVABLE
SPREAD_2_1_0_3 = on(A, A, B, Y, Y, Y)
TAINTED = {"taints": UNSCHEDULABLE_TAINT}


def plain(name, **labels):
    return node(name, labels={"node": name, **labels})


def tainted(name, **labels):
    return node(name, labels={"node": name, **labels}, taints=UNSCHEDULABLE_TAINT)


SINGLE = [
    pytest.param(four(), [], incoming(spread(1, "zone")), codes(S, S, S, S), id="no existing pods"),
    pytest.param(four(), [], incoming(spread(1, "zone", selector=BAR)), codes(S, S, S, S),
                 id="no existing pods, incoming pod doesn't match itself"),
    pytest.param(four(), [existing("p-a1", A, namespace="ns1"), existing("p-b1", A, namespace="ns2"),
                          existing("p-x1", X), existing("p-y1", Y)],
                 incoming(spread(1, "zone")), codes(S, S, U, U),
                 id="existing pods in a different namespace do not count"),
    pytest.param(four(), on(X, Y), incoming(spread(1, "zone", selector=NULL)), codes(S, S, S, S),
                 id="existing pods do not match null selector"),
    pytest.param(four(), on(A, A, B, Y, Y, Y), incoming(spread(1, "zone")), codes(S, S, S, S),
                 id="pods spread across zones as 3/3, all nodes fit"),
    pytest.param([zoned(A, "zone1"), plain(B, zon="zone1"), zoned(X, "zone2"), zoned(Y, "zone2")], on(A, B, X, Y),
                 incoming(spread(1, "zone")), codes(S, UU, U, U),
                 id="pods spread across zones as 1/2 due to absence of label 'zone' on node-b"),
    pytest.param([zoned(A, "zone1"), zoned(X, "zone2")], [], incoming(spread(1, "rack")), codes(UU, None, UU),
                 id="pod cannot be scheduled as all nodes don't have label 'rack'"),
    pytest.param(four(), SPREAD_2_1_0_3, incoming(spread(1, "node")), codes(U, U, S, U),
                 id="pods spread across nodes as 2/1/0/3, only node-x fits"),
    pytest.param(four(), SPREAD_2_1_0_3, incoming(spread(2, "node")), codes(U, S, S, U),
                 id="pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit"),
    pytest.param(four(), SPREAD_2_1_0_3, incoming(spread(1, "node"), labels={"bar": ""}), codes(U, S, S, U),
                 id="pods spread across nodes as 2/1/0/3, but pod doesn't match itself"),
    pytest.param(four(), SPREAD_2_1_0_3, incoming(spread(1, "node"), affinity=affinity_in("node", [A, Y])),
                 codes(S, S, S, U), id="incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits"),
    pytest.param([plain(A), plain(B)], [existing("p-a", A, terminating=True), existing("p-b", B)],
                 incoming(spread(1, "node")), codes(S, U, None), id="terminating Pods should be excluded"),
    pytest.param(four(), on(B, B, Y), incoming(spread(1, "zone"), affinity=affinity_not_in("node", [B])),
                 codes(S, S, U, U), id="incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits"),
    pytest.param([plain(A), plain(B), plain("node-c")], on(A, A, B, B, "node-c"),
                 incoming(spread(2, "node", min_domains=4)), {A: U, B: U, "node-c": S},
                 id="pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, "
                    "then the third node fits"),
    pytest.param([plain(A), plain(B), plain("node-c")], on(A, A, B, B, "node-c"),
                 incoming(spread(2, "node", min_domains=2)), {A: S, B: S, "node-c": S},
                 id="pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, "
                    "then the all nodes fit"),
    pytest.param(four(), on(A, B, Y), incoming(spread(2, "zone", min_domains=3)), codes(U, U, S, S),
                 id="pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, "
                    "then the third and fourth nodes fit"),
    pytest.param(four(), on(A, B, Y), incoming(spread(2, "zone", min_domains=1)), codes(S, S, S, S),
                 id="pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, "
                    "then the all nodes fit"),
    pytest.param([plain(A, foo=""), plain(B, foo=""), plain(X, foo=""), plain(Y)], on(A, B, Y),
                 incoming(spread(1, "node"), node_selector={"foo": ""}), codes(U, U, S, S),
                 id="NodeAffinityPolicy honored with labelSelectors"),
    pytest.param([plain(A, foo=""), plain(B, foo=""), plain(X, foo=""), plain(Y)], on(A, B, Y),
                 incoming(spread(1, "node", affinity_policy="Ignore"), node_selector={"foo": ""}), codes(U, U, S, U),
                 id="NodeAffinityPolicy ignored with labelSelectors"),
    pytest.param([plain(A, foo=""), plain(B, foo=""), plain(X, foo=""), plain(Y)], on(A, B, Y),
                 incoming(spread(1, "node"), affinity=affinity_in("foo", [""])), codes(U, U, S, S),
                 id="NodeAffinityPolicy honored with nodeAffinity"),
    pytest.param([plain(A, foo=""), plain(B, foo=""), plain(X, foo=""), plain(Y)], on(A, B, Y),
                 incoming(spread(1, "node", affinity_policy="Ignore"), affinity=affinity_in("foo", [""])),
                 codes(U, U, S, U), id="NodeAffinityPolicy ignored with labelSelectors"),
    pytest.param([plain(A, foo=""), plain(B, foo=""), plain(X, foo=""), tainted(Y)], on(A, B, Y),
                 incoming(spread(1, "node", taints_policy="Honor")), codes(U, U, S, S),
                 id="NodeTaintsPolicy honored"),
    pytest.param([plain(A, foo=""), plain(B, foo=""), plain(X, foo=""), tainted(Y)], on(A, B, Y),
                 incoming(spread(1, "node")), codes(U, U, S, U), id="NodeTaintsPolicy ignored"),
]


@pytest.mark.parametrize("nodes, pods, pod, want", SINGLE)
def test_TestSingleConstraint(nodes, pods, pod, want):
    assert filter_codes(nodes, pods, pod) == want


FOO_BAR = {"foo": "", "bar": ""}
ZONE_AND_NODE = (spread(1, "zone"), spread(1, "node"))
ZONE_FOO_NODE_BAR = (spread(1, "zone"), spread(1, "node", selector=BAR))
ZONE_BAR_ZONE_FOO = (spread(1, "zone", selector=BAR), spread(1, "zone"))
INCLUSION_NODES = [zoned(A, "zone1", foo=""), zoned(B, "zone1"), zoned(X, "zone2", foo=""),
                   node(Y, labels={"zone": "zone2", "node": Y, "foo": ""}, taints=UNSCHEDULABLE_TAINT)]

MULTIPLE = [
    pytest.param(four(), on(A, A, B, Y, Y, Y), incoming(*ZONE_AND_NODE), codes(U, U, S, U),
                 id="two Constraints on zone and node, spreads = [3/3, 2/1/0/3]"),
    pytest.param(four(), on(A, A, B, Y, Y, Y, Y), incoming(*ZONE_AND_NODE), codes(U, U, U, U),
                 id="two Constraints on zone and node, spreads = [3/4, 2/1/0/4]"),
    pytest.param(four(), [existing("p-a1", A), existing("p-y1", Y, {"bar": ""})],
                 incoming(*ZONE_FOO_NODE_BAR, labels=FOO_BAR), codes(U, U, S, U),
                 id="Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]"),
    pytest.param(four(), [existing("p-a1", A), existing("p-x1", X, {"bar": ""}), existing("p-y1", Y, {"bar": ""})],
                 incoming(*ZONE_FOO_NODE_BAR, labels=FOO_BAR), codes(U, U, U, U),
                 id="Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]"),
    pytest.param(four(), [existing("p-a1", A), existing("p-a2", A, FOO_BAR), existing("p-y1", Y),
                          existing("p-y2", Y, FOO_BAR), existing("p-y3", Y)],
                 incoming(*ZONE_FOO_NODE_BAR, labels=FOO_BAR), codes(U, S, U, U),
                 id="Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]"),
    pytest.param(four(), [existing("p-a1", A), existing("p-x1", X, {"bar": ""}), existing("p-y1", Y, {"bar": ""})],
                 incoming(*ZONE_FOO_NODE_BAR, labels={"bar": ""}), codes(S, S, U, U),
                 id="Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint"),
    pytest.param([zoned(A, "zone1"), zoned(B, "zone1"), node(X, labels={"zone": "zone2"}), zoned(Y, "zone2")],
                 [existing("p-a1", A), existing("p-y3", Y)], incoming(*ZONE_AND_NODE), codes(U, S, UU, U),
                 id="two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]"),
    pytest.param([zoned(A, "zone1", foo=""), zoned(B, "zone1", foo=""), zoned(X, "zone2", foo=""), zoned(Y, "zone2")],
                 on(A, B, Y), incoming(spread(1, "zone"), spread(1, "node", affinity_policy="Ignore"),
                                       node_selector={"foo": ""}), codes(U, U, S, U),
                 id="two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore"),
    pytest.param([zoned(A, "zone1", foo=""), zoned(B, "zone1", foo=""), zoned(X, "zone2", foo=""),
                  node(Y, labels={"zone": "zone2", "node": Y}, taints=UNSCHEDULABLE_TAINT)],
                 on(A, B, Y), incoming(spread(1, "zone", taints_policy="Honor"), spread(1, "node")), codes(U, U, S, U),
                 id="two node inclusion Constraints, zone: honor/honor, node: honor/ignore"),
    pytest.param(INCLUSION_NODES, on(A, B, Y), incoming(*ZONE_AND_NODE, node_selector={"foo": ""}), codes(U, S, S, U),
                 id="two node inclusion Constraints, zone: honor/ignore, node: honor/ignore"),
    pytest.param(INCLUSION_NODES, on(A, B, Y),
                 incoming(spread(1, "zone", taints_policy="Honor"), spread(1, "node", affinity_policy="Ignore"),
                          node_selector={"foo": ""}), codes(U, U, S, U),
                 id="two node inclusion Constraints, zone: honor/honor, node: ignore/ignore"),
    pytest.param(four(), [existing("p-a1", A, FOO_BAR), existing("p-a2", A), existing("p-b1", B, FOO_BAR),
                          existing("p-y1", Y), existing("p-y2", Y, FOO_BAR), existing("p-y3", Y)],
                 incoming(*ZONE_BAR_ZONE_FOO, labels=FOO_BAR), codes(U, U, S, S),
                 id="two Constraints on zone, spreads = [3/3, 2/1]"),
    pytest.param(four(), [existing("p-a1", A, FOO_BAR), existing("p-a2", A), existing("p-b1", B, FOO_BAR),
                          existing("p-y1", Y), existing("p-y2", Y, FOO_BAR), existing("p-y3", Y), existing("p-y4", Y)],
                 incoming(*ZONE_BAR_ZONE_FOO, labels=FOO_BAR), codes(U, U, U, U),
                 id="two Constraints on zone, spreads = [3/4, 2/1]"),
]


@pytest.mark.parametrize("nodes, pods, pod, want", MULTIPLE)
def test_TestMultipleConstraints(nodes, pods, pod, want):
    assert filter_codes(nodes, pods, pod) == want
