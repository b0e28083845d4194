"""Every metric the Grafana dashboard queries is one the code exports."""

import functools
import json
import re
from pathlib import Path

from prometheus_client import REGISTRY

from streams.app import create_app
from streams.topology import load_topology

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "dashboards" / "koordstream.json"
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}
METRIC = re.compile(r"\b(koord[a-z]*_[a-z_]+)\b")


@functools.cache
def exported() -> frozenset[str]:
    """The names of every series the worker and the node agent export (cached: an app registers its metrics once)."""
    create_app("127.0.0.1:1", load_topology())
    import node_agent.metrics  # noqa: F401  (registers the node agent's metrics)
    names = set()
    for family in REGISTRY.collect():
        names.update(family.name + suffix for suffix in SUFFIXES.get(family.type, ("",)))
    return frozenset(names)


def queried() -> set[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return {name for panel in dashboard["panels"] for target in panel["targets"]
            for name in METRIC.findall(target["expr"])}


def test_dashboard_queries_only_exported_metrics():
    missing = queried() - exported()
    assert not missing, f"the dashboard queries metrics nothing exports: {sorted(missing)}"


def test_dashboard_covers_the_features():
    names = queried()
    for needed in ("koord_node_usage", "koord_node_allocatable", "koord_decision_latency_seconds_bucket",
                   "koord_quota", "koord_dead_letters_total", "koord_outputs_total"):
        assert needed in names
