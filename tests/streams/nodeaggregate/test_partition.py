"""``NodePartition``: ticks recalculate only the nodes whose outcome time can change, with the outputs and
states of recalculating every node on every tick; changed entries wait until the shell takes them."""

from __future__ import annotations

import pytest

from streams.nodeaggregate import node as aggregate
from streams.nodeaggregate import statecodec
from streams.nodeaggregate.partition import CONFIG_KEY, CONFIG_OBJECT_KEY, NodePartition
from streams.nodeaggregate.settings import DEFAULT_SETTINGS
from tests.streams.noderesource.support import (
    G, MINUTE, NOW, configmap, decision, event, fixture_a_metric, node_record, pod_usage, tick,
)

COLOCATION = {"enable": True, "cpuReclaimThresholdPercent": 65, "memoryReclaimThresholdPercent": 65,
              "degradeTimeMinutes": 15, "updateTimeThresholdSeconds": 300, "resourceDiffThreshold": 0.1}
NODES = ("reported", "predicted", "stale", "no-metric")


def _metric(node: str, ts: int) -> dict:
    """A NodeMetric of ``node`` reported at ``ts``; ``predicted`` reports no ProdReclaimable."""
    if node == "predicted":
        return fixture_a_metric(name=node, update_time=ts, pods=[pod_usage("test", "podA", 11_000, 11 * G)])
    return fixture_a_metric(name=node, update_time=ts, prod_reclaimable={"cpu": 10_000, "memory": 15 * G})


def _history() -> list:
    """Config, nodes, pods (one leaving its 24 h cold start mid-run), metrics, then 45 minutes of 10 s ticks
    with a pod bound at 7 min and the ``predicted`` node reporting every 5 minutes; ``stale`` degrades."""
    events = [event("ConfigMap", CONFIG_OBJECT_KEY, configmap(COLOCATION), ts=NOW - MINUTE)]
    for name in NODES:
        events.append(event("Node", name, node_record(name=name), ts=NOW - MINUTE))
        events.append(event("SchedulingDecision", name, decision("podA", node_name=name, cpu=20_000, memory=20 * G),
                            ts=NOW - 24 * 60 * MINUTE + 5 * MINUTE))
        if name != "no-metric":
            events.append(event("NodeMetric", name, _metric(name, NOW), ts=NOW))
    for step in range(1, 45 * 6):
        ts = NOW + step * 10_000
        if step == 42:
            events.append(event("SchedulingDecision", "reported", decision("podZ", node_name="reported", cpu=30_000,
                                                                            memory=30 * G), ts=ts - 1))
        if step % 30 == 0:
            events.append(event("NodeMetric", "predicted", _metric("predicted", ts - 1), ts=ts - 1))
        events.append(event("Tick", "tick", tick(ts), ts=ts))
    return events


class Shell:
    """Drives a partition as the agent does: apply an event, then write the changes taken into the table."""

    def __init__(self) -> None:
        self.table: dict[str, bytes] = {}
        self.partition = NodePartition(DEFAULT_SETTINGS, self.table)

    def apply(self, ev) -> list:
        outputs = self.partition.apply(ev)
        for key, value in self.partition.take_changes().items():
            if value is None:
                self.table.pop(key, None)
            else:
                self.table[key] = value
        return outputs


def _every_node_every_tick(events: list) -> tuple[list, dict]:
    """The reference: ``node.handle`` on every node for every tick."""
    shell = Shell()
    outputs = []
    for ev in events:
        if ev.kind != "Tick":
            outputs.extend(shell.apply(ev))
            continue
        for name in sorted(shell.partition.nodes):
            state, out = aggregate.handle(statecodec.load_state(shell.table[name]), ev, shell.partition.config,
                                          DEFAULT_SETTINGS)
            shell.table[name] = statecodec.dump_state(state)
            outputs.extend(out)
    return outputs, shell.table


def test_skipping_ticks_gives_the_outputs_and_states_of_recalculating_every_node():
    events = _history()
    expected_outputs, expected_table = _every_node_every_tick(events)
    shell = Shell()
    outputs = [out for ev in events for out in shell.apply(ev)]

    assert outputs == expected_outputs
    assert shell.table == expected_table
    published = [record["nodeName"] for schema, record in outputs if schema == "NodeResource"]
    assert {"stale", "predicted", "reported"} <= set(published)


@pytest.mark.parametrize("minutes, due", [(1, False), (5, True)])
def test_a_node_is_due_when_its_resource_expires(minutes, due):
    shell = Shell()
    for ev in (event("ConfigMap", CONFIG_OBJECT_KEY, configmap(COLOCATION), ts=NOW),
               event("Node", "n1", node_record(name="n1"), ts=NOW),
               event("NodeMetric", "n1", _metric("n1", NOW), ts=NOW)):
        shell.apply(ev)
    before = dict(shell.table)

    outputs = shell.apply(event("Tick", "tick", tick(NOW + minutes * MINUTE + 1), ts=NOW + minutes * MINUTE + 1))

    assert bool(outputs) is due
    assert (shell.table == before) is not due


def test_changes_wait_in_the_partition_until_taken_and_are_read_from_there():
    table = {}
    partition = NodePartition(DEFAULT_SETTINGS, table)
    metric = event("NodeMetric", "n1", _metric("n1", NOW), ts=NOW)
    partition.apply(event("ConfigMap", CONFIG_OBJECT_KEY, configmap(COLOCATION), ts=NOW))
    partition.apply(event("Node", "n1", node_record(name="n1"), ts=NOW))
    assert partition.apply(metric)

    changes = partition.take_changes()
    assert table == {} and list(changes) == [CONFIG_KEY, "n1"]
    assert statecodec.load_state(changes["n1"]).metric is not None, "read back from the change, not the table"
    assert partition.take_changes() == {}

    table.update(changes)
    restored = NodePartition(DEFAULT_SETTINGS, table, ["n1"])
    assert restored.config == partition.config
    assert restored.apply(metric) == [] and restored.take_changes() == {}, "applied already, as the table says"


def test_a_deleted_config_is_a_removed_entry():
    partition = NodePartition(DEFAULT_SETTINGS)
    partition.apply(event("ConfigMap", CONFIG_OBJECT_KEY, configmap(COLOCATION), ts=NOW))
    partition.apply(event("ConfigMap", CONFIG_OBJECT_KEY, None, ts=NOW + 1))
    assert partition.take_changes() == {CONFIG_KEY: None}
