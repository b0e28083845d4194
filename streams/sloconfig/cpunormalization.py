"""``cpu-normalization-config``: ``enable``, ``defaultRatio``, ``ratioModel`` per CPU model, plus ``nodeConfigs``.

The webhook checks no cpu-normalization-config beyond its JSON, so neither do we: a node config
without a valid selector matches no node, and the ratio range [1, 5] is checked per node when the
ratio is calculated (the v1.4 article's model, whose Hyper-Threading-only ratio is 0.82, loads).
A node config is merged over the cluster strategy (``document.overlay``): a ``ratioModel`` entry
replaces the cluster's entry for that CPU model whole, as Go decodes an object into a map.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType

from streams.sloconfig.document import (
    CPU_NORMALIZATION_CONFIG_KEY, MapOf, Section, Struct, decode_bool, decode_float, parse_json, parse_section,
    strategy_decoder)


@dataclasses.dataclass(frozen=True)
class ModelRatio:
    """``ModelRatioCfg``: the ratio of one CPU model per Hyper-Threading / Turbo state."""

    base_ratio: float | None = None
    hyper_thread_enabled_ratio: float | None = None
    turbo_enabled_ratio: float | None = None
    hyper_thread_turbo_enabled_ratio: float | None = None


_MODEL_RATIO_FIELDS = {
    "baseRatio": ("base_ratio", decode_float),
    "hyperThreadEnabledRatio": ("hyper_thread_enabled_ratio", decode_float),
    "turboEnabledRatio": ("turbo_enabled_ratio", decode_float),
    "hyperThreadTurboEnabledRatio": ("hyper_thread_turbo_enabled_ratio", decode_float),
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


_STRATEGY_FIELDS = {
    "enable": ("enable", decode_bool),
    "defaultRatio": ("default_ratio", decode_float),
    "ratioModel": ("ratio_model", MapOf(Struct(_MODEL_RATIO_FIELDS), ModelRatio())),
}


@dataclasses.dataclass(frozen=True)
class CPUNormalizationConfig(Section[CPUNormalizationStrategy]):
    strategy: CPUNormalizationStrategy = CPUNormalizationStrategy()


def parse_cpu_normalization_config(text: str | None) -> CPUNormalizationConfig:
    if text is None:
        return CPUNormalizationConfig()
    section = parse_section(parse_json(text, CPU_NORMALIZATION_CONFIG_KEY), CPU_NORMALIZATION_CONFIG_KEY,
                            CPUNormalizationStrategy(), strategy_decoder(_STRATEGY_FIELDS), cluster=None,
                            nodes="nodeConfigs", strict=False)
    return CPUNormalizationConfig(section.strategy, section.node_configs)
