"""``koord bench nodes``' setup through the pure cores: its pre-bound Pods become, through the scheduling domain's
``Bound`` decisions, the pods the node aggregate's NodeMetric phase sees, with the requests and classes the
bench's hand-written decisions used to carry (1 cpu / 2Gi; koord-prod priority 9100 QoS LS, koord-batch 5100
QoS BE, 60 % / 40 %)."""

from __future__ import annotations

from streams.bench.nodes import setup_records
from streams.events import Causation, InboxEvent
from streams.koordinator.classes import PRIORITY_BATCH, PRIORITY_PROD, QOS_BE, QOS_LS
from streams.nodeaggregate import node as aggregate
from streams.nodeaggregate.settings import DEFAULT_SETTINGS
from streams.scheduler.domain import SchedulingDomain
from streams.schemas import codec
from streams.sloconfig.configmap import DEFAULT_CONFIG
from streams.topology import load_topology

NAMES = load_topology().names()
GI = 1 << 30


def _event(inbox: str, topic: str, offset: int, key: str, kind: str, record: dict) -> InboxEvent:
    return InboxEvent(Causation(inbox, 0, offset, topic, 0, offset), 1000, key, kind, record)


def test_the_pre_bound_pods_reach_the_node_aggregate_with_the_old_decisions_requests_and_classes():
    records = setup_records(nodes=2, pods=5, start_ms=1000, names=NAMES)
    domain = SchedulingDomain("default")
    decisions = []
    for offset, (topic, key, value, _) in enumerate(records):
        kind, record = codec.decode(value)
        if kind in ("Node", "Pod"):
            decisions += [r for schema, r in domain.handle(_event("koord.inbox.scheduling", topic, offset, key, kind,
                                                                  record)) if schema == "SchedulingDecision"]
    assert [(d["result"], d["nodeName"]) for d in decisions] == [("Bound", f"bench-node-0000{n}") for n in (0, 1)
                                                                   for _ in range(5)]

    states = {}
    for offset, decision in enumerate(decisions):
        node = decision["nodeName"]
        event = _event("koord.inbox.node", NAMES["decisions"], offset, node, "SchedulingDecision", decision)
        states[node], _ = aggregate.handle(states.get(node, aggregate.initial_state()), event, DEFAULT_CONFIG,
                                           DEFAULT_SETTINGS)
    prod = (1000, 2 * GI, PRIORITY_PROD, QOS_LS, 9100)
    batch = (1000, 2 * GI, PRIORITY_BATCH, QOS_BE, 5100)
    for n, state in sorted(states.items()):
        assert {key: (view.request_cpu, view.request_memory, view.priority_class, view.qos, view.priority)
                for key, view in state.pods.items()} == {
            f"bench/bench-pod-{n[-5:]}-{i:02d}": prod if i < 3 else batch for i in range(5)}, n
