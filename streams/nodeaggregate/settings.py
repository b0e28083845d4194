"""The node aggregate's configuration: one frozen object the shells build once and pass in.

The slo-controller-config is not here: it is an input (a ConfigMap event of
the inbox), so it changes with the stream and replays with it. These are the
settings a process starts with; the Faust agent and ``koord replay`` build
them from the environment (``from_environment``), tests and benchmarks
replace single fields with ``dataclasses.replace``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType

from streams import actuation
from streams.nodeqos import registry as qos_registry
from streams.noderesource import registry as resource_registry
from streams.noderesource.plugins import midresource
from streams.noderesource.prediction.profile import PredictionArgs


def _resource_plugins() -> Mapping[str, object]:
    return MappingProxyType(resource_registry.build())


@dataclasses.dataclass(frozen=True)
class NodeAggregateSettings:
    resource_plugins: Mapping[str, object] = dataclasses.field(default_factory=_resource_plugins)
    """The node-resource plugins by name, one for each name of ``noderesource.registry.CALCULATE_ORDER``.
    Default: every registered plugin with Koordinator's default args (``registry.build()``)."""
    qos_strategies: tuple = dataclasses.field(default_factory=qos_registry.build)
    """The node-QoS strategies in the order their plans are merged. Default: every registered strategy with
    its default args, in ``nodeqos.registry.ORDER`` (eviction gates off, as in Koordinator)."""
    prediction: PredictionArgs = PredictionArgs()
    """koordlet's prediction settings the node profile follows. Default: koordlet's ``Config`` defaults.
    A stored profile is trained under these: changing them changes later decisions, not past ones."""
    signing_key: bytes | None = None
    """HMAC key the Actuation records are signed with (``streams.actuation.sign``). Default None: unsigned,
    ``signature`` null. The worker and ``koord replay`` take it from ``KOORD_ACTUATION_KEY``; a replay of
    signed actuations needs the same key to reproduce them."""

    @classmethod
    def from_environment(cls) -> NodeAggregateSettings:
        """The defaults with the signing key of ``KOORD_ACTUATION_KEY`` (``streams.actuation.signing_key``)."""
        return cls(signing_key=actuation.signing_key())

    def validate(self) -> None:
        missing = [name for name in resource_registry.CALCULATE_ORDER if name not in self.resource_plugins]
        if missing:
            raise ValueError(f"node aggregate: node-resource plugins missing: {', '.join(missing)}")
        self.prediction.validate()

    @property
    def predicts_reclaimable(self) -> bool:
        """Whether ProdReclaimable is predicted when a NodeMetric does not report it
        (``MidResourceArgs.predict_unreported_reclaimable``)."""
        return self.resource_plugins[midresource.NAME].args.predict_unreported_reclaimable


DEFAULT_SETTINGS = NodeAggregateSettings()
