"""CPU accounting of ``koord bench idle``: a process tree's CPU time, with measured subtrees left out."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from streams.bench import idle

SPIN_THEN_SLEEP = ("import time\nstart = time.process_time()\n"
                   "while time.process_time() - start < 0.3:\n    pass\nprint('spun', flush=True)\ntime.sleep(60)\n")


@pytest.fixture
def spun_child():
    """A child that has used about 0.3 s of CPU and then sleeps, so its CPU time no longer moves."""
    child = subprocess.Popen([sys.executable, "-c", SPIN_THEN_SLEEP], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "spun"
        yield child
    finally:
        child.kill()
        child.wait()


def test_a_process_counts_its_descendants_unless_they_are_measured_on_their_own(spun_child):
    parent = 1 << 23  # above any pid_max: a parent with no stat of its own, so only the child counts
    tree = {parent: [spun_child.pid]}
    child_cpu = idle.cpu_seconds(spun_child.pid, tree)
    assert child_cpu >= 0.2
    assert idle.cpu_seconds(parent, tree) == pytest.approx(child_cpu)
    assert idle.cpu_seconds(parent, tree, skip=frozenset({spun_child.pid})) == 0.0


def test_stat_fields_survive_a_command_name_with_spaces_and_parentheses(tmp_path, monkeypatch):
    stat = "123 (a (b) c) S 1 123 123 0 -1 4194560 1 0 0 0 250 75 0 0 20 0 1 0 1 1 1"
    real_path = Path

    def fake_path(text: str):
        if text == "/proc/123/stat":
            (tmp_path / "stat").write_text(stat)
            return real_path(tmp_path / "stat")
        return real_path(text)

    monkeypatch.setattr(idle, "Path", fake_path)
    fields = idle._stat_fields(123)
    assert (fields[0], fields[1], fields[11], fields[12]) == ("S", "1", "250", "75")


def test_measure_reports_each_process_and_their_sum(spun_child):
    shares = idle.measure({"spun": spun_child.pid}, 0.1)
    assert set(shares) == {"spun", "total"}
    assert shares["total"] == pytest.approx(shares["spun"])
