"""The incremental refresh of a quota tree (a pod change re-sums its path and redistributes only under the highest
parent one of whose children's limited changed) against a full recomputation of a copy of the tree."""

import copy
import random

import pytest

from streams.quotas import DEFAULT, ROOT, SYSTEM, QuotaSpec
from streams.scheduler.plugins.elasticquota.tree import PodCharge, QuotaTree

FIELDS = ("request", "limited", "used", "np_used", "np_request", "runtime", "auto_min")


def random_spec(rng: random.Random, name: str, parent: str, is_parent: bool) -> QuotaSpec:
    maximum = {"cpu": rng.choice([5, 10, 20, 40, 100])}
    if rng.random() < 0.8:
        maximum["memory"] = rng.choice([5, 10, 20, 40, 100])
    minimum = {key: rng.choice([0, 0, 2, 5, 10, 20]) for key in maximum}
    weight = {key: rng.choice([0, 1, 2, 5, value]) for key, value in maximum.items()}
    return QuotaSpec(name, None, parent, is_parent, rng.random() < 0.7, maximum, minimum, weight)


def random_tree(rng: random.Random) -> QuotaTree:
    """Two or three levels under the root, with varied mins, maxes, weights and lending."""
    tree = QuotaTree("", rng.random() < 0.5, {"cpu": 30, "memory": 30}, {"cpu": 30, "memory": 30})
    tree.set_total({"cpu": rng.choice([20, 50, 80, 200]), "memory": rng.choice([20, 50, 80, 200])})
    for top in range(rng.randint(2, 4)):
        name = f"q{top}"
        children = rng.randint(0, 3) if rng.random() < 0.7 else 0
        tree.upsert(random_spec(rng, name, ROOT, bool(children)))
        for child in range(children):
            child_name = f"{name}-{child}"
            grandchildren = rng.randint(1, 2) if rng.random() < 0.4 else 0
            tree.upsert(random_spec(rng, child_name, name, bool(grandchildren)))
            for grandchild in range(grandchildren):
                tree.upsert(random_spec(rng, f"{child_name}-{grandchild}", child_name, False))
    return tree


def fully_refreshed(tree: QuotaTree) -> QuotaTree:
    reference = copy.deepcopy(tree)
    reference.dirty = True
    reference.refresh()
    return reference


def assert_same(tree: QuotaTree, reference: QuotaTree, step: int) -> None:
    tree.refresh()
    for name, info in tree.quotas.items():
        expected = reference.quotas[name]
        for field in FIELDS:
            assert getattr(info, field) == getattr(expected, field), (step, name, field)


def pod_change(rng: random.Random, tree: QuotaTree, pods: dict[str, str], serial: int) -> None:
    """One random add_pod (new or re-charged), remove_pod or set_assigned; ``pods`` maps pod keys to quotas."""
    names = [n for n in tree.quotas if n != ROOT]
    leaves = [n for n in names if not tree.children(n) and n not in (SYSTEM, DEFAULT)]
    kind = rng.choice(["add", "add", "add", "recharge", "remove", "assign", "assign", "remove-unknown"])
    if kind in ("recharge", "remove", "assign") and not pods:
        kind = "add"
    if kind == "add":
        quota = rng.choice(leaves) if rng.random() < 0.8 else rng.choice(names)
        key = f"pod-{serial}"
        pods[key] = quota
    elif kind == "remove-unknown":
        tree.remove_pod(rng.choice(names), "no-such-pod")
        return
    else:
        key = rng.choice(sorted(pods))
        quota = pods[key]
    if kind == "remove":
        del pods[key]
        tree.remove_pod(quota, key)
    elif kind == "assign":
        tree.set_assigned(quota, key, not tree.quotas[quota].pods[key].assigned)
    else:
        request = {"cpu": rng.randint(1, 12), "memory": rng.randint(0, 12)}
        if rng.random() < 0.2:
            request["gpu"] = 1
        tree.add_pod(quota, key, PodCharge(request, rng.random() < 0.3, rng.random() < 0.5))


@pytest.mark.parametrize("seed", range(30))
def test_incremental_refresh_equals_full_refresh(seed):
    rng = random.Random(seed)
    tree = random_tree(rng)
    pods: dict[str, str] = {}
    serial = 0
    tree.refresh()
    for step in range(80):
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            serial += 1
            pod_change(rng, tree, pods, serial)
        if rng.random() < 0.03:
            tree.set_total({"cpu": rng.choice([20, 50, 80, 200]), "memory": rng.choice([20, 50, 80, 200])})
        reference = fully_refreshed(tree)
        name = rng.choice(sorted(n for n in tree.quotas if n != ROOT))
        read = rng.choice(["limit", "used", "np_used"])
        if read == "limit":
            assert tree.limit(name, True) == reference.limit(name, True), (step, name)
        else:
            non_preemptible = read == "np_used"
            assert tree.used(name, non_preemptible) == reference.used(name, non_preemptible), (step, name)
        assert_same(tree, reference, step)


def two_teams() -> QuotaTree:
    tree = QuotaTree("", True, {"cpu": 100}, {"cpu": 100})
    tree.set_total({"cpu": 100})
    tree.upsert(QuotaSpec("a", None, ROOT, False, True, {"cpu": 10}, {"cpu": 5}, {"cpu": 10}))
    tree.upsert(QuotaSpec("b", None, ROOT, False, True, {"cpu": 50}, {"cpu": 5}, {"cpu": 50}))
    tree.add_pod("a", "full", PodCharge({"cpu": 20}, False, False))
    tree.refresh()
    return tree


def test_a_pod_that_changes_no_limited_redistributes_nothing(monkeypatch):
    tree = two_teams()
    calls = []
    monkeypatch.setattr(tree, "_distribute", lambda parent, *args: calls.append(parent.name))
    tree.add_pod("a", "beyond-max", PodCharge({"cpu": 3}, False, False))
    tree.set_assigned("a", "full", True)
    assert tree.used("a") == {"cpu": 20}
    assert calls == []
    tree.add_pod("b", "within-max", PodCharge({"cpu": 3}, False, False))
    tree.limit("b", True)
    assert calls == [ROOT]


def test_version_bumps_only_when_something_was_recomputed():
    tree = two_teams()
    version = tree.version
    tree.limit("a", True)
    assert tree.version == version
    tree.add_pod("b", "x", PodCharge({"cpu": 1}, False, False))
    tree.used("b")
    assert tree.version == version + 1
    tree.used("a")
    assert tree.version == version + 1
