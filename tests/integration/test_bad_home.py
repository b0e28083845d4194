"""A read-only or full KOORD_HOME ends ``koord up``, ``get``, ``status`` and ``apply`` with one line naming
the path and the OS error, never a traceback."""

from __future__ import annotations

import pytest

from streams.broker import local
from streams.topology import load_topology
from tests.integration.embedded import fresh_env, koord
from tests.integration.fullhome import fill, remount_read_only, small_filesystem

pytestmark = pytest.mark.integration

OS_ERRORS = {"read-only": "Read-only file system", "full": "No space left on device"}
POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: i}]}\n"
COMMANDS = {
    "up": (["up", "--detach", "--nodes", "0"], 1),
    "up-foreground": (["up", "--nodes", "0"], 1),
    "get": (["get", "pods"], 1),
    "apply-wait": (["apply", "-f", "-", "--wait", "--timeout", "5"], 1),
    "status": (["status", "--interval", "0.5"], 0),
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory, broker_kind):
    with local.start(broker_kind, tmp_path_factory.mktemp(f"bad-home-{broker_kind}"), load_topology()) as started:
        yield started


@pytest.mark.parametrize("condition", list(OS_ERRORS))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_read_only_or_full_home_gives_one_line_not_a_traceback(tmp_path, broker, condition, command):
    args, code = COMMANDS[command]
    with small_filesystem(tmp_path / "home", "4m") as home:
        env = {**fresh_env(home), **broker.env()}
        koord(env, "get", "pods")
        (fill if condition == "full" else remount_read_only)(home)
        result = koord(env, *args, check=False, input_text=POD)
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    if code:
        [line] = result.stderr.splitlines()
        assert str(home) in line and OS_ERRORS[condition] in line, line


def test_down_on_a_read_only_home_names_the_file_it_cannot_remove(tmp_path):
    with small_filesystem(tmp_path / "home", "4m") as home:
        (home / "up.json").write_text('{"pid": 2147483647}')
        remount_read_only(home)
        result = koord(fresh_env(home), "down", check=False)
    assert result.returncode == 1
    assert result.stderr == f"Error: {home / 'up.json'}: Read-only file system\n"
