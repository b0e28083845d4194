"""``koord node-agent``'s actuator flags come from AgentSettings and are validated there."""

from click.testing import CliRunner

from node_agent.settings import AgentSettings
from streams.cli.nodeagent import node_agent


def test_actuator_flags_and_defaults():
    help_text = CliRunner().invoke(node_agent, ["--help"]).output
    for flag in ("--actuate / --no-actuate", "--dry-run", "--resctrl-root", "--tc-interface", "--state-dir"):
        assert flag in help_text
    defaults = AgentSettings()
    assert (defaults.actuate, defaults.actuation_dry_run, str(defaults.resctrl_root), defaults.tc_interface) == (
        True, False, "/sys/fs/resctrl", "")


def test_bad_interface_is_a_usage_error():
    result = CliRunner().invoke(node_agent, ["--once", "--tc-interface", "eth0; reboot"])
    assert result.exit_code == 2 and "tc_interface" in result.output
