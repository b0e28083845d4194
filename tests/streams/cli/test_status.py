"""``koord status`` shows why a child exited, and which logs cannot be written."""

import os

from click.testing import CliRunner

from streams.cli import context
from streams.cli.up import status

CAUSE = "worker exited with code 1 (aiokafka.errors.MessageSizeTooLargeError: [Error 10] MessageSizeTooLargeError: big)"


def test_status_shows_the_exception_a_child_exited_with_and_the_failing_logs(tmp_path, monkeypatch):
    monkeypatch.setenv("KOORD_HOME", str(tmp_path))
    monkeypatch.delenv("KOORD_BROKER", raising=False)
    context.write_up_state(tmp_path / context.STATE_FILE, {
        "pid": os.getpid(), "bootstrap": None, "embedded": True, "broker_kind": "tansu", "roles": ["all"],
        "processes": {"worker": {"pid": os.getpid(), "log": "worker.log", "restarts": 1, "last_exit": CAUSE},
                      "projection": {"pid": os.getpid(), "log": "projection.log", "failed": f"{CAUSE}; 3 exits"}},
        "log_failures": {"supervisor": "No space left on device since 2026-11-28T19:00:00Z"}})
    shown = CliRunner().invoke(status, ["--interval", "0.1"]).output
    assert f"    last exit: {CAUSE}\n" in shown
    assert f"    {CAUSE}; 3 exits\n" in shown
    assert "log writes failing for supervisor: No space left on device since 2026-11-28T19:00:00Z" in shown
