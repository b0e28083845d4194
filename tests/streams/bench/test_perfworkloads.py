"""``koord bench scheduler --workload NAME``: kube-scheduler's scheduler_perf workloads, their shapes and one
run through a real broker."""

import json

import pytest
from click.testing import CliRunner

from streams.scheduler import perfworkloads
from streams.cli.bench import bench
from streams.objects.quantity import parse_quantity


def test_every_workload_has_its_performance_case_and_floor():
    floors = {name: workload.case(None).floor for name, workload in perfworkloads.WORKLOADS.items()}
    assert floors == {"SchedulingBasic": 680, "SchedulingPodAntiAffinity": 60,
                      "SchedulingPodMatchingAntiAffinity": 595, "SchedulingPodAffinity": 35,
                      "SchedulingPreferredPodAffinity": 90, "SchedulingPreferredPodAntiAffinity": 90,
                      "SchedulingNodeAffinity": 220, "TopologySpreading": 460, "MixedSchedulingBasePod": 140}
    assert perfworkloads.WORKLOADS["SchedulingBasic"].case(None).measure == 10000


def test_an_unknown_case_names_the_cases_there_are():
    with pytest.raises(ValueError, match="SchedulingBasic has no case '7Nodes' \\(it has 5Nodes, 500Nodes, "):
        perfworkloads.WORKLOADS["SchedulingBasic"].case("7Nodes")


def test_nodes_and_pods_follow_the_templates():
    workload = perfworkloads.WORKLOADS["TopologySpreading"]
    nodes = perfworkloads.node_manifests(workload, 4)
    assert [n["metadata"]["labels"][perfworkloads.ZONE] for n in nodes] == ["moon-1", "moon-2", "moon-3", "moon-1"]
    assert nodes[0]["status"]["allocatable"] == {"pods": "110", "cpu": "4", "memory": "32Gi"}
    init, measured = perfworkloads.phases(workload, workload.case("5Nodes"), "r1")
    assert [len(phase) for phase in init] == [10] and len(measured) == 10
    spread = measured[0]["spec"]["topologySpreadConstraints"][0]
    assert (spread["maxSkew"], spread["whenUnsatisfiable"]) == (5, "DoNotSchedule")
    requests = measured[0]["spec"]["containers"][0]["resources"]["requests"]
    assert parse_quantity(requests["cpu"]) * 1000 == 100 and requests["memory"] == "500Mi"
    mixed = perfworkloads.WORKLOADS["MixedSchedulingBasePod"]
    assert len(perfworkloads.phases(mixed, mixed.case("5Nodes"), "r1")[0]) == 5


@pytest.mark.integration
def test_anti_affinity_workload_runs_and_decides_every_pod():
    """5Nodes of SchedulingPodAntiAffinity: 1 init pod, then 4 measured ones, all placed on the 5 nodes."""
    result = CliRunner().invoke(bench, ["scheduler", "--workload", "SchedulingPodAntiAffinity", "--case", "5Nodes",
                                        "-o", "json"])
    assert result.exit_code == 0, result.output
    run, = json.loads(result.output.splitlines()[-1])["runs"]
    assert (run["init_pods"], run["pods"], run["decided"], run["scheduled"]) == (1, 4, 4, 4)
    assert run["floor_pods_per_s"] is None and run["source"].endswith("affinity/performance-config.yaml")


def test_in_process_runs_a_workload_through_the_pure_core_and_prints_its_cost_per_plugin():
    """``--in-process --workload``: the init pods untimed, then the measured pods, with µs/pod per plugin."""
    args = ["scheduler", "--in-process", "--workload", "SchedulingPodAffinity", "--case", "5Nodes"]
    result = CliRunner().invoke(bench, [*args, "-o", "json"])
    assert result.exit_code == 0, result.output
    run = json.loads(result.output)["runs"][0]
    assert (run["workload"], run["case"], run["nodes"], run["init_pods"], run["init_scheduled"]) == \
        ("SchedulingPodAffinity", "5Nodes", 5, 5, 5)
    assert (run["pods"], run["scheduled"]) == (10, 10)
    stages = {(row["plugin"], row["stage"]) for row in run["plugins"]}
    assert {("InterPodAffinity", "preFilter"), ("InterPodAffinity", "filter"), ("InterPodAffinity", "score")} <= stages
    table = CliRunner().invoke(bench, args)
    assert table.exit_code == 0, table.output
    assert table.output.startswith("SchedulingPodAffinity 5Nodes: 5 init pods (5 scheduled) untimed, then\n"
                                   "in process (5 nodes, 10 pods, 10 scheduled): ")
    assert "InterPodAffinity" in table.output


def test_in_process_names_the_cases_of_a_workload_given_an_unknown_one():
    result = CliRunner().invoke(bench, ["scheduler", "--in-process", "--workload", "SchedulingBasic", "--case", "9Nodes"])
    assert result.exit_code != 0 and "SchedulingBasic has no case '9Nodes'" in result.output
