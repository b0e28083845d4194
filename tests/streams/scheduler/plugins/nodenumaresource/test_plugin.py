"""NodeNUMAResource: Koordinator's plugin_test.go vectors (NN-25..NN-37 of the reference), PreBind, the restore
from assigned pods, and one run through the scheduling domain with the plugin registered for the test."""

import json

import numpy as np
import pytest

from streams.objects.args import ArgsError
from streams.scheduler import registry
from streams.scheduler.framework import Code, CycleState
from streams.scheduler.plugins.nodenumaresource import NAME, NodeNUMAResource
from streams.scheduler.plugins.nodenumaresource.args import NodeNUMAResourceArgs
from streams.scheduler.plugins.nodenumaresource.topology import CPUTopology
from streams.scheduler.state import Cluster, NodeChanged, NodeObject, PodAssigned, PodUnassigned
from tests.streams.scheduler.support import decisions, node, pod, pod_info, profile_with, run

GI = 1 << 30
QOS = "koordinator.sh/qosClass"
N = "node.koordinator.sh/"
S = "scheduling.koordinator.sh/"
KUBELET_POLICY = "kubelet.koordinator.sh/cpu-manager-policy"


def topology(sockets, nodes, cores, per_core) -> str:
    cpus = CPUTopology.build(sockets, nodes, cores, per_core).cpus
    return json.dumps({"detail": [{"id": c.cpu_id, "core": c.core_id, "socket": c.socket_id, "node": c.node_id}
                                  for c in cpus]})


def cluster(*nodes) -> Cluster:
    """Nodes as (name, labels, annotations, allocatable)."""
    out = Cluster()
    for name, labels, annotations, allocatable in nodes:
        out.nodes[name] = NodeObject(name, labels, annotations, (), False, allocatable)
        out.columns.upsert(name, allocatable)
    return out


def numa_node(shape=(2, 1, 4, 2), labels=None, annotations=None, memory=32 * GI, name="n1"):
    cpus = shape[0] * shape[1] * shape[2] * shape[3] if shape else 16
    notes = {N + "cpu-topology": topology(*shape)} if shape else {}
    return name, labels or {}, {**notes, **(annotations or {})}, {"cpu": cpus * 1000, "memory": memory, "pods": 110}


def a_pod(name="p", cpu=4000, memory=GI, qos=None, priority=9999, annotations=None, spec=None):
    labels = {QOS: qos} if qos else {}
    notes = dict(annotations or {})
    if spec is not None:
        notes[S + "resource-spec"] = json.dumps(spec)
    return pod_info(pod(name, cpu=cpu, memory=memory, labels=labels, priority=priority, annotations=notes))


def plugin(c: Cluster, **args) -> NodeNUMAResource:
    return NodeNUMAResource(NodeNUMAResourceArgs.from_config(args), c)


def filtered(p: NodeNUMAResource, info, state=None):
    state = CycleState() if state is None else state
    status = p.pre_filter(state, info)
    assert status.ok, status
    result = p.filter(state, info, np.ones(len(p.cluster.columns), dtype=bool))
    return state, result


def reasons(result) -> list[str]:
    return [reason for reason, mask in result.reasons if mask.any()]


def reserved(p: NodeNUMAResource, info, node_name="n1"):
    state, result = filtered(p, info)
    assert result.passed.all(), reasons(result)
    status = p.reserve(state, info, node_name)
    return state, status


def assign(c: Cluster, key: str, node_name: str, status: dict, spec: dict | None = None):
    """An assigned pod carrying its resource-status, as another scheduler (or an earlier run) bound it."""
    notes = {S + "resource-status": json.dumps(status)}
    if spec:
        notes[S + "resource-spec"] = json.dumps(spec)
    info = pod_info(pod(key, cpu=1000, node_name=node_name, annotations=notes))
    c.pods[info.key] = info
    c.assignment[info.key] = node_name
    return info


# -- PreFilter -----------------------------------------------------------------------------------

@pytest.mark.parametrize("qos", ["LSR", "LSE"])
def test_nn25_preferred_full_pcpus_binds(qos):
    state = CycleState()
    assert plugin(cluster(numa_node())).pre_filter(state, a_pod(qos=qos, spec={
        "preferredCPUBindPolicy": "FullPCPUs"})).ok
    st = state[NAME]
    assert (st.request_bind, st.preferred, st.required, st.num_cpus) == (True, "FullPCPUs", "", 4)


