"""The agent's defaults (those taken from Koordinator are pinned) and their validation."""

import pytest

from node_agent.settings import AgentSettings, SettingsError


def test_defaults_from_koordinator():
    settings = AgentSettings()
    assert settings.collect_interval_s == 1.0  # koordlet CollectResUsedInterval
    assert settings.aggregate_duration_s == 300.0  # slo-controller metricAggregateDurationSeconds
    assert settings.aggregate_windows_s == (300.0, 600.0, 1800.0)  # NodeAggregatePolicy 5m/10m/30m
    assert settings.memory_policy == "usageWithoutPageCache"  # NodeMemoryCollectPolicy default
    assert settings.report_interval_s == 10.0  # the cadence (Koordinator: 60 s)
    assert (str(settings.cgroup_root), settings.kubepods_dir) == ("/sys/fs/cgroup", "kubepods")
    assert settings.history_s == 1800.0


@pytest.mark.parametrize("overrides, field", [
    ({"collect_interval_s": 0}, "collect_interval_s"),
    ({"report_interval_s": 0.5}, "report_interval_s"),
    ({"memory_policy": "all"}, "memory_policy"),
    ({"cgroup_driver": "docker"}, "cgroup_driver"),
    ({"kubepods_dir": "../etc"}, "kubepods_dir"),
    ({"aggregate_windows_s": ()}, "aggregate_windows_s"),
], ids=["collect-zero", "report-shorter-than-collect", "policy", "driver", "kubepods-path", "no-window"])
def test_validate_names_the_bad_field(overrides, field):
    with pytest.raises(SettingsError, match=field):
        AgentSettings(**overrides).validate()
