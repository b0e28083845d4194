"""The Prometheus config and alert rules of deploy/prometheus pass promtool and query only exported metrics."""

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.deploy.test_dashboard import exported
from tests.prometheus import require_prometheus

PROMETHEUS = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
METRIC = re.compile(r"\b(koord[a-z]*_[a-z_]+)\b")
ALERTS = ("KoordTargetDown", "KoordInboxRecordsSkipped", "KoordDeadLettersRising", "KoordProjectionLagging",
          "KoordActuationsFailing", "KoordActuationsRejected", "KoordNodeAgentCutOffFromKafka",
          "KoordNodeAgentProtecting", "KoordNodeAgentDroppingMetrics")


def rules() -> list[dict]:
    return [rule for group in yaml.safe_load((PROMETHEUS / "alerts.yml").read_text())["groups"]
            for rule in group["rules"]]


@pytest.mark.parametrize("args", [("check", "rules", "alerts.yml"), ("check", "config", "prometheus.yml"),
                                  ("test", "rules", "alerts_test.yml")], ids=lambda args: " ".join(args[:2]))
def test_promtool_accepts(args):
    require_prometheus()
    result = subprocess.run(["promtool", *args], cwd=PROMETHEUS, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_is_unit_tested():
    tested = {case["alertname"] for test in yaml.safe_load((PROMETHEUS / "alerts_test.yml").read_text())["tests"]
              for case in test["alert_rule_test"] if case["exp_alerts"]}
    assert {rule["alert"] for rule in rules()} == tested == set(ALERTS)


def test_alerts_query_only_exported_metrics():
    suffixed = exported()
    queried = {name for rule in rules() for name in METRIC.findall(rule["expr"])}
    assert queried and not queried - suffixed, f"alerts query metrics nothing exports: {sorted(queried - suffixed)}"
