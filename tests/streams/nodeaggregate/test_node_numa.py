"""The node aggregate with a NodeResourceTopology: NUMA-level batch resources in the NodeResource record.

Numbers are Koordinator's batchresource ``TestPluginCalculate`` NUMA cases (the ones
``plugins/test_batchresource.py::test_numa_level`` checks on ``calculate_on_numa_level``), here through
``aggregate.handle``: the zones come from an NRT event, podProd's NUMA node from the
``scheduling.koordinator.sh/resource-status`` annotation its SchedulingDecision carries.
"""

from __future__ import annotations

import json

import pytest

from streams.koordinator.annotations import ANNOTATION_RESOURCE_STATUS
from streams.koordinator.resources import BATCH_CPU, BATCH_MEMORY
from streams.nodeaggregate import node as aggregate
from streams.nodeaggregate import statecodec
from streams.nodeaggregate.settings import DEFAULT_SETTINGS
from streams.schemas import codec
from streams.sloconfig.configmap import DEFAULT_CONFIG, parse_slo_config
from tests.streams.noderesource.support import (
    G, MINUTE, NOW, configmap, decision, event, metric_record, node_record, pod_usage, tick,
)

NODE = "test-node1"
S65 = {"enable": True, "cpuReclaimThresholdPercent": 65, "memoryReclaimThresholdPercent": 65,
       "degradeTimeMinutes": 15, "updateTimeThresholdSeconds": 300, "resourceDiffThreshold": 0.1}
ENABLED = parse_slo_config(configmap(S65), DEFAULT_CONFIG)
REQUEST = parse_slo_config(configmap({**S65, "memoryCalculatePolicy": "request"}), DEFAULT_CONFIG)
ONE_ZONE = (("node-0", 100_000, 120 * G),)
TWO_ZONES = (("node-0", 50_000, 62 * G), ("node-1", 50_000, 58 * G))


def nrt_record(zones=TWO_ZONES) -> dict:
    return {"metadata": {"name": NODE, "namespace": None, "uid": None, "labels": {}, "annotations": {},
                         "generation": 0}, "manifest": "{}",
            "zones": [{"name": name, "type": "Node", "resources": [
                {"name": "cpu", "capacity": cpu, "allocatable": cpu, "available": cpu},
                {"name": "memory", "capacity": memory, "allocatable": memory, "available": memory}]}
                for name, cpu, memory in zones]}


def pinned(record: dict, *numa_nodes: int) -> dict:
    status = {"numaNodeResources": [{"node": node, "resources": {"cpu": "1"}} for node in numa_nodes]}
    return {**record, "annotations": {ANNOTATION_RESOURCE_STATUS: json.dumps(status)}}


def multi_pods(first: str = "podProd", first_qos: str = "LS") -> list[dict]:
    """The pods of Koordinator's "multiple priority classes" cases; the first is pinned to NUMA node 0."""
    return [pinned(decision(first, cpu=10_000, memory=10 * G, priority_class="koord-prod", qos=first_qos), 0),
            decision("podProd1", cpu=10_000, memory=10 * G, priority_class="koord-prod", qos="LSR"),
            decision("podBatch", cpu=10_000, memory=10 * G, priority_class="koord-batch", qos="BE"),
            decision("podMid", cpu=20_000, memory=40 * G, priority_class="koord-mid", qos="BE")]


def multi_metric(first: str = "podProd", first_cpu: int = 5_000, system_cpu: int = 7_000, ts: int = NOW) -> dict:
    return metric_record(update_time=ts, node_usage={"cpu": 50_000, "memory": 55 * G},
                         system_usage={"cpu": system_cpu, "memory": 12 * G},
                         pods=[pod_usage("test", first, first_cpu, 5 * G), pod_usage("test", "podProd1", 6_000, 6 * G),
                               pod_usage("test", "podBatch", 10_000, 10 * G),
                               pod_usage("test", "podMid", 22_000, 22 * G)])


def run(*events, config=ENABLED, state=None):
    state = state or aggregate.initial_state()
    outputs = []
    for ev in events:
        state, out = aggregate.handle(state, ev, config, DEFAULT_SETTINGS)
        outputs.extend(record for schema, record in out if schema == "NodeResource")
    return state, outputs


def setup(zones=TWO_ZONES, pods=None, config=ENABLED, metric=None):
    return run(event("Node", NODE, node_record()), event("NodeResourceTopology", NODE, nrt_record(zones)),
               *[event("SchedulingDecision", NODE, record) for record in (pods or multi_pods())],
               event("NodeMetric", NODE, metric or multi_metric()), config=config)


def zones(record: dict) -> dict:
    return {zone["name"]: (zone["resources"][BATCH_CPU], zone["resources"][BATCH_MEMORY])
            for zone in record["zones"]}


