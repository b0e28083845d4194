"""The node state's binary form: resources stored by name, states of the previous format still load.

``statecodec_knr2.json`` holds ``KNR2`` states (the format before resources were stored by name) that
``dump_state`` wrote at commit df06030 for the states ``samples()`` builds, with the published resources
they hold. Each must load as the state it was made from and be written back in the current format.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import MappingProxyType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams.koordinator.annotations import ANNOTATION_RESOURCE_STATUS
from streams.koordinator.resources import BATCH_CPU, EXTENDED_RESOURCES, MID_CPU
from streams.nodeaggregate import node as aggregate
from streams.nodeaggregate import statecodec
from streams.nodeaggregate.node import NodeState
from streams.nodeaggregate.settings import DEFAULT_SETTINGS
from streams.noderesource.reconcile import Published
from streams.sloconfig.configmap import DEFAULT_CONFIG, parse_slo_config
from tests.streams.noderesource.support import (
    G, MINUTE, NOW, configmap, decision, event, fixture_a_metric, host_app, metric_record, node_record, pod_usage,
)

NODE = "test-node1"
CONFIG = parse_slo_config(configmap({"enable": True, "cpuReclaimThresholdPercent": 65,
                                     "memoryReclaimThresholdPercent": 65}), DEFAULT_CONFIG)
KNR2_SAMPLES = json.loads((Path(__file__).parent / "statecodec_knr2.json").read_text())
PODS = [("SchedulingDecision", decision("podA", cpu=20_000, memory=20 * G, qos="LS"), NOW),
        ("SchedulingDecision", decision("podB", cpu=0, memory=0, qos="BE"), NOW),
        ("SchedulingDecision", decision("podC", cpu=20_000, memory=40 * G, qos="LSR"), NOW)]


def _state(*events: tuple[str, dict, int]) -> NodeState:
    """The state after ``(kind, record, event time)`` events, at offsets 1, 2, ..."""
    state = aggregate.initial_state()
    for offset, (kind, record, ts) in enumerate(events, 1):
        state, _ = aggregate.handle(state, event(kind, NODE, record, ts=ts, offset=offset), CONFIG, DEFAULT_SETTINGS)
    return state


def _topology() -> dict:
    return {"metadata": {"name": NODE, "namespace": None, "uid": None, "labels": {}, "annotations": {},
                         "generation": 0}, "manifest": "{}",
            "zones": [{"name": name, "type": "Node", "resources": [
                {"name": "cpu", "capacity": cpu, "allocatable": cpu, "available": cpu},
                {"name": "memory", "capacity": memory, "allocatable": memory, "available": memory}]}
                for name, cpu, memory in (("node-0", 50_000, 62 * G), ("node-1", 50_000, 58 * G))]}


def samples() -> dict[str, NodeState]:
    """States covering every section: none, published batch and mid resources with a due time and a NodeUsage
    sent, published NUMA zones, a NodeMetric naming a pod the node does not hold and a host application."""
    pinned = {ANNOTATION_RESOURCE_STATUS: json.dumps({"numaNodeResources": [{"node": 0, "resources": {"cpu": "1"}}]})}
    two_metrics = _state(("Node", node_record(), NOW), *PODS,
                         ("NodeMetric", fixture_a_metric(update_time=NOW), NOW),
                         ("NodeMetric", fixture_a_metric(update_time=NOW + MINUTE), NOW + MINUTE))
    return {
        "initial": aggregate.initial_state(),
        "node_pods_metric": dataclasses.replace(two_metrics, due_ms=NOW + 5 * MINUTE + 1),
        "two_zones": _state(
            ("Node", node_record(), NOW), ("NodeResourceTopology", _topology(), NOW),
            ("SchedulingDecision", {**decision("podP", cpu=10_000, memory=10 * G, priority_class="koord-prod"),
                                    "annotations": pinned}, NOW),
            ("SchedulingDecision", decision("podB", cpu=10_000, memory=10 * G, priority_class="koord-batch", qos="BE"),
             NOW),
            ("NodeMetric", metric_record(update_time=NOW, node_usage={"cpu": 30_000, "memory": 40 * G},
                                         system_usage={"cpu": 7_000, "memory": 12 * G},
                                         pods=[pod_usage("test", "podP", 5_000, 5 * G),
                                               pod_usage("test", "podB", 10_000, 10 * G)]), NOW)),
        "dangling_metric_and_host_app": _state(
            ("Node", node_record(), NOW), *PODS,
            ("NodeMetric", fixture_a_metric(update_time=NOW, pods=[pod_usage("x", "dangling", 5, 6, "koord-batch")],
                                            host_apps=[host_app("h", 1, 2, None)]), NOW)),
    }


def _fields(state: NodeState) -> tuple:
    """The state's fields but the profile (numpy arrays; equal profiles give equal bytes)."""
    return (state.sources, state.node, state.zones, dict(state.pods), state.metric, state.published, state.qos,
            state.due_ms, state.usage_sent, state.decided)


