"""The pod follower ignores a decision sent again: one whose id it applied, one placing a pod seen deleted."""

from __future__ import annotations

import pytest

from node_agent import pods as podmod
from node_agent.pods import DELETED, DUPLICATE, UNRESOLVED_NAMESPACE, PodDirectory
from tests.node_agent.test_pods import pod_record


def _decision(decision_id: str, result: str = "Scheduled", node: str | None = "n1", reason: str | None = None,
              uid: str = "u1") -> dict:
    return {"decisionId": decision_id, "pod": {"namespace": "shop", "name": "web", "uid": uid}, "nodeName": node,
            "result": result, "reason": reason, "priorityClass": "koord-batch", "qosClass": "BE"}


def _resolved(pods: PodDirectory, uid: str = "u1") -> bool:
    return pods.lookup(uid, "Burstable").namespace != UNRESOLVED_NAMESPACE


@pytest.mark.parametrize("deletion", ["pods-topic-tombstone", "ended-phase", "released-deleted"])
def test_a_replayed_decision_does_not_bring_back_a_deleted_pod(deletion):
    pods = PodDirectory("n1")
    pods.update("shop/web", pod_record("u1"))
    scheduled = _decision("d1")
    assert pods.apply_decision(scheduled) is None and _resolved(pods)
    if deletion == "pods-topic-tombstone":
        pods.update("shop/web", None)
    elif deletion == "ended-phase":
        pods.update("shop/web", pod_record("u1", node="n1", phase="Succeeded"))
    else:
        assert pods.apply_decision(_decision("d2", "Released", reason="Deleted")) is None
    assert not _resolved(pods)
    assert pods.apply_decision(scheduled) == DUPLICATE
    assert pods.apply_decision({**scheduled, "decisionId": "d3", "result": "Bound"}) == DELETED
    assert not _resolved(pods) and len(pods) == 0


def test_a_duplicate_decision_is_ignored_and_a_new_pod_of_the_same_name_is_not():
    pods = PodDirectory("n1")
    scheduled = _decision("d1")
    assert pods.apply_decision(scheduled) is None
    assert pods.apply_decision(_decision("d2", "Released", reason="BoundElsewhere")) is None
    assert pods.apply_decision(scheduled) == DUPLICATE and not _resolved(pods)
    pods.update("shop/web", None)
    assert pods.apply_decision(_decision("d4", uid="u2")) is None and _resolved(pods, "u2")


def test_a_preempted_pod_placed_again_is_ours_again():
    pods = PodDirectory("n1")
    for decision in (_decision("d1"), _decision("d2", "Preempted", reason="Preempted"), _decision("d3")):
        assert pods.apply_decision(decision) is None
    assert _resolved(pods)


def test_the_memory_of_ids_and_deletions_is_bounded(monkeypatch):
    monkeypatch.setattr(podmod, "MAX_APPLIED", 3)
    monkeypatch.setattr(podmod, "MAX_DELETED", 2)
    pods = PodDirectory("n1")
    for i in range(5):
        pods.apply_decision(_decision(f"d{i}", uid=f"u{i}"))
        pods.apply_decision(_decision(f"r{i}", "Released", reason="Deleted", uid=f"u{i}"))
    assert len(pods._applied) == 3 and list(pods._deleted) == ["u3", "u4"]
    assert pods.apply_decision(_decision("d0", uid="u0")) is None, "forgotten: the oldest id and deletion"
    assert pods.apply_decision(_decision("d9", uid="u4")) == DELETED



def test_only_the_deletions_of_this_nodes_pods_are_remembered():
    pods = PodDirectory("n1")
    pods.update("shop/web", pod_record("u1"))
    pods.update("shop/web", None)
    pods.apply_decision(_decision("r2", "Released", node=None, reason="Deleted", uid="u2"))
    pods.apply_decision(_decision("r3", "Released", node="n2", reason="Deleted", uid="u3"))
    assert not pods._deleted


def test_with_the_record_key_the_follower_takes_only_decisions_the_worker_signed(tmp_path, monkeypatch):
    """A forged decision would place a pod on this node for QoS planning; with the deployment's record key the
    follower dead-letters one the worker did not sign (``streams.signing``)."""
    import asyncio

    from node_agent.run import follow_pods
    from streams.schemas import codec
    from streams.signing import Signer
    from streams.topology import load_topology
    from tests.streams.fakeconsumer import OnePollConsumer, message

    monkeypatch.setenv("KOORD_RECORD_KEY", "follower-test-key")
    sign = Signer(b"follower-test-key", "test")
    names = load_topology().names()
    pods = PodDirectory("n1")
    agent = type("Agent", (), {"pods": pods})()
    decision = {**_decision("d1", uid="u9"), "causation": {"inboxTopic": "i", "inboxPartition": 0, "inboxOffset": 0,
                                                 "sourceTopic": "s", "sourcePartition": 0, "sourceOffset": 0},
                "timestamp": 0}
    value = codec.encode("SchedulingDecision", decision)
    forged = message(names["decisions"], 0, value, key=b"shop/web")
    forged.headers = []
    stop = asyncio.Event()
    monkeypatch.setattr("streams.kafka.consumer", lambda *args, **kwargs: OnePollConsumer([forged], stop))
    asyncio.run(follow_pods(agent, "unused:9092", names, stop))
    assert not _resolved(pods, "u9")

    signed = message(names["decisions"], 1, value, key=b"shop/web")
    signed.headers = [sign.header("decisions", b"shop/web", value)]
    stop = asyncio.Event()
    monkeypatch.setattr("streams.kafka.consumer", lambda *args, **kwargs: OnePollConsumer([signed], stop))
    asyncio.run(follow_pods(agent, "unused:9092", names, stop))
    assert _resolved(pods, "u9")
