"""The ElasticQuota plugin: PreFilter cases ported from plugin_test.go with their numbers, then quota
preemption, statuses, validation, and multiple quota trees through the domain."""

import json

import pytest

from streams.quotas import DEFAULT
from streams.scheduler.framework import CycleState
from streams.scheduler.plugins.elasticquota.plugin import NAME, check_non_preemptible, check_parent, check_quota
from streams.scheduler.state import PodChanged
from tests.streams.scheduler.support import (
    GI, T0, decisions, deleted, event, k8s_node, k8s_pod, node, plugin_of, pod, pod_info, profile_with, quota, run,
    tick)

QUOTA_LABEL = "quota.scheduling.koordinator.sh/name"
PREEMPTIBLE_LABEL = "quota.scheduling.koordinator.sh/preemptible"


def cpu(n):
    return n * 1000


# -- TestPlugin_PreFilter: the check against a forced runtime ------------------------------------------

def default_quota_request(cpu_cores, memory, gpu):
    """The pod's request as the default quota sees it (its max has cpu and memory only)."""
    domain, _ = run(node("n1"))
    info = plugin_of(domain, NAME).trees[""].quotas[DEFAULT]
    return info.masked({"cpu": cpu(cpu_cores), "memory": memory, "nvidia.com/gpu": gpu})


@pytest.mark.parametrize("runtime, request_, want", [
    ({"cpu": 0, "memory": 20}, (1, 2, 1),
     "Insufficient quotas, quotaName: koordinator-default-quota, runtime: cpu:0,memory:20, used: <empty>, "
     "pod's request: cpu:1,memory:2, exceedDimensions: [cpu]"),
    ({"cpu": cpu(10), "memory": 20}, (1, 2, 1), None),
    ({"cpu": cpu(1), "memory": 2}, (1, 3, 1),
     "Insufficient quotas, quotaName: koordinator-default-quota, runtime: cpu:1,memory:2, used: <empty>, "
     "pod's request: cpu:1,memory:3, exceedDimensions: [memory]"),
], ids=["TestPlugin_PreFilter/default", "TestPlugin_PreFilter/used dimension larger than runtime, but value is enough",
        "TestPlugin_PreFilter/value not enough"])
def test_pre_filter_against_runtime(runtime, request_, want):
    assert check_quota(DEFAULT, runtime, {}, default_quota_request(*request_)) == want


def test_pre_filter_runtime_not_enough_but_disable_runtime():
    """TestPlugin_PreFilter/runtime not enough, but disable runtime: the max is checked instead."""
    domain, _ = run(profile_with(NAME, {"enableRuntimeQuota": False}), node("n1"))
    tree = plugin_of(domain, NAME).trees[""]
    assert check_quota(DEFAULT, tree.limit(DEFAULT, False), {}, default_quota_request(1, 3, 1)) is None


def test_pre_filter_check_parent():
    """TestPlugin_PreFilter_CheckParent/parent reject."""
    gpu = "nvidia.com/gpu"
    message = check_parent(["test", "test-child"], {"cpu": cpu(1), "memory": 2, gpu: 1}, {},
                           {"cpu": cpu(1), "memory": 3, gpu: 1})
    assert message == ("Insufficient quotas, quotaNameTopo: [test test-child], runtime: cpu:1,memory:2,"
                       "nvidia.com/gpu:1, used: <empty>, pod's request: cpu:1,memory:3,nvidia.com/gpu:1, "
                       "exceedDimensions: [memory]")


def _non_preempt_case(total, max_, init, new):
    """TestPlugin_Prefilter_QuotaNonPreempt: quota test1 (min cpu 5, memory 5) on one node of ``total``."""
    events = [k8s_node("test-node", {"cpu": str(total[0]), "memory": str(total[1]), "pods": "100"}),
              quota("test1", {"cpu": cpu(max_[0]), "memory": max_[1]}, {"cpu": cpu(5), "memory": 5})]
    for name, priority, c, m, non_preemptible in init:
        labels = {QUOTA_LABEL: "test1", **({PREEMPTIBLE_LABEL: "false"} if non_preemptible else {})}
        events.append(k8s_pod(name, priority=priority, requests={"cpu": str(c), "memory": str(m)},
                              labels=labels, node_name="test-node"))
    domain, _ = run(*events)
    plugin = plugin_of(domain, NAME)
    name, priority, c, m, non_preemptible = new
    labels = {QUOTA_LABEL: "test1", **({PREEMPTIBLE_LABEL: "false"} if non_preemptible else {})}
    pending = pod_info(k8s_pod(name, priority=priority, requests={"cpu": str(c), "memory": str(m)}, labels=labels))
    plugin.observe(PodChanged(pending.key, None, pending))
    status = plugin.pre_filter(CycleState(), pending)
    return None if status.ok else status.message


