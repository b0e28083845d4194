"""The trace replay's pure part: reading the trace's CSV files (errors name file, line and field), the FGD
paper's arrival order and tuning, the typical pods, the Koordinator objects, and the measures at 100 %."""

import numpy as np
import pytest

from streams.bench import gputrace as g
from streams.scheduler.plugins.gpufragmentation import FragmentModel

NODES = "sn,cpu_milli,memory_mib,gpu,model\nn-1,8000,65536,2,V100\nn-0,8000,65536,2,V100\n"
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
        "scheduled_time\n"
        "p-0,1000,1024,1,500,,LS,Running,0,1,0\n"
        "p-1,1000,1024,1,500,,BE,Running,0,1,0\n"
        "p-2,2000,2048,2,1000,,Burstable,Running,0,1,0\n"
        "p-3,500,512,0,0,,LS,Running,0,1,0\n")


def files(tmp_path, nodes=NODES, pods=PODS):
    (tmp_path / "nodes.csv").write_text(nodes)
    (tmp_path / "pods.csv").write_text(pods)
    return g.read_nodes(tmp_path / "nodes.csv"), g.read_pods(tmp_path / "pods.csv")


def test_reading_sorts_by_name(tmp_path):
    nodes, pods = files(tmp_path)
    assert [n.name for n in nodes] == ["n-0", "n-1"] and g.capacity(nodes) == 4000
    assert pods[2] == g.TracePod("p-2", 2000, 2048, 2, 1000, "Burstable") and pods[3].milli == 0


@pytest.mark.parametrize("pods, message", [
    (PODS.replace("p-1,1000,1024,1,500", "p-1,1000,1024,1,5x0"),
     "pods.csv: line 3: gpu_milli: expected an integer, got '5x0'"),
    (PODS.replace("p-1,1000,1024,1,500", "p-1,1000,1024,1,1500"), "pods.csv: line 3: gpu_milli: 1500 is out of range"),
    (PODS.replace("p-2,2000,2048,2,1000", "p-2,2000,2048,2,500"), "pods.csv: line 4: gpu_milli: 500 with num_gpu 2"),
    ("name,cpu_milli\np,1\n", "pods.csv: line 1: missing column(s) memory_mib, num_gpu, gpu_milli"),
])
def test_bad_rows_name_file_line_and_field(tmp_path, pods, message):
    with pytest.raises(g.TraceError) as error:
        files(tmp_path, pods=pods)
    assert message in str(error.value)


def test_missing_file(tmp_path):
    with pytest.raises(g.TraceError, match="No such file"):
        g.read_nodes(tmp_path / "absent.csv")


def test_workload_is_a_seeded_shuffle_then_copies_up_to_130_percent(tmp_path):
    nodes, pods = files(tmp_path)
    cluster, order = g.seeded(pods, nodes, 42)
    assert sorted(p.name for p in order[:4]) == ["p-0", "p-1", "p-2", "p-3"]
    assert (cluster, order) == g.seeded(pods, nodes, 42) and order != g.seeded(pods, nodes, 43)[1]
    assert sorted(n.name.split("-", 1)[1] for n in cluster) == ["n-0", "n-1"]
    assert sorted(n.name.split("-", 1)[0] for n in cluster) == ["0000", "0001"]
    assert all("-tuned-" in p.name for p in order[4:])
    asked = sum(p.gpu_milli for p in order)
    # the stop test adds the next copy's per-GPU share: the total stays within 1.3 x 4000 = 5200 + one share
    assert asked <= 5200 + 1000 and len(order) > 4


def test_typical_pods_cover_95_percent(tmp_path):
    _, pods = files(tmp_path, pods=PODS + "".join(f"q-{i},1000,1024,1,500,,LS,Running,0,1,0\n" for i in range(30)))
    shapes = g.typical_pods(pods)
    assert shapes[0] == ((1000, 500, 1), 32)
    assert sum(count for _, count in shapes) >= 0.95 * len(pods)
    assert g.fragmentation_args(pods)["typicalPods"][0] == {"cpu": "1000m", "gpuMilli": 500, "gpus": 1, "weight": 32}


def test_koordinator_objects(tmp_path):
    nodes, pods = files(tmp_path)
    node, device = g.node_manifests(nodes[0])
    assert node["status"]["allocatable"] == {"cpu": "8000m", "memory": "65536Mi", "pods": "1001",
                                             "nvidia.com/gpu": "2"}
    assert device["metadata"]["labels"] == {"node.koordinator.sh/gpu-model": "V100"}
    assert [d["minor"] for d in device["spec"]["devices"]] == [0, 1]
    shared = g.pod_manifest(pods[0])["spec"]["containers"][0]["resources"]["requests"]
    assert shared == {"cpu": "1000m", "memory": "1024Mi", "koordinator.sh/gpu.shared": "1",
                      "koordinator.sh/gpu-core": "50", "koordinator.sh/gpu-memory-ratio": "50"}
    whole = g.pod_manifest(pods[2])
    assert whole["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "2"
    assert whole["metadata"]["labels"] == {} and g.pod_manifest(pods[1])["metadata"]["labels"] == {
        "koordinator.sh/qosClass": "BE"}


def test_at_level_falls_back_to_the_neighbouring_levels():
    levels = np.array([98.0, 99.2, 100.6, 101.0])
    values = np.array([1.0, 2.0, 3.0, 4.0])
    assert g.at_level(levels, values, 100) == 3.0
    assert g.at_level(np.array([99.0, 101.2]), np.array([1.0, 3.0]), 100) == 2.0


def test_measure_by_hand(tmp_path):
    nodes, _ = files(tmp_path)
    order = [g.TracePod("a", 1000, 1, 1, 1000, ""), g.TracePod("b", 1000, 1, 1, 1000, ""),
             g.TracePod("c", 1000, 1, 2, 1000, ""), g.TracePod("d", 1000, 1, 1, 500, "")]
    placements = {"a": g.Placement("n-0", ((0, 1000),)), "b": g.Placement("n-1", ((0, 1000),)),
                  "c": g.Placement(None), "d": g.Placement("n-0", ((1, 500),))}
    model = FragmentModel((((1000, 1000, 1, 0), 1.0),))
    result = g.measure(nodes, order, placements, model)
    # arrived: 25, 50, 100, 112.5 %; at 100 % two GPUs of four are placed -> 50 % unallocated
    assert result["unallocated_gpu_pct"] == 50.0 and result["failed_pods"] == 1
    # fragmentation at 100 %: n-1's free GPU fits a whole-GPU pod, none is fragment
    assert result["fragmentation_pct"] == 0.0 and result["arrived_pct_at_end"] == 112.5