def test_nn26_required_full_pcpus():
    state = CycleState()
    plugin(cluster(numa_node())).pre_filter(state, a_pod(qos="LSR", spec={"requiredCPUBindPolicy": "FullPCPUs"}))
    assert (state[NAME].required, state[NAME].preferred) == ("FullPCPUs", "FullPCPUs")


def test_nn27_required_default_takes_the_plugin_default():
    state = CycleState()
    p = plugin(cluster(numa_node()), defaultCPUBindPolicy="SpreadByPCPUs")
    p.pre_filter(state, a_pod(qos="LSR", spec={"requiredCPUBindPolicy": "Default"}))
    assert (state[NAME].required, state[NAME].preferred) == ("SpreadByPCPUs", "SpreadByPCPUs")


def test_nn28_no_resource_spec_prefers_the_plugin_default():
    state = CycleState()
    plugin(cluster(numa_node())).pre_filter(state, a_pod(qos="LSR"))
    assert (state[NAME].request_bind, state[NAME].preferred, state[NAME].required) == (True, "FullPCPUs", "")


def test_nn29_empty_pods_skip_and_be_pods_do_not_bind():
    p = plugin(cluster(numa_node()))
    assert p.pre_filter(CycleState(), a_pod(cpu=None, memory=None, qos="LSE")).code == Code.SKIP
    state = CycleState()
    assert p.pre_filter(state, a_pod(qos="BE", priority=5000)).ok
    assert (state[NAME].request_bind, state[NAME].num_cpus) == (False, 4)


def test_nn30_fractional_cpus():
    p = plugin(cluster(numa_node()))
    status = p.pre_filter(CycleState(), a_pod(cpu=4500, qos="LSR", spec={"preferredCPUBindPolicy": "FullPCPUs"}))
    assert (status.code, status.message) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "the requested CPUs must be integer")
    state = CycleState()
    assert p.pre_filter(state, a_pod(cpu=4500, qos="LSE", spec={"preferredCPUBindPolicy": "test"})).ok
    assert (state[NAME].request_bind, state[NAME].num_cpus) == (False, 4)


# -- Filter --------------------------------------------------------------------------------------

def test_nn31_binding_needs_a_cpu_topology():
    _, result = filtered(plugin(cluster(numa_node(shape=None))), a_pod(qos="LSR"))
    assert reasons(result) == ["node(s) invalid CPU Topology"]
    assert result.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_nn32_full_pcpus_only_needs_whole_cores():
    p = plugin(cluster(numa_node(labels={N + "cpu-bind-policy": "FullPCPUsOnly"})))
    _, result = filtered(p, a_pod(cpu=5000, qos="LSR", spec={"preferredCPUBindPolicy": "FullPCPUs"}))
    assert reasons(result) == ["node(s) requested cpus not multiple cpus per core"]
    _, result = filtered(p, a_pod(cpu=4000, qos="LSR", spec={"preferredCPUBindPolicy": "FullPCPUs"}))
    assert result.passed.all()
    _, result = filtered(p, a_pod(cpu=5000, qos="LS"))
    assert reasons(result) == ["node(s) requested cpus not multiple cpus per core"]
    _, result = filtered(p, a_pod(cpu=5200, qos="LS"))
    assert reasons(result) == ["the requested CPUs must be integer"]


def test_nn33_node_policy_conflicts_with_the_pods_required_policy():
    spread = plugin(cluster(numa_node(labels={N + "cpu-bind-policy": "SpreadByPCPUs"})))
    _, result = filtered(spread, a_pod(qos="LSR", spec={"requiredCPUBindPolicy": "FullPCPUs"}))
    assert reasons(result) == ["node(s) cpu bind policy conflicts with pod's required cpu bind policy"]
    kubelet = {KUBELET_POLICY: json.dumps({"policy": "static", "options": {"full-pcpus-only": "true"}})}
    full = plugin(cluster(numa_node(annotations=kubelet)))
    _, result = filtered(full, a_pod(qos="LSR", spec={"requiredCPUBindPolicy": "SpreadByPCPUs"}))
    assert reasons(result) == ["node(s) cpu bind policy conflicts with pod's required cpu bind policy"]
    _, result = filtered(full, a_pod(qos="LSR", spec={"requiredCPUBindPolicy": "FullPCPUs"}))
    assert result.passed.all()


def test_numa_policies_of_node_and_pod_must_match():
    p = plugin(cluster(numa_node(labels={N + "numa-topology-policy": "Restricted"})))
    info = a_pod(annotations={S + "numa-topology-spec": json.dumps({"numaTopologyPolicy": "SingleNUMANode"})})
    _, result = filtered(p, info)
    assert reasons(result) == ["node(s) NUMA Topology policy not match"]


