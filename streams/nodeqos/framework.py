"""Node-QoS framework: the strategy protocol and what a plan is made of.

Shaped after koordlet's ``pkg/koordlet/qosmanager/framework``: each strategy
(CPU suppress, CPU burst, cgroup idle / group identity, resctrl, network QoS,
host applications, memory and CPU eviction) looks at one frozen ``Snapshot``
of the node and returns a ``Plan``: the settings koordlet would write
(``Setting``: one target, one mechanism, its values) and the pods it would
evict (``Eviction``). Strategies never write anything and never read a
clock; ``planner.plan`` merges their settings in registry order and turns the
ones that changed into Actuation records. No strategy logic lives here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from streams import actuation
from streams.noderesource.views import MetricView, NodeView, PodView
from streams.sloconfig.nodeqos import NodeQoSStrategy

TargetKey = tuple[str, str, str]
"""(targetKind, targetId, mechanism): what an actuation addresses (``streams.actuation``)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything one plan reads; units milli-cores and bytes."""

    node: NodeView
    pods: Mapping[str, PodView]
    """Pods bound to the node by ``namespace/name``."""
    metric: MetricView | None
    """The last NodeMetric; None: none yet (or deleted)."""
    strategy: NodeQoSStrategy
    now_ms: int
    previous: Mapping[TargetKey, Mapping[str, str]] = dataclasses.field(default_factory=dict)
    """Values last emitted per target: what koordlet would read back from the cgroup it wrote."""
    last_eviction_ms: Mapping[str, int] = dataclasses.field(default_factory=dict)
    """Strategy name -> event time of its last eviction (cool-downs); absent: never evicted."""
    evicted: frozenset[str] = frozenset()
    """Pods evicted already and not yet released; never picked again."""
    metric_is_new: bool = False
    """The plan runs for ``metric`` just received: per-report samples in it (throttled ratios) are acted on
    once, here, and not again when the node is planned for another reason."""


@dataclasses.dataclass(frozen=True, slots=True)
class Setting:
    target_kind: str
    target_id: str
    mechanism: str
    values: Mapping[str, str]
    """Setting name (``streams.actuation``) -> decimal string."""

    @property
    def key(self) -> TargetKey:
        return self.target_kind, self.target_id, self.mechanism


@dataclasses.dataclass(frozen=True, slots=True)
class Eviction:
    pod_key: str
    """``namespace/name``."""
    uid: str | None
    reason: str
    message: str


@dataclasses.dataclass(frozen=True, slots=True)
class Plan:
    settings: tuple[Setting, ...] = ()
    evictions: tuple[Eviction, ...] = ()
    start_cool_down: bool = False
    """Start the strategy's eviction cool-down now if it never started (koordlet's evictors count it from
    their creation, so nothing is evicted right after start)."""


NOTHING = Plan()


@runtime_checkable
class Strategy(Protocol):
    """One node-QoS strategy: ``NAME`` at module level, a pure ``plan``, and frozen ``args`` with ``validate()``
    when it has knobs of its own. A strategy koordlet runs behind a process-level feature gate takes it as
    ``enabled`` (constructor keyword; the gates are ``streams.nodeaggregate.settings.FEATURE_GATES``)."""

    name: str

    def plan(self, snapshot: Snapshot) -> Plan:
        ...


# The setting names strategies emit beyond ``streams.actuation``'s import lists: defined once, in the contract.
CORE_SCHED_GROUP = actuation.CORE_SCHED_GROUP
CORE_SCHED_NONE = actuation.CORE_SCHED_NONE
NET_PRIORITY = actuation.NET_PRIORITY
NET_INGRESS_LIMIT = actuation.NET_INGRESS_LIMIT
NET_EGRESS_LIMIT = actuation.NET_EGRESS_LIMIT
REQUEST_BPS = actuation.REQUEST_BPS_SUFFIX
LIMIT_BPS = actuation.LIMIT_BPS_SUFFIX
