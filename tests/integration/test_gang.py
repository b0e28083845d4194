"""Gang scheduling end to end on the embedded broker: a 4-pod Strict gang on nodes where only 3 fit stays entirely
unbound and is placed whole when a node is added; a NonStrict gang places what fits; two gangs of one group
bind only together. Each scenario has its own tainted nodes, so the shared cluster's other pods never compete."""

from __future__ import annotations

import time

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.scenario]

NAMESPACE = "e2e-gang"


def node(name: str, scenario: str, cpu: str) -> str:
    resources = f'{{cpu: "{cpu}", memory: 32Gi, pods: "110"}}'
    return f"""\
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{e2e-scenario: {scenario}}}}}
spec: {{taints: [{{key: e2e-scenario, value: {scenario}, effect: NoSchedule}}]}}
status: {{capacity: {resources}, allocatable: {resources}}}
"""


def member(name: str, scenario: str, gang: str, minimum: int, mode: str = "Strict", groups: str = "") -> str:
    group = f"\n    gang.scheduling.koordinator.sh/groups: '{groups}'" if groups else ""
    return f"""\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {NAMESPACE}
  annotations:
    gang.scheduling.koordinator.sh/name: {gang}
    gang.scheduling.koordinator.sh/min-available: "{minimum}"
    gang.scheduling.koordinator.sh/mode: {mode}{group}
spec:
  nodeSelector: {{e2e-scenario: {scenario}}}
  tolerations: [{{key: e2e-scenario, operator: Equal, value: {scenario}, effect: NoSchedule}}]
  containers:
  - {{name: main, image: train, resources: {{requests: {{cpu: "1", memory: 1Gi}}}}}}
"""


def apply(cluster, *manifests: str) -> None:
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input="---\n".join(manifests))


def nodes_of(cluster, names: list[str]) -> dict[str, str | None]:
    pods = cluster.koord_json("get", "pods", "-n", NAMESPACE)["items"]
    return {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods if p["metadata"]["name"] in names}


def wait_for(cluster, names: list[str], condition, timeout: float = 30) -> dict[str, str | None]:
    deadline, placed = time.monotonic() + timeout, {}
    while time.monotonic() < deadline:
        placed = nodes_of(cluster, names)
        if len(placed) == len(names) and condition(placed):
            return placed
        time.sleep(0.3)
    return placed


def test_a_strict_gang_holds_nothing_until_all_fit_then_is_placed_whole(cluster):
    names = [f"strict-{i}" for i in range(4)]
    apply(cluster, node("gang-a", "gang-strict", cpu="3"))
    apply(cluster, *[member(name, "gang-strict", "strict", 4) for name in names])
    placed = wait_for(cluster, names, lambda p: True)
    assert placed == dict.fromkeys(names), placed
    explained = cluster.koord_json("explain", "pod", "strict-0", "-n", NAMESPACE)
    assert any('gets rejected' in d["message"] or "child pod not collect enough" in d["message"]
               for d in explained["decisions"]), explained
    apply(cluster, node("gang-b", "gang-strict", cpu="3"))
    placed = wait_for(cluster, names, lambda p: all(p.values()))
    assert all(placed.values()), placed


def test_a_non_strict_gang_places_what_fits(cluster):
    names = [f"loose-{i}" for i in range(4)]
    apply(cluster, node("gang-loose", "gang-loose", cpu="3"))
    apply(cluster, *[member(name, "gang-loose", "loose", 4, mode="NonStrict") for name in names])
    decided = {name: cluster.koord_json("explain", "pod", name, "-n", NAMESPACE)["decisions"][0]["result"]
               for name in names}
    assert sorted(decided.values()) == ["Unschedulable", "Waiting", "Waiting", "Waiting"], decided
    assert not any(nodes_of(cluster, names).values())


def test_two_gangs_of_one_group_bind_only_together(cluster):
    groups = f'["{NAMESPACE}/role-a","{NAMESPACE}/role-b"]'
    apply(cluster, node("gang-group", "gang-group", cpu="8"))
    apply(cluster, *[member(f"role-a-{i}", "gang-group", "role-a", 2, groups=groups) for i in range(2)])
    assert not any(wait_for(cluster, ["role-a-0", "role-a-1"], lambda p: True, timeout=5).values())
    apply(cluster, *[member(f"role-b-{i}", "gang-group", "role-b", 2, groups=groups) for i in range(2)])
    names = ["role-a-0", "role-a-1", "role-b-0", "role-b-1"]
    placed = wait_for(cluster, names, lambda p: all(p.values()))
    assert set(placed.values()) == {"gang-group"}, placed
