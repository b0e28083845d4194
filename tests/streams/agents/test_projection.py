"""Tests of streams.agents.projection's reading of consumed records: whatever a record holds, it becomes a
ProjectedRecord, and one the router would reject carries the problem that makes it a dead letter."""

from __future__ import annotations

import copy

import pytest
from aiokafka.structs import ConsumerRecord

from state.db import create_all, open_database, sqlite_url
from state.projection import Projector
from state.queries import get_deadletters, get_pods
from streams.agents.projection import VALIDATED, to_projected
from streams.objects import load_and_validate
from streams.schemas import codec

POD = """
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  containers: [{{name: main, image: nginx, resources: {{requests: {{cpu: 500m}}}}}}]
"""


def pod_record(name: str) -> dict:
    [record] = load_and_validate("-", stdin_text=POD.format(name=name))
    return copy.deepcopy(record.record)


def message(offset: int, key: bytes | None, value: bytes | None, topic: str = "koord.pods") -> ConsumerRecord:
    return ConsumerRecord(topic, 0, offset, 1_700_000_000_000 + offset, 0, key, value, None,
                          len(key or b""), len(value or b""), [])


def projected(msg: ConsumerRecord):
    source_id = msg.topic.removeprefix("koord.")
    return to_projected(msg, source_id if source_id in VALIDATED else None)


def test_a_valid_pod_has_no_problem():
    record = projected(message(1, b"default/web", codec.encode("Pod", pod_record("web"))))

    assert (record.key, record.schema, record.problem) == ("default/web", "Pod", None)


def negative(record: dict) -> dict:
    record["requests"]["cpu"] = -1
    return record


@pytest.mark.parametrize(("key", "value", "problem"), [
    pytest.param(b"default/\xff", codec.encode("Pod", pod_record("web")), "key is not UTF-8", id="non-utf8-key"),
    pytest.param(None, codec.encode("Pod", pod_record("web")), "record has no key", id="no-key"),
    pytest.param(b"default/web", b"\xc3\x01garbage", "undecodable record", id="undecodable"),
    pytest.param(b"default/web", b"\x00", "undecodable record", id="not-avro"),
    pytest.param(b"default/web", codec.encode("Pod", negative(pod_record("web"))),
                 "requests.cpu: quantity must not be negative: -1", id="negative-request"),
    pytest.param(b"default/other", codec.encode("Pod", pod_record("web")), "does not name the object", id="wrong-key"),
])
def test_a_record_the_router_rejects_carries_its_problem(key, value, problem):
    record = projected(message(1, key, value))

    assert problem in record.problem
    assert (record.raw_key, record.raw) == (key, value)


def test_a_key_that_is_not_utf8_on_a_topic_the_router_does_not_read_is_no_problem():
    ack = {"aggregate": "inbox-node", "outputIds": [], "timestamp": 1, "causation": {
        "inboxTopic": "koord.inbox.node", "inboxPartition": 0, "inboxOffset": 1, "sourceTopic": "koord.pods",
        "sourcePartition": 0, "sourceOffset": 1}}

    record = projected(message(1, b"\xff", codec.encode("Ack", ack), topic="koord.acks"))

    assert (record.key, record.raw_key, record.problem) == (None, b"\xff", None)


def test_a_batch_with_rejected_records_projects_only_the_valid_ones(tmp_path):
    """The failures the review found: a key that is not UTF-8 stopped the projection, and a pod the
    router rejected appeared in `koord get pods`."""
    engine = open_database(sqlite_url(tmp_path / "koord.db"))
    create_all(engine)
    batch = [message(1, b"default/\xff", codec.encode("Pod", pod_record("web"))),
             message(2, b"default/bad", codec.encode("Pod", negative(pod_record("bad")))),
             message(3, b"default/next", codec.encode("Pod", pod_record("next")))]

    applied = Projector(engine).apply([projected(m) for m in batch])

    assert applied.projected == 1
    assert [pod["metadata"]["name"] for pod in get_pods(engine)] == ["next"]
    assert [(d["stage"], d["sourceOffset"]) for d in get_deadletters(engine)] == [("projection", 1), ("projection", 2)]
    engine.dispose()


def test_records_the_router_refuses_for_size_or_a_contradicting_manifest_are_not_shown(tmp_path):
    """Issue 37 failure 10: a pod the router dead-lettered for its size still appeared in `koord get`, and one
    whose manifest contradicts its typed requests would show one pod while another was scheduled. An update
    the router refuses leaves the object as it was."""
    engine = open_database(sqlite_url(tmp_path / "koord.db"))
    create_all(engine)
    contradicting = pod_record("web")
    contradicting["manifest"] = contradicting["manifest"].replace('"cpu":"500m"', '"cpu":"999"')
    big = codec.encode("Pod", pod_record("big"))
    padding = [("pad", bytes(1_044_480 - len(big)))]
    batch = [message(1, b"default/web", codec.encode("Pod", pod_record("web"))),
             message(2, b"default/web", codec.encode("Pod", contradicting)),
             ConsumerRecord("koord.pods", 0, 3, 1, 0, b"default/big", big, None, 11, len(big), padding)]

    applied = Projector(engine).apply([projected(m) for m in batch])

    assert applied.projected == 1
    [web] = get_pods(engine)
    assert web["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "500m"
    letters = {d["sourceOffset"]: d["reason"] for d in get_deadletters(engine)}
    assert "contradict the manifest's containers" in letters[2]
    assert "over the 1,044,480-byte limit of a record" in letters[3]
    engine.dispose()


def test_a_decision_the_pipeline_did_not_sign_is_a_dead_letter_and_a_signed_one_is_read():
    """Issue 37 failure 9, its second half: a forged decision became the pod's latest in the read model."""
    from streams.signing import Signer

    sign = Signer(b"s" * 32, "test")
    decision = {"decisionId": "forged-1", "pod": {"namespace": "default", "name": "web", "uid": None},
                "result": "Scheduled", "nodeName": "elsewhere", "timestamp": 0,
                "causation": {"inboxTopic": "koord.inbox.scheduling", "inboxPartition": 0, "inboxOffset": 0,
                              "sourceTopic": "koord.pods", "sourcePartition": 0, "sourceOffset": 0}}
    value = codec.encode("SchedulingDecision", decision)
    forged = message(7, b"default/web", value, topic="koord.decisions")
    assert to_projected(forged, "decisions", sign).problem == (
        "the record has no koord-mac header: only the pipeline writes decisions")
    signed = ConsumerRecord("koord.decisions", 0, 8, 1_700_000_000_008, 0, b"default/web", value, None, 11,
                            len(value), [sign.header("decisions", b"default/web", value)])
    record = to_projected(signed, "decisions", sign)
    assert (record.problem, record.schema, record.value["nodeName"]) == (None, "SchedulingDecision", "elsewhere")
