"""kube-scheduler's constraints end to end through the broker (issue 39's done-when): required anti-affinity
replicas land on distinct nodes and the one too many stays Unschedulable with kube-scheduler's message; a
spread constraint with maxSkew 1 over three zones places nine pods 3/3/3; a hostPort conflict is refused.
Each scenario has its own tainted nodes, so the shared cluster's other pods never land there."""

from __future__ import annotations

import collections
import pytest
import yaml

pytestmark = pytest.mark.integration

NAMESPACE = "e2e-constraints"
ZONE, HOSTNAME = "topology.kubernetes.io/zone", "kubernetes.io/hostname"


def node(name: str, scenario: str, zone: str) -> dict:
    resources = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"e2e-scenario": scenario, ZONE: zone, HOSTNAME: name}},
            "spec": {"taints": [{"key": "e2e-scenario", "value": scenario, "effect": "NoSchedule"}]},
            "status": {"capacity": resources, "allocatable": resources}}


def pod(name: str, scenario: str, labels: dict, **spec) -> dict:
    container = {"name": "main", "image": "app", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}
    if ports := spec.pop("ports", None):
        container["ports"] = ports
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
            "spec": {"nodeSelector": {"e2e-scenario": scenario},
                     "tolerations": [{"key": "e2e-scenario", "operator": "Equal", "value": scenario,
                                      "effect": "NoSchedule"}],
                     "containers": [container], **spec}}


def apply(cluster, *manifests: dict) -> None:
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=yaml.safe_dump_all(manifests))


def placed(cluster, name: str) -> tuple[str | None, str]:
    """(node, message) of the pod's latest decision."""
    decisions = cluster.koord_json("explain", "pod", name, "-n", NAMESPACE)["decisions"]
    return decisions[-1].get("nodeName"), decisions[-1]["message"]


def test_required_anti_affinity_replicas_land_on_distinct_nodes_or_stay_unschedulable(cluster):
    apply(cluster, *(node(f"e2e-anti-{i}", "anti", "zone-a") for i in range(3)))
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "e2e-anti"}}, "topologyKey": HOSTNAME}]}}
    apply(cluster, *(pod(f"anti-{i}", "anti", {"app": "e2e-anti"}, affinity=anti) for i in range(4)))
    outcomes = [placed(cluster, f"anti-{i}") for i in range(4)]
    nodes = [n for n, _ in outcomes if n]
    assert sorted(nodes) == ["e2e-anti-0", "e2e-anti-1", "e2e-anti-2"], outcomes
    refused = next(message for n, message in outcomes if n is None)
    assert "3 node(s) didn't match pod anti-affinity rules" in refused, refused


def test_a_spread_constraint_with_max_skew_one_over_three_zones_places_nine_pods_three_by_three(cluster):
    apply(cluster, *(node(f"e2e-spread-{zone}-{i}", "spread", f"spread-{zone}") for zone in "abc" for i in range(2)))
    spread = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "e2e-spread"}}}]
    apply(cluster, *(pod(f"spread-{i}", "spread", {"app": "e2e-spread"}, topologySpreadConstraints=spread)
                     for i in range(9)))
    zones = collections.Counter(placed(cluster, f"spread-{i}")[0].rsplit("-", 1)[0] for i in range(9))
    assert zones == {"e2e-spread-a": 3, "e2e-spread-b": 3, "e2e-spread-c": 3}


def test_a_host_port_conflict_is_refused(cluster):
    apply(cluster, node("e2e-ports-0", "ports", "zone-a"))
    port = [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}]
    apply(cluster, pod("port-0", "ports", {"app": "e2e-ports"}, ports=port),
          pod("port-1", "ports", {"app": "e2e-ports"}, ports=port),
          pod("port-2", "ports", {"app": "e2e-ports"}, ports=[{"containerPort": 80, "hostPort": 8081}]))
    outcomes = {name: placed(cluster, name) for name in ("port-0", "port-1", "port-2")}
    assert outcomes["port-2"][0] == "e2e-ports-0", outcomes
    same_port = sorted((outcomes[name][0] or "", outcomes[name][1]) for name in ("port-0", "port-1"))
    assert [n for n, _ in same_port] == ["", "e2e-ports-0"], outcomes
    assert "1 node(s) didn't have free ports for the requested pod ports" in same_port[0][1], outcomes
