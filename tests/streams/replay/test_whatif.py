import pytest

from streams.events import Causation, InboxEvent
from streams.objects import ManifestError
from streams.replay import run, whatif
from tests.streams.replay.inbox import (NODE_INBOX, SCHEDULING_INBOX, T0, READERS, node, node_metric, pod,
                                        records, slo_config)

PACK = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: koord-scheduler
  plugins: {score: {disabled: [{name: "*"}], enabled: [{name: NodeResourcesFit}]}}
  pluginConfig:
  - {name: NodeResourcesFit, args: {scoringStrategy: {type: MostAllocated}}}
"""


def write(tmp_path, text, name="config.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_config_file_loads_with_its_location(tmp_path):
    path = write(tmp_path, pod("unrelated") + "---\n" + slo_config(40))
    config = whatif.load_config(path, run.NODE)
    assert (config.kind, config.key, config.location) == ("ConfigMap", "koordinator-system/slo-controller-config",
                                                          f"{path}:8")


@pytest.mark.parametrize(("aggregate", "text", "problem"), [
    pytest.param(run.NODE, slo_config(-5), ":1: document 0 (ConfigMap koordinator-system/slo-controller-config): "
                 "colocation-config: cpuReclaimThresholdPercent must be 0 or greater, got -5", id="bad-threshold"),
    pytest.param(run.SCHEDULING, PACK.replace("NodeResourcesFit}]", "Nope}]"),
                 ":1: document 0 (KubeSchedulerConfiguration koord-scheduler): profile \"koord-scheduler\": "
                 "plugin 'Nope' does not exist", id="unknown-plugin"),
    pytest.param(run.SCHEDULING, slo_config(40), ": 0 documents are KubeSchedulerConfiguration", id="wrong-kind"),
    pytest.param(run.NODE, "kind: ConfigMap\nmetadata: {name: x\n", ":3: YAML syntax error", id="yaml-syntax"),
])
def test_a_bad_config_file_is_refused_with_file_and_line(tmp_path, aggregate, text, problem):
    path = write(tmp_path, text)
    with pytest.raises(ManifestError) as error:
        whatif.load_config(path, aggregate)
    assert f"{path}{problem}" in str(error.value)


def test_the_config_replaces_every_config_event_and_is_injected_first_in_each_lane(tmp_path):
    inbox = (records(NODE_INBOX, None, node("n1"), slo_config(65), partition=0)
             + records(NODE_INBOX, None, node("n2"), partition=1))
    config = whatif.load_config(write(tmp_path, slo_config(40)), run.NODE)
    events = whatif.with_config(run.decode(inbox, READERS[NODE_INBOX])[0], config, run.NODE)
    configs = [(e.causation.inbox_partition, e.causation.inbox_offset, e.causation.source_topic)
               for _, e in events if e.kind == "ConfigMap"]
    assert configs == [(0, -1, whatif.WHAT_IF_SOURCE), (1, -1, whatif.WHAT_IF_SOURCE), (0, 1, "koord.configs")]
    assert all(e.record is config.record for _, e in events if e.kind == "ConfigMap")


def test_a_lower_reclaim_threshold_lowers_batch_cpu_by_the_margin(tmp_path):
    inbox = records(NODE_INBOX, None, slo_config(65), node("n1", "8"), node_metric("n1", "3", T0 + 1000))
    events = run.decode(inbox, READERS[NODE_INBOX])[0]
    config = whatif.load_config(write(tmp_path, slo_config(40)), run.NODE)
    diff = whatif.node_diff(run.replay(run.NODE, events), run.replay(run.NODE, whatif.with_config(events, config, run.NODE)))
    assert diff["nodes"]["n1"]["kubernetes.io/batch-cpu"]["last"] == -2000
    assert diff["summary"]["kubernetes.io/batch-cpu"] == {
        "nodesWithUsage": 1, "lower": 1, "higher": 0, "unchanged": 0, "averageLowerBy": 2000, "averageHigherBy": 0}
    assert whatif.node_headlines(diff)[0] == (
        "kubernetes.io/batch-cpu: lower on 1 of 1 nodes with usage, by 2000 milli-cores on average (last values)")


def caused(position, ts, *outputs, key="n1", kind="Tick", record=None):
    cause = Causation(NODE_INBOX, position[0], position[1], "koord.ticks", 0, position[1])
    return run.Caused(key, InboxEvent(cause, ts, key, kind, record), tuple(outputs))


def resource(node_name, batch_cpu):
    return "NodeResource", {"decisionId": f"{node_name}-{batch_cpu}", "nodeName": node_name,
                            "allocatable": {"kubernetes.io/batch-cpu": batch_cpu}}


def test_deltas_carry_the_other_runs_latest_value():
    metric = {"nodeUsage": {"cpu": 1000}}
    baseline = [caused((0, 0), 1, kind="NodeMetric", record=metric), caused((0, 1), 2, resource("n1", 5000)),
                caused((0, 2), 3), caused((0, 3), 4, resource("n1", 6000))]
    what_if = [caused((0, 0), 1, kind="NodeMetric", record=metric), caused((0, 1), 2, resource("n1", 3000)),
               caused((0, 2), 3, resource("n1", 2000)), caused((0, 3), 4)]
    summary = whatif.node_diff(baseline, what_if)["nodes"]["n1"]["kubernetes.io/batch-cpu"]
    assert {k: summary[k] for k in ("first", "last", "min", "max", "points")} == {
        "first": -2000, "last": -4000, "min": -4000, "max": -2000, "points": 3}
    window = run.Window(run.Bound("offset", 2), run.Bound("offset", 2))
    assert whatif.node_diff(baseline, what_if, window)["nodes"]["n1"]["kubernetes.io/batch-cpu"]["points"] == 1


def test_other_node_outputs_are_counted_per_run():
    eviction = ("Eviction", {"decisionId": "e1", "nodeName": "n1"})
    diff = whatif.node_diff([caused((0, 0), 1)], [caused((0, 0), 1, eviction)])
    assert diff["otherOutputs"] == {"Eviction": {"baseline": {}, "whatIf": {"n1": 1}}}


def test_packing_places_pods_differently_and_fits_the_big_one(tmp_path):
    inbox = records(SCHEDULING_INBOX, "default", node("n1"), node("n2"), pod("a"), pod("b"), pod("c"), pod("big", "4"))
    events = run.decode(inbox, READERS[SCHEDULING_INBOX])[0]
    config = whatif.load_config(write(tmp_path, PACK), run.SCHEDULING)
    diff = whatif.scheduling_diff(run.replay(run.SCHEDULING, events),
                                  run.replay(run.SCHEDULING, whatif.with_config(events, config, run.SCHEDULING)))
    assert diff["differences"] == [{"pod": "default/b", "baseline": "n2", "whatIf": "n1"},
                                   {"pod": "default/big", "baseline": "Unschedulable", "whatIf": "n2"}]
    assert (diff["pods"], diff["unschedulable"]) == (4, {"baseline": 1, "whatIf": 0})
