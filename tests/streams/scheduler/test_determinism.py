"""A mixed inbox gives pinned outputs: the hot-path caches (NUMA node groups, reservation rows, quota and load
vectors) must not change a decision. The digest covers every output but its free-text ``message``."""

import dataclasses
import hashlib
import json
import random

from streams.koordinator.labels import (
    LABEL_NODE_CPU_BIND_POLICY, LABEL_NUMA_TOPOLOGY_POLICY, LABEL_POD_QOS, LABEL_QUOTA_NAME)
from tests.streams.scheduler.plugins.nodenumaresource.test_plugin import topology
from tests.streams.scheduler.support import GI, T0, deleted, metric, node, pod, quota, run, tick

CPU_TOPOLOGY = "node.koordinator.sh/cpu-topology"
KUBELET_POLICY = "kubelet.koordinator.sh/cpu-manager-policy"
RESOURCE_SPEC = "scheduling.koordinator.sh/resource-spec"
NUMA_SPEC = "scheduling.koordinator.sh/numa-topology-spec"
PINNED_DIGEST = "129f529043cd572700bb771e2457c82d0a435d2c6c93b8a98e97fab836eeb1e3"


def mixed_inbox(seed: int = 5) -> list:
    """Plain and NUMA nodes (every node policy the plugin reads), metrics, quotas, then pods of every kind with
    deletions, a node removal, metric updates and time passing; offsets numbered from 0, whatever ran before."""
    rng = random.Random(seed)
    events = []
    numa = {CPU_TOPOLOGY: topology(2, 1, 4, 2)}
    special = {
        "numa-single": ({LABEL_NUMA_TOPOLOGY_POLICY: "SingleNUMANode"}, numa),
        "numa-restricted": ({LABEL_NUMA_TOPOLOGY_POLICY: "Restricted"}, numa),
        "numa-besteffort": ({LABEL_NUMA_TOPOLOGY_POLICY: "BestEffort"}, numa),
        "bind-full": ({LABEL_NODE_CPU_BIND_POLICY: "FullPCPUsOnly"}, numa),
        "bind-spread": ({LABEL_NODE_CPU_BIND_POLICY: "SpreadByPCPUs"}, numa),
        "kubelet-static": ({}, {**numa, KUBELET_POLICY: json.dumps(
            {"policy": "static", "options": {"full-pcpus-only": "true"}})}),
        "no-topology": ({LABEL_NUMA_TOPOLOGY_POLICY: "SingleNUMANode"}, {}),
    }
    for name, (labels, annotations) in special.items():
        events.append(node(name, cpu=16_000, memory=32 * GI, labels=labels, annotations=annotations, ts=T0))
        events.append(metric(name, T0, {"cpu": rng.randrange(0, 4000), "memory": rng.randrange(0, 16) * GI}, ts=T0))
    for i in range(30):
        name = f"n{i:02d}"
        events.append(node(name, cpu=32_000, memory=128 * GI, ts=T0))
        events.append(metric(name, T0, {"cpu": rng.randrange(0, 16_000), "memory": rng.randrange(0, 80) * GI},
                             ts=T0))
    for q in range(3):
        events.append(quota(f"team-{q}", {"cpu": 300_000, "memory": 1200 * GI}, {"cpu": 200_000, "memory": 800 * GI},
                            ts=T0))
    live: list[str] = []
    for i in range(400):
        ts = T0 + i * 50
        labels = {LABEL_QUOTA_NAME: f"team-{rng.randrange(4)}"}
        annotations = {}
        kind = rng.randrange(6)
        cpu, memory = rng.choice(((500, GI // 2), (1000, GI), (2000, 4 * GI), (4000, 8 * GI), (1500, GI)))
        if kind == 1:
            labels[LABEL_POD_QOS] = "LSR"
        elif kind == 2:
            labels[LABEL_POD_QOS] = "LSE"
            annotations[RESOURCE_SPEC] = json.dumps({"requiredCPUBindPolicy": rng.choice(("FullPCPUs", "SpreadByPCPUs"))})
        elif kind == 3:
            annotations[NUMA_SPEC] = json.dumps({"numaTopologyPolicy": rng.choice(("SingleNUMANode", "Restricted"))})
        priority = rng.choice((9500, 5500, None))
        name = f"p{i:03d}"
        events.append(pod(name, cpu=cpu, memory=memory, labels=labels, annotations=annotations, priority=priority,
                          ts=ts))
        live.append(f"default/{name}")
        if i % 7 == 6:
            events.append(deleted("Pod", live.pop(rng.randrange(len(live))), ts=ts))
        if i % 50 == 49:
            target = f"n{rng.randrange(30):02d}"
            events.append(metric(target, ts, {"cpu": rng.randrange(0, 32_000), "memory": rng.randrange(0, 128) * GI},
                                 ts=ts))
        if i == 200:
            events.append(deleted("Node", "n07", ts=ts))
            events.append(tick(ts + 100_000))
    return [dataclasses.replace(ev, causation=dataclasses.replace(ev.causation, inbox_offset=offset,
                                                                  source_offset=offset))
            for offset, ev in enumerate(events)]


def digest(outputs) -> str:
    kept = [(name, {k: v for k, v in record.items() if k != "message"}) for name, record in outputs]
    return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()


def test_a_mixed_inbox_gives_the_pinned_outputs():
    _, outputs = run(*mixed_inbox())
    results = {record["result"] for name, record in outputs if name == "SchedulingDecision"}
    assert {"Scheduled", "Unschedulable", "Released"} <= results
    assert digest(outputs) == PINNED_DIGEST
