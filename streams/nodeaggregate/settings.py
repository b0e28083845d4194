"""The node aggregate's configuration: one frozen object the shells build once and pass in.

The slo-controller-config is not here: it is an input (a ConfigMap event of
the inbox), so it changes with the stream and replays with it; the per-class
``enable`` switches of its ``resource-threshold-config`` and
``resource-qos-config`` stay there. These are the settings a process starts
with, koordlet's process-level feature gates (``--feature-gates``) among them;
the Faust agent and ``koord replay`` build them from the environment
(``from_environment``), tests and benchmarks replace single fields with
``dataclasses.replace``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType

from streams import actuation
from streams.nodeqos import registry as qos_registry
from streams.nodeqos.plugins import cgroupidle, cpuburst, cpuset, cpusuppress, hostapps, netqos, resctrl
from streams.noderesource import registry as resource_registry
from streams.noderesource.plugins import midresource
from streams.noderesource.prediction.profile import PredictionArgs
from streams.settings import Settings, from_env, load_env


@dataclasses.dataclass(frozen=True)
class FeatureGate:
    strategy: str
    """The node-QoS strategy the gate switches (its ``enabled``)."""
    default: bool
    """On or off unless ``KOORD_FEATURE_GATES`` names the gate."""
    koordlet_default: bool | None
    """koordlet's default for its gate of this name (``pkg/features/koordlet_features.go``,
    ``pkg/koordlet/runtimehooks/config.go``); None: koordlet has no gate of this name."""


FEATURE_GATES: Mapping[str, FeatureGate] = MappingProxyType({
    "BECPUSuppress": FeatureGate(cpusuppress.NAME, True, True),
    "CPUSetAllocator": FeatureGate(cpuset.NAME, True, True),
    "CPUBurst": FeatureGate(cpuburst.NAME, True, True),
    "GroupIdentity": FeatureGate(cgroupidle.NAME, True, True),
    "RdtResctrl": FeatureGate(resctrl.NAME, True, True),
    "NetQoS": FeatureGate(netqos.NAME, True, None),
    "HostApps": FeatureGate(hostapps.NAME, True, None),
})
"""Gate name -> the strategy it switches, as koordlet's ``--feature-gates``. A gate off: its strategy plans
nothing, except CPUSuppress, which still recovers what it suppressed. Where a gate covers more than koordlet's:

- ``GroupIdentity`` also switches cgroup idle and core scheduling (the same strategy), which koordlet gates
  with ``CoreSched`` (off there); here ``resource-qos-config``'s ``cpuPolicy`` picks between them.
- ``RdtResctrl`` also switches the per-pod groups of the ``node.koordinator.sh/resctrl`` annotation,
  koordlet's ``Resctrl`` runtime hook (off there).
- ``NetQoS`` stands for koordlet's ``TerwayQoS`` and ``TCNetworkQoS`` hooks (both off there); here it is on,
  and ``netQOSPolicy`` with each class's ``networkQOS.enable`` decide.
- ``HostApps``: koordlet has no gate of its own, each of its hooks applies the host applications.

MemoryEvict and CPUEvict are not gated: koordlet's ``BEMemoryEvict`` and ``BECPUEvict`` (off there) are taken
as on, so ``resource-threshold-config`` alone decides, and its ``enable`` is false by default."""


def parse_feature_gates(text: str) -> Mapping[str, bool]:
    """``Name=true,Name=false`` (koordlet's ``--feature-gates`` form) over the defaults of ``FEATURE_GATES``."""
    gates = {name: gate.default for name, gate in FEATURE_GATES.items()}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, value = (side.strip() for side in item.partition("="))
        if name not in FEATURE_GATES:
            raise ValueError(f"unknown feature gate {name!r} (have: {', '.join(FEATURE_GATES)})")
        if value.lower() not in ("true", "false"):
            raise ValueError(f"feature gate {name} must be true or false, not {value!r}")
        gates[name] = value.lower() == "true"
    return MappingProxyType(gates)


def _resource_plugins() -> Mapping[str, object]:
    return MappingProxyType(resource_registry.build())


@dataclasses.dataclass(frozen=True)
class NodeAggregateSettings:
    resource_plugins: Mapping[str, object] = dataclasses.field(default_factory=_resource_plugins)
    """The node-resource plugins by name, one for each name of ``noderesource.registry.CALCULATE_ORDER``.
    Default: every registered plugin with Koordinator's default args (``registry.build()``)."""
    feature_gates: Mapping[str, bool] = dataclasses.field(
        default_factory=lambda: parse_feature_gates(""),
        metadata=from_env("KOORD_FEATURE_GATES", parse=parse_feature_gates))
    """``KOORD_FEATURE_GATES``: gate name -> on, in koordlet's ``--feature-gates`` form
    (``BECPUSuppress=false,CPUBurst=true``); a gate not named keeps its default (``FEATURE_GATES``)."""
    prediction: PredictionArgs = PredictionArgs()
    """koordlet's prediction settings the node profile follows. Default: koordlet's ``Config`` defaults.
    A stored profile is trained under these: changing them changes later decisions, not past ones."""
    signing_key: bytes | None = dataclasses.field(default=None, repr=False)
    """HMAC key the Actuation records are signed with (``streams.actuation.sign``). Default None: unsigned,
    ``signature`` null. The worker and ``koord replay`` take it from ``KOORD_ACTUATION_KEY``
    (``Settings.actuation_key``); a replay of signed actuations needs the same key to reproduce them."""
    qos_strategies: tuple = dataclasses.field(init=False)
    """The node-QoS strategies in the order their plans are merged: every registered strategy with its default
    args, in ``nodeqos.registry.ORDER``, each gated by ``feature_gates``."""

    def __post_init__(self) -> None:
        unknown = sorted(set(self.feature_gates) - set(FEATURE_GATES))
        if unknown:
            raise ValueError(f"node aggregate: unknown feature gates: {', '.join(unknown)}")
        gates = MappingProxyType({name: self.feature_gates.get(name, gate.default)
                                  for name, gate in FEATURE_GATES.items()})
        object.__setattr__(self, "feature_gates", gates)
        enabled = {FEATURE_GATES[name].strategy: on for name, on in gates.items()}
        object.__setattr__(self, "qos_strategies", qos_registry.build(enabled=enabled))

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> NodeAggregateSettings:
        """The defaults with the feature gates of ``KOORD_FEATURE_GATES`` and the signing key of
        ``KOORD_ACTUATION_KEY`` (``streams.actuation.signing_key``)."""
        return load_env(cls, env, signing_key=actuation.signing_key(Settings.from_env(env)))

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
