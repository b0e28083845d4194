"""The ``koord node-agent`` and ``koord simulate`` commands (called as click objects until registered)."""

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
