"""PodTopologySpread's args (kube-scheduler's ``TestValidatePodTopologySpreadArgs`` cases), PreFilter's skip,
the default constraints, the incremental counts, and scenarios through the scheduling domain with the plugin
registered for the test (the lead registers it in ``registry.py``)."""

from collections import Counter

import numpy as np
import pytest

from streams.objects.args import ArgsError
from streams.scheduler import registry
from streams.scheduler.framework import SKIP, SUCCESS, CycleState
from streams.scheduler.plugins.podtopologyspread import (
    NAME, REASON_CONSTRAINTS_NOT_MATCH, REASON_NODE_LABEL_NOT_MATCH, DefaultConstraint, PodTopologySpread,
    PodTopologySpreadArgs)
from streams.scheduler.plugins.podtopologyspread.constraints import constraints_of, own_constraints
from tests.streams.scheduler.plugins.podtopologyspread.builders import (
    DNS, SA, existing, incoming, k8s_pod, run_plugin, spread, zoned)
from tests.streams.scheduler.support import decisions, deleted, node, node_scores, pod_info, profile_with, run


def constraint(max_skew=1, key="node", when=DNS, **fields) -> DefaultConstraint:
    return DefaultConstraint(max_skew, key, when, **fields)


@pytest.mark.parametrize("args, error", [
    pytest.param(PodTopologySpreadArgs((constraint(1, "node", DNS), constraint(2, "zone", SA)), "List"), None,
                 id="valid config"),
    pytest.param(PodTopologySpreadArgs((constraint(-1),), "List"),
                 "defaultConstraints[0].maxSkew: Invalid value: -1: not in valid range (0, inf)",
                 id="maxSkew less than zero"),
    pytest.param(PodTopologySpreadArgs((constraint(key=""),), "List"),
                 "defaultConstraints[0].topologyKey: Required value: can not be empty", id="empty topology key"),
    pytest.param(PodTopologySpreadArgs((constraint(when=""),), "List"),
                 "defaultConstraints[0].whenUnsatisfiable: Required value: can not be empty",
                 id="WhenUnsatisfiable is empty"),
    pytest.param(PodTopologySpreadArgs((constraint(when="none"),), "List"),
                 'defaultConstraints[0].whenUnsatisfiable: Unsupported value: "none": supported values: '
                 '"DoNotSchedule", "ScheduleAnyway"', id="WhenUnsatisfiable contains unsupported action"),
    pytest.param(PodTopologySpreadArgs((constraint(1), constraint(2)), "List"),
                 'defaultConstraints[1]: Duplicate value: "{node, DoNotSchedule}"', id="duplicated constraints"),
    pytest.param(PodTopologySpreadArgs((constraint(key="key", label_selector='{"matchLabels": {"a": "b"}}'),), "List"),
                 "defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, as they "
                 "deduced for each pod", id="label selector present"),
    pytest.param(PodTopologySpreadArgs((), "List"), None, id="list default constraints, no constraints"),
    pytest.param(PodTopologySpreadArgs((), "System"), None, id="system default constraints"),
    pytest.param(PodTopologySpreadArgs((constraint(key="key"),), "System"),
                 'defaultingType: Invalid value: "System": when .defaultConstraints are not empty',
                 id="system default constraints, but has constraints"),
])
def test_TestValidatePodTopologySpreadArgs(args, error):
    if error is None:
        args.validate()
    else:
        with pytest.raises(ArgsError) as raised:
            args.validate()
        assert str(raised.value) == f"{NAME}: {error}"


