"""The planner and the actuator speak one vocabulary: every (targetKind, mechanism, setting) a node-QoS
strategy can emit, with every feature turned on, passes the actuator's verification.

This guards ``streams/actuation.py`` from drifting again: a strategy that starts emitting a name, a target kind
or a mechanism the contract does not declare fails here, before any node agent rejects its actuations."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from node_agent.actuator.actuator import Actuator
from node_agent.actuator.coresched import CoreScheduling
from node_agent.actuator.sequences import SequenceStore
from node_agent.actuator.verify import Verifier
from streams import actuation as contract
from streams.nodeqos import registry
from streams.nodeqos.plugins import cpuevict, memoryevict
from tests.node_agent.actuator.conftest import CgroupTree
from tests.streams.nodeqos.support import G, host_app, metric, pod, pod_usage, qos_strategy, snapshot

NODE = "test-node1"
UIDS = [f"00000000-0000-0000-0000-{i:012d}" for i in range(1, 7)]
CPU = {"enable": True, "groupIdentity": 2, "schedIdle": 1, "coreExpeller": True}
NET = {"enable": True, "egressRequest": "100M", "egressLimit": "200M"}
CLASS = {"cpuQOS": CPU, "resctrlQOS": {"enable": True}, "networkQOS": NET}
APPS = {"applications": [
    {"name": "nginx", "qos": "LS", "cgroupPath": {"base": "CgroupRoot", "parentDir": "host-latency-sensitive/",
                                                   "relativePath": "nginx/"}},
    {"name": "batch-agent", "qos": "BE", "cgroupPath": {"base": "KubepodsBesteffort", "relativePath": "agent/"}}]}


def _strategy(cpu_policy: str, net_policy: str, suppress_policy: str):
    return qos_strategy(
        resource_qos_config={"clusterStrategy": {"policies": {"cpuPolicy": cpu_policy, "netQOSPolicy": net_policy},
                                                 "lsrClass": CLASS, "lsClass": CLASS, "beClass": CLASS}},
        resource_threshold_config={"clusterStrategy": {"enable": True, "cpuSuppressThresholdPercent": 65,
                                                       "cpuSuppressPolicy": suppress_policy,
                                                       "memoryEvictThresholdPercent": 50}},
        cpu_burst_config={"clusterStrategy": {"policy": "auto", "cfsQuotaBurstPercent": 300}},
        system_config={"clusterStrategy": {"totalNetworkBandwidth": "10G"}},
        host_application_config=APPS)


PODS = {
    "ns/lsr": dataclasses.replace(pod("LSR", UIDS[0], cpu=2000, limit_cpu=2000,
                                      labels={"koordinator.sh/qosClass": "LSR"}), cpuset="0-1"),
    "ns/ls": pod("LS", UIDS[1], cpu=1000, limit_cpu=2000, labels={
        "koordinator.sh/qosClass": "LS", "koordinator.sh/core-sched-group-id": "group-a"},
        annotations={"koordinator.sh/networkQOS": '{"ingressLimit": "50M", "egressLimit": "60M"}',
                     "koordinator.sh/cpuQOS": '{"enable": true, "groupIdentity": 1}'}),
    "ns/ls-exclusive": pod("LS", UIDS[2], limit_cpu=1000, labels={
        "koordinator.sh/qosClass": "LS", "koordinator.sh/core-sched-policy": "exclusive"}),
    "ns/be": pod("BE", UIDS[3], batch_cpu=1000, priority=5, labels={"koordinator.sh/qosClass": "BE"},
                 annotations={"node.koordinator.sh/resctrl": '{"llc": {"schemata": {"range": [0, 30]}}}'}),
    "ns/be2": pod("BE", UIDS[4], batch_cpu=1000, priority=3, labels={"koordinator.sh/qosClass": "BE"}),
    "ns/burstable": pod("", UIDS[5], limit_cpu=500),
}
METRIC = metric(node_usage={"cpu": 15_000, "memory": 100 * G}, pods=[
    pod_usage("ns", "lsr", 2000, 10 * G), pod_usage("ns", "ls", 4000, 10 * G), pod_usage("ns", "be", 3000, 30 * G),
    pod_usage("ns", "be2", 3000, 30 * G)], host_apps=[host_app("nginx", 500, G, "koord-prod"),
                                                      host_app("batch-agent", 500, G, "koord-batch")])
GONE = "00000000-0000-0000-0000-000000000099"
"""A pod that left the node with its own resctrl group: the group's removal is planned."""
PREVIOUS = {("qos", "BE", "cgroup"): {"cpu.cfs_quota_us": "500000", "cpuset.cpus": "0-3"},
            ("pod", UIDS[1], "cgroup"): {"cpu.cfs_quota_us": "400000"},
            ("pod", GONE, "resctrl"): {"l3.end_percent": "30", "tasks.pods": GONE}}


