"""DefaultPreemption: kube-scheduler's ``TestSelectBestCandidate`` and the PodDisruptionBudget cases of
``TestDryRunPreemption`` (``defaultpreemption/default_preemption_test.go``), through the domain: nodes of
cpu 500m / memory 500, pods small 100, medium 200, large 300, veryLarge 500 (m and bytes); priorities neg
-100, low 0, mid 100, high 1000, veryHigh 10000; a pod's start time is the event time it was bound at."""

import json

import pytest

from streams.objects.args import ArgsError
from streams.scheduler.plugins.defaultpreemption import DefaultPreemptionArgs
from tests.streams.scheduler.support import decisions, event, node, pod, run

SIZES = {"small": 100, "medium": 200, "large": 300, "veryLarge": 500}
PRIORITY = {"neg": -100, "low": 0, "mid": 100, "high": 1000, "veryHigh": 10000}


def bound(name, node_name, priority, size, start=0, labels=None):
    """A bound pod, built when the scenario runs (events carry increasing source offsets)."""
    return start, name, node_name, priority, size, labels


def _bound_event(spec):
    start, name, node_name, priority, size, labels = spec
    amount = SIZES[size]
    return pod(name, cpu=amount, memory=amount, node_name=node_name, priority=PRIORITY[priority],
               labels=labels, ts=1000 + start)


def scenario(nodes, victims, preemptor_priority="high", preemptor_size="veryLarge", extra=()):
    events = [node(name, cpu=500, memory=500) for name in nodes]
    events += [_bound_event(spec) for spec in sorted(victims, key=lambda spec: spec[0])]
    events += [make() for make in extra]
    amount = SIZES[preemptor_size]
    events.append(pod("p", cpu=amount, memory=amount, priority=PRIORITY[preemptor_priority], ts=2000))
    _, out = run(*events)
    preempted = sorted((d["pod"]["name"], d["nodeName"]) for d in decisions(out) if d["result"] == "Preempted")
    placed = [d["nodeName"] for d in decisions(out) if d["pod"]["name"] == "p"]
    return preempted, placed[-1], out


