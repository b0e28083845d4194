"""The v1.6 article's pod-level resctrl end to end: its YAML pod is bound, the node aggregate plans the pod's own
group, the agent creates ``koordlet-<uid>`` on a fake /sys/fs/resctrl with the schemata and the pod's threads,
and removes it once the pod is released."""

from __future__ import annotations

import pytest

from streams import actuation as contract
from streams.nodeaggregate import node as aggregate
from streams.nodeaggregate.settings import DEFAULT_SETTINGS
from streams.sloconfig.configmap import DEFAULT_CONFIG
from tests.node_agent.actuator.conftest import NODE, POD_UID, ResctrlTree, intel_proc, make_actuator
from tests.streams.noderesource.support import G, NOW, event, metric_record, node_record
from tests.streams.nodeqos.seedpods import bound, released, seed_pod

ARTICLE_POD = seed_pod("001", 18, name="app", uid=POD_UID)


def metric(ts: int):
    return event("NodeMetric", NODE, metric_record(NODE, update_time=ts, node_usage={"cpu": 1000, "memory": G}),
                 ts=ts)


def plan(*events):
    state, outputs = aggregate.initial_state(), []
    for ev in events:
        state, out = aggregate.handle(state, ev, DEFAULT_CONFIG, DEFAULT_SETTINGS)
        outputs.extend(record for schema, record in out if schema == "Actuation")
    return outputs


def pod_groups(records):
    return [r for r in records
            if (r["targetKind"], r["mechanism"]) == (contract.TARGET_POD, contract.MECHANISM_RESCTRL)]


LIFE = [event("Node", NODE, node_record(NODE, cpu=16_000, memory=64 * G)), bound(ARTICLE_POD, NODE), metric(NOW),
        released(ARTICLE_POD, NODE, NOW + 1000), metric(NOW + 2000), metric(NOW + 3000)]


@pytest.fixture
def host(tmp_path, v1_tree):
    resctrl, proc = ResctrlTree(tmp_path / "resctrl"), intel_proc(tmp_path)
    (v1_tree.root / "cpu" / v1_tree.pod(POD_UID, "BestEffort") / "tasks").write_text("300\n301\n")
    return resctrl, make_actuator(v1_tree, resctrl=resctrl.backend(v1_tree, proc))


def test_the_articles_pod_gets_its_own_group_and_loses_it_when_released(host):
    resctrl, actuator = host
    create, remove = pod_groups(plan(*LIFE))
    assert create["values"] == {"l3.start_percent": "0", "l3.end_percent": "30", "mb.percent": "20",
                                "tasks.pods": POD_UID}
    assert remove["values"] == {contract.GROUP_REMOVE: "1"} and remove["sequence"] > create["sequence"]
    group = resctrl.root / f"koordlet-{POD_UID}"

    ack = actuator.apply(create)
    assert ack["applied"] and ack["error"] is None
    assert (group / "schemata").read_text() == "L3:0=f;1=f\nMB:0=20;1=20\n"  # 0-30 % of 11 ways: 4 ways
    assert (group / "tasks").read_text().split() == ["300", "301"]

    ack = actuator.apply(remove)
    assert ack["applied"] and ack["values"] == {contract.GROUP_REMOVE: "1"} and not group.exists()


def test_the_removal_is_planned_once_and_replays_identically():
    """Deterministic: the removal is a planned actuation, so the same inbox gives the same decision ids."""
    first, again = pod_groups(plan(*LIFE)), pod_groups(plan(*LIFE))
    assert [r["decisionId"] for r in first] == [r["decisionId"] for r in again]
    assert len(first) == 2


def test_removing_a_group_that_is_gone_is_applied(host):
    resctrl, actuator = host
    ack = actuator.apply(pod_groups(plan(*LIFE))[1])
    assert ack["applied"] and ack["values"] == {contract.GROUP_REMOVE: "1"}
