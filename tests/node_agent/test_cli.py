"""The ``koord node-agent`` and ``koord simulate`` commands (called as click objects until registered)."""

import dataclasses
import json

import pytest
import yaml
from click.testing import CliRunner

from streams.cli.nodeagent import node_agent
from streams.cli.simulate import simulate

UID = "aaaaaaaa-0000-0000-0000-000000000001"


def test_once_on_a_fake_host_prints_node_nodemetric_and_numa_zones(fake_host):
    fake_host.write_cgroup(fake_host.pod_dir(UID), cpu_ns=0, anon=1 << 30)
    result = CliRunner().invoke(node_agent, [
        "--once", "-o", "yaml", "--node-name", "fake", "--collect-interval", "0.1", "--proc-root", str(fake_host.proc),
        "--sys-root", str(fake_host.sys), "--cgroup-root", str(fake_host.cgroup)])
    assert result.exit_code == 0, result.output
    items = {i["kind"]: i for i in yaml.safe_load(result.output)["items"]}
    assert set(items) == {"Node", "NodeMetric", "NodeResourceTopology"}
    assert [zone["name"] for zone in items["NodeResourceTopology"]["zones"]] == ["node-0"]
    assert items["Node"]["status"]["capacity"] == {"cpu": "4", "memory": "16Gi", "pods": "110"}
    (pod,) = items["NodeMetric"]["status"]["podsMetric"]
    assert (pod["uid"], pod["podUsage"]["resources"]["memory"]) == (UID, "1Gi")


@pytest.mark.parametrize("args, message", [
    (["--collect-interval", "0"], "collect_interval_s"),
    (["--report-interval", "0.5"], "report_interval_s"),
    (["--kubepods-dir", "a/b"], "kubepods_dir"),
], ids=["collect-zero", "report-too-short", "kubepods-path"])
def test_bad_settings_are_usage_errors(args, message):
    result = CliRunner().invoke(node_agent, ["--once", *args])
    assert result.exit_code == 2 and message in result.output


def test_bad_host_application_config_is_a_usage_error(tmp_path):
    config = tmp_path / "apps.yaml"
    config.write_text("- {name: x, cgroupPath: {relativePath: ../../etc}}\n")
    result = CliRunner().invoke(node_agent, ["--once", "--host-applications", str(config)])
    assert result.exit_code == 2 and "'..'" in result.output


def test_simulate_keeps_the_flags_koord_up_passes():
    help_text = CliRunner().invoke(simulate, ["--help"]).output
    assert all(flag in help_text for flag in ("--nodes", "--pods-per-node", "--seed"))


def test_once_json_is_a_kubectl_list(fake_host):
    result = CliRunner().invoke(node_agent, ["--once", "--collect-interval", "0.1", "--proc-root", str(fake_host.proc),
                                             "--sys-root", str(fake_host.sys), "--cgroup-root", str(fake_host.cgroup)])
    assert json.loads(result.output)["kind"] == "List"


FLAGS_IN_USE = {
    "node_name": "--node-name", "collect_interval_s": "--collect-interval", "report_interval_s": "--report-interval",
    "aggregate_duration_s": "--aggregate-duration", "memory_policy": "--memory-policy", "cgroup_root": "--cgroup-root",
    "kubepods_dir": "--kubepods-dir", "cgroup_driver": "--cgroup-driver", "cgroup_version": "--cgroup-version",
    "proc_root": "--proc-root", "sys_root": "--sys-root", "host_applications_file": "--host-applications",
    "max_buffered_metrics": "--max-buffered-metrics", "actuate": "--actuate", "actuation_dry_run": "--dry-run",
    "resctrl_root": "--resctrl-root", "tc_interface": "--tc-interface", "state_dir": "--state-dir",
    "protection_after_s": "--protection-after"}
"""The flags deployments, tests and the README use, by the AgentSettings field they set."""


def test_every_setting_has_a_flag_with_its_default_and_the_flags_in_use_keep_their_names():
    from node_agent.settings import AgentSettings

    options = {param.name: param for param in node_agent.params}
    defaults = AgentSettings()
    for field in dataclasses.fields(AgentSettings):
        assert options[field.name].default == getattr(defaults, field.name), field.name
    assert {name: options[name].opts[0] for name in FLAGS_IN_USE} == FLAGS_IN_USE
    assert options["actuate"].secondary_opts == ["--no-actuate"]
