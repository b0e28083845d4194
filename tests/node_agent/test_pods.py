"""Pod identities: from the pods topic, from decisions, else from the cgroup tier with Koordinator's defaults."""

import json

import pytest

from node_agent.pods import UNRESOLVED_NAMESPACE, PodDirectory, PodIdentity


def pod_record(uid, node=None, labels=None, priority=None, phase=None, name="web"):
    return {"metadata": {"name": name, "namespace": "shop", "uid": uid, "labels": labels or {}},
            "manifest": json.dumps({"spec": {"containers": [{"name": "c"}]}}), "nodeName": node,
            "priority": priority, "phase": phase}


@pytest.mark.parametrize("tier, expected", [
    ("Guaranteed", PodIdentity(UNRESOLVED_NAMESPACE, "u1", "koord-prod", "LSR")),
    ("Burstable", PodIdentity(UNRESOLVED_NAMESPACE, "u1", "koord-prod", "LS")),
    ("BestEffort", PodIdentity(UNRESOLVED_NAMESPACE, "u1", "koord-batch", "BE")),
], ids=["guaranteed", "burstable", "besteffort"])
def test_unknown_pods_are_named_by_uid_with_tier_defaults(tier, expected):
    assert PodDirectory("n1").lookup("u1", tier) == expected


def test_pods_topic_names_pods_bound_here_and_forgets_others():
    pods = PodDirectory("n1")
    pods.update("shop/web", pod_record("u1", node="n1", labels={"koordinator.sh/qosClass": "LS"}, priority=9000))
    pods.update("shop/other", pod_record("u2", node="n2", name="other"))
    assert pods.lookup("u1", "BestEffort") == PodIdentity("shop", "web", "koord-prod", "LS")
    assert pods.lookup("u2", "Burstable").namespace == UNRESOLVED_NAMESPACE
    pods.update("shop/web", None)
    assert pods.lookup("u1", "Burstable").namespace == UNRESOLVED_NAMESPACE


def test_decisions_bind_unbound_pods_and_releases_unbind_them():
    pods = PodDirectory("n1")
    pods.update("shop/web", pod_record("u1"))
    decision = {"pod": {"namespace": "shop", "name": "web", "uid": "u1"}, "nodeName": "n1", "result": "Scheduled",
                "priorityClass": "koord-batch", "qosClass": "BE"}
    pods.apply_decision(decision)
    assert pods.lookup("u1", "Burstable") == PodIdentity("shop", "web", "koord-batch", "BE")
    pods.apply_decision({**decision, "nodeName": None, "result": "Released"})
    assert pods.lookup("u1", "Burstable").namespace == UNRESOLVED_NAMESPACE


def test_unbound_pods_are_bounded():
    pods = PodDirectory("n1", max_unbound=3)
    for i in range(10):
        pods.update(f"shop/p{i}", pod_record(f"u{i}", name=f"p{i}"))
    assert len(pods) == 3