@pytest.mark.parametrize("config, zone_list, pods, metric, expected", [
    pytest.param(ENABLED, ONE_ZONE, multi_pods(), multi_metric(), {"node-0": (25_000, 33 * G)},
                 id="TestPluginCalculate/calculate_with_one_NUMA-level_resources"),
    pytest.param(ENABLED, TWO_ZONES, multi_pods(), multi_metric(),
                 {"node-0": (10_000, 15_300_000_000), "node-1": (15_000, 17_700_000_000)},
                 id="TestPluginCalculate/calculate_with_multiple_NUMA-level_resources"),
    pytest.param(REQUEST, TWO_ZONES, multi_pods("podProdLSE", "LSE"), multi_metric("podProdLSE"),
                 {"node-0": (5_000, 5_300_000_000), "node-1": (15_000, 12_700_000_000)},
                 id="TestPluginCalculate/calculate_with_memory_not_over-committed,_LSE_pods_and_NUMA-level_resources"),
])
def test_node_metric_publishes_koordinators_zone_values(config, zone_list, pods, metric, expected):
    _, out = setup(zone_list, pods, config, metric)
    assert [zones(record) for record in out] == [{}, expected]
    assert [zone["name"] for zone in out[-1]["zones"]] == [name for name, _, _ in zone_list]
    codec.encode("NodeResource", out[-1])


def test_without_resource_status_a_pod_is_shared_by_every_zone():
    unpinned = [{**record, "annotations": {}} for record in multi_pods()]
    _, out = setup(pods=unpinned)
    assert zones(out[-1]) == {"node-0": (12_500, 17_800_000_000), "node-1": (12_500, 15_200_000_000)}


def test_topology_after_the_metric_publishes_its_zones_at_once():
    state, _ = run(event("Node", NODE, node_record()),
                   *[event("SchedulingDecision", NODE, record) for record in multi_pods()],
                   event("NodeMetric", NODE, multi_metric()))
    _, out = run(event("NodeResourceTopology", NODE, nrt_record(), ts=NOW + 1000), state=state)
    assert [zones(record) for record in out] == [{"node-0": (10_000, 15_300_000_000),
                                                  "node-1": (15_000, 17_700_000_000)}]


def test_zone_values_follow_the_diff_threshold_one_value_at_a_time():
    """podProd (on node 0) uses 2 more cores and system usage 0.4 more: node-level batch-cpu moves 9.6 %
    (no node sync), node-0's 22 % (zone sync), node-1's 1.3 %, so node-1 keeps its published value."""
    state, _ = setup()
    _, out = run(event("NodeMetric", NODE, multi_metric(first_cpu=7_000, system_cpu=7_400, ts=NOW + MINUTE),
                       ts=NOW + MINUTE), state=state)
    assert [zones(record) for record in out] == [{"node-0": (7_800, 15_300_000_000),
                                                  "node-1": (15_000, 17_700_000_000)}]
    _, out = run(event("NodeMetric", NODE, multi_metric(system_cpu=7_400, ts=NOW + MINUTE), ts=NOW + MINUTE),
                 state=state)
    assert out == []


def test_zones_are_republished_after_update_time_threshold_seconds():
    """The node is re-published at +100 s (a Node event), its zones were last synced at 0 s: they expire first."""
    state, _ = setup()
    state, _ = run(event("Node", NODE, node_record(), ts=NOW + 100_000), state=state)
    assert aggregate.tick_due_ms(state, ENABLED, NOW + 100_000, DEFAULT_SETTINGS) == NOW + 300_001
    state, out = run(event("Tick", NODE, tick(NOW + 300_000), ts=NOW + 300_000),
                     event("Tick", NODE, tick(NOW + 300_001), ts=NOW + 300_001), state=state)
    assert [(record["timestamp"], len(record["zones"])) for record in out] == [(NOW + 300_001, 2)]
    assert state.published.zones_synced_ms == NOW + 300_001


def test_degraded_or_disabled_calculation_leaves_the_published_zones():
    """Koordinator resets the node's batch resources but does not touch the NRT's zone values."""
    state, _ = setup()
    disabled = parse_slo_config(configmap({**S65, "enable": False}), DEFAULT_CONFIG)
    _, out = run(event("Node", NODE, node_record(), ts=NOW + 1000), config=disabled, state=state)
    assert BATCH_CPU not in out[-1]["allocatable"]
    assert zones(out[-1]) == {"node-0": (10_000, 15_300_000_000), "node-1": (15_000, 17_700_000_000)}


def test_topology_changes_trim_the_published_zones_and_a_deletion_drops_them():
    state, _ = setup()
    state, out = run(event("NodeResourceTopology", NODE, nrt_record(TWO_ZONES[:1]), ts=NOW + 1000), state=state)
    assert [list(zones(record)) for record in out] == [["node-0"]]
    state, out = run(event("NodeResourceTopology", NODE, None, ts=NOW + 2000), state=state)
    assert [record["zones"] for record in out] == [[]]
    assert (state.zones, dict(state.published.zones), state.published.zones_synced_ms) == ((), {}, None)


def test_zones_survive_dump_and_load():
    state, _ = setup()
    loaded = statecodec.load_state(statecodec.dump_state(state))
    assert (loaded.zones, loaded.published, dict(loaded.pods)) == (state.zones, state.published, dict(state.pods))
    assert loaded.pods["test/podProd"].numa_nodes == (0,)
    assert statecodec.dump_state(loaded) == statecodec.dump_state(state)