@pytest.mark.parametrize("nodes, victims, preemptor, expected", [
    pytest.param(["node1", "node2"], [bound("p1", "node1", "mid", "large"), bound("p2", "node2", "mid", "large")],
                 ("high", "large"), {"node1", "node2"}, id="fits-on-both-nodes-when-lower-priority-pods-go"),
    pytest.param(["node1", "node2", "node3"],
                 [bound("p1.1", "node1", "mid", "medium"), bound("p1.2", "node1", "mid", "large"),
                  bound("p2.1", "node2", "mid", "medium"), bound("p2.2", "node2", "low", "medium"),
                  bound("p3.1", "node3", "low", "medium"), bound("p3.2", "node3", "low", "medium")],
                 ("high", "veryLarge"), {"node3"}, id="node-with-min-highest-priority-pod-is-picked"),
    pytest.param(["node1", "node2", "node3"],
                 [bound("p1.1", "node1", "mid", "medium"), bound("p1.2", "node1", "mid", "large"),
                  bound("p2.1", "node2", "mid", "large"), bound("p2.2", "node2", "low", "medium"),
                  bound("p3.1", "node3", "mid", "medium"), bound("p3.2", "node3", "mid", "medium")],
                 ("high", "veryLarge"), {"node2"}, id="same-highest-priority-minimum-sum-is-picked"),
    pytest.param(["node1", "node2", "node3"],
                 [bound("p1.1", "node1", "mid", "small"), bound("p1.2", "node1", "neg", "small"),
                  bound("p1.3", "node1", "mid", "small"), bound("p1.4", "node1", "neg", "small"),
                  bound("p2.1", "node2", "mid", "large"), bound("p2.2", "node2", "neg", "medium"),
                  bound("p3.1", "node3", "mid", "medium"), bound("p3.2", "node3", "neg", "small"),
                  bound("p3.3", "node3", "low", "small")],
                 ("high", "veryLarge"), {"node2"}, id="same-highest-and-sum-minimum-number-of-pods"),
    pytest.param(["node1", "node2", "node3"],
                 [bound("p1.1", "node1", "mid", "small"), bound("p1.2", "node1", "neg", "small"),
                  bound("p1.3", "node1", "neg", "small"),
                  bound("p2.1", "node2", "mid", "large"), bound("p2.2", "node2", "neg", "medium"),
                  bound("p3.1", "node3", "mid", "medium"), bound("p3.2", "node3", "neg", "small"),
                  bound("p3.3", "node3", "low", "small")],
                 ("high", "veryLarge"), {"node2"}, id="sum-of-adjusted-priorities-is-considered"),
    pytest.param(["node1", "node2", "node3", "node4"],
                 [bound("p1.1", "node1", "mid", "small"), bound("p1.2", "node1", "low", "small"),
                  bound("p1.3", "node1", "low", "small"), bound("p2.1", "node2", "high", "large"),
                  bound("p3.1", "node3", "mid", "medium"), bound("p3.2", "node3", "low", "small"),
                  bound("p3.3", "node3", "low", "small"), bound("p3.4", "node3", "low", "medium"),
                  bound("p4.1", "node4", "mid", "medium"), bound("p4.2", "node4", "mid", "small"),
                  bound("p4.3", "node4", "mid", "small"), bound("p4.4", "node4", "neg", "small")],
                 ("veryHigh", "veryLarge"), {"node1"}, id="non-overlapping-lowest-high-priority-sum-and-count"),
    pytest.param(["node1", "node2", "node3"],
                 [bound("p1.1", "node1", "mid", "medium", 2), bound("p1.2", "node1", "mid", "medium", 2),
                  bound("p2.1", "node2", "mid", "medium", 3), bound("p2.2", "node2", "mid", "medium", 3),
                  bound("p3.1", "node3", "mid", "medium", 1), bound("p3.2", "node3", "mid", "medium", 1)],
                 ("high", "veryLarge"), {"node2"}, id="same-priority-and-count-latest-start-per-node"),
    pytest.param(["node1", "node2", "node3"],
                 [bound("p1.1", "node1", "mid", "medium", 4), bound("p1.2", "node1", "mid", "medium", 2),
                  bound("p2.1", "node2", "mid", "medium", 5), bound("p2.2", "node2", "mid", "medium", 1),
                  bound("p3.1", "node3", "mid", "medium", 3), bound("p3.2", "node3", "mid", "medium", 6)],
                 ("high", "veryLarge"), {"node3"}, id="same-priority-and-count-different-start-for-all-pods"),
    pytest.param(["node1", "node2", "node3"],
                 [bound("p1.1", "node1", "low", "medium", 4), bound("p1.2", "node1", "mid", "medium", 2),
                  bound("p2.1", "node2", "mid", "medium", 6), bound("p2.2", "node2", "low", "medium", 1),
                  bound("p3.1", "node3", "low", "medium", 3), bound("p3.2", "node3", "mid", "medium", 5)],
                 ("high", "veryLarge"), {"node2"}, id="different-priority-same-count-different-start"),
])
def test_select_best_candidate(nodes, victims, preemptor, expected):
    """TestSelectBestCandidate: the node kube-scheduler picks, and the preemptor placed on it."""
    preempted, placed, _ = scenario(nodes, victims, *preemptor)
    assert {node_name for _, node_name in preempted} == {placed}
    assert placed in expected


def pdb(name, allowed, disrupted=(), namespace="default"):
    return lambda: _pdb(name, allowed, disrupted, namespace)


def _pdb(name, allowed, disrupted, namespace):
    manifest = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"selector": {"matchLabels": {"app": "foo"}}},
                "status": {"disruptionsAllowed": allowed, "disruptedPods": {p: "2024-01-01T00:00:00Z" for p in disrupted}}}
    return event("PodDisruptionBudget", f"{namespace}/{name}",
                 {"metadata": {"name": name, "namespace": namespace}, "manifest": json.dumps(manifest)})