def test_a_node_changing_its_cpu_bind_policy_is_filtered_by_its_new_policy():
    c = cluster(numa_node(name="n1"), numa_node(name="n2"))
    p = plugin(c)
    info = a_pod(cpu=1500)
    assert filtered(p, info)[1].passed.tolist() == [True, True]
    old = c.nodes["n2"]
    new = NodeObject("n2", {N + "cpu-bind-policy": "FullPCPUsOnly"}, old.annotations, (), False, old.allocatable)
    c.nodes["n2"] = new
    c.columns.upsert("n2", new.allocatable)
    p.observe(NodeChanged("n2", old, new))
    _, result = filtered(p, info)
    assert result.passed.tolist() == [True, False] and reasons(result) == ["the requested CPUs must be integer"]


def test_a_required_policy_tries_the_allocation_in_filter():
    c = cluster(numa_node())
    assign(c, "holder", "n1", {"cpuset": "0-13"})
    _, result = filtered(plugin(c), a_pod(qos="LSR", spec={"requiredCPUBindPolicy": "FullPCPUs"}))
    assert reasons(result) == ["not enough cpus available to satisfy request"]


# -- Reserve -------------------------------------------------------------------------------------

def test_nn34_reserve_picks_the_cpuset():
    p = plugin(cluster(numa_node()))
    state, status = reserved(p, a_pod(qos="LSR", spec={"preferredCPUBindPolicy": "FullPCPUs"}))
    assert status.ok and state[NAME].allocation.cpuset == (0, 1, 2, 3)
    spread = plugin(cluster(numa_node(labels={N + "cpu-bind-policy": "SpreadByPCPUs"})))
    state, status = reserved(spread, a_pod(qos="LS"))
    assert state[NAME].allocation.cpuset == (0, 2, 4, 6)
    state, status = reserved(plugin(cluster(numa_node())), a_pod(cpu=24000, qos="LSR"))
    assert (status.code, status.message) == (Code.UNSCHEDULABLE, "not enough cpus available to satisfy request")


@pytest.mark.parametrize("strategy,cpus", [("LeastAllocated", (16, 17, 18, 19)), ("MostAllocated", (4, 5, 6, 7))])
def test_nn35_node_numa_allocate_strategy(strategy, cpus):
    c = cluster(numa_node(shape=(2, 1, 8, 2), labels={N + "numa-allocate-strategy": strategy}))
    assign(c, "holder", "n1", {"cpuset": "0-3"})
    state, status = reserved(plugin(c), a_pod(qos="LSR", spec={"preferredCPUBindPolicy": "FullPCPUs"}))
    assert status.ok and state[NAME].allocation.cpuset == cpus


def test_reserved_cpus_are_held_until_unreserve_and_follow_assignment():
    c = cluster(numa_node())
    p = plugin(c)
    first = a_pod("first", qos="LSR")
    state, _ = reserved(p, first)
    second_state, _ = reserved(p, a_pod("second", qos="LSR"))
    assert second_state[NAME].allocation.cpuset == (8, 9, 10, 11)
    p.unreserve(state, first, "n1")
    again, _ = reserved(p, a_pod("third", qos="LSR"))
    assert again[NAME].allocation.cpuset == (0, 1, 2, 3)
    p.observe(PodUnassigned("default/third", first, "n1"))
    c.bind_annotations["default/fourth"] = {S + "resource-status": json.dumps({"cpuset": "0-1"})}
    p.observe(PodAssigned("default/fourth", a_pod("fourth"), "n1", 0))
    after, _ = reserved(p, a_pod("fifth", cpu=2000, qos="LSR"))
    assert after[NAME].allocation.cpuset == (2, 3)


def test_kubelet_reserved_cpus_are_never_bound():
    kubelet = {KUBELET_POLICY: json.dumps({"policy": "static", "reservedCPUs": "0-1"})}
    most = {N + "numa-allocate-strategy": "MostAllocated"}
    state, _ = reserved(plugin(cluster(numa_node(labels=most, annotations=kubelet))), a_pod(qos="LSR"))
    assert state[NAME].allocation.cpuset == (2, 3, 4, 5)


# -- PreBind -------------------------------------------------------------------------------------

def test_pre_bind_writes_resource_status_and_the_missing_resource_spec():
    p = plugin(cluster(numa_node()))
    info = a_pod(qos="LSR")
    state, _ = reserved(p, info)
    assert p.pre_bind(state, info, "n1") == {
        S + "resource-status": '{"cpuset":"0-3"}',
        S + "resource-spec": '{"preferredCPUBindPolicy":"FullPCPUs"}'}
    named = a_pod(qos="LSR", spec={"preferredCPUBindPolicy": "FullPCPUs"})
    state, _ = reserved(p, named)
    assert p.pre_bind(state, named, "n1") == {S + "resource-status": '{"cpuset":"8-11"}'}


