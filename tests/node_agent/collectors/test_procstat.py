"""Node CPU from /proc/stat: busy = user + nice + system + irq + softirq, per elapsed second and USER_HZ."""

import pytest

from node_agent.collectors.procstat import NodeCPU, parse_busy_ticks


@pytest.mark.parametrize("text, expected", [
    ("cpu  10 20 30 1000 500 6 7 800 0 0\ncpu0 1 1 1 1 1 1 1 1 1 1\n", 73),
    ("intr 5\ncpu 1 2 3 4 5 6 7\n", 19),
    ("cpu 1 2 3\n", None),
    ("cpu a b c d e f g h\n", None),
    ("cpu0 1 2 3 4 5 6 7 8\n", None),
    ("", None),
    (None, None),
], ids=["steal-and-idle-excluded", "minimal-line", "short-line", "garbage", "no-aggregate-line", "empty", "absent"])
def test_parse_busy_ticks(text, expected):
    assert parse_busy_ticks(text) == expected


def test_cores_from_tick_deltas(fake_host, clock):
    cpu = NodeCPU(fake_host.proc, clock, hz=100)
    fake_host.set_node_ticks(busy=1000)
    assert cpu.sample() is None
    fake_host.set_node_ticks(busy=1250)
    clock.advance(2.0)
    assert cpu.sample() == pytest.approx(1.25)
    (fake_host.proc / "stat").unlink()
    clock.advance(1.0)
    assert cpu.sample() is None