@pytest.mark.parametrize("total, max_, init, new, want", [
    ((10, 10), (10, 10), [("1", 10, 2, 1, False), ("2", 9, 1, 1, False), ("3", 8, 1, 1, False)], ("4", 1, 2, 2, True),
     None),
    ((8, 5), (10, 8), [("1", 10, 2, 1, False), ("2", 9, 2, 1, True), ("3", 9, 2, 1, True)], ("4", 1, 2, 2, True),
     "Insufficient non-preemptible quotas, quotaName: test1, min: cpu:5,memory:5, nonPreemptibleUsed: cpu:4,memory:2, "
     "pod's request: cpu:2,memory:2, exceedDimensions: [cpu]"),
    ((7, 5), (10, 8), [("1", 10, 2, 1, False), ("2", 4, 2, 1, False), ("3", 1, 2, 2, True)], ("4", 10, 2, 1, True),
     "Insufficient quotas, quotaName: test1, runtime: cpu:7,memory:5, used: cpu:6,memory:4, "
     "pod's request: cpu:2,memory:1, exceedDimensions: [cpu]"),
], ids=["TestPlugin_Prefilter_QuotaNonPreempt/default",
        "TestPlugin_Prefilter_QuotaNonPreempt/non-preemptible pod used larger than min",
        "TestPlugin_Prefilter_QuotaNonPreempt/non-preemptible pod will not be evicted"])
def test_pre_filter_quota_non_preempt(total, max_, init, new, want):
    assert _non_preempt_case(total, max_, init, new) == want


def test_non_preemptible_check_message_format():
    assert check_non_preemptible("q", {"cpu": cpu(1)}, {}, {"cpu": cpu(1), "memory": 1}) is None


# -- through the domain ---------------------------------------------------------------------------------

def team_quota(max_cpu=4, min_cpu=0, name="team", **kwargs):
    return quota(name, {"cpu": cpu(max_cpu), "memory": 64 * GI}, {"cpu": cpu(min_cpu)}, **kwargs)


def team_pod(name, cpu_cores=1, priority=None, quota_name="team", non_preemptible=False, ts=T0, **kwargs):
    labels = {QUOTA_LABEL: quota_name, **({PREEMPTIBLE_LABEL: "false"} if non_preemptible else {})}
    return pod(name, cpu=cpu(cpu_cores), memory=GI, priority=priority, labels=labels, ts=ts, **kwargs)


def test_pod_over_its_quota_gets_the_insufficient_quotas_message():
    _, out = run(node("n1", cpu=cpu(16), memory=64 * GI, ts=T0), team_quota(max_cpu=2, ts=T0),
                 team_pod("a", 2), team_pod("b", 1))
    b = decisions(out)[-1]
    assert b["result"] == "Unschedulable"
    assert b["message"].startswith(
        "0/1 nodes are available: Insufficient quotas, quotaName: team, runtime: cpu:2,memory:2Gi, used: "
        "cpu:2,memory:1Gi, pod's request: cpu:1,memory:1Gi, exceedDimensions: [cpu].")
    assert b["filterResults"] == [{"plugin": "ElasticQuota", "reason": b["message"][len("0/1 nodes are available: "):
                                                                                   b["message"].index(". preemption")],
                                   "count": 1}]


def test_quota_preemption_evicts_a_lower_priority_preemptible_pod_of_the_same_quota():
    _, out = run(node("n1", cpu=cpu(16), memory=64 * GI, ts=T0), team_quota(max_cpu=2, min_cpu=1, ts=T0),
                 team_pod("low", 1, priority=1), team_pod("keep", 1, priority=1, non_preemptible=True),
                 team_pod("other-quota", 1, priority=1, quota_name="koordinator-default-quota"),
                 team_pod("high", 1, priority=100))
    got = [(d["pod"]["name"], d["result"], d["nodeName"]) for d in decisions(out)]
    assert got[-2:] == [("low", "Preempted", "n1"), ("high", "Scheduled", "n1")]
    assert decisions(out)[-2]["message"] == "Preempted by default/high on node n1"


