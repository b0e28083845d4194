"""A supervised child that exits is started again, and given up on (reported) when it keeps failing."""

import sys

from streams import supervision


def _failing(tmp_path) -> supervision.Child:
    args = [sys.executable, "-c", "import sys; print('[2026] [1] [CRITICAL] agent x failed: boom'); sys.exit(70)"]
    return supervision.Child.start("worker", args, tmp_path / "worker.log", {})


def test_an_exited_child_is_started_again_with_its_last_error(tmp_path):
    child = _failing(tmp_path)
    child.proc.wait()
    assert child.exited()
    first = child.proc.pid
    said = child.restart_or_give_up(now=0.0)
    assert said.startswith("worker exited with code 70 ([CRITICAL] agent x failed: boom); started it again")
    assert child.proc.pid != first and child.failed is None
    child.proc.wait()


def test_a_child_that_keeps_failing_is_given_up_on_and_not_started_again(tmp_path):
    child = _failing(tmp_path)
    said = ""
    for now in (0.0, 10.0, 20.0):
        child.proc.wait()
        said = child.restart_or_give_up(now)
    assert child.failed and "3 exits within 300s" in child.failed
    assert "not starting it again" in said and "`koord down` stops them" in said
    assert not child.exited()


def test_exits_far_apart_never_add_up_to_giving_up(tmp_path):
    child = _failing(tmp_path)
    for now in (0.0, 400.0, 800.0, 1200.0):
        child.proc.wait()
        child.restart_or_give_up(now)
    assert child.failed is None
    child.proc.wait()
