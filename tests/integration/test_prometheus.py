"""A real Prometheus scrapes a running pipeline and node agent; every dashboard query returns data.

The module starts its own Tansu broker, a worker, the projection and ``koord node-agent`` (no
actuation), each serving ``--metrics-port``, and a Prometheus (``.ci/prometheus-up``) that scrapes
them every two seconds with the shipped alert rules loaded. It applies what makes every panel of
``deploy/grafana/dashboards/koordstream.json`` have something to show (a colocation config, a node with
its NodeMetric, an ElasticQuota and pods in it, a malformed pod record for a dead letter), twice, so
that the rates and quantiles see an increase between two scrapes. One broker kind is enough: the
series come from koordstream, not from the broker.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml
from aiokafka import AIOKafkaProducer

from streams import supervision
from streams.broker import embedded
from streams.topology import load_topology
from tests.integration.conftest import Cluster, _wait_worker_ready, start_broker
from tests.integration.manifests import COLOCATION_CONFIG, pre_bound_node
from tests.prometheus import require_prometheus

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "dashboards" / "koordstream.json"
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yml"
NODE = "prom-node"
NAMESPACE = "prom-e2e"
DATA_TIMEOUT_S = 60
SCRAPE = "2s"
"""Scrape and rule interval; also the scrape timeout, which a loaded machine needs more than 1 s for."""


def dashboard_queries() -> list[str]:
    def walk(panels: list[dict]):
        for panel in panels:
            yield from walk(panel.get("panels", []))
            yield from (target["expr"] for target in panel.get("targets", []) if target.get("expr"))
    return list(dict.fromkeys(walk(json.loads(DASHBOARD.read_text())["panels"])))


def workload(round_: int) -> str:
    """A node with its NodeMetric, a quota and two pods in it; each round's pods and usage are new."""
    pods = "---\n".join(f"""\
apiVersion: v1
kind: Pod
metadata: {{name: pod-{round_}-{i}, namespace: {NAMESPACE}, labels: {{quota.scheduling.koordinator.sh/name: team}}}}
spec:
  nodeName: {NODE}
  containers: [{{name: main, image: app, resources: {{requests: {{cpu: "1", memory: 1G}}}}}}]
""" for i in range(2))
    return f"""\
{pre_bound_node(NODE, cpu="32", memory="64G")}---
apiVersion: scheduling.sigs.k8s.io/v1alpha1
kind: ElasticQuota
metadata: {{name: team, namespace: {NAMESPACE}}}
spec: {{min: {{cpu: "8", memory: 16Gi}}, max: {{cpu: "16", memory: 32Gi}}}}
---
apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeMetric
metadata: {{name: {NODE}}}
status:
  updateTime: "2025-01-01T00:00:{10 + round_:02d}Z"
  nodeMetric:
    nodeUsage: {{resources: {{cpu: "{4 + round_}", memory: 8G}}}}
    systemUsage: {{resources: {{cpu: "1", memory: 2G}}}}
  prodReclaimableMetric:
    resource: {{resources: {{cpu: "2", memory: 4G}}}}
---
{pods}"""


