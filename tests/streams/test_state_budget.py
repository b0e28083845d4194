"""Bounded state: every object a state table keeps fits its budget (``limits.STORED_OBJECT_MAX_BYTES``), or is
refused where it enters, by ``koord apply``, the router and the bridge alike (``size.state_problem``).

The issue's objects: a Pod of 400,000 ``"`` in a manifest field (an 800 KB record) was kept as a 1.6 MB
scheduling-state entry, its manifest escaped again; a 790 KB PodGroup was kept by the domain router as
1.05 MB of base64. Both stopped the worker at their changelog send.
"""

from __future__ import annotations

import base64
import copy
import json
import types

import pytest
import hypothesis
from hypothesis import given, settings
from hypothesis import strategies as st

from streams import limits
from streams.validation import check_source
from streams.bridge import convert
from streams.bridge.resources import WATCHED
from streams.domainrouter import Envelope, stored_envelope
from streams.domains import DomainTable
from streams.objects import ManifestError, load_and_validate, podinfo
from streams.objects.size import state_problem
from streams.scheduler.domain import SchedulingDomain
from streams.schemas import codec
from tests.streams.scheduler.support import T0, event, node

QUOTES = '"' * 400_000


def _json_size(value) -> int:
    return len(json.dumps(value, separators=(",", ":")))


def _pod(name: str, spec_extra: dict | None = None, container_extra: dict | None = None) -> dict:
    container = {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}},
                 **(container_extra or {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [container], **(spec_extra or {})}}


def _record(body: dict):
    [record] = load_and_validate("-", stdin_text=json.dumps(body))
    return record


def _affinity(values: list[str]) -> dict:
    term = {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": values}]}
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [term]}}}}


QUOTES_POD = _pod("quotes", container_extra={"args": [QUOTES]})
BIG_POD_GROUP = {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "PodGroup",
                 "metadata": {"name": "big", "namespace": "default"},
                 "spec": {"minMember": 1, "description": "x" * 790_000}}


def test_the_budget_leaves_an_entry_room_for_the_largest_table_key_within_the_producer_limit():
    key = json.dumps("d" * limits.KEY_MAX_BYTES + "|descheduler/" + "k" * limits.KEY_MAX_BYTES)
    assert limits.record_size(key, bytes(limits.STATE_ENTRY_MAX_BYTES)) <= limits.PRODUCER_MAX_BYTES
    assert limits.STORED_OBJECT_MAX_BYTES == 978_944


def test_a_pod_of_400000_quotes_is_applied_and_stored_without_its_manifest_bulk():
    record = _record(QUOTES_POD).record
    assert _json_size({"record": record}) > limits.PRODUCER_MAX_BYTES
    stored = podinfo.stored_record(record)
    assert _json_size(stored) < 1_000
    assert json.loads(stored["manifest"])["spec"]["containers"] == [
        {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}}]
    assert state_problem("Pod", record) is None


def test_the_reduced_record_reads_as_the_whole_one_and_reducing_it_again_changes_nothing():
    body = _pod("kept", spec_extra={**_affinity(["a", "b"]), "tolerations": [{"operator": "Exists"}],
                                    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone"}],
                                    "volumes": [{"name": "v", "emptyDir": {}}], "overhead": {"cpu": "100m"}},
                container_extra={"ports": [{"containerPort": 80, "hostPort": 8080}], "env": [{"name": "X"}]})
    body["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": True}]
    body["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    body["status"] = {"qosClass": "Burstable", "conditions": [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:00:01Z"}], "hostIP": "1.2.3.4"}
    record = _record(body).record
    stored = podinfo.stored_record(record)
    assert podinfo.stored_record(stored) == stored
    assert podinfo.from_record("default/kept", stored) == podinfo.from_record("default/kept", record)
    restored = podinfo.from_record("default/kept", stored, stored=True)
    assert restored == podinfo.from_record("default/kept", record) and restored.record == stored
    manifest = json.loads(stored["manifest"])
    assert set(manifest["spec"]) == {"affinity", "tolerations", "topologySpreadConstraints", "volumes", "overhead",
                                     "containers"}
    assert manifest["spec"]["containers"][0]["ports"] == [{"containerPort": 80, "hostPort": 8080}]
    assert manifest["metadata"]["ownerReferences"][0]["name"] == "rs"
    assert "hostIP" not in manifest["status"]