def test_args_read_from_a_configuration_default_to_system_defaulting():
    assert PodTopologySpreadArgs.from_config(None) == PodTopologySpreadArgs()
    read = PodTopologySpreadArgs.from_config({"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}]})
    assert read == PodTopologySpreadArgs((DefaultConstraint(2, "zone", SA),), "List")
    with pytest.raises(ArgsError, match='unknown field "defaultConstraint"'):
        PodTopologySpreadArgs.from_config({"defaultConstraint": []})


def test_pre_filter_skips_a_pod_without_constraints_and_one_with_only_soft_ones():
    _, plugin = run_plugin([zoned("n1", "z1")], [existing("p-1", "n1")], PodTopologySpreadArgs())
    unconstrained = pod_info(incoming())
    assert plugin.pre_filter(CycleState(), unconstrained) == SKIP
    assert node_scores(plugin, CycleState(), unconstrained, np.ones(1, dtype=bool)) == [0]
    assert plugin.pods.counted() == 0, "a pod without constraints reads no pod"
    assert plugin.pre_filter(CycleState(), pod_info(incoming(owner="ReplicaSet"))) == SKIP
    assert plugin.pre_filter(CycleState(), pod_info(incoming(spread(1, "zone", SA)))) == SKIP
    assert plugin.pre_filter(CycleState(), pod_info(incoming(spread(1, "zone")))) == SUCCESS


@pytest.mark.parametrize("owner, labels, selected", [
    pytest.param("ReplicaSet", {"app": "web", "pod-template-hash": "5d"}, {"app": "web", "pod-template-hash": "5d"},
                 id="a ReplicaSet's pod: its template labels"),
    pytest.param("StatefulSet", {"app": "db", "statefulset.kubernetes.io/pod-name": "db-0",
                                 "controller-revision-hash": "db-7c", "apps.kubernetes.io/pod-index": "0"},
                 {"app": "db"}, id="a StatefulSet's pod: without the labels set per pod"),
    pytest.param("DaemonSet", {"app": "agent"}, None, id="a DaemonSet's pod: no default constraints"),
    pytest.param(None, {"app": "web"}, None, id="a pod without owner: no default constraints"),
    pytest.param("ReplicaSet", {}, None, id="a ReplicaSet's pod without labels: no selector, no constraints"),
])
def test_system_default_constraints_select_the_pods_of_the_same_controller(owner, labels, selected):
    pod = pod_info(k8s_pod("p", labels, owner=owner))
    defaults = tuple(c.as_raw() for c in PodTopologySpreadArgs().constraints)
    found = constraints_of(own_constraints(pod.record), pod.labels, pod.owner_kinds, defaults, SA)
    if selected is None:
        assert found == ()
    else:
        assert [(c.topology_key, c.max_skew) for c in found] == [("kubernetes.io/hostname", 3),
                                                                 ("topology.kubernetes.io/zone", 5)]
        assert all(c.selector.matches(selected) and not c.selector.matches({}) for c in found)


ZONE = "topology.kubernetes.io/zone"
WEB = {"matchLabels": {"app": "web"}}


@pytest.fixture
def registered(monkeypatch):
    """The plugin in the registry for this test only (the lead adds it to ``registry.py``)."""
    monkeypatch.setitem(registry.REGISTRY, NAME, PodTopologySpread)


def enabled(args=None, ts=1000):
    """A configuration whose default profile runs PodTopologySpread at PreFilter, Filter and Score (weight 2)."""
    return profile_with(NAME, args, ts=ts, preFilter={"enabled": [{"name": NAME}]},
                        filter={"enabled": [{"name": NAME}]}, score={"enabled": [{"name": NAME, "weight": 2}]})


def disabled(ts=1000):
    """A configuration whose default profile runs without PodTopologySpread."""
    off = {"disabled": [{"name": NAME}]}
    return profile_with(NAME, None, ts=ts, preFilter=off, filter=off, score=off)


def zone_nodes():
    """Two nodes per zone; zone z1's are 8 times bigger, so resource scores alone would fill it first."""
    return [node(f"n{i}", cpu=64000 if zone == "z1" else 8000,
                 labels={ZONE: zone, "kubernetes.io/hostname": f"n{i}"})
            for i, zone in enumerate(("z1", "z1", "z2", "z2", "z3", "z3"), start=1)]


def placed_zones(domain, outputs) -> Counter:
    nodes = domain.cluster.nodes
    return Counter(nodes[d["nodeName"]].labels[ZONE] for d in decisions(outputs) if d["result"] == "Scheduled")


def web(i, constraints=(), ts=1000):
    return k8s_pod(f"web-{i}", {"app": "web"}, constraints=constraints, owner="ReplicaSet", cpu="1", ts=ts)


def test_nine_replicas_spread_with_max_skew_one_over_three_zones_land_three_per_zone(registered):
    pods = [web(i, [spread(1, ZONE, selector=WEB)]) for i in range(9)]
    domain, out = run(enabled(), *zone_nodes(), *pods)
    assert placed_zones(domain, out) == {"z1": 3, "z2": 3, "z3": 3}
    domain, out = run(disabled(), *zone_nodes(), *pods)
    assert placed_zones(domain, out)["z1"] > 3


def test_pods_retried_in_one_batch_count_the_ones_placed_before_them(registered):
    """Every replica fails on a default constraint no node can meet; a new configuration retries them all in
    one event, and each counts the replicas assumed before it."""
    rack = {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": "rack", "whenUnsatisfiable": DNS}]}
    domain, out = run(enabled(rack), *zone_nodes(), *(web(i) for i in range(9)))
    assert {d["message"] for d in decisions(out)} == {
        f"0/6 nodes are available: 6 {REASON_NODE_LABEL_NOT_MATCH}. "
        "preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling."}
    zone = {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": DNS}]}
    _, out = run(enabled(zone, ts=60_000), domain=domain)
    assert placed_zones(domain, out) == {"z1": 3, "z2": 3, "z3": 3}


def test_a_skew_violation_leaves_the_pod_unschedulable_with_kube_schedulers_message(registered):
    nodes = [node("a", labels={ZONE: "z1"}), node("b", labels={ZONE: "z2"}, unschedulable=True)]
    pods = [web(0, [spread(1, ZONE, selector=WEB)]), web(1, [spread(1, ZONE, selector=WEB)])]
    _, out = run(enabled(), *nodes, *pods)
    assert decisions(out)[-1]["message"] == (
        f"0/2 nodes are available: 1 {REASON_CONSTRAINTS_NOT_MATCH}, 1 node(s) were unschedulable. "
        "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling.")


def test_counts_follow_pods_leaving_changing_labels_and_terminating(registered):
    domain, _ = run(enabled({"defaultingType": "List"}), zoned("a", "z1"), zoned("b", "z2"),
                    existing("p-a1", "a"), existing("p-a2", "a"))
    plugin = domain.frameworks["default-scheduler"].plugins[NAME]
    pod = pod_info(incoming(spread(1, "zone")))

    def passing(on):
        state = CycleState()
        on.pre_filter(state, pod)
        return on.filter(state, pod, np.ones(2, dtype=bool)).passed.tolist()

    steps = [
        ((), [False, True]),
        ((deleted("Pod", "default/p-a1"), existing("p-a2", "a", labels={"other": ""})), [True, True]),
        ((existing("p-a2", "a"),), [False, True]),
        ((existing("p-a2", "a", terminating=True),), [True, True]),
    ]
    for changes, want in steps:
        run(*changes, domain=domain)
        fresh = PodTopologySpread(PodTopologySpreadArgs(defaulting_type="List"), domain.cluster)
        assert passing(plugin) == passing(fresh) == want


LOW, MID, HIGH = 0, 100, 1000


def test_TestDryRunPreemption_preemption_to_resolve_pod_topology_spread_filter_failure():
    """kube-scheduler's ``TestDryRunPreemption`` case: the dry run sees a victim leave its zone and its node
    (``RemovePod``), so node-a (without pod-a2) and node-b (without pod-b1) are candidates; node-x's pods are
    not of lower priority. One of the two lowest-priority pods is evicted."""
    _, out = run(zoned("node-a", "zone1"), zoned("node-b", "zone1"), zoned("node-x", "zone2"),
                 existing("pod-a1", "node-a", priority=MID), existing("pod-a2", "node-a", priority=LOW),
                 existing("pod-b1", "node-b", priority=LOW), existing("pod-x1", "node-x", priority=HIGH),
                 existing("pod-x2", "node-x", priority=HIGH),
                 incoming(spread(1, "zone"), spread(1, "node"), priority=HIGH))
    evicted = [record["pod"]["name"] for name, record in out if name == "Eviction"]
    assert len(evicted) == 1 and evicted[0] in ("pod-a2", "pod-b1"), evicted


def test_domain_counts_kept_between_cycles_follow_pods_and_nodes_relabelled_added_and_removed(registered):
    """The per-domain counts read as is (every node with the key counts) and those summed over the included
    nodes (a nodeSelector leaves some out) equal a fresh plugin's after each change."""
    domain, _ = run(enabled({"defaultingType": "List"}), zoned("a", "z1"), zoned("b", "z2"), zoned("c", "z2"),
                    existing("p-1", "a"), existing("p-2", "b"), existing("p-3", "c"))
    plugin = domain.frameworks["default-scheduler"].plugins[NAME]
    everywhere = pod_info(incoming(spread(1, "zone")))
    selected = pod_info(incoming(spread(1, "zone"), node_selector={"pick": "yes"}))

    def counts(on, pod):
        state = CycleState()
        on.pre_filter(state, pod)
        return [{entry.values[i]: int(entry.count[i]) for i in np.flatnonzero(entry.present)}
                for entry in state[NAME]]

    steps = [
        ((), [{"z1": 1, "z2": 2}], [{}]),
        ((existing("p-4", "a"),), [{"z1": 2, "z2": 2}], [{}]),
        ((node("c", labels={"zone": "z1", "node": "c", "pick": "yes"}, ts=2000),), [{"z1": 3, "z2": 1}], [{"z1": 1}]),
        ((zoned("d", "z3", pick="yes"), existing("p-5", "d")), [{"z1": 3, "z2": 1, "z3": 1}], [{"z1": 1, "z3": 1}]),
        ((deleted("Pod", "default/p-1"), deleted("Node", "b")), [{"z1": 2, "z3": 1}], [{"z1": 1, "z3": 1}]),
    ]
    for changes, want, want_selected in steps:
        run(*changes, domain=domain)
        fresh = PodTopologySpread(PodTopologySpreadArgs(defaulting_type="List"), domain.cluster)
        assert counts(plugin, everywhere) == counts(fresh, everywhere) == want
        assert counts(plugin, selected) == counts(fresh, selected) == want_selected
