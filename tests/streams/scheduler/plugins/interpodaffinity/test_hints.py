"""InterPodAffinity's queueing hints: kube-scheduler's ``plugin_test.go`` tables (``Test_isSchedulableAfterPodChange``,
``Test_isSchedulableAfterNodeChange``) with their Go names as ids, then the hints as the domain calls them."""

import pytest

from streams.scheduler.framework import ADD, ASSIGNED_POD, NODE, UPDATE, ClusterEvent
from streams.scheduler.plugins.interpodaffinity import NAME, hints
from streams.scheduler.plugins.interpodaffinity.terms import parse
from tests.streams.scheduler.plugins.interpodaffinity.wrappers import (
    REQUIRED, MakePod, affinity, incoming, term)
from tests.streams.scheduler.support import k8s_node, k8s_pod, plugin_of, pod_info, run

QUEUE, SKIP = True, False


def scan_affinity():
    return MakePod().name("p").pod_affinity_in("service", "region", ["securityscan", "value2"], REQUIRED).obj()


def scan_anti_affinity():
    return MakePod().name("p").pod_anti_affinity_in("service", "region", ["securityscan", "value2"], REQUIRED).obj()


def aaa_and_bbb():
    return MakePod().name("p").pod_affinity_exists("aaa", "hostname", REQUIRED) \
        .pod_affinity_exists("bbb", "hostname", REQUIRED).obj()


def other(labels: dict, node: str | None = "fake-node"):
    pod = MakePod().name("other").labels(labels)
    if node:
        pod.node(node)
    return pod.obj()


POD_CHANGES = [
    ("add a pod which matches the pod affinity", scan_affinity(), None, other({"service": "securityscan"}), QUEUE),
    ("add an un-scheduled pod", scan_affinity(), None, other({"service": "securityscan"}, None), SKIP),
    ("add a pod which doesn't match the pod affinity", scan_affinity(), None, other({"aaa": "a"}), SKIP),
    ("update a pod from non-match to match pod affinity", scan_affinity(), other({"aaa": "a"}),
     other({"service": "securityscan"}), QUEUE),
    ("the updating pod matches target pod's affinity both before and after label changes", scan_affinity(),
     other({"service": "value2"}), other({"service": "securityscan"}), SKIP),
    ("update an un-scheduled pod", scan_affinity(), other({"service": "securityscan"}, None),
     other({"service": "securityscan"}, None), SKIP),
    ("update a pod from match to non-match the pod affinity", scan_affinity(), other({"service": "securityscan"}),
     other({"aaa": "a"}), SKIP),
    ("update a pod from match to non-match pod's affinity - multiple terms case", aaa_and_bbb(), other({"aaa": "a"}),
     other({"service": "securityscan"}), SKIP),
    ("update a pod from non-match to match pod's affinity - multiple terms case", aaa_and_bbb(), other({"aaa": "a"}),
     other({"aaa": "", "bbb": ""}), QUEUE),
    ("modify pod label to change it from satisfying pod anti-affinity to not satisfying anti-affinity",
     scan_anti_affinity(), other({"service": "securityscan"}), other({"service": "aaaa"}), QUEUE),
    ("modify pod label to change it from not satisfying pod anti-affinity to satisfying anti-affinity",
     scan_anti_affinity(), other({"service": "bbb"}), other({"service": "securityscan"}), SKIP),
    ("delete a pod which doesn't match pod's anti-affinity", scan_anti_affinity(), other({"aaa": "a"}), None, SKIP),
    ("delete a pod which matches pod's anti-affinity", scan_anti_affinity(), other({"service": "securityscan"}), None,
     QUEUE),
]


@pytest.mark.parametrize("pod, old, new, want", [case[1:] for case in POD_CHANGES], ids=[c[0] for c in POD_CHANGES])
def test_is_schedulable_after_pod_change(pod, old, new, want):
    """Test_isSchedulableAfterPodChange."""
    terms = parse(incoming(pod))
    old, new = (incoming(body) if body else None for body in (old, new))
    assert hints.pod_change_may_help(terms, old, new, lambda namespace: {}) is want


