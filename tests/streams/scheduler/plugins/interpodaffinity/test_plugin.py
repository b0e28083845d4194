"""InterPodAffinity through the scheduling domain: placements, messages, preemption, retries, restore, args."""

import numpy as np
import pytest

from streams.scheduler import config
from streams.scheduler.domain import SchedulingDomain
from streams.scheduler.framework import Code, CycleState
from streams.scheduler.plugins.interpodaffinity import NAME, InterPodAffinityArgs
from tests.streams.scheduler.plugins.interpodaffinity.wrappers import (
    affinity, cluster, incoming, make_pod, namespace_event, run_filter, term)
from tests.streams.scheduler.support import decisions, deleted, k8s_node, k8s_pod, node_scores, plugin_of, run

HOSTNAME = "kubernetes.io/hostname"
WEB = {"app": "web"}
ONE_PER_NODE = affinity(anti_required=[term(match_labels=WEB, topology=HOSTNAME)])


def host(name: str, zone: str = "z1", ts: int = 1000):
    return k8s_node(name, {"cpu": "8", "memory": "16Gi", "pods": "110"},
                    labels={HOSTNAME: name, "topology.kubernetes.io/zone": zone}, ts=ts)


def replica(name: str, pod_affinity: dict = ONE_PER_NODE, labels: dict = WEB, priority: int | None = None,
            node_name: str | None = None):
    return k8s_pod(name, labels=labels, requests={"cpu": "100m"}, affinity=pod_affinity, priority=priority,
                   node_name=node_name)


def placed(out) -> dict[str, str | None]:
    return {d["pod"]["name"]: d["nodeName"] for d in decisions(out)}


def test_replicas_with_required_anti_affinity_spread_over_hosts_and_the_third_is_unschedulable():
    _, out = run(host("n1"), host("n2"), *(replica(f"web-{i}") for i in range(3)))
    last = decisions(out)[-1]
    assert sorted(node for name, node in placed(out).items() if name != "web-2") == ["n1", "n2"]
    assert (last["pod"]["name"], last["result"]) == ("web-2", "Unschedulable")
    assert last["message"] == ("0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules. "
                               "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.")


def test_pods_placed_by_the_retries_of_one_event_see_each_other():
    """Three pending replicas are retried by one node event: each sees the ones placed before it."""
    _, out = run(*(replica(f"web-{i}") for i in range(3)), host("n1", ts=5000))
    assert list(placed(out).values()) == ["n1", None, None]


def test_the_first_pod_of_a_group_with_affinity_to_itself_lands_and_the_others_follow_it_into_its_zone():
    together = affinity(required=[term(match_labels={"app": "db"}, topology="topology.kubernetes.io/zone")])
    _, out = run(host("a1", "za"), host("b1", "zb"), host("b2", "zb"),
                 *(replica(f"db-{i}", together, {"app": "db"}) for i in range(3)))
    zones = {node[0] for node in placed(out).values()}
    assert None not in placed(out).values() and len(zones) == 1


def test_preemption_removes_the_pod_the_anti_affinity_objects_to():
    """kube-scheduler's SelectVictimsOnNode: the filters run again without the victims (RemovePod)."""
    _, out = run(host("n1"), replica("low", pod_affinity=None, priority=1),
                 replica("high", priority=100))
    evicted = [r for name, r in out if name == "Eviction"]
    assert [e["pod"]["name"] for e in evicted] == ["low"]
    assert placed(out)["high"] == "n1"


def test_preemption_removes_an_existing_pod_whose_anti_affinity_rejects_the_incoming_one():
    _, out = run(host("n1"), replica("low", priority=1), replica("high", pod_affinity=None, priority=100))
    assert placed(out)["high"] == "n1"


def test_affinity_failures_are_unresolvable_so_preemption_does_not_try_those_nodes():
    wants_db = affinity(required=[term(match_labels={"app": "db"}, topology=HOSTNAME)])
    _, out = run(host("n1"), replica("web", wants_db, priority=100))
    assert decisions(out)[-1]["message"] == (
        "0/1 nodes are available: 1 node(s) didn't match pod affinity rules. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")


def test_match_label_keys_keep_apart_only_pods_of_the_same_revision():
    by_revision = affinity(anti_required=[{**term(match_labels=WEB, topology=HOSTNAME),
                                           "matchLabelKeys": ["pod-template-hash"]}])
    domain = cluster([("n1", {HOSTNAME: "n1"})], [make_pod(labels={**WEB, "pod-template-hash": "v1"}, node="n1")])
    same = make_pod(labels={**WEB, "pod-template-hash": "v1"}, pod_affinity=by_revision)
    other = make_pod(labels={**WEB, "pod-template-hash": "v2"}, pod_affinity=by_revision)
    assert run_filter(domain, same).nodes[0] is not None
    assert run_filter(domain, other).nodes == (None,)


@pytest.mark.parametrize("selector, blocked", [
    ({}, True), ({"matchLabels": {"kubernetes.io/metadata.name": "other"}}, True),
    ({"matchLabels": {"kubernetes.io/metadata.name": "default"}}, False), ({"matchLabels": {"team": "a"}}, False),
], ids=["{} selects every namespace", "by name, the pod's namespace", "by name, another namespace",
        "another label selects none without Namespace objects"])
