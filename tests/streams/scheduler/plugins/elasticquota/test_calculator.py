"""The runtime split, ported from core/runtime_quota_calculator_test.go with its numbers."""

import pytest

from streams.scheduler.plugins.elasticquota.calculator import QuotaNode, hamilton_deltas, redistribute

NODE1 = ("test-node1", 40, 5, 10, 0)
NODE2 = ("test-node2", 60, 20, 15, 0)
NODE3 = ("test-node3", 50, 40, 20, 0)
NODE4 = ("test-node4", 80, 70, 15, 0)
NODE4_1 = ("test-node4", 0, 70, 15, 0)
NODE4_2 = ("test-node4", 0, 70, 15, 45)


def runtimes(specs, total):
    nodes = [QuotaNode(name, weight, request, minimum, guarantee, True) for name, weight, request, minimum, guarantee in specs]
    redistribute(nodes, total)
    return {node.name: node.runtime for node in nodes}


@pytest.mark.parametrize("nodes, want", [
    ((NODE1, NODE2, NODE3, NODE4), [5, 20, 35, 40]),
    ((NODE1, NODE2, NODE3, NODE4_1), [5, 20, 40, 15]),
    ((NODE1, NODE2, NODE3, NODE4_2), [5, 20, 30, 45]),
], ids=["TestRuntimeQuotaCalculator_IterationAdjustQuota/case1-no-guarantee",
        "TestRuntimeQuotaCalculator_IterationAdjustQuota/case2-node4.sharedWeight=0",
        "TestRuntimeQuotaCalculator_IterationAdjustQuota/case3-node4.guarantee>min"])
def test_iteration_adjust_quota(nodes, want):
    assert list(runtimes(nodes, 100).values()) == want


def test_iteration_adjust_quota_integer_distribution():
    """TestRuntimeQuotaCalculator_IterationAdjustQuota_IntegerDistribution: 81 GPUs, a donor lending its 3 and ten
    borrowers with equal weights; the 3 go to the first three borrowers by name, nothing is lost."""
    mins = [8, 8, 8, 8, 8, 8, 8, 8, 7, 7]
    specs = [("donor", 1, 0, 3, 0)] + [(f"borrower-{i:02d}", 1, 100, m, 0) for i, m in enumerate(mins)]
    got = runtimes(specs, 81)
    assert sum(got.values()) == 81 and got["donor"] == 0
    assert [got[f"borrower-{i:02d}"] for i in range(10)] == [9, 9, 9, 8, 8, 8, 8, 8, 7, 7]


def test_largest_remainders_get_the_leftover_then_names():
    nodes = [QuotaNode(n, w, 100, 0) for n, w in (("b", 1), ("a", 1), ("c", 2))]
    assert hamilton_deltas(5, 4, nodes) == [1, 1, 3]
    nodes = [QuotaNode(n, 1, 100, 0) for n in "cba"]
    assert hamilton_deltas(5, 3, nodes) == [1, 2, 2]


def test_not_lending_keeps_min_and_nothing_is_split_when_mins_exceed_the_total():
    nodes = [QuotaNode("a", 1, 0, 30, allow_lent=False), QuotaNode("b", 1, 100, 90)]
    redistribute(nodes, 100)
    assert [n.runtime for n in nodes] == [30, 90]