def zone_anti_affinity():
    return MakePod().name("p").affinity(affinity(anti_required=[term(match_labels={"another": "label"},
                                                                     topology="zone")])).obj()


def zone_affinity(topology: str = "zone"):
    return MakePod().name("p").pod_affinity_in("service", topology, ["securityscan", "value2"], REQUIRED).obj()


NODE_CHANGES = [
    ("add a new node with matched pod affinity topologyKey", zone_affinity(), None, {"zone": "zone1"}, QUEUE),
    ("add a new node without matched topologyKey", zone_affinity("region"), None, {"zone": "zone1"}, SKIP),
    ("update node label but not topologyKey", zone_affinity(), {"aaa": "a"}, {"aaa": "b"}, SKIP),
    ("update node label that isn't related to the pod affinity", zone_affinity(), {"zone": "zone1"},
     {"zone": "zone1", "unrelated-label": "unrelated"}, SKIP),
    ("update node with different affinity topologyKey value", zone_affinity(), {"zone": "zone1"}, {"zone": "zone2"},
     QUEUE),
    ("update node to have the affinity topology label", zone_affinity(), {"aaa": "a"}, {"zone": "zone1"}, QUEUE),
    ("add a new node with matched pod anti-affinity topologyKey", zone_anti_affinity(), None, {"zone": "zone1"},
     QUEUE),
    ("add a new node without matched pod anti-affinity topologyKey", zone_anti_affinity(), None, {}, QUEUE),
    ("update node label that isn't related to the pod anti-affinity", zone_anti_affinity(), {"zone": "zone1"},
     {"zone": "zone1", "unrelated-label": "unrelated"}, SKIP),
    ("update node with different anti-affinity topologyKey value", zone_anti_affinity(), {"zone": "zone1"},
     {"zone": "zone2"}, QUEUE),
    ("update node to have the anti-affinity topology label", zone_anti_affinity(), {"aaa": "a"}, {"zone": "zone1"},
     SKIP),
    ("update node label not to have anti-affinity topology label", zone_anti_affinity(), {"zone": "zone1"},
     {"aaa": "a"}, QUEUE),
]


@pytest.mark.parametrize("pod, old, new, want", [case[1:] for case in NODE_CHANGES], ids=[c[0] for c in NODE_CHANGES])
def test_is_schedulable_after_node_change(pod, old, new, want):
    """Test_isSchedulableAfterNodeChange."""
    assert hints.node_change_may_help(parse(incoming(pod)), old, new) is want


HOSTNAME = "kubernetes.io/hostname"


def test_the_domains_events_reach_the_hints_with_what_changed():
    wants_db = affinity(required=[term(match_labels={"app": "db"}, topology=HOSTNAME)])
    alloc = {"cpu": "8", "memory": "16Gi", "pods": "110"}
    domain, _ = run(k8s_node("n1", alloc, labels={HOSTNAME: "n1"}), k8s_node("bare", alloc),
                    k8s_pod("db", labels={"app": "cache"}, node_name="n1"))
    plugin = plugin_of(domain, NAME)
    pod = pod_info(k8s_pod("web", affinity=wants_db))
    assert not plugin.pod_change_may_help(ClusterEvent(ASSIGNED_POD, ADD, "default/db"), pod)
    run(k8s_pod("db", labels={"app": "db"}, node_name="n1"), domain=domain)
    assert plugin.pod_change_may_help(ClusterEvent(ASSIGNED_POD, UPDATE, "default/db"), pod)
    assert not plugin.node_change_may_help(ClusterEvent(NODE, ADD, "bare"), pod)
    run(k8s_node("bare", alloc, labels={HOSTNAME: "bare"}), domain=domain)
    assert plugin.node_change_may_help(ClusterEvent(NODE, UPDATE, "bare"), pod)
    run(k8s_node("bare", alloc, labels={HOSTNAME: "bare", "other": "x"}), domain=domain)
    assert not plugin.node_change_may_help(ClusterEvent(NODE, UPDATE, "bare"), pod)
