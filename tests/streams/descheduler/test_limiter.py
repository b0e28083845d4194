"""The eviction limiter: ``TestEvictionLimiter_TableDriven`` (EL-1..EL-5)."""

import pytest

from streams.descheduler.limiter import EvictionLimiter


def run(limiter: EvictionLimiter, pods: list[tuple[str, str]]) -> list[bool]:
    out = []
    for namespace, node in pods:
        allowed = limiter.allow(namespace, node)
        if allowed:
            limiter.done(namespace, node)
        out.append(allowed)
    return out


@pytest.mark.parametrize("limiter, pods, expected, total", [
    pytest.param(EvictionLimiter(), [("default", "node-1"), ("kube-system", "node-2")], [True, True], 2, id="EL-1"),
    pytest.param(EvictionLimiter(per_node=1), [("default", "node-1"), ("default", "node-1")], [True, False], 1,
                 id="EL-2"),
    pytest.param(EvictionLimiter(per_namespace=1), [("default", "node-1"), ("default", "node-2")], [True, False], 1,
                 id="EL-3"),
    pytest.param(EvictionLimiter(total=2), [("default", "node-1"), ("default", "node-1"), ("kube-system", "node-2")],
                 [True, True, False], 2, id="EL-4"),
    pytest.param(EvictionLimiter(per_node=1, per_namespace=1, total=2),
                 [("default", "node-1"), ("default", "node-1"), ("default", "node-2"), ("kube-system", "node-1")],
                 [True, False, False, False], 1, id="EL-5"),
])
def test_eviction_limiter(limiter, pods, expected, total):
    assert run(limiter, pods) == expected
    assert limiter.evicted == total


def test_el1_counts_per_node():
    limiter = EvictionLimiter()
    run(limiter, [("default", "node-1"), ("kube-system", "node-2")])
    assert limiter.node_counts == {"node-1": 1, "node-2": 1}
