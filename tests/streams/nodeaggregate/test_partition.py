"""``NodePartition``: ticks recalculate only the nodes whose outcome time can change, with the outputs and
states of recalculating every node on every tick; changed entries wait until the shell takes them."""

from __future__ import annotations

import dataclasses
import json

import pytest

from streams.nodeaggregate import node as aggregate
from streams.nodeaggregate import statecodec
from streams.nodeaggregate.partition import CONFIG_KEY, CONFIG_OBJECT_KEY, DECODED_STATES, NodePartition
from streams.nodeaggregate.settings import DEFAULT_SETTINGS
from tests.streams.noderesource.support import (
    G, MINUTE, NOW, configmap, decision, event, fixture_a_metric, metric_record, node_record, pod_usage, tick,
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

    def __init__(self, decoded_states: int = DECODED_STATES) -> None:
        self.table: dict[str, bytes] = {}
        self.partition = NodePartition(DEFAULT_SETTINGS, self.table, decoded_states=decoded_states)

    def restart(self) -> None:
        """A new partition on the table as written, as a worker that restarts or takes over has."""
        self.partition = NodePartition(DEFAULT_SETTINGS, self.table, [k for k in self.table if k != CONFIG_KEY])

    def apply(self, ev) -> list:
        outputs = self.partition.apply(ev)
        for key, value in self.partition.take_changes().items():
            if value is None:
                self.table.pop(key, None)
            else:
                self.table[key] = value
        return outputs


def _without_due(table: dict[str, bytes]) -> dict[str, bytes]:
    """The table with every node's due time cleared (the reference never sets one)."""
    return {key: value if key == CONFIG_KEY else
            statecodec.dump_state(dataclasses.replace(statecodec.load_state(value), due_ms=0))
            for key, value in table.items()}


def _every_node_every_tick(events: list) -> tuple[list, dict]:
    """The reference: ``node.handle`` on every node for every tick. It writes the table itself, so its
    partition keeps no state decoded."""
    shell = Shell(decoded_states=0)
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
    assert _without_due(shell.table) == _without_due(expected_table)
    published = [record["nodeName"] for schema, record in outputs if schema == "NodeResource"]
    assert {"stale", "predicted", "reported"} <= set(published)


@pytest.mark.parametrize("decoded_states", [0, 2])
def test_states_kept_decoded_decide_as_states_decoded_from_the_table(decoded_states):
    """Keeping states decoded is invisible: the outputs and entries are those of decoding every state from its
    entry on every event, whether every node, some or none fit."""
    events = _history()
    kept, decoded = Shell(), Shell(decoded_states=decoded_states)
    for ev in events:
        assert kept.apply(ev) == decoded.apply(ev)
        assert kept.table == decoded.table
    assert set(kept.partition._decoded) == set(NODES)
    assert len(decoded.partition._decoded) == decoded_states


def test_a_state_changed_by_several_events_is_written_once_with_its_last_bytes():
    partition = NodePartition(DEFAULT_SETTINGS)
    for ev in (event("Node", "n1", node_record(name="n1"), ts=NOW),
               event("SchedulingDecision", "n1", decision("podA", node_name="n1"), ts=NOW),
               event("SchedulingDecision", "n1", decision("podB", node_name="n1"), ts=NOW)):
        partition.apply(ev)

    changes = partition.take_changes()

    assert list(changes) == ["n1"]
    assert set(statecodec.load_state(changes["n1"]).pods) == {"test/podA", "test/podB"}
    assert partition.take_changes() == {}


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


def test_a_restarted_partition_skips_the_nodes_not_due_without_loading_their_states(monkeypatch):
    """The due time is read from the state's header: after a restart, a Tick before it costs no decode."""
    shell = Shell()
    for ev in (event("ConfigMap", CONFIG_OBJECT_KEY, configmap(COLOCATION), ts=NOW),
               event("Node", "n1", node_record(name="n1"), ts=NOW),
               event("NodeMetric", "n1", _metric("n1", NOW), ts=NOW)):
        shell.apply(ev)
    assert statecodec.load_state(shell.table["n1"]).due_ms == NOW + 5 * MINUTE + 1, "updateTimeThresholdSeconds"
    shell.restart()
    loaded = []
    monkeypatch.setattr(statecodec, "load_state", lambda data: loaded.append(data))

    assert shell.apply(event("Tick", "tick", tick(NOW + MINUTE), ts=NOW + MINUTE)) == []
    assert loaded == []


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


SUPPRESS = {"resource-threshold-config": json.dumps({"clusterStrategy": {
    "enable": True, "cpuSuppressThresholdPercent": 70, "cpuSuppressPolicy": "cfsQuota"}})}


def _qos_history(metric_first: bool) -> list:
    """CPU suppress on, a node whose NodeMetric arrives before or after its Node, then a minute of ticks."""
    node = event("Node", "n1", node_record(name="n1", cpu=16_000), ts=NOW)
    metric = event("NodeMetric", "n1", metric_record("n1", update_time=NOW, node_usage={"cpu": 12_000, "memory": G},
                                                     pods=[pod_usage("test", "be", 2000, G)]), ts=NOW)
    be = decision("be", node_name="n1", qos="BE")
    be["pod"]["uid"] = "uid-be"
    events = [event("ConfigMap", CONFIG_OBJECT_KEY, configmap(**SUPPRESS), ts=NOW - MINUTE),
              event("SchedulingDecision", "n1", be, ts=NOW - MINUTE),
              *((metric, node) if metric_first else (node, metric))]
    return events + [event("Tick", "tick", tick(NOW + step * 10_000), ts=NOW + step * 10_000) for step in range(1, 7)]


@pytest.mark.parametrize("metric_first", [True, False])
def test_a_node_is_planned_at_the_next_tick_whatever_the_order_of_its_node_and_node_metric(metric_first):
    """The Node event calculates but does not plan QoS: the node stays due until a Tick plans it, as every tick
    would (the live worker after a restart treats every node as due, and must publish what the replay does)."""
    events = _qos_history(metric_first)
    expected, _ = _every_node_every_tick(events)
    shell = Shell()
    outputs = [out for ev in events for out in shell.apply(ev)]

    assert outputs == expected
    planned = {(r["targetKind"], r["targetId"], r["mechanism"]): r["values"] for schema, r in outputs
               if schema == "Actuation"}
    assert planned[("qos", "BE", "cgroup")] == {"cpu.cfs_quota_us": "120000"}, "the BE quota Koordinator sets"


@pytest.mark.parametrize("history", [_history, lambda: _qos_history(True), lambda: _qos_history(False)],
                         ids=["colocation", "qos-metric-first", "qos-node-first"])
def test_a_restart_at_any_event_publishes_what_the_uninterrupted_run_does(history):
    """At every cut (every fifth event of the long history) the partition restarts from its table and the event
    before the cut is delivered again, as at-least-once delivery does: that copy publishes nothing, and the
    outputs of the rest are the uninterrupted run's."""
    events = history()
    reference = Shell()
    expected = [reference.apply(ev) for ev in events]
    step = 5 if len(events) > 50 else 1
    for cut in range(1, len(events), step):
        shell = Shell()
        for ev in events[:cut]:
            shell.apply(ev)
        shell.restart()
        assert shell.apply(events[cut - 1]) == [], f"event {cut - 1} delivered again"
        assert [shell.apply(ev) for ev in events[cut:]] == expected[cut:], f"restarted after event {cut - 1}"
        assert shell.table == reference.table


def test_a_decision_that_changes_no_pod_leaves_the_node_due_when_it_was():
    """The same pod bound again only moves its decision mark: no input of the calculation or the plan changed,
    so no Tick before the node's due time is needed. A pod bound anew makes the node due at once."""
    shell = Shell()
    for ev in (event("ConfigMap", CONFIG_OBJECT_KEY, configmap(COLOCATION), ts=NOW),
               event("Node", "n1", node_record(name="n1"), ts=NOW),
               event("SchedulingDecision", "test/podA", decision("podA", node_name="n1", cpu=20_000), ts=NOW),
               event("NodeMetric", "n1", _metric("n1", NOW), ts=NOW)):
        shell.apply(ev)
    due = statecodec.due_ms(shell.table["n1"])
    mark = statecodec.load_state(shell.table["n1"]).decided["test/podA"]
    assert due == NOW + 5 * MINUTE + 1

    shell.apply(event("SchedulingDecision", "test/podA", decision("podA", node_name="n1", cpu=20_000), ts=NOW + 1))
    assert statecodec.load_state(shell.table["n1"]).decided["test/podA"].offset > mark.offset
    assert statecodec.due_ms(shell.table["n1"]) == due

    shell.apply(event("SchedulingDecision", "test/podB", decision("podB", node_name="n1"), ts=NOW + 2))
    assert statecodec.due_ms(shell.table["n1"]) == 0
