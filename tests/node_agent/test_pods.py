"""Pod identities: from the pods topic, from decisions, else from the cgroup tier with Koordinator's defaults."""

import json

import pytest

from node_agent.pods import UNRESOLVED_NAMESPACE, PodDirectory, PodIdentity


def pod_record(uid, node=None, labels=None, priority=None, phase=None, name="web", status=None):
    return {"metadata": {"name": name, "namespace": "shop", "uid": uid, "labels": labels or {}},
            "manifest": json.dumps({"spec": {"containers": [{"name": "c"}]}, "status": status or {}}),
            "nodeName": node, "priority": priority, "phase": phase}


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


@pytest.mark.parametrize("status, expected", [
    ({"podIP": "10.1.2.3", "podIPs": [{"ip": "10.1.2.3"}, {"ip": "fd00::3"}]}, "10.1.2.3"),
    ({"podIPs": [{"ip": "fd00::3"}]}, "fd00::3"),
    ({"phase": "Pending"}, None),
], ids=["podIP", "podIPs-first", "none-yet"])
def test_the_address_of_a_pod_bound_here_comes_from_its_status(status, expected):
    pods = PodDirectory("n1")
    pods.update("shop/web", pod_record("u1", node="n1", status=status))
    assert pods.address_of("u1") == expected


def test_only_pods_bound_here_have_an_address_and_a_decision_keeps_it():
    pods = PodDirectory("n1")
    pods.update("shop/other", pod_record("u2", node="n2", name="other", status={"podIP": "10.1.2.4"}))
    pods.update("shop/web", pod_record("u1", node="n1", status={"podIP": "10.1.2.3"}))
    pods.apply_decision({"pod": {"namespace": "shop", "name": "web", "uid": "u1"}, "nodeName": "n1",
                         "result": "Bound", "priorityClass": "koord-batch", "qosClass": "BE"})
    assert (pods.address_of("u1"), pods.address_of("u2")) == ("10.1.2.3", None)
    assert pods.lookup("u1", "Burstable") == PodIdentity("shop", "web", "koord-batch", "BE", "10.1.2.3")
    pods.update("shop/web", None)
    assert pods.address_of("u1") is None
