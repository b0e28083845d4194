"""Plugin registries: one literal list of ``(name, factory)`` per subsystem, and instances built by name.

The scheduler's plugins, the node-resource plugins and the node-QoS strategies each declare their registry
as one literal list passed to ``make_registry`` (a name registered twice raises at import), and build the
instances a profile or an order names with ``build`` (every unknown and every repeated name is reported at
once, with what is registered). ``what`` names the registered things in the messages: singular for
``make_registry`` ("node-QoS strategy"), plural for ``build`` ("node-QoS strategies").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

Factory = TypeVar("Factory")
Instance = TypeVar("Instance")


def make_registry(entries: Iterable[tuple[str, Factory]], what: str) -> dict[str, Factory]:
    """name -> factory in the order listed; ValueError when a name is listed twice."""
    registry: dict[str, Factory] = {}
    for name, factory in entries:
        if name in registry:
            raise ValueError(f"{what} {name!r} registered twice")
        registry[name] = factory
    return registry


def build(registry: Mapping[str, Callable[..., Instance]], names: Sequence[str], what: str,
          arguments: Mapping[str, Mapping[str, object]] | None = None) -> dict[str, Instance]:
    """name -> ``factory(**arguments[name])`` (no arguments for a name without any), in the order of ``names``;
    KeyError names the unknown or repeated ones."""
    unknown = [name for name in names if name not in registry]
    if unknown:
        raise KeyError(f"unknown {what}: {', '.join(unknown)} (have: {', '.join(sorted(registry))})")
    if len(set(names)) != len(names):
        twice = sorted(name for name in set(names) if names.count(name) > 1)
        raise KeyError(f"{what} listed twice: {', '.join(twice)}")
    arguments = arguments or {}
    return {name: registry[name](**arguments.get(name, {})) for name in names}
