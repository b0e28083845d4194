"""The NodeUsage the node aggregate sends the scheduling domains: what it keeps of a NodeMetric, and when it
is sent again (``usage.check``), on its own and through the node aggregate's transition and state."""

from __future__ import annotations

import json

import pytest

from streams.events import Causation, decision_id
from streams.nodeaggregate import node as aggregate
from streams.nodeaggregate import statecodec, usage
from streams.nodeaggregate.settings import DEFAULT_SETTINGS
from streams.schemas import codec
from streams.sloconfig.configmap import DEFAULT_CONFIG
from tests.streams.noderesource.support import G, NOW, event, metric_record, node_record, pod_usage

CAUSE = Causation("koord.inbox.node", 0, 7, "koord.nodemetrics", 1, 3)
ALLOCATABLE = {"cpu": 100_000, "memory": 100 * G}
"""One step (``USAGE_CHANGE``) is 1,000 milli-cores and 1 GiB."""


def _usage(update_time=NOW, cpu=40_000, memory=40 * G, pods=None, manifest="{}", **fields) -> dict:
    record = {**metric_record(update_time=update_time, node_usage={"cpu": cpu, "memory": memory},
                              pods=pods if pods is not None else [pod_usage("ns", "a", 1000, G, "koord-prod")]),
              "manifest": manifest, **fields}
    return usage.summary("test-node1", record, CAUSE, NOW)


def test_summary_keeps_what_the_scheduler_reads_and_encodes_as_a_node_usage():
    manifest = json.dumps({"spec": {"metricCollectPolicy": {"reportIntervalSeconds": 30}},
                           "status": {"nodeMetric": {}}})
    record = _usage(manifest=manifest, systemUsage={"cpu": 500},
                    aggregatedNodeUsages=[{"duration": "5m0s", "p95": {"cpu": 9000}}],
                    hostApplicationMetric=[{"name": "x", "usage": {"cpu": 1}}], prodReclaimable={"cpu": 7})
    assert record["hasNodeMetric"] is True and record["reportIntervalSeconds"] == 30
    assert record["nodeUsage"] == {"cpu": 40_000, "memory": 40 * G} and record["systemUsage"] == {"cpu": 500}
    assert record["aggregatedNodeUsages"] == [{"duration": "5m0s", "avg": {}, "p50": {}, "p90": {}, "p95": {"cpu": 9000},
                                               "p99": {}}]
    assert record["podsMetric"] == [{"namespace": "ns", "name": "a", "usage": {"cpu": 1000, "memory": G},
                                     "priority": "koord-prod"}]
    assert "manifest" not in record and "hostApplicationMetric" not in record and "prodReclaimable" not in record
    assert record["decisionId"] != decision_id(CAUSE, 0, "test-node1"), "not the id of the NodeResource it causes"
    assert codec.decode(codec.encode("NodeUsage", record)) == ("NodeUsage", record), "replay compares it as decoded"
    deleted = usage.summary("test-node1", None, CAUSE, NOW)
    assert codec.decode(codec.encode("NodeUsage", deleted)) == ("NodeUsage", deleted)


@pytest.mark.parametrize("manifest, has_node_metric, interval", [
    pytest.param("{}", True, None, id="empty-manifest-reports"),
    pytest.param(json.dumps({"status": {}}), False, None, id="no-nodeMetric-section"),
    pytest.param(json.dumps({"spec": {"collectPolicy": {"reportIntervalSeconds": 20}}, "status": {"nodeMetric": {}}}),
                 True, 20, id="the-go-field-name-is-accepted-too"),
    pytest.param("not json", True, None, id="unparsable-manifest"),
])
def test_summary_reads_the_manifest_as_koordinator_does(manifest, has_node_metric, interval):
    record = _usage(manifest=manifest)
    assert (record["hasNodeMetric"], record["reportIntervalSeconds"]) == (has_node_metric, interval)


def test_a_deletion_is_always_due_and_nothing_is_remembered_of_it():
    deleted = usage.summary("test-node1", None, CAUSE, NOW)
    assert deleted["deleted"] is True
    assert usage.check(usage.sent(_usage(), ALLOCATABLE), deleted, ALLOCATABLE) == (True, None)
    assert usage.sent(deleted, ALLOCATABLE) is None


