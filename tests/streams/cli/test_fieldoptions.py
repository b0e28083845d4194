"""``streams.cli.fieldoptions``: a settings dataclass becomes one click option per field, with the field's
name, type, default and docstring; the command gets back exactly the dataclass it describes."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from streams.cli.fieldoptions import settings_options


@dataclasses.dataclass(frozen=True)
class Settings:
    name: str = ""
    """Who it is."""

    interval_s: float = 1.5
    """Seconds between two looks."""

    windows_s: tuple[float, ...] = (1.0, 2.0)
    count: int = 3
    mode: str = dataclasses.field(default="a", metadata={"choices": ("a", "b")})
    enabled: bool = True
    trial: bool = dataclasses.field(default=False, metadata={"flag": "dry-run"})
    config: Path | None = dataclasses.field(default=None, metadata={"path": "file"})
    home: Path = dataclasses.field(default=Path("/var/lib/x"), metadata={"path": "directory"})


@click.command()
@settings_options(Settings)
def command(**fields) -> None:
    click.echo(repr(Settings(**fields)))


def _run(*args: str) -> str:
    result = CliRunner().invoke(command, list(args))
    assert result.exit_code == 0, result.output
    return result.output.strip()


def test_no_flags_give_the_defaults():
    assert _run() == repr(Settings())


def test_every_field_is_set_through_its_flag(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("")
    assert _run("--name", "n", "--interval", "0.5", "--windows", "3", "--windows", "4", "--count", "7",
                "--mode", "b", "--no-enabled", "--dry-run", "--config", str(config), "--home", str(tmp_path)) == repr(
        Settings("n", 0.5, (3.0, 4.0), 7, "b", False, True, config, tmp_path))


@pytest.mark.parametrize("args", [
    pytest.param(["--mode", "c"], id="not-a-choice"),
    pytest.param(["--count", "x"], id="not-an-integer"),
    pytest.param(["--trial"], id="the-field-name-when-metadata-names-the-flag"),
])
def test_bad_values_are_usage_errors(args):
    assert CliRunner().invoke(command, args).exit_code == 2


def test_help_is_the_field_docstring_and_shows_the_defaults_that_say_something():
    help_text = " ".join(CliRunner().invoke(command, ["--help"], terminal_width=200).output.split())
    assert "--name TEXT Who it is. --interval FLOAT Seconds between two looks. [default: 1.5]" in help_text
    assert "--enabled / --no-enabled [default: enabled]" in help_text
    assert "--config FILE --home DIRECTORY [default: /var/lib/x]" in help_text
