"""Quota trees, ported from core/group_quota_manager_test.go with their numbers (cpu in cores, memory in bytes;
GigaByte = 1024 * 1048576 as in the Go tests)."""

import pytest

from streams.koordinator.labels import LABEL_QUOTA_ALLOW_LENT_RESOURCE, LABEL_QUOTA_IS_PARENT, LABEL_QUOTA_PARENT
from streams.quotas import ROOT, QuotaSpec
from streams.scheduler.plugins.elasticquota.tree import PodCharge, QuotaTree

G = 1024 * 1048576


def spec(name, parent, max_cpu, max_mem, min_cpu, min_mem, lent, is_parent):
    labels = {LABEL_QUOTA_PARENT: parent, LABEL_QUOTA_ALLOW_LENT_RESOURCE: "true" if lent else "false",
              LABEL_QUOTA_IS_PARENT: "true" if is_parent else "false"}
    return QuotaSpec.from_record({"metadata": {"name": name, "labels": labels, "annotations": {}},
                                  "max": {"cpu": max_cpu * 1000, "memory": max_mem},
                                  "min": {"cpu": min_cpu * 1000, "memory": min_mem}})


def tree(total_cpu, total_mem, *specs, scale=True):
    t = QuotaTree("", scale, {"cpu": 1 << 60, "memory": 1 << 60}, {"cpu": 1 << 60, "memory": 1 << 60})
    t.set_total({"cpu": total_cpu * 1000, "memory": total_mem})
    for s in specs:
        t.upsert(s)
    return t


_pods = iter(range(10**6))


def request(t, quota, cpu, mem, non_preemptible=False):
    t.add_pod(quota, f"pod-{next(_pods)}", PodCharge({"cpu": int(cpu * 1000), "memory": mem}, non_preemptible, False))


def runtime(t, name):
    t.refresh()
    value = t.quotas[name].masked_runtime()
    return value["cpu"], value["memory"]


def cores(cpu, mem):
    return cpu * 1000, mem


def test_update_quota_request():
    """TestGroupQuotaManager_UpdateQuotaRequest."""
    t = tree(96, 160 * G, spec("test1", ROOT, 96, 160 * G, 50, 80 * G, True, False),
             spec("test2", ROOT, 96, 160 * G, 40, 80 * G, True, False))
    request(t, "test1", 60, 100 * G)
    assert runtime(t, "test1") == cores(60, 100 * G)
    request(t, "test1", 60, 100 * G)
    assert runtime(t, "test1") == cores(96, 160 * G)
    request(t, "test2", 150, 210 * G)
    assert (runtime(t, "test1"), runtime(t, "test2")) == (cores(53, 80 * G), cores(43, 80 * G))


def test_not_allow_lent_resource():
    """TestGroupQuotaManager_NotAllowLentResource."""
    t = tree(100, 0, spec("test1", ROOT, 96, 0, 60, 0, True, False), spec("test2", ROOT, 96, 0, 40, 0, False, False))
    request(t, "test1", 120, 0)
    assert (runtime(t, "test1")[0], runtime(t, "test2")[0]) == (60_000, 40_000)


@pytest.mark.parametrize("root_lent, child2_lent, want", [
    (False, False, [(60, 20, 20), (60, 40, 20), (80, 60, 20)]),
    (True, True, [(20, 20, 0), (40, 40, 0), (60, 60, 0)]),
    (True, False, [(40, 20, 20), (60, 40, 20), (80, 60, 20)]),
], ids=["TestGroupQuotaManager_NotAllowLentResource_2", "TestGroupQuotaManager_NotAllowLentResource_3",
        "TestGroupQuotaManager_NotAllowLentResource_4"])
