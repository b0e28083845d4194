"""A synthetic fleet for the embedded default and for benchmarks.

Deterministic for a seed: the same seed gives the same nodes, pods and
lifetimes. Time is simulated in whole seconds; the caller decides how fast
it runs. Nodes come in a few shapes; pods request a fraction of a node and
finish (phase Succeeded) after a random lifetime, so the cluster churns and
some pods wait for room.
"""

from __future__ import annotations

import dataclasses
import random

NODE_SHAPES = ((8, 32), (16, 64), (32, 128))
"""(cores, GiB) of the simulated node types."""
GIB = 1 << 30


@dataclasses.dataclass(frozen=True)
class FleetArgs:
    nodes: int = 5
    pods_per_node: int = 4
    """Steady-state pods per node; the arrival rate is set to keep it."""
    seed: int = 1
    mean_lifetime_s: int = 30
    """Mean pod lifetime in simulated seconds."""


def node_manifest(name: str, cores: int, gib: int) -> dict:
    resources = {"cpu": str(cores), "memory": f"{gib}Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"capacity": resources, "allocatable": resources}}


def pod_manifest(name: str, cpu_milli: int, memory_mi: int, phase: str | None = None) -> dict:
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "sim", "labels": {"app": "sim"}},
           "spec": {"containers": [{"name": "main", "image": "sim",
                                    "resources": {"requests": {"cpu": f"{cpu_milli}m", "memory": f"{memory_mi}Mi"}}}]}}
    if phase:
        pod["status"] = {"phase": phase}
    return pod


class Fleet:
    def __init__(self, args: FleetArgs) -> None:
        self.args = args
        self.random = random.Random(args.seed)
        self.next_pod = 0
        self.ending: dict[int, list[dict]] = {}

    def nodes(self) -> list[dict]:
        return [node_manifest(f"sim-node-{i:03d}", *self.random.choice(NODE_SHAPES)) for i in range(self.args.nodes)]

    def step(self, second: int) -> list[dict]:
        """Manifests to apply at simulated ``second``: new pods and finished ones."""
        rate = self.args.nodes * self.args.pods_per_node / self.args.mean_lifetime_s
        arrivals = int(rate) + (1 if self.random.random() < rate - int(rate) else 0)
        out = self.ending.pop(second, [])
        for _ in range(arrivals):
            name = f"sim-pod-{self.next_pod:06d}"
            self.next_pod += 1
            cpu, memory = self.random.choice((250, 500, 1000, 2000, 4000)), self.random.choice((256, 512, 1024, 4096))
            out.append(pod_manifest(name, cpu, memory))
            lifetime = max(1, int(self.random.expovariate(1 / self.args.mean_lifetime_s)))
            self.ending.setdefault(second + lifetime, []).append(pod_manifest(name, cpu, memory, "Succeeded"))
        return out
