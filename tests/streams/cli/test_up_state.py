"""The state of ``koord up`` can still be updated when KOORD_HOME is full."""

from streams.cli import context
from tests.integration.fullhome import fill, small_filesystem


def test_the_up_state_is_updated_in_place_on_a_full_home(tmp_path):
    with small_filesystem(tmp_path / "home", "1m") as home:
        context.write_up_state(home / context.STATE_FILE, {"pid": 1, "log_failures": {}})
        fill(home)
        failing = {"pid": 1, "log_failures": {"supervisor": "No space left on device since 2026-11-28T19:00:00Z"}}
        context.write_up_state(home / context.STATE_FILE, failing)
        assert context.up_state(home) == failing
