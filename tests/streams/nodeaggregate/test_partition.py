"""``NodePartition``: ticks recalculate only the nodes whose outcome time can change, with the outputs and
states of recalculating every node on every tick."""

from __future__ import annotations

import pytest

from streams.nodeaggregate import node as aggregate
from streams.nodeaggregate.partition import CONFIG_OBJECT_KEY, NodePartition
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


def _every_node_every_tick(events: list) -> tuple[list, dict]:
    """The reference: ``aggregate.handle`` on every node for every tick."""
    partition = NodePartition({})
    outputs = []
    for ev in events:
        if ev.kind != "Tick":
            outputs.extend(partition.apply(ev))
            continue
        for name in sorted(partition.nodes):
            state, out = aggregate.handle(aggregate.load_state(partition.store[name]), ev, partition.config)
            partition.store[name] = aggregate.dump_state(state)
            outputs.extend(out)
    return outputs, partition.store


def test_skipping_ticks_gives_the_outputs_and_states_of_recalculating_every_node():
    events = _history()
    expected_outputs, expected_store = _every_node_every_tick(events)
    partition = NodePartition({})
    outputs = [out for ev in events for out in partition.apply(ev)]

    assert outputs == expected_outputs
    assert partition.store == expected_store
    published = [record["nodeName"] for schema, record in outputs if schema == "NodeResource"]
    assert {"stale", "predicted", "reported"} <= set(published)


@pytest.mark.parametrize("minutes, due", [(1, False), (5, True)])
def test_a_node_is_due_when_its_resource_expires(minutes, due):
    partition = NodePartition({})
    for ev in (event("ConfigMap", CONFIG_OBJECT_KEY, configmap(COLOCATION), ts=NOW),
               event("Node", "n1", node_record(name="n1"), ts=NOW),
               event("NodeMetric", "n1", _metric("n1", NOW), ts=NOW)):
        partition.apply(ev)
    before = dict(partition.store)

    outputs = partition.apply(event("Tick", "tick", tick(NOW + minutes * MINUTE + 1), ts=NOW + minutes * MINUTE + 1))

    assert bool(outputs) is due
    assert (partition.store == before) is not due
