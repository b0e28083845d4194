"""Reservations end to end on the embedded broker: a Reservation applied with ``koord apply`` is placed and shown
Available by ``koord get reservations``; its owner lands on its node with ``reservation-allocated`` and the
reservation is Succeeded with it as its current owner (derived from that annotation); a pod that is no owner cannot take the reserved resources; an exact-match owner
of other amounts, and a pod naming another reservation by affinity, go elsewhere as the v1.6 article says."""

from __future__ import annotations

import json
import time

import pytest

from tests.integration.manifests import scenario_node

pytestmark = [pytest.mark.integration, pytest.mark.scenario]

NAMESPACE = "e2e-reserve"
SCENARIO = "reserve"


def node(name: str) -> str:
    return scenario_node(name, SCENARIO, cpu="4", memory="16Gi")


RESERVATION = f"""\
apiVersion: scheduling.koordinator.sh/v1alpha1
kind: Reservation
metadata: {{name: web-reservation}}
spec:
  template:
    metadata: {{namespace: {NAMESPACE}}}
    spec:
      nodeSelector: {{e2e-scenario: {SCENARIO}}}
      tolerations: [{{key: e2e-scenario, operator: Equal, value: {SCENARIO}, effect: NoSchedule}}]
      containers:
      - {{name: main, image: app, resources: {{requests: {{cpu: "3", memory: 1Gi}}}}}}
  owners:
  - labelSelector: {{matchLabels: {{app: web}}}}
"""


def pod(name: str, app: str, cpu: str = "2", annotations: dict | None = None) -> str:
    notes = json.dumps(annotations or {})
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {NAMESPACE}, labels: {{app: {app}}}, annotations: {notes}}}
spec:
  nodeSelector: {{e2e-scenario: {SCENARIO}}}
  tolerations: [{{key: e2e-scenario, operator: Equal, value: {SCENARIO}, effect: NoSchedule}}]
  containers:
  - {{name: main, image: app, resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}}}
"""


def apply(cluster, *manifests: str) -> None:
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input="---\n".join(manifests))


def reservation(cluster, want_phase: str, timeout: float = 30) -> dict:
    deadline, found = time.monotonic() + timeout, {}
    while time.monotonic() < deadline:
        found = cluster.koord_json("get", "reservations", "web-reservation")
        if (found.get("status") or {}).get("phase") == want_phase:
            return found
        time.sleep(0.3)
    return found


def node_of(cluster, name: str) -> str | None:
    return cluster.koord_json("get", "pods", name, "-n", NAMESPACE)["spec"].get("nodeName")


def test_an_owner_lands_on_its_reservation_and_others_keep_off_it(cluster):
    apply(cluster, node("reserve-a"), node("reserve-b"), RESERVATION)
    available = reservation(cluster, "Available")
    assert available["status"]["phase"] == "Available", available
    reserved_node = available["status"]["nodeName"]
    other_node = "reserve-b" if reserved_node == "reserve-a" else "reserve-a"

    apply(cluster, pod("stranger", "db"))
    assert node_of(cluster, "stranger") == other_node
    exact = {"scheduling.koordinator.sh/exact-match-reservation": '{"resourceNames":["cpu"]}'}
    apply(cluster, pod("exact-web", "web", cpu="1", annotations=exact))
    assert node_of(cluster, "exact-web") == other_node
    named = {"scheduling.koordinator.sh/reservation-affinity": '{"name":"no-such-reservation"}'}
    apply(cluster, pod("named-web", "web", cpu="1", annotations=named))
    assert node_of(cluster, "named-web") is None

    apply(cluster, pod("web-0", "web"))
    assert node_of(cluster, "web-0") == reserved_node
    done = reservation(cluster, "Succeeded")
    assert done["status"]["currentOwners"] == [{"namespace": NAMESPACE, "name": "web-0"}], done
