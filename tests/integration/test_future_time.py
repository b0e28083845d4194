"""Issue 37 failure 8 on both brokers: event time is every record's time, so one Node record timed ahead (a node
with a bad clock) moved it ahead and expired every Reservation whose TTL ended before. The router forwards a
record's time at most ``streams.events.MAX_AHEAD_MS`` past its clock. The record is 50 minutes ahead: Kafka
refuses one more than an hour ahead (``message.timestamp.after.max.ms``), Tansu takes any."""

from __future__ import annotations

import asyncio
import time

import pytest

from streams import kafka
from streams.objects.documents import load_documents
from streams.objects.records import to_record
from streams.schemas import codec
from tests.integration.manifests import scenario_node

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(own_cluster):
    """A cluster of this module's own (``own_cluster``): what these tests write would change the shared one's
    placements and its session replay."""
    return own_cluster


SCENARIO = "future-time"
AHEAD_MS = 50 * 60 * 1000


def node(name: str) -> str:
    return scenario_node(name, SCENARIO, cpu="4", memory="16Gi")


RESERVATION = f"""\
apiVersion: scheduling.koordinator.sh/v1alpha1
kind: Reservation
metadata: {{name: future-time-reservation}}
spec:
  ttl: 30m
  template:
    metadata: {{namespace: future-time}}
    spec:
      nodeSelector: {{e2e-scenario: {SCENARIO}}}
      tolerations: [{{key: e2e-scenario, operator: Equal, value: {SCENARIO}, effect: NoSchedule}}]
      containers:
      - {{name: main, image: app, resources: {{requests: {{cpu: "1", memory: 1Gi}}}}}}
  owners:
  - labelSelector: {{matchLabels: {{app: future-time}}}}
"""


def _phase(cluster) -> str | None:
    found = cluster.koord_json("get", "reservations", "future-time-reservation")
    return (found.get("status") or {}).get("phase")


def _wait_phase(cluster, phase: str, timeout: float = 30) -> str | None:
    deadline, found = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        found = _phase(cluster)
        if found == phase:
            break
        time.sleep(0.3)
    return found


async def _produce_ahead(bootstrap: str, topic: str, key: str, value: bytes, ahead_ms: int) -> None:
    async with kafka.producer(bootstrap) as client:
        timestamp_ms = int(time.time() * 1000) + ahead_ms
        await client.send_and_wait(topic, key=key.encode(), value=value, timestamp_ms=timestamp_ms)


def test_a_node_record_timed_50_minutes_ahead_does_not_expire_a_30_minute_reservation_ttl(cluster):
    apply = ["apply", "-f", "-", "--wait", "--timeout", "60"]
    cluster.koord(*apply, input="---\n".join([node("future-time-a"), RESERVATION]))
    assert _wait_phase(cluster, "Available") == "Available"

    skewed = to_record(load_documents("-", stdin_text=node("future-time-b"))[0])
    asyncio.run(_produce_ahead(cluster.bootstrap, cluster.topology.name("nodes"), skewed.key,
                               codec.encode(skewed.schema, skewed.record), AHEAD_MS))
    cluster.koord(*apply, input=node("future-time-b"))

    assert _wait_phase(cluster, "Failed", timeout=5) == "Available"
    assert cluster.worker_metric("koord_future_times_total", stage="router", action="clamped") >= 1
