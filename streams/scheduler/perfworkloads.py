"""kube-scheduler's scheduler_perf workloads, as manifests ``koord bench scheduler --workload NAME`` sends.

Ported from kubernetes/kubernetes ``test/integration/scheduler_perf`` (``affinity/``, ``misc/`` and
``topology_spreading/performance-config.yaml`` and ``templates/``): the same node template (4 cpu, 32Gi,
110 pods), the same pod templates (100m cpu, 500Mi, the same labels, affinity terms and spread
constraints), the same node/pod counts per case, and the case's ``threshold`` as the floor: the lowest
per-run average pods/s of kube-scheduler's CI, printed beside our figure.

Two things differ, both said here: scheduler_perf's ``labelNodePrepareStrategy`` gives each node a random
value of the label's list, we give them in turn (deterministic runs); and each node carries
``kubernetes.io/hostname`` as a kubelet registers it (scheduler_perf's nodes lack it, which makes its
hostname anti-affinity terms match no topology). Pods of a case's init phase are scheduled before the
clock starts, as scheduler_perf only measures the pods of its ``collectMetrics`` phase.
"""

from __future__ import annotations

import dataclasses

ZONE, HOSTNAME = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
SCHED_NAMESPACES = ["sched-1", "sched-0"]


def _pod(labels: dict | None = None, **spec) -> dict:
    """templates/pod-default.yaml with ``labels`` and extra ``spec`` fields."""
    resources = {"cpu": "100m", "memory": "500Mi"}
    container = {"name": "pause", "image": "registry.k8s.io/pause:3.10.1", "ports": [{"containerPort": 80}],
                 "resources": {"limits": resources, "requests": resources}}
    return {"labels": labels or {}, "spec": {"containers": [container], **spec}}


def _term(color: str, key: str) -> dict:
    return {"labelSelector": {"matchLabels": {"color": color}}, "topologyKey": key, "namespaces": SCHED_NAMESPACES}