class Prometheus:
    """A Prometheus server on a free loopback port, its data under ``directory``."""

    def __init__(self, directory: Path, targets: dict[str, int]) -> None:
        self.port = embedded.free_loopback_port()
        config = {"global": {"scrape_interval": SCRAPE, "scrape_timeout": SCRAPE, "evaluation_interval": SCRAPE},
                  "rule_files": [str(ALERTS)],
                  "scrape_configs": [{"job_name": job, "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}
                                     for job, port in targets.items()]}
        (directory / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.log = directory / "prometheus.log"
        self.process = supervision.spawn(
            ["prometheus", f"--config.file={directory / 'prometheus.yml'}", f"--storage.tsdb.path={directory / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{self.port}"], self.log)

    def wait_ready(self, timeout_s: float = 30) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited {self.process.returncode}:\n{self.log.read_text()[-3000:]}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2)
                return
            except OSError:
                time.sleep(0.2)
        raise TimeoutError(f"prometheus not ready within {timeout_s}s")

    def api(self, path: str, **params: str) -> dict | list:
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        body = json.loads(urllib.request.urlopen(url, timeout=10).read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[float]:
        """The values of an instant query's vector (NaN included)."""
        return [float(sample["value"][1]) for sample in self.api("query", query=expr)["result"]]


async def send_malformed(bootstrap: str, topic: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        await (await producer.send(topic, key=f"{NAMESPACE}/malformed".encode(), value=b"not an avro record"))
    finally:
        await producer.stop()


@pytest.fixture(scope="module")
def monitored(tmp_path_factory):
    require_prometheus()
    home = tmp_path_factory.mktemp("prometheus")
    topology = load_topology()
    broker = start_broker("tansu", home, topology)
    env = {**broker.env(), "KOORD_HOME": str(home), "KOORD_DATABASE_URL": f"sqlite:///{home / 'readmodel.sqlite'}"}
    cluster = Cluster(broker.bootstrap, home, env, topology)
    ports = {"koordstream-projection": embedded.free_loopback_port(),
             "koordstream-node-agent": embedded.free_loopback_port()}
    children, prometheus = [], None
    try:
        cluster.start_worker()
        ports["koordstream-worker"] = cluster.metrics_port
        children.append(supervision.spawn(supervision.koord_command(
            "project", "--metrics-port", str(ports["koordstream-projection"])), home / "projection.log", env))
        children.append(supervision.spawn(supervision.koord_command(
            "node-agent", "--node-name", "prom-agent-node", "--no-actuate", "--report-interval", "1",
            "--metrics-port", str(ports["koordstream-node-agent"])), home / "node-agent.log", env))
        prometheus = Prometheus(home, ports)
        prometheus.wait_ready()
        _wait_worker_ready(cluster)
        yield cluster, prometheus
    finally:
        supervision.stop([p for p in (prometheus and prometheus.process, *children, cluster.worker) if p is not None])
        broker.stop()


@pytest.fixture(scope="module")
def fed(monitored):
    """Two rounds of the workload and a malformed pod record, a few scrapes apart."""
    cluster, prometheus = monitored
    cluster.koord("apply", "-f", "-", input=COLOCATION_CONFIG)
    for round_ in range(2):
        cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=workload(round_))
        asyncio.run(send_malformed(cluster.bootstrap, cluster.topology.name("pods")))
        time.sleep(5)
    return cluster, prometheus


def waiting(what: str, problems, timeout_s: float = DATA_TIMEOUT_S) -> None:
    """Poll ``problems()`` (a list) until it is empty; fail with what is left after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while (left := problems()) and time.monotonic() < deadline:
        time.sleep(1)
    assert not left, f"{what}:\n" + "\n".join(map(str, left))


def test_every_dashboard_query_returns_data(fed):
    _, prometheus = fed
    queries = dashboard_queries()
    assert len(queries) >= 20
    waiting("dashboard queries without a finite value",
            lambda: [expr for expr in queries if not any(math.isfinite(v) for v in prometheus.query(expr))])


def test_every_target_is_scraped_and_the_node_agent_reaches_the_broker(fed):
    _, prometheus = fed
    jobs = {"koordstream-worker", "koordstream-projection", "koordstream-node-agent"}
    assert {t["labels"]["job"] for t in prometheus.api("targets")["activeTargets"]} == jobs
    waiting("targets not up", lambda: [(t["labels"]["job"], t["health"], t["lastError"])
                                       for t in prometheus.api("targets")["activeTargets"] if t["health"] != "up"])
    assert prometheus.query('koord_node_agent_broker_connected{job="koordstream-node-agent"}') == [1.0]


def test_the_alert_rules_evaluate_and_dead_letters_make_theirs_pending(fed):
    cluster, prometheus = fed
    rules = [rule for group in prometheus.api("rules")["groups"] for rule in group["rules"]]
    assert len(rules) == 9 and {rule["health"] for rule in rules} == {"ok"}, rules
    alerts = {(a["labels"]["alertname"], a["labels"].get("stage"), a["labels"].get("topic"), a["state"])
              for a in prometheus.api("alerts")["alerts"]}
    assert ("KoordDeadLettersRising", "router", cluster.topology.name("pods"), "pending") in alerts
    # A scrape slower than its timeout on a loaded machine makes KoordTargetDown pending for a moment.
    assert {alert[0] for alert in alerts} <= {"KoordDeadLettersRising", "KoordTargetDown"}, sorted(alerts)
