"""Benchmark of the node aggregate's pure core: CPU time per NodeMetric event and bytes of state per node.

    python -m streams.nodeaggregate.bench                      # small baseline: 1 node, 20 pods (12 prod)
    python -m streams.nodeaggregate.bench --nodes 200 --warmup-minutes 120   # larger, on demand
    python -m streams.nodeaggregate.bench --zones 2            # with a two-zone NodeResourceTopology per node

Each node gets 20 pods (12 koord-prod, 8 koord-batch) as Bound decisions, then ``--warmup-minutes`` of
one NodeMetric per minute with log-normal pod usage, so its profile holds a realistic number of histogram
buckets; with ``--zones N`` each node also gets a NodeResourceTopology of N equal zones, so every
calculation runs the NUMA level too. Then three kinds of NodeMetric event are timed, round-robin over the nodes:

- ``train+predict``: one report per minute (koordlet's cadence) without ``prodReclaimableMetric``:
  every event trains the profile and predicts ProdReclaimable;
- ``train, reclaimable reported``: as above, the NodeMetric carries ProdReclaimable;
- ``no training``: reports inside an already-trained minute (ProdReclaimable reported).

Figures are CPU time of this process (``time.process_time``), the best of ``--repeats`` runs, so other
processes on the machine distort them less; they are compared with ``BASELINE``.
"""

from __future__ import annotations

import argparse
import random
import time

from streams.events import Causation, InboxEvent
from streams.koordinator.classes import PRIORITY_BATCH, PRIORITY_PROD, QOS_BE, QOS_LS
from streams.nodeaggregate import node as aggregate
from streams.nodeaggregate import statecodec
from streams.nodeaggregate.settings import DEFAULT_SETTINGS
from streams.sloconfig.configmap import DEFAULT_CONFIG, parse_slo_config

GI = 1 << 30
START = 1_700_000_000_000
BASELINE = {"train+predict": 162.0, "train, reclaimable reported": 139.0, "no training": 100.0, "dump_state": 40.0,
            "bytes/node": 3583}
"""µs per event (bytes for the state) last measured with the defaults on a 2-vCPU VM, with the node QoS
plan computed on every NodeMetric (it added about 50 µs per event to the figures before it)."""