def test_a_pod_whose_kept_fields_are_too_big_is_refused_by_apply_naming_it_and_the_budget():
    body = _pod("huge-affinity", spec_extra=_affinity([QUOTES[:50] for _ in range(8_000)]))
    with pytest.raises(ManifestError) as refused:
        load_and_validate("-", stdin_text=json.dumps(body))
    [problem] = refused.value.problems
    assert "(Pod default/huge-affinity)" in problem
    assert f"over the {limits.STORED_OBJECT_MAX_BYTES:,}-byte budget of a stored object" in problem


def test_the_router_dead_letters_a_record_whose_stored_form_is_over_the_budget():
    body = _pod("huge-affinity", spec_extra=_affinity([QUOTES[:50] for _ in range(8_000)]))
    from streams.objects.documents import Document
    from streams.objects.records import to_record
    record = to_record(Document("raw", 0, 0, body))
    value = codec.encode(record.schema, record.record)
    assert limits.too_big(value, record.key) is None
    message = types.SimpleNamespace(key=record.key.encode(), value=value, headers=None)
    assert "budget of a stored object" in check_source("pods", message, T0)[3]
    fine = _record(QUOTES_POD)
    message = types.SimpleNamespace(key=fine.key.encode(), value=codec.encode(fine.schema, fine.record), headers=None)
    assert check_source("pods", message, T0)[3] is None


def _envelope(record, offset: int = 5) -> bytes:
    return codec.encode("InboxEvent", {
        "sourceTopic": "koord.podgroups", "sourcePartition": 0, "sourceOffset": offset, "timestamp": T0,
        "key": record.key, "payload": codec.encode(record.schema, record.record), "ack": True})


def test_a_790_kb_pod_group_is_kept_by_the_domain_router_as_json_and_sent_to_a_new_domain_unchanged():
    record = _record(BIG_POD_GROUP)
    value = _envelope(record)
    assert len(base64.b64encode(value)) > limits.PRODUCER_MAX_BYTES
    table = DomainTable(0)
    envelope = Envelope(value, ack=True)
    table.route(event("PodGroup", record.key, record.record), envelope.stored())
    [(key, entry)] = [(k, v) for k, v in table.take_changes().items() if k.startswith("stored/")]
    assert _json_size(entry) < limits.STORED_OBJECT_MAX_BYTES
    restored = DomainTable.restore(0, {key: entry})
    [stored] = restored.stored.values()
    assert stored_envelope(stored.envelope) == envelope.forward(ack=False)


def test_a_router_entry_written_as_base64_before_still_restores_and_sends():
    record = _record(_pod("small"))
    value = _envelope(record)
    table = DomainTable.restore(0, {"stored/PodGroup:default/small": ["koord.podgroups", 0, 5,
                                                                      base64.b64encode(value).decode()]})
    [stored] = table.stored.values()
    assert stored_envelope(stored.envelope) == value


def _events(*bodies, start: int = 0):
    out = []
    for index, body in enumerate(bodies):
        record = _record(body)
        out.append(event(record.kind, record.key, record.record, ts=T0 + 10 * (start + index)))
    return out


def _run(domain, events):
    return [output for ev in events for output in domain.handle(ev)]


def test_a_domain_restored_from_reduced_or_old_whole_entries_decides_as_the_live_one():
    first = [node("n1", cpu=2000, ts=T0), node("n2", cpu=4000, ts=T0)] + _events(
        QUOTES_POD, _pod("a"), _pod("b", spec_extra=_affinity(["z"])), start=1)
    then = _events(_pod("c"), _pod("d", container_extra={"args": [QUOTES[:1000]]}), start=10)
    live = SchedulingDomain("default")
    _run(live, first)
    entries = live.entries()
    assert max(_json_size(value) for value in entries.values()) < 10_000
    old = copy.deepcopy(entries)
    for ev in first:
        if ev.kind == "Pod":
            old[f"pod/{ev.key}"]["record"] = ev.record
    expected = _run(live, then)
    assert _run(SchedulingDomain.restore("default", entries), then) == expected
    assert _run(SchedulingDomain.restore("default", old), then) == expected
    assert [d["result"] for name, d in expected if name == "SchedulingDecision"] == ["Scheduled", "Scheduled"]


