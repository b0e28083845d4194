"""percentageOfNodesToScore: how many feasible nodes a cycle looks for, which ones, and scoring on their rows
(kube-scheduler's ``TestNumFeasibleNodesToFind`` and ``TestFairEvaluationForNodes``)."""

import random

import numpy as np
import pytest

from streams.scheduler import config
from streams.scheduler.cycle import nodes_to_find
from streams.scheduler.domain import SchedulingDomain
from streams.scheduler.framework import SCORED_ROWS, CycleState
from tests.streams.scheduler.support import (
    GI, T0, decisions, metric, node, pod, pod_info, run, scheduler_config)


@pytest.mark.parametrize("global_percentage, profile_percentage, count, wanted", [
    pytest.param(None, None, 10, 10, id="not set percentageOfNodesToScore and nodes number not more than 50"),
    pytest.param(None, 40, 10, 10, id="set profile percentageOfNodesToScore and nodes number not more than 50"),
    pytest.param(None, None, 1000, 420, id="not set percentageOfNodesToScore and nodes number more than 50"),
    pytest.param(None, 40, 1000, 400, id="set profile percentageOfNodesToScore and nodes number more than 50"),
    pytest.param(100, 40, 1000, 400,
                 id="set global and profile percentageOfNodesToScore and nodes number more than 50"),
    pytest.param(40, None, 1000, 400, id="set global percentageOfNodesToScore and nodes number more than 50"),
    pytest.param(None, None, 6000, 300,
                 id="not set profile percentageOfNodesToScore and nodes number more than 50*125"),
    pytest.param(None, 40, 6000, 2400,
                 id="set profile percentageOfNodesToScore and nodes number more than 50*125"),
])
def test_num_feasible_nodes_to_find(global_percentage, profile_percentage, count, wanted):
    document = {"profiles": [{} if profile_percentage is None else {"percentageOfNodesToScore": profile_percentage}]}
    if global_percentage is not None:
        document["percentageOfNodesToScore"] = global_percentage
    (profile,) = config.parse(document).profiles
    assert nodes_to_find(profile.percentage_of_nodes_to_score, count) == wanted


def _nodes(count: int):
    return [node(f"n{i:03d}") for i in range(count)]


def test_fair_evaluation_for_nodes():
    """500 equal nodes, 30 %: each cycle samples the next 150 nodes in row order, wrapping, so the start
    moves by 150 each time; the pod lands on the best node of its sample (ties to the name that sorts first)."""
    wanted = nodes_to_find(30, 500)
    domain, _ = run(scheduler_config({"percentageOfNodesToScore": 30}), *_nodes(500))
    chosen = []
    for i in range(2 * (500 // wanted + 1)):
        _, out = run(pod(f"p{i}", cpu=100, memory=GI // 8), domain=domain)
        chosen.append(decisions(out)[-1]["nodeName"])
        assert domain.cluster.next_start_row == (i + 1) * wanted % 500
    assert chosen[:4] == ["n000", "n150", "n300", "n001"]


def test_a_cycle_with_fewer_feasible_nodes_than_it_looks_for_scores_all_and_keeps_its_start():
    domain, out = run(*[node(f"n{i:03d}", cpu=500 if i % 50 else 4000) for i in range(200)], pod("big", cpu=2000))
    assert decisions(out)[-1]["nodeName"] == "n000"
    assert domain.cluster.next_start_row == 0


def test_the_start_row_survives_a_restore():
    domain, _ = run(*_nodes(300), *[pod(f"p{i}", cpu=100) for i in range(3)])
    assert domain.cluster.next_start_row == 3 * nodes_to_find(0, 300) % 300
    restored = SchedulingDomain.restore("default", domain.entries())
    assert restored.cluster.next_start_row == domain.cluster.next_start_row
    _, live = run(pod("next", cpu=100), domain=domain)
    _, again = run(pod("next", cpu=100), domain=restored)
    assert decisions(live)[-1]["nodeName"] == decisions(again)[-1]["nodeName"]


@pytest.mark.parametrize("percentage, reason", [
    (101, "percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"),
    (-1, "percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]"),
    ("10%", "percentageOfNodesToScore must be an integer, got '10%'"),
])
def test_an_invalid_percentage_is_refused(percentage, reason):
    with pytest.raises(config.ConfigError, match=reason.replace("[", r"\[").replace("]", r"\]")):
        config.parse({"percentageOfNodesToScore": percentage})
    with pytest.raises(config.ConfigError, match="profiles\\[0\\]." + reason.replace("[", r"\[").replace("]", r"\]")):
        config.parse({"profiles": [{"percentageOfNodesToScore": percentage}]})


def test_every_score_plugin_scores_the_scored_rows_as_it_scores_every_node():
    """With ``SCORED_ROWS`` set, each default score plugin's scores of the rows it names equal its scores when
    it computes over every node (same candidates): the view is an optimisation, never a different answer."""
    rng = random.Random(7)
    events = []
    for i in range(300):
        name = f"n{i:03d}"
        events.append(node(name, cpu=rng.choice([2000, 4000, 8000, 16000]), memory=rng.choice([4, 8, 16, 32]) * GI,
                           ts=T0))
        if i % 3:
            events.append(metric(name, T0, {"cpu": rng.randint(0, 1500), "memory": rng.randint(0, 3) * GI},
                                 ts=T0))
    events += [pod(f"old{i}", cpu=rng.randint(1, 20) * 100, memory=rng.randint(1, 8) * GI // 4,
                   node_name=f"n{rng.randrange(300):03d}", ts=T0) for i in range(200)]
    domain, _ = run(*events)
    framework = domain.frameworks["default-scheduler"]
    incoming = pod_info(pod("new", cpu=700, memory=GI))
    state = CycleState()
    for plugin in framework.points["preFilter"]:
        plugin.pre_filter(state, incoming)
    for start, stop in ((0, 120), (37, 211), (180, 300)):
        candidates = np.zeros(300, dtype=bool)
        candidates[start:stop] = [rng.random() < 0.8 for _ in range(stop - start)]
        for plugin, _ in framework.weights:
            every = np.broadcast_to(plugin.score(CycleState(state), incoming, candidates), 300)
            viewed = np.broadcast_to(plugin.score(CycleState(state, **{SCORED_ROWS: slice(start, stop)}), incoming,
                                                  candidates), 300)
            assert viewed[candidates].tolist() == every[candidates].tolist(), plugin.name