def test_pre_bind_writes_the_required_policy_a_node_forces():
    p = plugin(cluster(numa_node(labels={N + "cpu-bind-policy": "SpreadByPCPUs"})))
    info = a_pod(qos="LS", spec={"preferredCPUBindPolicy": "Default"})
    state, _ = reserved(p, info)
    assert json.loads(p.pre_bind(state, info, "n1")[S + "resource-spec"]) == {
        "preferredCPUBindPolicy": "SpreadByPCPUs", "requiredCPUBindPolicy": "SpreadByPCPUs"}


def test_plain_pods_get_nothing():
    p = plugin(cluster(numa_node()))
    info = a_pod()
    state, status = reserved(p, info)
    assert status.ok and p.pre_bind(state, info, "n1") == {}


# -- NUMA hints (TestFilterWithNUMANodeScoring) ---------------------------------------------------

def numa_cluster(policy, numa_nodes, used_cpu):
    shape = (numa_nodes, 1, 104 // 2 // numa_nodes, 2)
    c = cluster(numa_node(shape=shape, labels={N + "numa-topology-policy": policy}, memory=256 * GI))
    for numa, cpu in enumerate(used_cpu):
        assign(c, f"used-{numa}", "n1", {"numaNodeResources": [
            {"node": numa, "resources": {"cpu": str(cpu), "memory": "8Gi"}}]})
    return c


@pytest.mark.parametrize("strategy,used,affinity", [
    ("MostAllocated", (4, 40), [1]), ("LeastAllocated", (4, 40), [0]), ("LeastAllocated", (4, 52), [0])],
    ids=["NN-36-most", "NN-36-least", "NN-36-only-one-fits"])
def test_nn36_single_numa_node_hint_scoring(strategy, used, affinity):
    p = plugin(numa_cluster("SingleNUMANode", 2, used), numaScoringStrategy={
        "type": strategy, "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]})
    state, result = filtered(p, a_pod(cpu=4000, memory=40 * GI))
    assert result.passed.all(), reasons(result)
    assert state[NAME].affinity["n1"].nodes == affinity


@pytest.mark.parametrize("strategy,affinity", [("MostAllocated", [3]), ("LeastAllocated", [2])],
                         ids=["NN-37-most", "NN-37-least"])
def test_nn37_restricted_hint_scoring(strategy, affinity):
    p = plugin(numa_cluster("Restricted", 4, (24, 23, 4, 8)), numaScoringStrategy={"type": strategy})
    state, result = filtered(p, a_pod(cpu=4000, memory=40 * GI))
    assert result.passed.all(), reasons(result)
    assert state[NAME].affinity["n1"].nodes == affinity


def test_single_numa_node_reserve_splits_resources_and_writes_them():
    p = plugin(numa_cluster("SingleNUMANode", 2, (4, 40)))
    info = a_pod(cpu=4000, memory=40 * GI)
    state, status = reserved(p, info)
    assert status.ok
    assert p.pre_bind(state, info, "n1") == {
        S + "resource-status": '{"numaNodeResources":[{"node":0,"resources":{"cpu":"4","memory":"40Gi"}}]}'}


def test_single_numa_node_refuses_a_pod_wider_than_a_numa_node():
    p = plugin(numa_cluster("SingleNUMANode", 2, (0, 0)))
    _, result = filtered(p, a_pod(cpu=60000, memory=GI))
    assert result.code == Code.UNSCHEDULABLE
    assert reasons(result) == [
        "Unaligned NUMA Hint cause cpu prefer [11] among [11],memory prefer [11] among [11]"]
    _, result = filtered(p, a_pod(cpu=200000, memory=GI))
    assert reasons(result) == ["Unsatisfied NUMA cpu", "Unsatisfied NUMA memory"]


def test_numa_policy_without_topology_misses_numa_resources():
    p = plugin(cluster(numa_node(shape=None, labels={N + "numa-topology-policy": "Restricted"})))
    _, result = filtered(p, a_pod())
    assert reasons(result) == ["node(s) missing NUMA resources"]


# -- Score ---------------------------------------------------------------------------------------

def test_score_least_and_most_allocated_over_the_node():
    c = cluster(numa_node(name="a"), numa_node(name="b"))
    c.columns.add_pod("b", {"cpu": 8000, "memory": 16 * GI}, {"cpu": 8000, "memory": 16 * GI})
    info = a_pod(cpu=4000, memory=8 * GI)
    for strategy, expected in (("LeastAllocated", [75, 25]), ("MostAllocated", [25, 75])):
        p = plugin(c, scoringStrategy={"type": strategy, "resources": [{"name": "cpu", "weight": 1},
                                                                       {"name": "memory", "weight": 1}]})
        state = CycleState()
        p.pre_filter(state, info)
        assert p.score(state, info, np.ones(2, dtype=bool)).tolist() == expected


def test_score_over_the_numa_node_of_the_allocation():
    p = plugin(numa_cluster("SingleNUMANode", 2, (4, 40)))
    state, _ = filtered(p, a_pod(cpu=4000, memory=40 * GI))
    # NUMA 0: cpu (52 - 8) * 100 // 52 = 84, memory (128 - 48) * 100 // 128 = 62 -> 73
    assert p.score(state, a_pod(cpu=4000, memory=40 * GI), np.ones(1, dtype=bool)).tolist() == [73]


# -- Args and restore ----------------------------------------------------------------------------

def test_args_validation_messages():
    with pytest.raises(ArgsError, match="must specified CPU bind policy FullPCPUs or SpreadByPCPUs"):
        NodeNUMAResourceArgs.from_config({"defaultCPUBindPolicy": "Other"})
    with pytest.raises(ArgsError, match=r"resource weight of cpu not in valid range \(0, 100\]"):
        NodeNUMAResourceArgs.from_config({"scoringStrategy": {"type": "MostAllocated",
                                                              "resources": [{"name": "cpu", "weight": 0}]}})
    with pytest.raises(ArgsError, match="numa scoring strategy Balanced is not supported"):
        NodeNUMAResourceArgs.from_config({"numaScoringStrategy": {"type": "Balanced"}})
    args = NodeNUMAResourceArgs.from_config(None)
    assert (args.default_cpu_bind_policy, args.scoring_type, args.numa_allocate_strategy) == (
        "FullPCPUs", "LeastAllocated", "LeastAllocated")


def test_a_restored_plugin_decides_the_same():
    c = cluster(numa_node())
    assign(c, "held", "n1", {"cpuset": "0-3"}, spec={"preferredCPUExclusivePolicy": "PCPULevel"})
    restored = plugin(c)
    assert restored.nodes["n1"].pods["default/held"].exclusive_policy == "PCPULevel"
    state, _ = reserved(restored, a_pod(qos="LSR"))
    assert state[NAME].allocation.cpuset == (8, 9, 10, 11)


# -- through the scheduling domain ---------------------------------------------------------------

POINTS = {point: {"enabled": [{"name": NAME}]} for point in ("preFilter", "filter", "score", "reserve", "preBind")}


def test_the_domain_binds_an_lse_pod_and_refuses_a_pod_wider_than_a_numa_node(monkeypatch):
    monkeypatch.setitem(registry.REGISTRY, NAME, NodeNUMAResource)
    domain, _ = run(profile_with(NAME, {}, **POINTS),
                    node("numa", cpu=16000, memory=32 * GI, annotations={N + "cpu-topology": topology(2, 1, 4, 2)}))
    _, out = run(pod("lse", cpu=4000, labels={QOS: "LSE"}, priority=9500), domain=domain)
    (decision,) = decisions(out)
    assert decision["result"] == "Scheduled"
    assert json.loads(decision["annotations"][S + "resource-status"]) == {"cpuset": "0-3"}
    _, out = run(pod("lse-2", cpu=4000, labels={QOS: "LSE"}, priority=9500), domain=domain)
    assert json.loads(decisions(out)[0]["annotations"][S + "resource-status"]) == {"cpuset": "8-11"}

    domain, _ = run(profile_with(NAME, {}, **POINTS),
                    node("single", cpu=16000, memory=32 * GI, labels={N + "numa-topology-policy": "SingleNUMANode"},
                         annotations={N + "cpu-topology": topology(2, 1, 4, 2)}))
    _, out = run(pod("wide", cpu=10000), pod("narrow", cpu=6000), domain=domain)
    refused, placed = decisions(out)
    assert refused["result"] == "Unschedulable"
    assert refused["message"].startswith("0/1 nodes are available: 1 Unaligned NUMA Hint cause cpu prefer [11] "
                                         "among [11],memory prefer [11] among [11].")
    assert placed["result"] == "Scheduled"
    assert json.loads(placed["annotations"][S + "resource-status"]) == {"numaNodeResources": [
        {"node": 0, "resources": {"cpu": "6", "memory": "1Gi"}}]}
