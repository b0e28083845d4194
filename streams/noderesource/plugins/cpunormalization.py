"""CPUNormalization: the ``node.koordinator.sh/cpu-normalization-ratio`` annotation of a node.

Koordinator's ``plugins/cpunormalization``::

    enabled = node label node.koordinator.sh/cpu-normalization-enabled if set, else strategy.enable
    not enabled                -> ratio "1.00"
    model   = strategy.ratioModel[cpuBasicInfo.cpuModel]
    ratio   = model.hyperThreadTurboEnabledRatio  if HT and Turbo are on
              model.hyperThreadEnabledRatio       if only HT is on
              model.turboEnabledRatio             if only Turbo is on
              model.baseRatio                     otherwise
              strategy.defaultRatio               when the model or that field is missing
    valid when 1.0 <= ratio <= 5.0; written with two decimals ("1.20")

The strategy is the first matching ``nodeConfigs`` entry of
cpu-normalization-config, else the cluster one. The CPU basic info is the
node's ``node.koordinator.sh/cpu-basic-info`` JSON annotation (Koordinator
reads it from the NodeResourceTopology the node agent writes; a Node applied
by hand carries it as a Node annotation). A missing or unparsable basic info,
no applicable ratio or a ratio out of range is a calculation error: the
annotation stays as it was. Prepare runs first (Koordinator: "should be
first") so that BatchResource amplifies batch-cpu with the new ratio; the
node's cpu allocatable is amplified by the ratio too (Koordinator's resource
amplification webhook), mid-cpu is not. The node's metadata is updated when
the ratio moves by more than 0.01 or appears/disappears.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from streams.koordinator.annotations import ANNOTATION_CPU_NORMALIZATION_RATIO
from streams.noderesource.framework import NodeResource, NodeStatus, PluginError, ResourceItem
from streams.noderesource.quantities import format_ratio
from streams.noderesource.views import CPUBasicInfo, Snapshot
from streams.sloconfig.colocation import ColocationStrategy
from streams.sloconfig.cpunormalization import CPUNormalizationStrategy

NAME = "CPUNormalization"
DEFAULT_RATIO_TEXT = "1.00"
RATIO_DIFF_EPSILON = 0.01
"""``extension.NormalizationRatioDiffEpsilon``."""


@dataclasses.dataclass(frozen=True)
class CPUNormalizationArgs:
    min_ratio: float = 1.0
    """``defaultMinRatio``: Koordinator does not support ratios below 1."""
    max_ratio: float = 5.0
    """``defaultMaxRatio``: guards against an unexpected amplification."""

    def validate(self) -> None:
        if not 1.0 <= self.min_ratio <= self.max_ratio:
            raise ValueError(f"{NAME}: need 1.0 <= min_ratio <= max_ratio, got {self.min_ratio}, {self.max_ratio}")


def ratio_from_model(info: CPUBasicInfo, strategy: CPUNormalizationStrategy) -> float:
    """``getCPUNormalizationRatioFromModel``; PluginError when the model has no ratio for the node."""
    if strategy.ratio_model is None:
        raise PluginError("ratio model is nil")
    model = strategy.ratio_model.get(info.cpu_model)
    if model is None:
        raise PluginError(f"no ratio for CPU {info.cpu_model}")
    if info.hyper_thread_enabled and info.turbo_enabled:
        ratio, field = model.hyper_thread_turbo_enabled_ratio, "HyperThreadTurboEnabledRatio"
    elif info.hyper_thread_enabled:
        ratio, field = model.hyper_thread_enabled_ratio, "HyperThreadEnabledRatio"
    elif info.turbo_enabled:
        ratio, field = model.turbo_enabled_ratio, "TurboEnabledRatio"
    else:
        ratio, field = model.base_ratio, "BaseRatio"
    if ratio is None:
        raise PluginError(f"missing {field} for CPU {info.cpu_model}")
    return ratio


def normalization_ratio(info: CPUBasicInfo, strategy: CPUNormalizationStrategy) -> float:
    """``getCPUNormalizationRatio``: the model's ratio, else the default ratio."""
    try:
        return ratio_from_model(info, strategy)
    except PluginError as err:
        if strategy.default_ratio is not None:
            return strategy.default_ratio
        raise PluginError(f"failed to get cpu normalization ratio from model, err: {err}") from None


