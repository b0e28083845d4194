"""InterPodAffinity's counts kept between cycles (kube-scheduler's PreFilter state: existingAntiAffinityCounts,
affinityCounts, antiAffinityCounts; PreScore's topology scores): after pods are added, relabelled and deleted,
nodes relabelled and removed, and in a preemption dry run (RemovePod), PreFilter, Filter and Score read what
counting every assigned pod from scratch gives.

The groups here sit on more than ``index.VECTOR_AT`` nodes, so the per-pair tables the index keeps and updates
in place are the ones read."""

from collections import Counter

import numpy as np

from streams.scheduler.framework import REMOVED_PODS, CycleState
from streams.scheduler.plugins.interpodaffinity import NAME, InterPodAffinity
from streams.scheduler.plugins.interpodaffinity.index import VECTOR_AT
from streams.scheduler.plugins.interpodaffinity.terms import parse
from tests.streams.scheduler.plugins.interpodaffinity.wrappers import affinity, incoming, make_pod, term, weighted
from tests.streams.scheduler.support import deleted, k8s_node, k8s_pod, node_scores, plugin_of, run

HOSTNAME, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
WEB = {"app": "web"}
NODES = 48
ONE_PER_HOST = affinity(anti_required=[term(match_labels=WEB, topology=HOSTNAME)],
                        preferred=[weighted(3, term(match_labels=WEB, topology=ZONE))])
INCOMING = make_pod(labels=WEB, pod_affinity=affinity(
    required=[term(match_labels=WEB, topology=ZONE)], anti_required=[term(match_labels=WEB, topology=HOSTNAME)],
    anti_preferred=[weighted(5, term(match_labels=WEB, topology=ZONE))]))


def host(index: int, zone: str | None = None, ts: int = 1000):
    name = f"h{index:02d}"
    return k8s_node(name, {"cpu": "64", "memory": "256Gi", "pods": "110"},
                    labels={HOSTNAME: name, ZONE: zone or f"z{index % 3}"}, ts=ts)


def web(index: int, node: int, labels: dict = WEB, ts: int = 1000):
    return k8s_pod(f"web-{index}", labels=labels, requests={"cpu": "100m"}, affinity=ONE_PER_HOST,
                   node_name=f"h{node:02d}", ts=ts)


def plain(index: int, node: int):
    return k8s_pod(f"plain-{index}", labels=WEB, requests={"cpu": "100m"}, node_name=f"h{node:02d}")


def from_scratch(domain) -> dict:
    """The three PreFilter counts of INCOMING, counted pod by pod over the assigned pods."""
    existing, affinity_counts, anti = Counter(), Counter(), Counter()
    cluster = domain.cluster
    for key, node in cluster.assignment.items():
        labels = cluster.nodes[node].labels if node in cluster.nodes else None
        if labels is None:
            continue
        pod = cluster.pods[key]
        if parse(pod).required_anti_affinity:
            existing[(HOSTNAME, labels[HOSTNAME])] += 1
        if pod.labels.get("app") == "web":
            affinity_counts[(ZONE, labels[ZONE])] += 1
            anti[(HOSTNAME, labels[HOSTNAME])] += 1
    return {"existing": dict(existing), "affinity": dict(affinity_counts), "anti": dict(anti)}


def counted(plugin) -> dict:
    state = CycleState()
    plugin.pre_filter(state, incoming(INCOMING))
    held = state[NAME]
    return {"existing": held.existing_anti.pairs(), "affinity": held.affinity.pairs(), "anti": held.anti.pairs()}


def decisions_of(plugin, domain, state: CycleState | None = None) -> tuple:
    """(Filter's passing nodes, Score of every node) for INCOMING."""
    pod = incoming(INCOMING)
    state = state or CycleState()
    plugin.pre_filter(state, pod)
    everywhere = np.ones(len(domain.cluster.columns), dtype=bool)
    return (plugin.filter(state, pod, everywhere).passed.tolist(),
            node_scores(plugin, CycleState(), pod, everywhere))


def fresh(domain) -> InterPodAffinity:
    """A new plugin over the same cluster: its index is built from the assigned pods, nothing kept."""
    plugin = plugin_of(domain, NAME)
    return InterPodAffinity(plugin.args, domain.cluster)


def started():
    domain, _ = run(*(host(i) for i in range(NODES)), *(web(i, i) for i in range(40)))
    plugin = plugin_of(domain, NAME)
    assert counted(plugin) == from_scratch(domain)
    assert plugin.index._tables and len(plugin.index.labels[("default", frozenset(WEB.items()))]) >= VECTOR_AT
    return domain, plugin


def test_counts_follow_pods_added_relabelled_and_deleted_after_they_were_first_read():
    domain, plugin = started()
    run(*(plain(i, 40 + i) for i in range(5)), web(40, 3), deleted("Pod", "default/web-0"),
        deleted("Pod", "default/web-7"), web(10, 10, labels={"app": "db"}, ts=2000), domain=domain)
    assert counted(plugin) == from_scratch(domain) == counted(fresh(domain))
    assert counted(plugin)["anti"][(HOSTNAME, "h03")] == 2 and (HOSTNAME, "h00") not in counted(plugin)["anti"]
    assert decisions_of(plugin, domain) == decisions_of(fresh(domain), domain)


def test_counts_follow_a_node_moved_to_another_zone_and_a_node_removed():
    domain, plugin = started()
    run(host(5, zone="z9", ts=2000), deleted("Node", "h07"), web(41, 46), domain=domain)
    assert counted(plugin) == from_scratch(domain) == counted(fresh(domain))
    assert counted(plugin)["affinity"][(ZONE, "z9")] == 1
    assert decisions_of(plugin, domain) == decisions_of(fresh(domain), domain)


def test_a_preemption_dry_run_leaves_the_victims_out_of_a_copy_of_the_counts():
    """RemovePod: the node of the pod taken away passes; the cycle's PreFilter counts (read again once the dry run
    is over) and the counts kept for the next cycle are untouched."""
    domain, plugin = started()
    before = counted(plugin)
    blocked, _ = decisions_of(plugin, domain)
    state = CycleState()
    state[REMOVED_PODS] = frozenset({"default/web-3"})
    passed, _ = decisions_of(plugin, domain, state)
    row = domain.cluster.columns.row["h03"]
    assert not blocked[row] and passed[row]
    assert [i for i, ok in enumerate(passed) if ok != blocked[i]] == [row]
    del state[REMOVED_PODS]
    pod, everywhere = incoming(INCOMING), np.ones(len(domain.cluster.columns), dtype=bool)
    assert plugin.filter(state, pod, everywhere).passed.tolist() == blocked
    assert counted(plugin) == before == from_scratch(domain)


def test_replicas_share_parsed_terms_unless_match_label_keys_read_their_labels():
    keyed = affinity(anti_required=[{**term(match_labels=WEB, topology=HOSTNAME), "matchLabelKeys": ["version"]}])
    one, two, other = (incoming(make_pod(labels={**WEB, "version": v}, pod_affinity=keyed)) for v in "112")
    assert parse(one) is parse(two)
    assert parse(other) != parse(one)
    assert ("version", "In", ("2",)) in parse(other).required_anti_affinity[0].selector.match_expressions