FOO = {"app": "foo"}


@pytest.mark.parametrize("victims, budget, expected", [
    pytest.param([bound("p1.1", "node1", "mid", "medium", labels=FOO), bound("p1.2", "node1", "mid", "medium",
                                                                           labels=FOO)],
                 pdb("foo", 1), {"p1.1", "p1.2"}, id="violation-of-same-pdb"),
    pytest.param([bound("p1.1", "node1", "mid", "medium", labels=FOO), bound("p1.2", "node1", "mid", "medium",
                                                                           labels=FOO)],
                 pdb("foo", 1, disrupted=("p2",)), {"p1.1", "p1.2"}, id="disrupted-pod-elsewhere"),
    pytest.param([bound("p1.1", "node1", "mid", "medium", labels=FOO), bound("p1.2", "node1", "mid", "medium",
                                                                           labels=FOO)],
                 pdb("foo", 1, disrupted=("p1.2",)), {"p1.1", "p1.2"}, id="victim-in-disrupted-pods"),
])
def test_pdb_cases_still_preempt_when_nothing_else_helps(victims, budget, expected):
    preempted, placed, _ = scenario(["node1"], victims, extra=[budget])
    assert {name for name, _ in preempted} == expected and placed == "node1"


def test_a_node_without_pdb_violations_is_preferred():
    """TestDryRunPreemption "preemption looks past numCandidates until a non-PDB violating node is found":
    node3 and node4 run pods no budget protects; nodes 1, 2 and 5 run pods of a budget allowing none."""
    victims = [bound(f"p{i}", f"node{i}", "mid", "large", labels=FOO if i in (1, 2, 5) else None)
               for i in range(1, 6)]
    preempted, placed, _ = scenario([f"node{i}" for i in range(1, 6)], victims, preemptor_size="large",
                                    extra=[pdb("foo", 0)])
    assert placed in ("node3", "node4") and [n for _, n in preempted] == [placed]


def test_preemption_policy_never_preempts_nothing():
    events = [node("node1", cpu=500, memory=500), _bound_event(bound("low", "node1", "low", "veryLarge")),
              pod("p", cpu=500, memory=500, priority=1000, ts=2000)]
    events[-1].record["manifest"] = json.dumps({"spec": {"preemptionPolicy": "Never"}})
    _, out = run(*events)
    last = decisions(out)[-1]
    assert last["result"] == "Unschedulable" and "not eligible due to preemptionPolicy=Never." in last["message"]


def test_equal_or_higher_priority_pods_are_never_victims():
    preempted, placed, out = scenario(["node1"], [bound("same", "node1", "high", "veryLarge")])
    assert preempted == [] and placed is None
    assert decisions(out)[-1]["message"].endswith(
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")


def test_the_victim_gets_an_eviction_naming_the_preemptor():
    _, _, out = scenario(["node1"], [bound("low", "node1", "low", "veryLarge")])
    [eviction] = [record for name, record in out if name == "Eviction"]
    assert (eviction["pod"]["name"], eviction["reason"]) == ("low", "Preempted")
    assert eviction["message"] == "Preempted by default/p on node node1"


@pytest.mark.parametrize("raw, message", [
    ({"minCandidateNodesPercentage": 101}, "minCandidateNodesPercentage: not in valid range [0, 100]"),
    ({"minCandidateNodesAbsolute": -1}, "minCandidateNodesAbsolute: not in valid range [0, inf)"),
    ({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
     "cannot be zero at the same time as minCandidateNodesPercentage"),
])
def test_args_validation(raw, message):
    with pytest.raises(ArgsError, match=message.replace("[", r"\[").replace(")", r"\)")):
        DefaultPreemptionArgs.from_config(raw)