def test_the_bridge_refuses_an_object_over_the_budget_as_a_dead_letter_naming_it():
    pods = next(r for r in WATCHED if r.kind == "Pod")
    obj = _pod("huge-affinity", spec_extra=_affinity([QUOTES[:50] for _ in range(8_000)]))
    obj["metadata"]["resourceVersion"] = "77"
    with pytest.raises(ManifestError) as refused:
        convert.to_object_record(pods, obj)
    letter = convert.dead_letter_record(pods, obj, str(refused.value), "koord.pods")
    assert letter["reason"].startswith("Pod default/huge-affinity resourceVersion 77: ")
    assert "budget of a stored object" in letter["reason"]
    assert limits.too_big(codec.encode("DeadLetter", letter), letter["key"]) is None
    assert convert.to_object_record(pods, {**QUOTES_POD, "metadata": {**QUOTES_POD["metadata"],
                                                                      "resourceVersion": "78"}}).key == "default/quotes"


def test_a_node_whose_annotations_hold_200000_quotes_is_kept_without_its_manifest():
    body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n9", "annotations": {"a": QUOTES[:200_000]}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
    record = _record(body).record
    assert _json_size(record) > limits.PRODUCER_MAX_BYTES
    assert state_problem("Node", record) is None
    domain = SchedulingDomain("default")
    domain.handle(event("Node", "n9", record, ts=T0))
    assert _json_size(domain.entries()["node/n9"]) < limits.STORED_OBJECT_MAX_BYTES
    assert state_problem("NodeMetric", {"manifest": QUOTES}) is None


def _pod_base() -> dict:
    body = _pod("heavy", spec_extra={"volumes": [{"name": "v", "emptyDir": {}}],
                                     "tolerations": [{"key": "k", "operator": "Equal", "value": "v"}]})
    body["metadata"]["annotations"] = {}
    return body


HEAVY_FIELDS = {
    "Pod": (_pod_base, {
        "annotation": lambda body, text: body["metadata"]["annotations"].update({"example.com/blob": text}),
        "container args": lambda body, text: body["spec"]["containers"][0].update(args=[text]),
        "port name": lambda body, text: body["spec"]["containers"][0].update(ports=[{"containerPort": 80,
                                                                                     "name": text}]),
        "volume": lambda body, text: body["spec"]["volumes"][0]["emptyDir"].update(medium=text),
        "toleration": lambda body, text: body["spec"]["tolerations"][0].update(value=text),
        "hostname": lambda body, text: body["spec"].update(hostname=text)}),
    "PodGroup": (lambda: {**BIG_POD_GROUP, "metadata": {"name": "heavy", "namespace": "default", "annotations": {}},
                          "spec": {"minMember": 1}}, {
        "annotation": lambda body, text: body["metadata"]["annotations"].update({"example.com/blob": text}),
        "spec field": lambda body, text: body["spec"].update(description=text)}),
    "PersistentVolumeClaim": (lambda: {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                       "metadata": {"name": "heavy", "namespace": "default", "annotations": {}},
                                       "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local"}}, {
        "annotation": lambda body, text: body["metadata"]["annotations"].update({"example.com/blob": text}),
        "selector": lambda body, text: body["spec"].update(selector={"matchLabels": {"k": text[:63]}},
                                                           dataSource={"kind": "Snapshot", "name": text})}),
    "Node": (lambda: {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "heavy", "annotations": {}},
                      "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}, {
        "annotation": lambda body, text: body["metadata"]["annotations"].update({"example.com/blob": text}),
        "status field": lambda body, text: body["status"].update(nodeInfo={"osImage": text})}),
}


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(sorted(HEAVY_FIELDS)), data=st.data(),
       char=st.sampled_from(['"', "\\", "x", "é", "\u2028", "\U0001f600", "\n"]),
       length=st.integers(min_value=50_000, max_value=1_100_000))
def test_an_applied_object_of_any_heavy_field_is_refused_or_kept_within_the_budget(kind, data, char, length):
    """Oversized-but-valid objects: whatever field is heavy and however its characters escape, ``koord apply``
    refuses the object or every state entry it makes is within the budget."""
    base, fields = HEAVY_FIELDS[kind]
    body = base()
    fields[data.draw(st.sampled_from(sorted(fields)))](body, char * (length // len(char.encode())))
    try:
        [record] = load_and_validate("-", stdin_text=json.dumps(body))
    except ManifestError as refused:
        hypothesis.event("refused: " + ("state budget" if "budget" in str(refused) else "other"))
        return
    hypothesis.event("kept")
    domain = SchedulingDomain("default")
    domain.handle(event(record.kind, record.key, record.record, ts=T0))
    assert max(_json_size(value) for value in domain.entries().values()) <= limits.STATE_ENTRY_MAX_BYTES
