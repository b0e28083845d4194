"""The benchmark runs (small, no timing assertions: figures depend on the machine)."""

from streams.noderesource import bench


def test_small_benchmark_runs_and_reports_every_figure():
    figures = bench.run(nodes=2, pods=20, warmup_minutes=30, events=40, repeats=1)
    assert set(figures) == set(bench.BASELINE)
    assert all(value > 0 for value in figures.values())
