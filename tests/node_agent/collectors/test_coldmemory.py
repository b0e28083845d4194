"""kidled's memory.idle_page_stats: Koordinator's vectors TV-3-39 and TV-3-40, and damaged files."""

import pytest

from node_agent.collectors.coldmemory import cold_bytes, kidled_present, parse_idle_page_stats
from tests.node_agent.conftest import KIDLED_SAMPLE, kidled_with_cold


def test_sample_parses_tv_3_39():
    kinds = parse_idle_page_stats(KIDLED_SAMPLE)
    assert kinds["csei"] == [2613248, 4657152, 18182144, 293683200, 0, 0, 0, 0]
    assert kinds["cfei"] == [2633728, 4640768, 66531328, 340172800, 0, 0, 0, 0]
    assert kinds["dfei"] == [0, 0, 4096, 0, 0, 0, 0, 0]
    assert cold_bytes(KIDLED_SAMPLE) == 0


def test_cold_bytes_count_buckets_from_the_boundary_tv_3_40():
    assert cold_bytes(kidled_with_cold(52834304, 52834304)) == 52834304


@pytest.mark.parametrize("text", [
    "", None, "\n".join(KIDLED_SAMPLE.splitlines()[:20]), KIDLED_SAMPLE.replace("# version: 1.0", "# version: 2.0"),
    KIDLED_SAMPLE.replace("2633728", "-1"), KIDLED_SAMPLE.replace("2633728", "lots"),
], ids=["empty", "absent", "truncated", "unknown-version", "negative", "garbage-number"])
def test_damaged_files_give_no_value(text):
    assert cold_bytes(text) is None


@pytest.mark.parametrize("files, expected", [
    (("scan_period_in_seconds", "use_hierarchy"), True),
    (("scan_period_in_seconds",), False),
    ((), False),
], ids=["both-knobs", "one-knob", "none"])
def test_kidled_present_needs_both_knobs(tmp_path, files, expected):
    for name in files:
        path = tmp_path / "kernel/mm/kidled" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("5\n")
    assert kidled_present(tmp_path) is expected