def test_namespace_selector_without_namespace_objects(selector, blocked):
    domain = cluster([("n1", {HOSTNAME: "n1"})], [make_pod("other", WEB, "n1")], namespaces={})
    pod = make_pod(pod_affinity=affinity(anti_required=[term(match_labels=WEB, topology=HOSTNAME,
                                                             namespace_selector=selector)]))
    assert (run_filter(domain, pod).nodes[0] is not None) == blocked


def test_a_pod_without_terms_in_a_cluster_without_anti_affinity_skips_and_scores_zero():
    domain = cluster([("n1", {HOSTNAME: "n1"}), ("n2", {HOSTNAME: "n2"})], [make_pod(labels=WEB, node="n1")])
    plugin = plugin_of(domain, NAME)
    pod = incoming(make_pod(labels=WEB))
    assert plugin.pre_filter(CycleState(), pod).code == Code.SKIP
    assert node_scores(plugin, CycleState(), pod, np.ones(2, dtype=bool)) == [0, 0]
    assert not plugin.index.any_terms and not plugin.index.required_anti_affinity


def test_the_index_follows_pods_leaving_their_nodes():
    domain, _ = run(host("n1"), replica("a", node_name="n1"))
    plugin = plugin_of(domain, NAME)
    assert list(plugin.index.required_anti_affinity.values()) == [{"n1": 1}]
    run(replica("b", node_name="n1"), domain=domain)
    assert list(plugin.index.required_anti_affinity.values()) == [{"n1": 2}]
    run(k8s_pod("a", labels=WEB, node_name="n1", requests={"cpu": "100m"}), domain=domain)
    assert list(plugin.index.required_anti_affinity.values()) == [{"n1": 1}] and "default/a" in plugin.index.node
    assert list(plugin.index.labels.values()) == [{"n1": 2}]
    run(deleted("Pod", "default/b"), domain=domain)
    assert not plugin.index.required_anti_affinity and list(plugin.index.labels.values()) == [{"n1": 1}]


def test_args():
    assert InterPodAffinityArgs.from_config({"hardPodAffinityWeight": 5, "ignorePreferredTermsOfExistingPods": True}) \
        == InterPodAffinityArgs(5, True)
    document = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                "profiles": [{"schedulerName": "default-scheduler",
                              "pluginConfig": [{"name": NAME, "args": {"hardPodAffinityWeight": 101}}]}]}
    with pytest.raises(config.ConfigError, match=r"hardPodAffinityWeight: not in valid range \[0-100\]"):
        config.parse(document)
    with pytest.raises(ValueError):
        InterPodAffinityArgs(-1).validate()


def test_a_pod_waiting_for_its_affinity_partner_is_retried_when_the_partner_lands():
    """The domain raises AssignedPod Add; the hint queues the pod for a partner, not for any pod."""
    wants_db = affinity(required=[term(match_labels={"app": "db"}, topology=HOSTNAME)])
    domain, out = run(host("n1"), replica("web", wants_db, labels={"app": "web"}))
    assert decisions(out)[-1]["result"] == "Unschedulable"
    _, out = run(k8s_pod("cache", labels={"app": "cache"}, requests={"cpu": "100m"}, ts=3000), domain=domain)
    assert "web" not in placed(out)
    assert domain.queue.pods["default/web"].moved is False
    _, out = run(k8s_pod("db", labels={"app": "db"}, requests={"cpu": "100m"}, ts=4000), domain=domain)
    assert placed(out) == {"db": "n1", "web": "n1"}


def test_a_restored_domain_decides_as_the_live_one():
    """The index is rebuilt from the restored assignments and Namespace objects are kept with the domain."""
    first = [namespace_event("team-a", {"team": "a"}), host("n1"), host("n2"), replica("web-0")]
    live, _ = run(*first)
    restored = SchedulingDomain.restore("default", live.entries())
    rest = [replica("web-1"), replica("web-2")]
    _, live_out = run(*rest, domain=live)
    _, restored_out = run(*rest, domain=restored)
    assert placed(restored_out) == placed(live_out) == {"web-1": "n2", "web-2": None}
    assert restored.cluster.objects["Namespace"]["team-a"]["metadata"]["labels"] == {"team": "a"}


def test_a_pod_kept_off_by_anti_affinity_is_retried_when_the_pod_it_avoids_is_deleted_not_another():
    """kube-scheduler's hint for an assigned pod's Delete: Queue only when the deleted pod matched all of the
    waiting pod's anti-affinity terms; the domain names the deleted pod in the event."""
    avoids_db = affinity(anti_required=[term(match_labels={"app": "db"}, topology=HOSTNAME)])
    domain, out = run(host("n1"), replica("db", None, {"app": "db"}, node_name="n1"),
                      replica("cache", None, {"app": "cache"}, node_name="n1"), replica("web", avoids_db))
    assert placed(out)["web"] is None
    _, out = run(deleted("Pod", "default/cache", ts=3000), domain=domain)
    assert "web" not in placed(out) and domain.queue.pods["default/web"].moved is False
    _, out = run(deleted("Pod", "default/db", ts=4000), domain=domain)
    assert placed(out)["web"] == "n1"