def test_not_allow_lent_resource_in_a_tree(root_lent, child2_lent, want):
    t = tree(100, 0, spec("test-root", ROOT, 96, 0, 60, 0, root_lent, True),
             spec("test-child1", "test-root", 96, 0, 20, 0, False, False),
             spec("test-child2", "test-root", 96, 0, 20, 0, child2_lent, False))
    got = []
    for extra in (0, 40, 20):
        if extra:
            request(t, "test-child1", extra, 0)
        got.append(tuple(runtime(t, n)[0] // 1000 for n in ("test-root", "test-child1", "test-child2")))
    assert got == want


def test_multi_update_quota_request_2():
    """TestGroupQuotaManager_MultiUpdateQuotaRequest2: a chain; the leaf's max limits what its parents request."""
    t = tree(96, 160 * G, spec("test1", ROOT, 96, 160 * G, 80, 80 * G, True, True),
             spec("test1-a", "test1", 60, 80 * G, 50, 80 * G, True, True),
             spec("a-123", "test1-a", 30, 60 * G, 20, 40 * G, True, False))
    request(t, "a-123", 10, 30 * G)
    assert [runtime(t, n) for n in ("a-123", "test1-a", "test1")] == [cores(10, 30 * G)] * 3
    request(t, "a-123", 15, 15 * G)
    assert runtime(t, "a-123") == cores(25, 45 * G)
    assert t.quotas["test1-a"].request == t.quotas["test1"].request == {"cpu": 25_000, "memory": 45 * G}
    request(t, "a-123", 30, 30 * G)
    assert runtime(t, "a-123") == cores(30, 60 * G)
    assert t.quotas["test1-a"].request == t.quotas["test1"].request == {"cpu": 30_000, "memory": 60 * G}


def _scaled(scale, total):
    t = tree(total, total * G, spec("p", ROOT, 1000, 1000 * G, 300, 300 * G, True, True),
             *(spec(n, "p", 1000, 1000 * G, 100, 100 * G, True, False) for n in "abc"), scale=scale)
    return t


def test_scaled_min_quota_1():
    """TestGroupQuotaManager_MultiUpdateQuotaRequest_WithScaledMinQuota1."""
    t = _scaled(True, 200)
    for name in "abc":
        request(t, name, 200, 200 * G)
    assert runtime(t, "p") == cores(200, 200 * G)
    assert [runtime(t, n) for n in "abc"] == [(66667, 200 * G // 3 + 1), (66667, 200 * G // 3 + 1),
                                             (66666, 200 * G // 3)]
    assert [t.quotas[n].auto_min for n in "abc"] == [{"cpu": 66666, "memory": 200 * G // 3}] * 3
    assert t.quotas["p"].auto_min == {"cpu": 200_000, "memory": 200 * G}
    t.set_total({"cpu": 600_000, "memory": 600 * G})
    assert runtime(t, "p") == cores(600, 600 * G)
    assert [runtime(t, n) for n in "abc"] == [cores(200, 200 * G)] * 3
    assert t.quotas["p"].auto_min == {"cpu": 300_000, "memory": 300 * G}
    assert [t.quotas[n].auto_min for n in "abc"] == [{"cpu": 100_000, "memory": 100 * G}] * 3


def test_scaled_min_quota_2():
    """TestGroupQuotaManager_MultiUpdateQuotaRequest_WithScaledMinQuota2: b requests nothing."""
    t = _scaled(True, 200)
    request(t, "a", 200, 200 * G)
    request(t, "c", 200, 200 * G)
    assert runtime(t, "p") == cores(200, 200 * G)
    assert [runtime(t, n) for n in "abc"] == [cores(100, 100 * G), (0, 0), cores(100, 100 * G)]
    assert [t.quotas[n].auto_min for n in "abc"] == [{"cpu": 66666, "memory": 200 * G // 3}] * 3


def test_scaled_min_quota_3():
    """TestGroupQuotaManager_MultiUpdateQuotaRequest_WithScaledMinQuota3: scaling off, mins exceed the total."""
    t = _scaled(False, 200)
    for name in "abc":
        request(t, name, 200, 200 * G)
    assert runtime(t, "p") == cores(300, 300 * G)
    assert [runtime(t, n) for n in "abc"] == [cores(100, 100 * G)] * 3
    assert [t.quotas[n].auto_min for n in "abc"] == [{"cpu": 100_000, "memory": 100 * G}] * 3


def test_multi_update_quota_request_and_non_preemptible_request():
    """TestGroupQuotaManager_MultiUpdateQuotaRequestAndNonPreemptibleRequest: limited at every level,
    non-preemptible requests propagate unchanged."""
    t = tree(0, 0, spec("test1", ROOT, 96, 160 * G, 50, 80 * G, True, True),
             spec("test1-sub1", "test1", 96, 160 * G, 50, 80 * G, True, True),
             spec("test1-sub1-1", "test1-sub1", 96, 160 * G, 50, 80 * G, True, False))
    request(t, "test1-sub1-1", 70, 190 * G)
    request(t, "test1-sub1-1", 50, 100 * G, non_preemptible=True)
    t.refresh()
    leaf, sub, top = (t.quotas[n] for n in ("test1-sub1-1", "test1-sub1", "test1"))
    assert leaf.request == {"cpu": 120_000, "memory": 290 * G}
    assert sub.request == top.request == {"cpu": 96_000, "memory": 160 * G}
    assert leaf.np_request == sub.np_request == top.np_request == {"cpu": 50_000, "memory": 100 * G}


def test_used_propagates_and_system_default_use_lowers_the_root():
    t = tree(100, 100 * G, spec("a", ROOT, 100, 100 * G, 0, 0, True, False))
    t.add_pod("a", "x", PodCharge({"cpu": 10_000, "memory": G}, False, True))
    t.add_pod("koordinator-default-quota", "y", PodCharge({"cpu": 30_000, "memory": G}, False, True))
    t.refresh()
    assert t.quotas["a"].used == {"cpu": 10_000, "memory": G}
    assert t.quotas[ROOT].runtime["cpu"] == 70_000