class Fleet:
    def __init__(self, nodes: int, pods: int, seed: int, zones: int = 0) -> None:
        self.rng = random.Random(seed)
        self.offset = 0
        metadata = {"name": "slo-controller-config", "namespace": "koordinator-system"}
        self.config = parse_slo_config({"metadata": metadata, "data": {"colocation-config": '{"enable": true}'}},
                                       DEFAULT_CONFIG)
        self.names = [f"bench-node-{i:05d}" for i in range(nodes)]
        self.pods = [(f"app-{i:02d}-{self.rng.getrandbits(32):08x}-{self.rng.getrandbits(20):05x}", i < pods * 3 // 5)
                     for i in range(pods)]
        self.states = {name: aggregate.initial_state() for name in self.names}
        for name in self.names:
            self.apply(self.event(name, "Node", START, self._node(name)))
            if zones:
                self.apply(self.event(name, "NodeResourceTopology", START, self._topology(name, zones)))
            for pod, prod in self.pods:
                self.apply(self.event(name, "SchedulingDecision", START, self._decision(name, pod, prod)))

    def event(self, node: str, kind: str, ts: int, record: dict) -> InboxEvent:
        self.offset += 1
        cause = Causation("koord.inbox.node", 0, self.offset, f"koord.{kind.lower()}s", 0, self.offset)
        return InboxEvent(cause, ts, node, kind, record)

    def apply(self, event: InboxEvent) -> list[dict]:
        self.states[event.key], out = aggregate.handle(self.states[event.key], event, self.config, DEFAULT_SETTINGS)
        return out

    @staticmethod
    def _node(name: str) -> dict:
        labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                  "node.kubernetes.io/instance-type": "ecs.g7.8xlarge", "topology.kubernetes.io/zone": "zone-a"}
        resources = {"cpu": 32_000, "memory": 128 * GI, "pods": 110}
        return {"metadata": {"name": name, "namespace": None, "uid": None, "labels": labels, "annotations": {},
                             "generation": 0}, "manifest": "{}", "unschedulable": False, "taints": [],
                "capacity": resources, "allocatable": resources}

    @staticmethod
    def _topology(name: str, zones: int) -> dict:
        cpu, memory = 32_000 // zones, 128 * GI // zones
        return {"metadata": {"name": name}, "manifest": "{}", "zones": [
            {"name": f"node-{i}", "type": "Node", "resources": [
                {"name": "cpu", "capacity": cpu, "allocatable": cpu, "available": cpu},
                {"name": "memory", "capacity": memory, "allocatable": memory, "available": memory}]}
            for i in range(zones)]}

    def _decision(self, node: str, pod: str, prod: bool) -> dict:
        causation = {"inboxTopic": "koord.inbox.scheduling", "inboxPartition": 0, "inboxOffset": self.offset,
                     "sourceTopic": "koord.pods", "sourcePartition": 0, "sourceOffset": self.offset}
        return {"pod": {"namespace": "default", "name": pod, "uid": None}, "result": "Bound", "nodeName": node,
                "causation": causation, "timestamp": START,
                "requests": {"cpu": 1000, "memory": 2 * GI}, "priority": 9100 if prod else 5100,
                "priorityClass": PRIORITY_PROD if prod else PRIORITY_BATCH, "qosClass": QOS_LS if prod else QOS_BE}

    def metric(self, node: str, ts: int, reclaimable: bool) -> InboxEvent:
        usages = [{"namespace": "default", "name": pod, "uid": None, "priority": None, "qos": None,
                   "usage": {"cpu": int(700 * self.rng.lognormvariate(0, 0.3)),
                             "memory": int(1.5 * GI * self.rng.lognormvariate(0, 0.05))}}
                  for pod, _ in self.pods]
        node_usage = {"cpu": sum(u["usage"]["cpu"] for u in usages) + 1000,
                      "memory": sum(u["usage"]["memory"] for u in usages) + GI // 2}
        record = {"metadata": {"name": node}, "manifest": "{}", "nodeUsage": node_usage, "podsMetric": usages,
                  "updateTime": ts, "systemUsage": {"cpu": 1000, "memory": GI // 2}, "aggregatedNodeUsages": [],
                  "hostApplicationMetric": [],
                  "prodReclaimable": {"cpu": 2000, "memory": 4 * GI} if reclaimable else {}}
        return self.event(node, "NodeMetric", ts, record)


def _time(fleet: Fleet, events: list[InboxEvent], repeats: int) -> float:
    """Best CPU µs per event of handling ``events`` from the fleet's current states (states left unchanged)."""
    best = float("inf")
    for _ in range(repeats):
        states = dict(fleet.states)
        config = fleet.config
        started = time.process_time()
        for event in events:
            states[event.key], _ = aggregate.handle(states[event.key], event, config, DEFAULT_SETTINGS)
        best = min(best, (time.process_time() - started) / len(events) * 1e6)
    return best


def run(nodes: int = 1, pods: int = 20, warmup_minutes: int = 26 * 60, events: int = 2000, repeats: int = 5,
        seed: int = 1, zones: int = 0) -> dict[str, float]:
    fleet = Fleet(nodes, pods, seed, zones)
    minute = 60_000
    for step in range(warmup_minutes):
        for name in fleet.names:
            fleet.apply(fleet.metric(name, START + step * minute, reclaimable=False))
    now = START + warmup_minutes * minute
    per_node = max(1, events // nodes)
    figures = {}
    for label, step_ms, reclaimable in (("train+predict", minute, False), ("train, reclaimable reported", minute, True),
                                        ("no training", 10, True)):
        batch = [fleet.metric(name, now + 1 + step * step_ms, reclaimable)
                 for step in range(per_node) for name in fleet.names]
        figures[label] = _time(fleet, batch, repeats)
    state = fleet.states[fleet.names[0]]
    started = time.process_time()
    for _ in range(200):
        statecodec.dump_state(state)
    figures["dump_state"] = (time.process_time() - started) / 200 * 1e6
    figures["bytes/node"] = sum(len(statecodec.dump_state(s)) for s in fleet.states.values()) / nodes
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--pods", type=int, default=20)
    parser.add_argument("--warmup-minutes", type=int, default=26 * 60)
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--zones", type=int, default=0, help="NUMA zones of each node's NodeResourceTopology")
    args = parser.parse_args()
    figures = run(args.nodes, args.pods, args.warmup_minutes, args.events, args.repeats, zones=args.zones)
    for label, value in figures.items():
        unit = "bytes" if label == "bytes/node" else "µs/event" if label != "dump_state" else "µs"
        change = (value / BASELINE[label] - 1) * 100
        print(f"{label:30s} {value:9.1f} {unit:9s} (baseline {BASELINE[label]:g}, {change:+.0f} %)")


if __name__ == "__main__":
    main()