@pytest.mark.parametrize("name", sorted(KNR2_SAMPLES))
def test_a_state_of_the_previous_format_loads_as_the_state_it_was_made_from(name):
    sample = KNR2_SAMPLES[name]
    data = bytes.fromhex(sample["state"])
    assert data[:4] == b"KNR2"
    loaded = statecodec.load_state(data)
    assert dict(loaded.published.extended) == sample["extended"]
    assert {zone: dict(values) for zone, values in loaded.published.zones.items()} == sample["zones"]
    assert loaded.due_ms == statecodec.due_ms(data) == sample["due_ms"]
    made = dataclasses.replace(samples()[name], decided={}, encoded=[])
    assert _fields(loaded) == _fields(made)
    assert statecodec.dump_state(loaded) == statecodec.dump_state(made)


@pytest.mark.parametrize("name", sorted(KNR2_SAMPLES))
def test_a_state_of_the_previous_format_is_written_back_in_the_current_one_at_no_cost(name):
    """Interned names cost no bytes: a state holding only them keeps its bytes but the format marker."""
    knr2 = bytes.fromhex(KNR2_SAMPLES[name]["state"])
    data = statecodec.dump_state(statecodec.load_state(knr2))
    assert data == statecodec.FORMAT + knr2[4:] and statecodec.FORMAT == b"KNR3"
    assert statecodec.dump_state(statecodec.load_state(data)) == data


def test_the_interned_names_are_those_of_the_previous_format_in_its_order():
    """Part of the format: states hold values at these positions, so the tables only ever grow at the end."""
    assert statecodec.EXTENDED_NAMES == ("kubernetes.io/batch-cpu", "kubernetes.io/batch-memory",
                                         "kubernetes.io/mid-cpu", "kubernetes.io/mid-memory")
    assert statecodec.ZONE_NAMES == ("kubernetes.io/batch-cpu", "kubernetes.io/batch-memory")


def _with_published(state: NodeState, extended: dict, zones: dict | None = None) -> NodeState:
    zones = zones or {}
    published = Published(state.published.synced_ms, MappingProxyType(extended), state.published.annotations,
                          MappingProxyType(zones), NOW if zones else None)
    return dataclasses.replace(state, published=published)


def test_a_resource_name_the_format_does_not_intern_keeps_its_value():
    state = _with_published(samples()["node_pods_metric"], {"example.com/new-cpu": 7, MID_CPU: 3},
                            {"node-0": {"example.com/new-cpu": 5, BATCH_CPU: 2}})
    data = statecodec.dump_state(state)
    loaded = statecodec.load_state(data)
    assert dict(loaded.published.extended) == {"example.com/new-cpu": 7, MID_CPU: 3}
    assert dict(loaded.published.zones["node-0"]) == {"example.com/new-cpu": 5, BATCH_CPU: 2}
    assert b'[null,null,3,null,{"example.com/new-cpu":7}]' in data


def test_a_name_interned_after_a_state_was_written_keeps_its_value(monkeypatch):
    """The state wrote the name by name; read with a longer table, it is found there."""
    state = _with_published(samples()["initial"], {"example.com/new-cpu": 7, BATCH_CPU: 1})
    data = statecodec.dump_state(state)
    monkeypatch.setattr(statecodec, "EXTENDED_NAMES", (*statecodec.EXTENDED_NAMES, "example.com/new-cpu"))
    loaded = statecodec.load_state(data)
    assert loaded.published == state.published
    assert statecodec.load_state(statecodec.dump_state(loaded)).published == state.published


def test_due_ms_is_read_from_the_header_of_every_format():
    """``KNR1`` states (``KNR2`` without the due time in the header) load as due at once."""
    state = samples()["node_pods_metric"]
    data = statecodec.dump_state(state)
    knr2 = bytes.fromhex(KNR2_SAMPLES["node_pods_metric"]["state"])
    knr1 = b"KNR1" + knr2[4:16] + knr2[24:]
    assert statecodec.due_ms(data) == statecodec.due_ms(knr2) == state.due_ms == NOW + 5 * MINUTE + 1
    assert statecodec.load_state(knr1).due_ms == 0 and statecodec.due_ms(knr1) == 0
    assert statecodec.load_state(knr1).published == state.published


def test_bytes_of_no_known_format_are_refused():
    with pytest.raises(ValueError, match="format marker"):
        statecodec.load_state(b"KNR9" + bytes(40))


RESOURCE_NAMES = st.sampled_from(EXTENDED_RESOURCES) | st.text(st.characters(codec="ascii", categories=("L", "N", "P")),
                                                               min_size=1, max_size=30)
QUANTITIES = st.integers(0, 2**62)
_SAMPLES = samples()


@given(st.dictionaries(RESOURCE_NAMES, QUANTITIES, max_size=6),
       st.dictionaries(st.sampled_from(("node-0", "node-1", "node-2")),
                       st.dictionaries(RESOURCE_NAMES, QUANTITIES, max_size=3), max_size=3),
       st.sampled_from(sorted(KNR2_SAMPLES)), st.floats(0, 2**53, allow_nan=False))
def test_any_published_resources_round_trip_exactly(extended, zones, name, due):
    state = dataclasses.replace(_with_published(_SAMPLES[name], extended, zones), due_ms=due)
    data = statecodec.dump_state(state)
    loaded = statecodec.load_state(data)
    assert _fields(loaded) == _fields(state)
    assert statecodec.dump_state(loaded) == data and statecodec.due_ms(data) == due
