"""A supervised child that exits is started again, and given up on (reported) when it keeps failing."""

import sys

from streams import supervision
from tests.integration.fullhome import fill, small_filesystem


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


def test_a_child_writing_to_a_full_disk_neither_dies_nor_blocks_and_its_log_says_what_was_lost(tmp_path):
    with small_filesystem(tmp_path / "home", "4m") as home:
        filler = fill(home)
        child = supervision.spawn([sys.executable, "-c", "print('x' * 100000)"], home / "worker.log")
        assert child.wait(timeout=30) == 0
        child.log_complete()
        assert child.log.writer.failing().startswith("No space left on device since ")
        filler.unlink()
        with open(home / "worker.log", "ab", buffering=0) as log:
            child.log.writer.append(log.fileno(), b"next\n")
        logged = (home / "worker.log").read_text()
        assert logged.startswith("[100001 bytes of output dropped since ")
        assert logged.endswith(": No space left on device]\nnext\n")
        assert child.log.writer.failing() is None


CHANGELOG_CRASH = """
from aiokafka.errors import MessageSizeTooLargeError
from mode import Service, Worker


class Changelog(Service):
    @Service.task
    async def _send(self):
        raise MessageSizeTooLargeError("the record is 1200000 bytes")


Worker(Changelog(), loglevel="info").execute_from_commandline()
"""


def test_a_worker_that_crashes_is_reported_with_its_exception_not_we_experienced_a_crash(tmp_path):
    child = supervision.Child.start("worker", [sys.executable, "-c", CHANGELOG_CRASH], tmp_path / "worker.log", {})
    for now in (0.0, 10.0, 20.0):
        child.proc.wait(timeout=60)
        child.restart_or_give_up(now)
    cause = "aiokafka.errors.MessageSizeTooLargeError: [Error 10] MessageSizeTooLargeError: the record is 1200000 bytes"
    assert child.failed == f"worker exited with code 1 ({cause}); 3 exits within 300s"
    assert child.last_exit == f"worker exited with code 1 ({cause})"