def emitted_settings():
    """(setting, strategy name) for every setting every strategy plans under every policy combination."""
    strategies = registry.build()
    for cpu_policy, net_policy, suppress_policy in itertools.product(
            ("groupIdentity", "coreSched"), ("tc", "terway-qos"), ("cfsQuota", "cpuset")):
        for previous in ({}, PREVIOUS):
            shot = snapshot(_strategy(cpu_policy, net_policy, suppress_policy), cpu=20_000, memory=128 * G,
                            pods=PODS, node_metric=METRIC, previous=previous)
            for strategy in strategies:
                for setting in strategy.plan(shot).settings:
                    yield strategy.name, setting


EMITTED = list(emitted_settings())


def test_the_enumeration_turns_every_feature_on():
    """Every (mechanism, targetKind) of the contract but container targets (no strategy addresses a container),
    and every setting name of those pairs the strategies use, is reached."""
    pairs = {(s.mechanism, s.target_kind) for _, s in EMITTED}
    assert pairs == set(contract.SETTINGS) - {(contract.MECHANISM_CGROUP, contract.TARGET_CONTAINER)}
    names = {name for _, s in EMITTED for name in s.values}
    assert {contract.CORE_SCHED_GROUP, contract.NET_PRIORITY, contract.NET_INGRESS_LIMIT, contract.NET_EGRESS_LIMIT,
            contract.CPU_BURST, contract.CPU_QUOTA, contract.CPUSET_CPUS, contract.CPU_BVT_WARP, contract.CPU_IDLE,
            contract.TASKS_PODS, contract.HOSTAPP_PATH, "L2.limit_bps", contract.GROUP_REMOVE} <= names


@pytest.mark.parametrize("strategy, key", sorted({(name, (s.target_kind, s.mechanism, tuple(sorted(s.values))))
                                                  for name, s in EMITTED}),
                         ids=lambda v: v if isinstance(v, str) else f"{v[0]}-{v[1]}-{'+'.join(v[2])}")
def test_every_planned_setting_passes_the_actuators_verification(strategy, key):
    kind, mechanism, names = key
    setting = next(s for n, s in EMITTED if n == strategy and (s.target_kind, s.mechanism, tuple(sorted(s.values)))
                   == key)
    record = contract.sign({"decisionId": "d", "nodeName": NODE, "sequence": 1, "targetKind": kind,
                            "targetId": setting.target_id, "mechanism": mechanism, "values": dict(setting.values),
                            "causation": {"inboxTopic": "t", "inboxPartition": 0, "inboxOffset": 0},
                            "timestamp": 0}, b"key")
    Verifier(NODE, b"key", SequenceStore(None)).check(record)


def test_every_planned_cgroup_setting_is_applied_or_reported_unsupported_never_rejected(tmp_path):
    """On a fake v1 tree holding every pod and host application (no bvt file, a kernel without core
    scheduling): nothing the planner emits is refused. What the host lacks is named in the ack."""
    class NoCoreSched:
        def unsupported(self):
            return "no core scheduling"
    tree = CgroupTree(tmp_path / "cgroup")
    for index, uid in enumerate(UIDS):
        tree.pod(uid, ("Guaranteed", "Burstable", "BestEffort")[index % 3])
    for path in ("host-latency-sensitive/nginx", "kubepods/besteffort/agent"):
        tree.mkdir(path)
    for tier in ("kubepods", "kubepods/burstable", "kubepods/besteffort"):
        for name in ("cpuset.cpus", "cpuset.effective_cpus"):
            (tree.root / "cpuset" / tier / name).write_text("0-19\n")  # the snapshot's 20 cores
    actuator = Actuator(NODE, {"cgroup": tree.backend(core_sched=CoreScheduling(NoCoreSched()))},
                        Verifier(NODE, None, SequenceStore(None)), clock=lambda: 0.0)
    for sequence, (_, setting) in enumerate(EMITTED, start=1):
        if setting.mechanism != contract.MECHANISM_CGROUP:
            continue
        ack = actuator.apply({"decisionId": f"d{sequence}", "nodeName": NODE, "sequence": sequence,
                              "targetKind": setting.target_kind, "targetId": setting.target_id,
                              "mechanism": setting.mechanism, "values": dict(setting.values), "signature": None,
                              "causation": {"inboxTopic": "t", "inboxPartition": 0, "inboxOffset": 0},
                              "timestamp": 0})
        assert not (ack["error"] or "").startswith("rejected"), (setting, ack)
        unsupported = {name for name in setting.values if f"unsupported {name}:" in (ack["error"] or "")}
        assert unsupported <= {contract.CPU_BVT_WARP, contract.CORE_SCHED_GROUP}, (setting, ack)
        assert ack["applied"] == bool(set(setting.values) - unsupported - {contract.HOSTAPP_PATH}), (setting, ack)
