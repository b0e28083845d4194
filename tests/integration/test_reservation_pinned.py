"""A Reservation pinned with ``template.spec.nodeName`` on the embedded broker: its reserve pod passes Filter on
that node like any pod (Koordinator's reserve pod), so one too big for its node and one naming a node that does
not exist stay Pending with the scheduler's reason and hold nothing, while one that fits is Available there."""

from __future__ import annotations

import time

import pytest

from tests.integration.manifests import scenario_node

pytestmark = [pytest.mark.integration, pytest.mark.scenario]

NAMESPACE = "e2e-pinned"
SCENARIO = "pinned"
NODE = "pinned-a"


def node(name: str) -> str:
    return scenario_node(name, SCENARIO, cpu="4", memory="16Gi")


def pinned(name: str, node_name: str, cpu: str) -> str:
    return f"""\
apiVersion: scheduling.koordinator.sh/v1alpha1
kind: Reservation
metadata: {{name: {name}}}
spec:
  template:
    metadata: {{namespace: {NAMESPACE}}}
    spec:
      nodeName: {node_name}
      tolerations: [{{key: e2e-scenario, operator: Equal, value: {SCENARIO}, effect: NoSchedule}}]
      containers:
      - {{name: main, image: app, resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}}}
  owners:
  - object: {{namespace: {NAMESPACE}, name: nobody}}
"""


POD = f"""\
apiVersion: v1
kind: Pod
metadata: {{name: after, namespace: {NAMESPACE}}}
spec:
  nodeSelector: {{e2e-scenario: {SCENARIO}}}
  tolerations: [{{key: e2e-scenario, operator: Equal, value: {SCENARIO}, effect: NoSchedule}}]
  containers:
  - {{name: main, image: app, resources: {{requests: {{cpu: "3", memory: 1Gi}}}}}}
"""


def status_of(cluster, name: str, phase: str, message: str = "", timeout: float = 30) -> dict:
    """The reservation's status once it shows ``phase`` (Pending: with a condition whose message holds
    ``message``). A reserve pod attempted before its node arrived is Pending for want of nodes until the
    node's event retries it, so a Pending reservation is waited for with the Filter's reason, not taken at once."""
    deadline, status = time.monotonic() + timeout, {}
    while time.monotonic() < deadline:
        status = cluster.koord_json("get", "reservations", name).get("status") or {}
        conditions = status.get("conditions") or []
        explained = bool(conditions) and message in conditions[0].get("message", "")
        if status.get("phase") == phase and (phase != "Pending" or explained):
            return status
        time.sleep(0.3)
    return status


def test_pinned_reservations_that_do_not_fit_or_name_no_node_stay_pending_and_hold_nothing(cluster):
    cluster.koord("apply", "-f", "-", input="---\n".join([
        node(NODE), pinned("pinned-huge", NODE, "100000000"), pinned("pinned-ghost", "pinned-no-such-node", "1"),
        pinned("pinned-fits", NODE, "1")]))
    fits = status_of(cluster, "pinned-fits", "Available")
    assert (fits.get("phase"), fits.get("nodeName")) == ("Available", NODE), fits
    huge = status_of(cluster, "pinned-huge", "Pending", "Insufficient cpu")
    assert huge["phase"] == "Pending" and not huge.get("nodeName"), huge
    assert "Insufficient cpu" in huge["conditions"][0]["message"], huge
    ghost = status_of(cluster, "pinned-ghost", "Pending", "didn't match the requested node name")
    assert ghost["phase"] == "Pending" and not ghost.get("nodeName"), ghost
    assert "didn't match the requested node name" in ghost["conditions"][0]["message"], ghost
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=POD)
    assert cluster.koord_json("get", "pods", "after", "-n", NAMESPACE)["spec"].get("nodeName") == NODE