def parse_ratio(annotations: Mapping[str, str]) -> tuple[float, str | None]:
    """``GetCPUNormalizationRatio``: (-1, None) when absent, (-1, error) when unparsable or not positive."""
    text = annotations.get(ANNOTATION_CPU_NORMALIZATION_RATIO)
    if text is None:
        return -1.0, None
    try:
        value = float(text)
    except ValueError:
        return -1.0, f"parse cpu normalization ratio failed: {text!r}"
    if not value > 0:
        return -1.0, f"illegal cpu normalization ratio: {text}"
    return value, None


def is_ratio_different(old: float, new: float) -> bool:
    return old > new + RATIO_DIFF_EPSILON or old < new - RATIO_DIFF_EPSILON


class CPUNormalization:
    name = NAME

    def __init__(self, args: CPUNormalizationArgs = CPUNormalizationArgs()) -> None:
        args.validate()
        self.args = args

    def calculate(self, snapshot: Snapshot) -> list[ResourceItem]:
        node, strategy = snapshot.node, snapshot.cpu_normalization
        if node.cpu_normalization_enabled_error is not None:
            raise PluginError(f"failed to get node label in cpu normalization calculation, err: "
                              f"{node.cpu_normalization_enabled_error}")
        enabled = node.cpu_normalization_enabled
        if enabled is None:
            enabled = bool(strategy.enable)
        if not enabled:
            return [ResourceItem(NAME, annotations={ANNOTATION_CPU_NORMALIZATION_RATIO: DEFAULT_RATIO_TEXT})]
        if node.cpu_basic_info_error is not None:
            raise PluginError(f"failed to parse CPUBasicInfo in cpu normalization calculation, err: "
                              f"{node.cpu_basic_info_error}")
        if node.cpu_basic_info is None:
            raise PluginError("failed to get CPUBasicInfo in cpu normalization calculation, err: info is missing")
        try:
            ratio = normalization_ratio(node.cpu_basic_info, strategy)
        except PluginError as err:
            raise PluginError(f"failed to get ratio in cpu normalization calculation, err: {err}") from None
        if ratio < self.args.min_ratio:
            raise PluginError(f"failed to validate ratio in cpu normalization calculation, ratio {ratio}, err: "
                              f"the ratio is too small, cur[{ratio}] < min[{self.args.min_ratio}]")
        if ratio > self.args.max_ratio:
            raise PluginError(f"failed to validate ratio in cpu normalization calculation, ratio {ratio}, err: "
                              f"the ratio is too big, cur[{ratio}] > max[{self.args.max_ratio}]")
        return [ResourceItem(NAME, annotations={ANNOTATION_CPU_NORMALIZATION_RATIO: format_ratio(ratio)})]

    def reset(self, message: str) -> list[ResourceItem]:
        """Koordinator keeps the annotation when co-location is disabled."""
        return []

    def prepare(self, strategy: ColocationStrategy, status: NodeStatus, result: NodeResource) -> None:
        text = result.annotations.get(ANNOTATION_CPU_NORMALIZATION_RATIO)
        if text is not None:
            status.annotations[ANNOTATION_CPU_NORMALIZATION_RATIO] = text

    def need_sync_meta(self, strategy: ColocationStrategy, old_annotations: Mapping[str, str],
                       new_annotations: Mapping[str, str]) -> tuple[bool, str]:
        old, old_error = parse_ratio(old_annotations)
        if old_error is not None:
            return True, "old ratio parsed error"
        new, new_error = parse_ratio(new_annotations)
        if new_error is not None:
            return False, "new ratio parsed error"
        if new == -1 and old == -1:
            return False, "ratios are nil"
        if old == -1:
            return True, "old ratio is nil"
        if new == -1:
            return True, "new ratio is nil"
        if not is_ratio_different(old, new):
            return False, "ratios are close"
        return True, "ratio is different"
