"""The benchmark runs (small, no timing assertions: figures depend on the machine)."""

from streams.nodeaggregate import bench


def test_small_benchmark_runs_and_reports_every_figure():
    figures = bench.run(nodes=2, pods=20, warmup_minutes=30, events=40, repeats=1)
    assert set(figures) == set(bench.BASELINE)
    assert all(value > 0 for value in figures.values())


def test_benchmark_with_numa_zones_runs_the_numa_level():
    fleet = bench.Fleet(nodes=1, pods=20, seed=1, zones=2)
    out = fleet.apply(fleet.metric(fleet.names[0], bench.START + 1, reclaimable=True))
    assert [len(record["zones"]) for schema, record in out if schema == "NodeResource"] == [2]
