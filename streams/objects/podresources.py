"""Effective pod requests and limits, as Kubernetes computes them (``resourcehelper.PodRequests``/``PodLimits``).

Per resource, with sidecars (init containers with ``restartPolicy: Always``)
running beside everything that starts after them::

    requests = max(sum(containers) + sum(sidecars),
                   max over init container i of (i + sum(sidecars started before i)))
               + overhead

where a sidecar's own term counts itself and the sidecars before it. Limits
use the same formula, but overhead is added only to resources that have a
limit. Before that, as the API server defaults a pod, a container's limit
stands in for a request it does not state.

Pod-level ``spec.resources`` (an alpha Kubernetes feature) is not read.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from streams.objects.fields import FieldReader, child, item

SIDECAR_RESTART_POLICY = "Always"


@dataclass(frozen=True)
class ContainerResources:
    """One container's requests and limits in canonical integers."""

    requests: Mapping[str, int] = field(default_factory=dict)
    limits: Mapping[str, int] = field(default_factory=dict)
    sidecar: bool = False
    """An init container with ``restartPolicy: Always``: it keeps running beside the app containers."""


def pod_requests(
    containers: Iterable[ContainerResources],
    init_containers: Iterable[ContainerResources],
    overhead: Mapping[str, int],
) -> dict[str, int]:
    """The pod's effective request per resource."""
    total = _aggregate(containers, init_containers, lambda c: c.requests)
    return _add(total, overhead)


def pod_limits(
    containers: Iterable[ContainerResources],
    init_containers: Iterable[ContainerResources],
    overhead: Mapping[str, int],
) -> dict[str, int]:
    """The pod's effective limit per resource; overhead only where a limit exists."""
    total = _aggregate(containers, init_containers, lambda c: c.limits)
    return {name: value + overhead.get(name, 0) for name, value in total.items()}


def read_pod_resources(reader: FieldReader, spec: dict, path: str) -> tuple[dict[str, int], dict[str, int]]:
    """Effective (requests, limits) of the pod spec at ``path``; problems go to ``reader``."""
    containers = _read_containers(reader, spec.get("containers"), child(path, "containers"), init=False)
    init_containers = _read_containers(reader, spec.get("initContainers"), child(path, "initContainers"), init=True)
    overhead = reader.resources(spec.get("overhead"), child(path, "overhead"))
    return pod_requests(containers, init_containers, overhead), pod_limits(containers, init_containers, overhead)


def _read_containers(reader: FieldReader, value: object, path: str, *, init: bool) -> list[ContainerResources]:
    result = []
    for index, raw in enumerate(reader.sequence(value, path)):
        container_path = item(path, index)
        container = reader.mapping(raw, container_path)
        resources_path = child(container_path, "resources")
        resources = reader.mapping(container.get("resources"), resources_path)
        requests = reader.resources(resources.get("requests"), child(resources_path, "requests"))
        limits = reader.resources(resources.get("limits"), child(resources_path, "limits"))
        for name, limit in limits.items():
            requests.setdefault(name, limit)
            if requests[name] > limit:
                reader.fail(
                    child(child(resources_path, "requests"), name), f"must be less than or equal to {name} limit"
                )
        restart_policy = container.get("restartPolicy") if init else None
        if init and restart_policy not in (None, SIDECAR_RESTART_POLICY):
            reader.enum(restart_policy, child(container_path, "restartPolicy"), (SIDECAR_RESTART_POLICY,))
        result.append(ContainerResources(requests, limits, sidecar=restart_policy == SIDECAR_RESTART_POLICY))
    return result


def _aggregate(containers, init_containers, select) -> dict[str, int]:
    total: dict[str, int] = {}
    for container in containers:
        total = _add(total, select(container))
    running_sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for container in init_containers:
        if container.sidecar:
            total = _add(total, select(container))
            running_sidecars = _add(running_sidecars, select(container))
            term = running_sidecars
        else:
            term = _add(select(container), running_sidecars)
        init_peak = _max(init_peak, term)
    return _max(total, init_peak)


def _add(left: Mapping[str, int], right: Mapping[str, int]) -> dict[str, int]:
    result = dict(left)
    for name, value in right.items():
        result[name] = result.get(name, 0) + value
    return result


def _max(left: Mapping[str, int], right: Mapping[str, int]) -> dict[str, int]:
    result = dict(left)
    for name, value in right.items():
        result[name] = max(result.get(name, value), value)
    return result
