"""``koord bench scheduler --in-process``: the pure core without a broker, its figures per slice of pods."""

from click.testing import CliRunner

from streams.cli.bench import bench


def test_in_process_prints_pods_per_slice_and_the_profile():
    result = CliRunner().invoke(bench, ["scheduler", "--in-process", "--nodes", "40", "--pods", "120",
                                        "--profile-from", "60"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("in process (40 nodes, 120 pods, 120 scheduled): ")
    assert lines[1].split()[:2] == ["pods", "0-120"]
    assert "Ordered by: internal time" in result.output and "Ordered by: cumulative time" in result.output