def test_no_quota_victims_in_the_default_quota_which_default_preemption_serves():
    """ElasticQuota finds no victims for a default-quota pod; kube-scheduler's DefaultPreemption, next in the
    PostFilter stage, then preempts by priority (a quota pod's preemption stays ElasticQuota's)."""
    only_quota = profile_with("ElasticQuota", None, postFilter={"disabled": [{"name": "DefaultPreemption"}]},
                              ts=T0)
    _, out = run(only_quota, node("n1", cpu=cpu(2), memory=64 * GI, ts=T0),
                 team_pod("a", 2, priority=5, quota_name=DEFAULT), team_pod("b", 1, priority=100, quota_name=DEFAULT))
    assert decisions(out)[-1]["result"] == "Unschedulable"
    assert decisions(out)[-1]["message"].endswith(
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")
    _, out = run(node("n1", cpu=cpu(2), memory=64 * GI, ts=T0),
                 team_pod("a", 2, priority=5, quota_name=DEFAULT), team_pod("b", 1, priority=100, quota_name=DEFAULT))
    assert [(d["pod"]["name"], d["result"]) for d in decisions(out)][-2:] == [("a", "Preempted"), ("b", "Scheduled")]


def test_preempted_pod_waits_and_is_placed_again_when_room_returns():
    domain, out = run(node("n1", cpu=cpu(16), memory=64 * GI, ts=T0), team_quota(max_cpu=2, ts=T0),
                      team_pod("low", 2, priority=1), team_pod("high", 2, priority=100))
    assert [d["result"] for d in decisions(out)][-2:] == ["Preempted", "Scheduled"]
    _, out = run(team_pod("high", 2, priority=100, phase="Succeeded", ts=T0 + 5000), domain=domain)
    assert [(d["pod"]["name"], d["result"]) for d in decisions(out)] == [("high", "Released"), ("low", "Scheduled")]


def test_quota_statuses_are_synced_every_second_and_on_quota_changes():
    domain, out = run(node("n1", cpu=cpu(16), memory=64 * GI, ts=T0), team_quota(max_cpu=8, min_cpu=2, ts=T0))
    statuses = {r["name"]: r for n, r in out if n == "ElasticQuotaStatus"}
    assert statuses["team"]["runtime"] == {"cpu": 0, "memory": 0}
    assert statuses["team"]["namespace"] == "default" and statuses[DEFAULT]["namespace"] is None
    _, out = run(team_pod("a", 3, ts=T0 + 10), domain=domain)
    assert [n for n, _ in out if n == "ElasticQuotaStatus"] == []
    _, out = run(tick(T0 + 1000), domain=domain)
    team = [r for n, r in out if n == "ElasticQuotaStatus" and r["name"] == "team"][0]
    assert (team["runtime"]["cpu"], team["used"]["cpu"], team["request"]["cpu"]) == (cpu(3), cpu(3), cpu(3))


@pytest.mark.parametrize("record, reason", [
    (quota("child", {"cpu": 1000}, parent="missing"), "child has parentName missing but not find parentInfo"),
    (quota("koordinator-root-quota", {"cpu": 1000}), "invalid quota koordinator-root-quota"),
    (quota("q", {"cpu": 1000}, {"memory": 1}), "resourceKey memory of quota q is included in min"),
], ids=["parent missing", "root", "min outside max"])
def test_a_bad_quota_is_dead_lettered_and_the_tree_stays(record, reason):
    domain, out = run(node("n1"), record)
    letters = [r for n, r in out if n == "DeadLetter"]
    assert len(letters) == 1 and reason in letters[0]["reason"] and letters[0]["stage"] == "scheduling"
    assert letters[0]["sourceTopic"] == "koord.quotas"
    assert record.record["metadata"]["name"] not in domain.cluster.quotas


def test_parent_must_be_a_parent_quota_and_children_mins_fit():
    _, out = run(team_quota(name="p", min_cpu=2), team_quota(name="c", parent="p"))
    assert "IsParent is false" in [r for n, r in out if n == "DeadLetter"][0]["reason"]
    _, out = run(team_quota(name="p", min_cpu=2, is_parent=True), team_quota(name="c1", min_cpu=2, parent="p"),
                 team_quota(name="c2", min_cpu=1, parent="p"))
    assert [r["reason"] for n, r in out if n == "DeadLetter"] == [
        "checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: p"]


def test_check_parent_quota_through_the_domain():
    """c2 already uses 3 of its parent's 4; c1's own runtime (2) admits a 2-cpu pod, its parent does not."""
    config = profile_with(NAME, {"enableCheckParentQuota": True}, ts=T0)
    _, out = run(config, node("n1", cpu=cpu(16), memory=64 * GI, ts=T0),
                 quota("p", {"cpu": cpu(4), "memory": 64 * GI}, is_parent=True, ts=T0),
                 quota("c1", {"cpu": cpu(8), "memory": 64 * GI}, parent="p", ts=T0),
                 quota("c2", {"cpu": cpu(8), "memory": 64 * GI}, parent="p", ts=T0),
                 team_pod("y", 3, quota_name="c2", node_name="n1"), team_pod("x", 2, quota_name="c1"))
    assert decisions(out)[-1]["message"].startswith(
        "0/1 nodes are available: Insufficient quotas, quotaNameTopo: [p c1], runtime: cpu:4,memory:2Gi, "
        "used: cpu:3,memory:1Gi, pod's request: cpu:2,memory:1Gi, exceedDimensions: [cpu].")


def _profile(name="gpu-pool", quota_name="gpu-root", selector=None, ratio=None, labels=None):
    spec = {"quotaName": quota_name, "nodeSelector": {"matchLabels": selector or {"pool": "gpu"}}}
    if ratio:
        spec["resourceRatio"] = ratio
    if labels:
        spec["quotaLabels"] = labels
    record = {"metadata": {"name": name, "namespace": "kube-system", "labels": {}, "annotations": {}},
              "manifest": json.dumps({"spec": spec}), "quotaTreeId": "tree-1", "nodeSelector": selector or {"pool": "gpu"}}
    return event("ElasticQuotaProfile", f"kube-system/{name}", record, ts=T0)


def test_profile_builds_a_tree_from_its_nodes_and_pods_of_the_tree_stay_on_them():
    tree = {"quota.scheduling.koordinator.sh/tree-id": "tree-1"}
    domain, out = run(
        node("gpu-1", cpu=cpu(8), memory=32 * GI, labels={"pool": "gpu"}, ts=T0),
        node("cpu-1", cpu=cpu(64), memory=256 * GI, labels={"pool": "cpu"}, ts=T0),
        _profile(ratio="0.5", labels={"quota.scheduling.koordinator.sh/is-parent": "true"}),
        quota("train", {"cpu": cpu(100), "memory": 100 * GI}, parent="gpu-root", labels=tree, ts=T0),
        team_pod("job", 1, quota_name="train"), team_pod("big", 5, quota_name="train"))
    plugin = plugin_of(domain, NAME)
    gpu_tree = plugin.trees["tree-1"]
    assert gpu_tree.total == {"cpu": cpu(4), "memory": 16 * GI, "pods": 55}
    assert gpu_tree.quotas["gpu-root"].spec.min == {"cpu": cpu(4), "memory": 16 * GI}
    assert plugin.trees[""].total["cpu"] == cpu(72 - 4)
    job, big = decisions(out)[-2:]
    assert (job["result"], job["nodeName"]) == ("Scheduled", "gpu-1")
    assert big["result"] == "Unschedulable" and "quotaName: train" in big["message"]
    status = [r for n, r in out if n == "ElasticQuotaStatus" and r["name"] == "train"][-1]
    assert status["domain"] == "tree-1"


def test_deleting_a_quota_moves_its_pods_to_the_default_quota():
    domain, _ = run(node("n1", cpu=cpu(16), memory=64 * GI), team_quota(), team_pod("a", 1))
    plugin = plugin_of(domain, NAME)
    assert plugin.pod_quota["default/a"] == ("team", "")
    run(deleted("ElasticQuota", "default/team"), domain=domain)
    assert plugin_of(domain, NAME).pod_quota["default/a"] == (DEFAULT, "")


def test_statuses_and_decisions_encode():
    """Every output of a quota scenario passes the Avro codec (``run`` encodes each)."""
    _, out = run(node("n1", cpu=cpu(16), memory=64 * GI, ts=T0), team_quota(max_cpu=2, ts=T0),
                 team_pod("low", 2, priority=1), team_pod("high", 2, priority=100), tick(T0 + 2000))
    assert {n for n, _ in out} == {"SchedulingDecision", "ElasticQuotaStatus", "Eviction"}


def test_a_pod_without_a_quota_belongs_to_the_default_quota():
    domain, _ = run(node("n1"))
    plugin = plugin_of(domain, NAME)
    info = pod_info(pod("x"))
    assert plugin.resolve(info) == (DEFAULT, "")
    assert plugin.pre_filter(CycleState(), info).ok


def test_a_preempted_pod_gets_an_eviction_that_names_its_preemptor():
    """The victim is evicted through the one eviction path (simulator or bridge), not only marked."""
    _, out = run(node("n1", cpu=cpu(16), memory=64 * GI, ts=T0), team_quota(max_cpu=2, ts=T0),
                 team_pod("low", 2, priority=1), team_pod("high", 2, priority=100), tick(T0 + 2000))
    [eviction] = [record for name, record in out if name == "Eviction"]
    assert eviction["pod"]["name"] == "low" and eviction["reason"] == "Preempted"
    assert eviction["message"].startswith("Preempted by ") and eviction["message"].endswith("/high on node n1")