TEMPLATES = {
    "pod-default": _pod(),
    "pod-with-pod-anti-affinity": _pod({"color": "green"}, affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [_term("green", HOSTNAME)]}}),
    "pod-with-pod-anti-affinity-label": _pod({"color": "green"}),
    "pod-with-pod-affinity": _pod({"color": "blue"}, affinity={"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [_term("blue", ZONE)]}}),
    "pod-with-preferred-pod-affinity": _pod({"color": "red"}, affinity={"podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"podAffinityTerm": _term("red", HOSTNAME), "weight": 1}]}}),
    "pod-with-preferred-pod-anti-affinity": _pod({"color": "yellow"}, affinity={"podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"podAffinityTerm": _term("yellow", HOSTNAME), "weight": 1}]}}),
    "pod-with-node-affinity": _pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": ZONE, "operator": "In", "values": ["zone1", "zone2"]}]}]}}}),
    "pod-with-topology-spreading": _pod({"color": "blue"}, topologySpreadConstraints=[
        {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"color": "blue"}}}]),
}
"""scheduler_perf's pod templates, by file name without ``.yaml``: labels and spec."""


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    nodes: int
    init: int
    """Pods of each init phase."""
    measure: int
    floor: float | None = None
    """The case's ``threshold`` (pods/s), where scheduler_perf gives one."""


@dataclasses.dataclass(frozen=True)
class Workload:
    name: str
    source: str
    """The scheduler_perf config it comes from."""
    init: tuple[tuple[str, str], ...]
    """(template, namespace) of each init phase, in order."""
    measure: tuple[str, str]
    zones: tuple[str, ...] = ()
    """Values of the nodes' zone label, in turn; none: no zone label."""
    cases: tuple[Case, ...] = ()

    def case(self, name: str | None) -> Case:
        """The case called ``name``; None: the performance case with a floor."""
        if name is None:
            return next(c for c in self.cases if c.floor is not None)
        for case in self.cases:
            if case.name == name:
                return case
        raise ValueError(f"{self.name} has no case {name!r} (it has {', '.join(c.name for c in self.cases)})")


def _cases(small: tuple[int, int, int], middle: tuple[int, int, int], large: tuple[str, int, int, int, float]) -> tuple:
    return (Case("5Nodes", *small), Case("500Nodes", *middle), Case(*large))


AFFINITY, MISC, SPREAD = (f"test/integration/scheduler_perf/{d}/performance-config.yaml"
                          for d in ("affinity", "misc", "topology_spreading"))
WORKLOADS = {w.name: w for w in (
    Workload("SchedulingBasic", MISC, (("pod-default", "default"),), ("pod-default", "default"),
             cases=_cases((5, 5, 10), (500, 500, 1000), ("5000Nodes_10000Pods", 5000, 1000, 10000, 680))),
    Workload("SchedulingPodAntiAffinity", AFFINITY, (("pod-with-pod-anti-affinity", "sched-0"),),
             ("pod-with-pod-anti-affinity", "sched-1"),
             cases=_cases((5, 1, 4), (500, 100, 400), ("5000Nodes_2000Pods", 5000, 1000, 2000, 60))),
    Workload("SchedulingPodMatchingAntiAffinity", AFFINITY, (("pod-with-pod-anti-affinity", "sched-0"),),
             ("pod-with-pod-anti-affinity-label", "sched-1"),
             cases=_cases((5, 1, 4), (500, 100, 400), ("5000Nodes_5000Pods", 5000, 1000, 5000, 595))),
    Workload("SchedulingPodAffinity", AFFINITY, (("pod-with-pod-affinity", "sched-0"),),
             ("pod-with-pod-affinity", "sched-1"), zones=("zone1",),
             cases=_cases((5, 5, 10), (500, 500, 1000), ("5000Nodes_5000Pods", 5000, 5000, 5000, 35))),
    Workload("SchedulingPreferredPodAffinity", AFFINITY, (("pod-with-preferred-pod-affinity", "sched-0"),),
             ("pod-with-preferred-pod-affinity", "sched-1"),
             cases=_cases((5, 5, 10), (500, 500, 1000), ("5000Nodes_5000Pods", 5000, 5000, 5000, 90))),
    Workload("SchedulingPreferredPodAntiAffinity", AFFINITY, (("pod-with-preferred-pod-anti-affinity", "sched-0"),),
             ("pod-with-preferred-pod-anti-affinity", "sched-1"),
             cases=_cases((5, 5, 10), (500, 500, 1000), ("5000Nodes_5000Pods", 5000, 5000, 5000, 90))),
    Workload("SchedulingNodeAffinity", AFFINITY, (("pod-with-node-affinity", "default"),),
             ("pod-with-node-affinity", "default"), zones=("zone1",),
             cases=_cases((5, 5, 10), (500, 500, 1000), ("5000Nodes_10000Pods", 5000, 5000, 10000, 220))),
    Workload("TopologySpreading", SPREAD, (("pod-default", "default"),), ("pod-with-topology-spreading", "default"),
             zones=("moon-1", "moon-2", "moon-3"),
             cases=_cases((5, 10, 10), (500, 1000, 1000), ("5000Nodes_5000Pods", 5000, 5000, 5000, 460))),
    Workload("MixedSchedulingBasePod", AFFINITY,
             tuple((t, "sched-0") for t in ("pod-default", "pod-with-pod-affinity", "pod-with-pod-anti-affinity",
                                            "pod-with-preferred-pod-affinity", "pod-with-preferred-pod-anti-affinity")),
             ("pod-default", "default"), zones=("zone1",),
             cases=_cases((5, 2, 10), (500, 200, 1000), ("5000Nodes_5000Pods", 5000, 2000, 5000, 140))),
)}


def node_manifests(workload: Workload, count: int) -> list[dict]:
    """templates/node-default.yaml ``count`` times, named and labelled (zone in turn, hostname)."""
    resources = {"pods": "110", "cpu": "4", "memory": "32Gi"}
    nodes = []
    for index in range(count):
        name = f"scheduler-perf-{index:05d}"
        labels = {HOSTNAME: name, **({ZONE: workload.zones[index % len(workload.zones)]} if workload.zones else {})}
        nodes.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
                      "status": {"capacity": resources, "allocatable": resources,
                                 "conditions": [{"type": "Ready", "status": "True"}]}})
    return nodes


def pod_manifests(template: str, namespace: str, prefix: str, count: int) -> list[dict]:
    """``count`` pods of ``template`` in ``namespace``, named ``<prefix>-<index>``."""
    body = TEMPLATES[template]
    return [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"{prefix}-{index:06d}", "namespace": namespace, "labels": dict(body["labels"])},
             "spec": body["spec"]} for index in range(count)]


def phases(workload: Workload, case: Case, run: str) -> tuple[list[list[dict]], list[dict]]:
    """(the init phases' pods, the measured pods) of one run; names carry ``run`` so reruns never collide."""
    init = [pod_manifests(template, namespace, f"perf-{run}-init{phase}", case.init)
            for phase, (template, namespace) in enumerate(workload.init)]
    template, namespace = workload.measure
    return init, pod_manifests(template, namespace, f"perf-{run}-measure", case.measure)
