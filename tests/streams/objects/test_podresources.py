"""The effective pod request and limit formulas, with sidecars and overhead (Kubernetes' resourcehelper cases)."""

import pytest

from streams.objects.podresources import ContainerResources, pod_limits, pod_requests


def c(cpu: int, memory: int = 0, sidecar: bool = False) -> ContainerResources:
    resources = {"cpu": cpu, **({"memory": memory} if memory else {})}
    return ContainerResources(requests=resources, limits=resources, sidecar=sidecar)


@pytest.mark.parametrize(
    ("containers", "init_containers", "overhead", "expected"),
    [
        ([c(1000), c(500)], [], {}, {"cpu": 1500}),
        ([c(1000)], [c(3000)], {}, {"cpu": 3000}),
        ([c(1000, 1 << 30)], [c(3000, 1 << 20)], {}, {"cpu": 3000, "memory": 1 << 30}),
        ([c(1000)], [c(500)], {"cpu": 250, "memory": 64}, {"cpu": 1250, "memory": 64}),
        # a sidecar runs beside the app: 1000 + 200
        ([c(1000)], [c(200, sidecar=True)], {}, {"cpu": 1200}),
        # an init container after a sidecar runs beside it: max(1000 + 200, 2000 + 200)
        ([c(1000)], [c(200, sidecar=True), c(2000)], {}, {"cpu": 2200}),
        # an init container before the sidecar does not: max(1000 + 200, 2000)
        ([c(1000)], [c(2000), c(200, sidecar=True)], {}, {"cpu": 2000}),
        ([], [], {}, {}),
    ],
    ids=[
        "sum-of-containers",
        "init-container-larger",
        "max-per-resource",
        "overhead-added",
        "sidecar-added",
        "init-after-sidecar",
        "init-before-sidecar",
        "empty",
    ],
)
def test_pod_requests(containers, init_containers, overhead, expected):
    assert pod_requests(containers, init_containers, overhead) == expected


def test_limits_get_overhead_only_where_a_limit_exists():
    app = ContainerResources(limits={"cpu": 1000})
    assert pod_limits([app], [], {"cpu": 100, "memory": 64}) == {"cpu": 1100}