@pytest.mark.parametrize("later, due", [
    pytest.param(dict(update_time=NOW + 10_000), False, id="same-load-within-the-interval"),
    pytest.param(dict(update_time=NOW + 10_000, cpu=40_999), False, id="cpu-within-its-step"),
    pytest.param(dict(update_time=NOW + 10_000, cpu=41_000), True, id="cpu-into-the-next-step"),
    pytest.param(dict(update_time=NOW + 10_000, memory=39 * G - 1), True, id="memory-a-step-down"),
    pytest.param(dict(update_time=NOW + 60_000), True, id="one-report-interval-later"),
    pytest.param(dict(update_time=NOW - 1), True, id="an-older-update-time"),
    pytest.param(dict(update_time=None), True, id="update-time-gone"),
    pytest.param(dict(update_time=NOW + 10_000, pods=[pod_usage("ns", "a", 1000, G, "koord-batch")]), True,
                 id="a-pod-changed-its-priority-class"),
    pytest.param(dict(update_time=NOW + 10_000, pods=[]), True, id="a-pod-left"),
    pytest.param(dict(update_time=NOW + 10_000, pods=[pod_usage("ns", "a", 1900, G, "koord-prod")]), False,
                 id="prod-usage-within-its-step"),
    pytest.param(dict(update_time=NOW + 10_000, pods=[pod_usage("ns", "a", 2000, G, "koord-prod")]), True,
                 id="prod-usage-into-the-next-step"),
    pytest.param(dict(update_time=NOW + 10_000, manifest=json.dumps({"status": {}})), True,
                 id="no-longer-reports-node-usage"),
])
def test_check(later, due):
    last = usage.sent(_usage(), ALLOCATABLE)
    later = _usage(**later)
    assert usage.check(last, later, ALLOCATABLE) == ((True, usage.sent(later, ALLOCATABLE)) if due else (False, last))


def test_without_the_node_any_change_is_due():
    last = usage.sent(_usage(), None)
    assert usage.check(last, _usage(update_time=NOW + 1000, cpu=40_001), None)[0]
    assert not usage.check(last, _usage(update_time=NOW + 1000), None)[0]


def test_the_interval_the_node_metric_reports_sets_the_refresh():
    manifest = json.dumps({"spec": {"metricCollectPolicy": {"reportIntervalSeconds": 10}}})
    last = usage.sent(_usage(manifest=manifest), ALLOCATABLE)
    assert not usage.check(last, _usage(update_time=NOW + 9_999, manifest=manifest), ALLOCATABLE)[0]
    assert usage.check(last, _usage(update_time=NOW + 10_000, manifest=manifest), ALLOCATABLE)[0]


def _metric_event(ts: int, cpu: int, offset: int | None = None):
    return event("NodeMetric", "test-node1", metric_record(update_time=ts, node_usage={"cpu": cpu, "memory": 40 * G},
                                                            pods=[pod_usage("ns", "a", 1000, G, "koord-prod")]),
                 ts=ts, offset=offset)


def _apply(state, *events):
    out = []
    for ev in events:
        state, outputs = aggregate.handle(state, ev, DEFAULT_CONFIG, DEFAULT_SETTINGS)
        out.append([record for schema, record in outputs if schema == "NodeUsage"])
    return state, out


def test_the_node_aggregate_sends_a_node_usage_first_and_again_only_when_due_across_a_restart():
    state, _ = _apply(aggregate.initial_state(), event("Node", "test-node1", node_record(cpu=100_000, memory=100 * G)))
    state, out = _apply(state, _metric_event(NOW, 40_000))
    assert [u["nodeUsage"]["cpu"] for u in out[0]] == [40_000]
    assert state.usage_sent == usage.sent(out[0][0], state.node.allocatable)

    restored = statecodec.load_state(statecodec.dump_state(state))
    assert restored.usage_sent == state.usage_sent
    later = [_metric_event(NOW + 2_000, 40_500), _metric_event(NOW + 4_000, 41_200), _metric_event(NOW + 6_000, 41_300),
             _metric_event(NOW + 64_000, 41_300)]
    _, live = _apply(state, *later)
    _, after_restart = _apply(restored, *later)
    assert [[u["nodeUsage"]["cpu"] for u in sent] for sent in live] == [[], [41_200], [], [41_300]]
    assert after_restart == live


def test_a_deleted_node_metric_sends_a_deletion_and_the_next_one_is_sent_whatever_it_says():
    state, _ = _apply(aggregate.initial_state(), event("Node", "test-node1", node_record(cpu=100_000, memory=100 * G)),
                      _metric_event(NOW, 40_000))
    state, out = _apply(state, event("NodeMetric", "test-node1", None, ts=NOW + 1000),
                        _metric_event(NOW + 2000, 40_000))
    assert [[u["deleted"] for u in sent] for sent in out] == [[True], [False]]
