"""``streams.outputs``: each output schema has its topic, and each record its key."""

from __future__ import annotations

import pytest

from streams.deadletter import dead_letter_record
from streams.events import Causation, deletion
from streams.outputs import OUTPUT_TOPICS, output_key

CAUSE = Causation("koord.inbox.node", 2, 40, "koord.nodemetrics", 1, 7)
POD = {"namespace": "default", "name": "web-1", "uid": "u-1"}
NODE_RESOURCE = {"decisionId": "d-1", "nodeName": "n1", "capacity": {"cpu": 4000}, "allocatable": {"cpu": 4000},
                 "message": "", "causation": CAUSE.to_record(), "timestamp": 1, "annotations": {}, "zones": []}
LETTER = dead_letter_record("node", "koord.configs", 0, 3, b"koordinator-system/slo-controller-config", None,
                            "slo-controller-config rejected", 1)


@pytest.mark.parametrize("schema, record, key", [
    pytest.param("SchedulingDecision", {"pod": POD}, "default/web-1", id="decision-by-pod"),
    pytest.param("Eviction", {"pod": POD, "nodeName": "n1"}, "default/web-1", id="eviction-by-pod"),
    pytest.param("ElasticQuotaStatus", {"name": "team-a"}, "team-a", id="quota-by-name"),
    pytest.param("Ack", {"causation": CAUSE.to_record()}, "koord.nodemetrics/1", id="ack-by-source-partition"),
    pytest.param("DeadLetter", LETTER, "koord.configs/0/3", id="dead-letter-by-source-offset"),
    pytest.param("NodeResource", NODE_RESOURCE, "n1", id="node-resource-by-node"),
    pytest.param("NodeUsage", {"nodeName": "n1"}, "n1", id="node-usage-by-node"),
    pytest.param("Actuation", {"nodeName": "n1"}, "n1", id="actuation-by-node"),
    pytest.param("PodMigrationJob", deletion("move-1"), "move-1", id="deletion-by-its-key"),
])
def test_output_key(schema, record, key):
    assert schema in OUTPUT_TOPICS
    assert output_key(schema, record) == key
