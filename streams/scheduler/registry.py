"""The scheduler's plugin registry: one literal dict, name -> factory.

Stage order is the profile's order; with the default profile every filter
runs over all nodes (kube-scheduler reports every failing filter per node).
"""

from __future__ import annotations

from typing import Callable

from streams.scheduler.plugins import noderesourcesfit

REGISTRY: dict[str, Callable[[], object]] = {
    noderesourcesfit.NAME: noderesourcesfit.NodeResourcesFit,
}

DEFAULT_PROFILE: tuple[str, ...] = (noderesourcesfit.NAME,)


def build(names: tuple[str, ...] = DEFAULT_PROFILE) -> list[object]:
    unknown = [name for name in names if name not in REGISTRY]
    if unknown:
        raise KeyError(f"unknown scheduler plugins: {', '.join(unknown)} (have: {', '.join(sorted(REGISTRY))})")
    return [REGISTRY[name]() for name in names]
