"""The in-process benchmark runs (a small baseline; the large one is `koord bench scheduler`)."""

from streams.scheduler import bench


def test_small_baseline_schedules_every_pod():
    result = bench.run_in_process(nodes=200, pods=300, seed=7)
    assert result["scheduled"] == 300 and result["pods_per_s"] > 0 and result["cpu_pods_per_s"] > 0


def test_figures_per_slice_cover_every_pod():
    result = bench.run_in_process(nodes=30, pods=250, seed=7, slice_pods=100, profile_from=200)
    assert [(part["first"], part["pods"]) for part in result["slices"]] == [(0, 100), (100, 100), (200, 50)]
    assert all(part["pods_per_s"] > 0 for part in result["slices"])
    assert "Ordered by: cumulative time" in result["profile"]


def test_same_seed_same_decisions():
    def placements(seed):
        domain, events = bench.build(50, 80, seed)
        return [(r["pod"]["name"], r["nodeName"]) for ev in events for n, r in domain.handle(ev)
                if n == "SchedulingDecision"]

    first = placements(3)
    assert len(first) == 80 and all(node for _, node in first)
    assert placements(3) == first
    assert placements(4) != first


def test_a_scheduler_perf_workload_in_process_times_only_its_measured_pods():
    result = bench.run_workload("SchedulingPodAntiAffinity", "500Nodes", slice_pods=300, profile_from=350)
    assert (result["nodes"], result["init_pods"], result["init_scheduled"]) == (500, 100, 100)
    assert (result["pods"], result["scheduled"]) == (400, 400)
    assert [(part["first"], part["pods"]) for part in result["slices"]] == [(0, 300), (300, 100)]
    assert "Ordered by: cumulative time" in result["profile"]
    anti = [row for row in result["plugins"] if row["plugin"] == "InterPodAffinity" and row["stage"] == "filter"]
    assert anti and anti[0]["calls"] == 400
