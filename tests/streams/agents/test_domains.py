"""The domain router's step on a pod it read from its source topic (``streams.agents.domains``): forwarded in the
envelope the router would have made, naming where the table applied it; and its topology check."""

from __future__ import annotations

import dataclasses
import types

import pytest

from streams import sources
from streams.agents import domains as domains_agent
from streams.agents.domains import _route, check_copartitioned
from streams.domains import DomainTable
from streams.handoff import Handoff
from streams.inbox import InboxReader
from streams.partitioning import partition_for
from streams.routing import ACK_HEADERS
from streams.schemas import codec
from streams.topology import TopologyError, load_topology
from tests.streams.test_domains import TREE, profile
from tests.streams.test_validation_source import NOW, applied
from tests.streams.scheduler.support import quota

SCHEDULING = InboxReader.of(load_topology(), "inbox-scheduling")


def _pod_read(offset: int, labels: dict | None = None):
    """Pod ``default/web`` at ``koord.pods[1]@offset`` as the domain router reads it: (event, source value)."""
    record = applied()
    record["metadata"] = {**record["metadata"], "labels": labels or {}}
    value = codec.encode("Pod", record)
    message = types.SimpleNamespace(topic="koord.pods", partition=1, offset=offset, key=b"default/web", value=value,
                                    timestamp=NOW / 1000, headers=list(ACK_HEADERS))
    return sources.read("pods", message, NOW).event(message), value


def _on_routing(ev, offset: int):
    return dataclasses.replace(ev, causation=dataclasses.replace(
        ev.causation, inbox_topic="koord.inbox.routing", inbox_partition=1, inbox_offset=offset))


def _held(domain: bytes, value: bytes):
    return SCHEDULING.read(types.SimpleNamespace(topic="koord.inbox.scheduling", partition=0, offset=0, key=domain,
                                                 value=value, headers=[], timestamp=NOW))


def test_a_pod_read_from_its_topic_is_forwarded_as_the_routers_envelope_naming_where_the_table_was():
    table = DomainTable(1)
    event, value = _pod_read(7)
    handled = _route(table, event, value)
    [(domain, forward)] = handled.forwards
    key, held = _held(domain, forward)
    assert key == "default" and held.kind == "Pod" and held.ack and not handled.event.ack
    assert (held.causation.source_topic, held.causation.source_partition, held.causation.source_offset) == (
        "koord.pods", 1, 7)
    assert held.causation.routed_after == -1, "no routing-inbox record applied yet"
    assert held.record == event.record


def test_the_routing_inbox_records_applied_before_a_pod_are_named_in_its_forward_and_decide_its_domain():
    table = DomainTable(1)
    _route(table, _on_routing(profile(), 4), b"")
    _route(table, _on_routing(quota("train", {"cpu": 1}, labels=TREE), 5), b"")
    event, value = _pod_read(8, labels={"quota.scheduling.koordinator.sh/name": "train"})
    [(domain, forward)] = _route(table, event, value).forwards
    assert (domain, _held(domain, forward)[1].causation.routed_after) == (b"gpu", 5)
    restored = DomainTable.restore(1, table.take_changes())
    assert restored.routed_after == 5, "a restarted table names the same point"


def test_a_pods_decoded_record_is_left_for_the_scheduling_reader_of_its_domains_partition_only(monkeypatch):
    handoff = Handoff()
    monkeypatch.setattr(domains_agent, "HANDOFF", handoff)
    partitions = load_topology().spec("inbox-scheduling").partitions
    event, value = _pod_read(7)
    domain_partition = partition_for(partitions, "default")
    handoff.hold([("koord.inbox.scheduling", p) for p in range(partitions) if p != domain_partition])
    _route(DomainTable(1), event, value, ("koord.inbox.scheduling", partitions))
    assert len(handoff) == 0, "another worker reads the domain's partition"
    handoff.hold([("koord.inbox.scheduling", domain_partition)])
    [(domain, forward)] = _route(DomainTable(1), event, value, ("koord.inbox.scheduling", partitions)).forwards
    reader = InboxReader.of(load_topology(), "inbox-scheduling", handoff=handoff)
    _, held = reader.read(types.SimpleNamespace(topic="koord.inbox.scheduling", partition=domain_partition, offset=0,
                                                key=domain, value=forward, headers=[], timestamp=NOW))
    assert held.record is event.record and len(handoff) == 0


def test_a_routed_after_on_any_other_record_is_refused():
    event, value = _pod_read(7)
    [(domain, forward)] = _route(DomainTable(1), event, value).forwards
    node_inbox = InboxReader.of(load_topology(), "inbox-node")
    name, envelope = codec.decode(forward)
    tick = {**envelope, "sourceTopic": "koord.ticks", "sourcePartition": 0, "key": "tick",
            "payload": codec.encode("Tick", {"timestamp": NOW})}
    with pytest.raises(Exception, match="does not read koord.ticks itself"):
        node_inbox.read(types.SimpleNamespace(topic="koord.inbox.node", partition=0, offset=0, key=b"tick",
                                              value=codec.encode("InboxEvent", tick), headers=[], timestamp=NOW))


def test_a_topology_whose_pods_and_routing_inbox_differ_in_partitions_is_refused():
    topology = load_topology()
    check_copartitioned(topology)
    pods = dataclasses.replace(topology.spec("pods"), partitions=8)
    other = dataclasses.replace(topology, topics=tuple(pods if t.id == "pods" else t for t in topology.topics))
    with pytest.raises(TopologyError, match="koord.pods has 8 partitions and koord.inbox.routing 4"):
        check_copartitioned(other)
