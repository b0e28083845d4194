"""``koord``'s commands are imported when run: the name map covers every module's commands, and a worker
does not import what only other commands need."""

from __future__ import annotations

import importlib
import subprocess
import sys

from streams.cli.commands import MODULES, cli


def test_every_command_of_every_module_is_found_under_its_name():
    for module in sorted(set(MODULES.values())):
        for command in importlib.import_module(f"streams.cli.{module}").COMMANDS:
            assert MODULES.get(command.name) == module, command.name
            assert cli.get_command(None, command.name) is command
    assert cli.get_command(None, "no-such-command") is None
    assert cli.list_commands(None) == sorted(MODULES)


def test_the_worker_command_imports_neither_the_bridge_nor_the_benchmarks_nor_the_read_model():
    code = ("import sys; from streams.cli.commands import cli; cli.get_command(None, 'worker'); "
            "print(sorted(m for m in ('streams.bridge.run', 'streams.bench.harness', 'streams.cli.apply', "
            "'streams.replay.run', 'sqlalchemy') if m in sys.modules))")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert found.strip() == "[]"
