"""``cpu-normalization-config``: ``enable``, ``defaultRatio``, ``ratioModel`` per CPU model, plus ``nodeConfigs``.

The webhook checks no cpu-normalization-config beyond its JSON, so neither do we: a node config
without a valid selector matches no node, and the ratio range [1, 5] is checked per node when the
ratio is calculated (the v1.4 article's model, whose Hyper-Threading-only ratio is 0.82, loads).
A node config is merged over the cluster strategy; ``ratioModel`` entries are merged per CPU model
(an entry replaces the cluster's entry for that model, as Go decodes into a map).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType

from streams.sloconfig.document import (
    CPU_NORMALIZATION_CONFIG_KEY, ConfigError, decode_value, node_profiles, parse_json)
from streams.sloconfig.selectors import LabelSelector


@dataclasses.dataclass(frozen=True)
class ModelRatio:
    """``ModelRatioCfg``: the ratio of one CPU model per Hyper-Threading / Turbo state."""

    base_ratio: float | None = None
    hyper_thread_enabled_ratio: float | None = None
    turbo_enabled_ratio: float | None = None
    hyper_thread_turbo_enabled_ratio: float | None = None


_MODEL_RATIO_JSON = {
    "baseRatio": "base_ratio",
    "hyperThreadEnabledRatio": "hyper_thread_enabled_ratio",
    "turboEnabledRatio": "turbo_enabled_ratio",
    "hyperThreadTurboEnabledRatio": "hyper_thread_turbo_enabled_ratio",
}


@dataclasses.dataclass(frozen=True)
class CPUNormalizationStrategy:
    """``CPUNormalizationStrategy``; defaults are ``DefaultCPUNormalizationCfg()`` (disabled, no model)."""

    enable: bool | None = False
    """Normalize cpu on the node; the node label ``node.koordinator.sh/cpu-normalization-enabled`` wins."""
    default_ratio: float | None = None
    """Ratio for CPU models (or HT/Turbo states) the model does not list; None: such nodes get no ratio."""
    ratio_model: Mapping[str, ModelRatio] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    """CPU model name (``cpuModel`` of the node's CPU basic info) -> ratios."""

    def merged(self, overlay: Mapping[str, object]) -> CPUNormalizationStrategy:
        """``util.MergeCfg``: set fields replace ours; ``ratioModel`` entries are merged per CPU model."""
        if not overlay:
            return self
        changes = dict(overlay)
        if "ratio_model" in changes:
            changes["ratio_model"] = MappingProxyType({**self.ratio_model, **changes["ratio_model"]})
        return dataclasses.replace(self, **changes)


def _decode_cpu_normalization_overlay(raw: Mapping[str, object], where: str) -> dict[str, object]:
    overlay: dict[str, object] = {}
    if raw.get("enable") is not None:
        overlay["enable"] = decode_value(raw["enable"], bool, f"{where}.enable")
    if raw.get("defaultRatio") is not None:
        overlay["default_ratio"] = decode_value(raw["defaultRatio"], float, f"{where}.defaultRatio")
    model = raw.get("ratioModel")
    if model is not None:
        if not isinstance(model, dict):
            raise ValueError(f"{where}.ratioModel: expected an object")
        ratios = {}
        for cpu_model, entry in model.items():
            if not isinstance(entry, dict):
                raise ValueError(f"{where}.ratioModel[{cpu_model!r}]: expected an object")
            fields = {attribute: decode_value(entry[name], float, f"{where}.ratioModel[{cpu_model!r}].{name}")
                      for name, attribute in _MODEL_RATIO_JSON.items() if entry.get(name) is not None}
            ratios[cpu_model] = ModelRatio(**fields)
        overlay["ratio_model"] = ratios
    return overlay


@dataclasses.dataclass(frozen=True)
class NodeCPUNormalizationConfig:
    name: str
    selector: LabelSelector
    strategy: CPUNormalizationStrategy
    """Already merged over the cluster strategy."""


@dataclasses.dataclass(frozen=True)
class CPUNormalizationConfig:
    strategy: CPUNormalizationStrategy = CPUNormalizationStrategy()
    node_configs: tuple[NodeCPUNormalizationConfig, ...] = ()

    def for_node(self, labels: Mapping[str, str]) -> CPUNormalizationStrategy:
        """``configHandler.GetStrategyCopy``: the first matching node config, else the cluster strategy."""
        for node_config in self.node_configs:
            if node_config.selector.matches(labels):
                return node_config.strategy
        return self.strategy


def parse_cpu_normalization_config(text: str | None) -> CPUNormalizationConfig:
    if text is None:
        return CPUNormalizationConfig()
    raw = parse_json(text, CPU_NORMALIZATION_CONFIG_KEY)
    if not isinstance(raw, dict):
        raise ConfigError(f"{CPU_NORMALIZATION_CONFIG_KEY}: must be a JSON object")
    try:
        cluster = CPUNormalizationStrategy().merged(
            _decode_cpu_normalization_overlay(raw, CPU_NORMALIZATION_CONFIG_KEY))
        node_configs = []
        for index, (name, selector, entry) in enumerate(node_profiles(raw.get("nodeConfigs"),
                                                                       CPU_NORMALIZATION_CONFIG_KEY, strict=False)):
            overlay = _decode_cpu_normalization_overlay(entry, f"{CPU_NORMALIZATION_CONFIG_KEY}: nodeConfigs[{index}]")
            node_configs.append(NodeCPUNormalizationConfig(name, selector, cluster.merged(overlay)))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return CPUNormalizationConfig(cluster, tuple(node_configs))
