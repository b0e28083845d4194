"""Node-resource framework: the extension points of one node calculation and what they exchange.

Shaped after Koordinator's ``pkg/slo-controller/noderesource/framework``. One
calculation (``reconcile.reconcile``) runs the stages in this order:

1. **Calculate** (``CalculatePlugin.calculate``) — each plugin turns a frozen
   ``views.Snapshot`` (strategy, node, NUMA zones, pods, last NodeMetric,
   time) into ``ResourceItem`` values (per-zone values in ``zone_quantity``);
   a plugin that raises ``PluginError`` contributes nothing (Koordinator logs
   and skips it). When co-location is disabled for the node, **Reset**
   (``CalculatePlugin.reset``) replaces Calculate.
2. **PreUpdate** (``PreUpdatePlugin.pre_update``) — turns the per-zone values
   into the ``ZoneResources`` to publish, compared with the last published
   ones (Koordinator writes them into the NodeResourceTopology object here).
3. **Prepare** (``PreparePlugin.prepare``) — each plugin writes its results
   into the draft ``NodeStatus`` (capacity, allocatable, annotations).
4. **NodeStatusCheck** (``NodeStatusCheckPlugin.need_sync``) and
   **NodeMetaCheck** (``NodeMetaCheckPlugin.need_sync_meta``) — compare the
   draft with what was last published and say whether the node must be
   updated.

No plugin logic lives here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Protocol, runtime_checkable

from streams.sloconfig.colocation import ColocationStrategy

ZoneResources = Mapping[str, Mapping[str, int]]
"""NUMA zone name -> resource name -> quantity: the batch resources of the node's NodeResourceTopology zones."""


@dataclasses.dataclass(frozen=True, slots=True)
class ResourceItem:
    """``framework.ResourceItem``: one plugin result for one resource (or annotation set)."""

    name: str
    quantity: int | None = None
    """Canonical integer (milli-cores for the ``*-cpu`` extended resources, bytes for memory)."""
    zone_quantity: Mapping[str, int] | None = None
    """NUMA zone name -> quantity, when calculated per zone."""
    annotations: Mapping[str, str] | None = None
    labels: Mapping[str, str] | None = None
    """Node labels the plugin sets (the GPU vendor, model and driver version of the node's Device)."""
    message_source: str | Callable[[], str] = ""
    """How the quantity was calculated, in Koordinator's words; a callable formats it on demand
    (most calculations are not published, so their messages are never formatted)."""
    reset: bool = False
    """Remove the resource from the node."""

    @property
    def message(self) -> str:
        source = self.message_source
        return source() if callable(source) else source


class NodeResource:
    """``framework.NodeResource``: the merged items of all plugins for one node."""

    __slots__ = ("resources", "resets", "zone_resources", "annotations", "labels", "messages")

    def __init__(self, resources: dict[str, int | None] | None = None, resets: dict[str, bool] | None = None,
                 annotations: dict[str, str] | None = None) -> None:
        self.resources = resources if resources is not None else {}
        self.resets = resets if resets is not None else {}
        self.zone_resources: dict[str, dict[str, int]] = {}
        self.annotations = annotations if annotations is not None else {}
        self.labels: dict[str, str] = {}
        self.messages: dict[str, str | Callable[[], str]] = {}
        """Message source per resource name (see ``ResourceItem.message_source``)."""

    def set(self, items: list[ResourceItem]) -> None:
        for item in items:
            name = item.name
            self.resources[name] = item.quantity
            self.resets[name] = item.reset
            if item.zone_quantity:
                for zone, quantity in item.zone_quantity.items():
                    self.zone_resources.setdefault(zone, {})[name] = quantity
            if item.annotations:
                self.annotations.update(item.annotations)
            if item.labels:
                self.labels.update(item.labels)
            if item.message_source:
                self.messages[name] = item.message_source

    def message(self, name: str) -> str:
        source = self.messages.get(name, "")
        return source() if callable(source) else source


@dataclasses.dataclass
class NodeStatus:
    """The node as it will be published: the draft the Prepare stage edits.

    ``node`` is the ``views.NodeView`` being prepared (Prepare plugins read its annotations).
    """

    node: object
    capacity: dict[str, int]
    allocatable: dict[str, int]
    annotations: dict[str, str]
    labels: dict[str, str] = dataclasses.field(default_factory=dict)
    """Node labels the plugins set (only those; the node's other labels are not the calculation's)."""


class PluginError(Exception):
    """A plugin could not calculate; the message says why. Its items are left out of the result."""


@runtime_checkable
class CalculatePlugin(Protocol):
    name: str

    def calculate(self, snapshot) -> list[ResourceItem]:
        """Items for the node in ``snapshot`` (a ``views.Snapshot``); raises PluginError."""
        ...

    def reset(self, message: str) -> list[ResourceItem]:
        """Items that remove what this plugin publishes, each carrying ``message``."""
        ...


@runtime_checkable
class PreUpdatePlugin(Protocol):
    name: str

    def pre_update(self, strategy: ColocationStrategy, zones, published: ZoneResources,
                   result: NodeResource) -> tuple[dict[str, dict[str, int]], tuple[bool, str]] | None:
        """The zone resources to publish for the node's zones (``views.Zone``) and whether they need a sync;
        None when the result holds no per-zone values (the published ones stay)."""
        ...


@runtime_checkable
class PreparePlugin(Protocol):
    name: str

    def prepare(self, strategy: ColocationStrategy, status: NodeStatus, result: NodeResource) -> None: ...


@runtime_checkable
class NodeStatusCheckPlugin(Protocol):
    name: str

    def need_sync(self, strategy: ColocationStrategy, old_allocatable: Mapping[str, int],
                  new_allocatable: Mapping[str, int]) -> tuple[bool, str]: ...


@runtime_checkable
class NodeMetaCheckPlugin(Protocol):
    name: str

    def need_sync_meta(self, strategy: ColocationStrategy, old_annotations: Mapping[str, str],
                       new_annotations: Mapping[str, str]) -> tuple[bool, str]: ...
