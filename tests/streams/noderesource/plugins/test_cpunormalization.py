"""CPUNormalization, ported from Koordinator's ``cpunormalization/plugin_test.go`` (ids: Go test / case name)."""

from __future__ import annotations

import pytest

from streams.koordinator.annotations import ANNOTATION_CPU_BASIC_INFO, ANNOTATION_CPU_NORMALIZATION_RATIO
from streams.koordinator.labels import LABEL_CPU_NORMALIZATION_ENABLED
from streams.noderesource.framework import PluginError
from streams.noderesource.plugins.cpunormalization import (
    CPUNormalization, CPUNormalizationArgs, normalization_ratio, ratio_from_model,
)
from streams.noderesource.views import CPUBasicInfo, Snapshot
from streams.sloconfig.cpunormalization import CPUNormalizationStrategy, ModelRatio, parse_cpu_normalization_config
from tests.streams.noderesource.support import NOW, S65, node

FULL = ModelRatio(base_ratio=1.5, turbo_enabled_ratio=1.65, hyper_thread_enabled_ratio=1.0,
                  hyper_thread_turbo_enabled_ratio=1.1)
XXX = "CPU XXX"


def info(ht: bool = False, turbo: bool = False, model: str = XXX) -> CPUBasicInfo:
    return CPUBasicInfo(model, ht, turbo)


@pytest.mark.parametrize("basic, ratio_model, expected", [
    pytest.param(info(), None, None, id="Test_getCPUNormalizationRatioFromModel/nil_model"),
    pytest.param(info(), {"CPU YYY": ModelRatio(base_ratio=1.0)}, None,
                 id="Test_getCPUNormalizationRatioFromModel/no_ratio_for_model"),
    pytest.param(info(True, True), {XXX: ModelRatio(base_ratio=1.5)}, None,
                 id="Test_getCPUNormalizationRatioFromModel/missing_ratio_for_Turbo_and_HT_on"),
    pytest.param(info(True, True), {XXX: FULL}, 1.1, id="Test_getCPUNormalizationRatioFromModel/got_ratio_for_Turbo_and_HT_on"),
    pytest.param(info(True, False), {XXX: FULL}, 1.0, id="Test_getCPUNormalizationRatioFromModel/got_ratio_for_HT_on"),
    pytest.param(info(False, True), {XXX: FULL}, 1.65, id="Test_getCPUNormalizationRatioFromModel/got_ratio_for_Turbo_on"),
    pytest.param(info(), {XXX: FULL}, 1.5, id="Test_getCPUNormalizationRatioFromModel/got_ratio_for_basic_setting"),
    pytest.param(info(), {XXX: ModelRatio()}, None, id="Test_getCPUNormalizationRatioFromModel/missing_ratio_for_basic_setting"),
])
def test_ratio_from_model(basic, ratio_model, expected):
    strategy = CPUNormalizationStrategy(enable=True, ratio_model=ratio_model)
    if expected is None:
        with pytest.raises(PluginError):
            ratio_from_model(basic, strategy)
    else:
        assert ratio_from_model(basic, strategy) == expected


@pytest.mark.parametrize("ratio_model, default, expected", [
    pytest.param(None, None, None, id="Test_getCPUNormalizationRatio/nil_model_and_nil_default_ratio"),
    pytest.param(None, 2.5, 2.5, id="Test_getCPUNormalizationRatio/nil_model_and_valid_default_ratio"),
    pytest.param({XXX: ModelRatio(1.9, 1.0, 1.65, 1.1)}, 3.5, 1.9,
                 id="Test_getCPUNormalizationRatio/model_takes_precedence_over_the_default_ratio"),
    pytest.param({XXX: ModelRatio()}, 2.2, 2.2, id="Test_getCPUNormalizationRatio/use_the_default_ratio_with_invalid_model"),
])
def test_normalization_ratio(ratio_model, default, expected):
    strategy = CPUNormalizationStrategy(enable=True, default_ratio=default, ratio_model=ratio_model)
    if expected is None:
        with pytest.raises(PluginError):
            normalization_ratio(info(), strategy)
    else:
        assert normalization_ratio(info(), strategy) == expected


BASIC_HT_TURBO = {ANNOTATION_CPU_BASIC_INFO: '{"cpuModel": "XXX", "hyperThreadEnabled": true, "turboEnabled": true}'}


def config(enable: bool, ht_turbo: float = 1.1, node_configs: list | None = None):
    import json
    raw = {"enable": enable, "ratioModel": {"XXX": {"baseRatio": 1.5, "turboEnabledRatio": 1.65,
                                                      "hyperThreadEnabledRatio": 1.0,
                                                      "hyperThreadTurboEnabledRatio": ht_turbo}}}
    if node_configs:
        raw["nodeConfigs"] = node_configs
    return parse_cpu_normalization_config(json.dumps(raw))


@pytest.mark.parametrize("cfg, labels, annotations, expected", [
    pytest.param(config(True), {}, BASIC_HT_TURBO, "1.10", id="TestPluginCalculate/get_ratio_correctly"),
    pytest.param(config(False, 1.0, [{"nodeSelector": {"matchLabels": {"xxx": "yyy"}}, "enable": True,
                                      "ratioModel": {"XXX": {"baseRatio": 1.5, "turboEnabledRatio": 1.65,
                                                             "hyperThreadEnabledRatio": 1.0,
                                                             "hyperThreadTurboEnabledRatio": 1.1}}}]),
                 {"xxx": "yyy"}, BASIC_HT_TURBO, "1.10", id="TestPluginCalculate/get_ratio_correctly_1"),
    pytest.param(config(False), {LABEL_CPU_NORMALIZATION_ENABLED: "true"}, BASIC_HT_TURBO, "1.10",
                 id="TestPluginCalculate/get_ratio_when_strategy_disable_but_not_enabled"),
    pytest.param(config(True), {LABEL_CPU_NORMALIZATION_ENABLED: "false"}, BASIC_HT_TURBO, "1.00",
                 id="TestPluginCalculate/strategy_enabled_but_node_disabled"),
    pytest.param(config(False), {}, BASIC_HT_TURBO, "1.00", id="TestPluginCalculate/node_strategy_is_disabled"),
    pytest.param(config(True, 10), {}, BASIC_HT_TURBO, None, id="TestPluginCalculate/failed_to_validate_ratio"),
    pytest.param(config(True), {}, {}, None, id="TestPluginCalculate/failed_to_get_CPUBasicInfo"),
    pytest.param(config(True), {}, {ANNOTATION_CPU_BASIC_INFO: "invalidValue"}, None,
                 id="TestPluginCalculate/failed_to_parse_CPUBasicInfo"),
    pytest.param(config(True), {}, {ANNOTATION_CPU_BASIC_INFO: '{"cpuModel": "YYY"}'}, None,
                 id="TestPluginCalculate/failed_to_get_ratio"),
    pytest.param(config(True), {LABEL_CPU_NORMALIZATION_ENABLED: "yes"}, BASIC_HT_TURBO, None,
                 id="TestPluginCalculate/failed_to_get_node_config"),
])
def test_calculate(cfg, labels, annotations, expected):
    node_ = node(labels=labels, annotations=annotations)
    snapshot = Snapshot(S65, cfg.for_node(node_.labels), node_, {}, None, NOW)
    if expected is None:
        with pytest.raises(PluginError):
            CPUNormalization().calculate(snapshot)
    else:
        [item] = CPUNormalization().calculate(snapshot)
        assert dict(item.annotations) == {ANNOTATION_CPU_NORMALIZATION_RATIO: expected}


RATIO_110 = {ANNOTATION_CPU_NORMALIZATION_RATIO: "1.10"}


@pytest.mark.parametrize("old, new, expected", [
    pytest.param({ANNOTATION_CPU_NORMALIZATION_RATIO: "[}"}, RATIO_110, (True, "old ratio parsed error"),
                 id="TestPluginNeedSyncMeta/need_sync_when_failed_to_parse_old_ratio"),
    pytest.param(RATIO_110, {ANNOTATION_CPU_NORMALIZATION_RATIO: "[}"}, (False, "new ratio parsed error"),
                 id="TestPluginNeedSyncMeta/abort_sync_when_failed_to_parse_new_ratio"),
    pytest.param({}, {}, (False, "ratios are nil"), id="TestPluginNeedSyncMeta/no_need_sync_when_both_have_no_ratio"),
    pytest.param({}, RATIO_110, (True, "old ratio is nil"), id="TestPluginNeedSyncMeta/need_sync_when_old_has_no_ratio"),
    pytest.param(RATIO_110, {}, (True, "new ratio is nil"), id="TestPluginNeedSyncMeta/need_sync_when_new_has_no_ratio"),
    pytest.param(RATIO_110, RATIO_110, (False, "ratios are close"),
                 id="TestPluginNeedSyncMeta/skip_sync_when_ratio_is_unchanged"),
    pytest.param(RATIO_110, {ANNOTATION_CPU_NORMALIZATION_RATIO: "1.099999999"}, (False, "ratios are close"),
                 id="TestPluginNeedSyncMeta/skip_sync_when_ratio_are_close"),
    pytest.param(RATIO_110, {ANNOTATION_CPU_NORMALIZATION_RATIO: "1.20"}, (True, "ratio is different"),
                 id="TestPluginNeedSyncMeta/need_sync_when_ratio_is_different"),
])
def test_need_sync_meta(old, new, expected):
    assert CPUNormalization().need_sync_meta(S65, old, new) == expected


def test_args_pin_koordinator_range_and_reject_ratios_below_one():
    assert CPUNormalizationArgs() == CPUNormalizationArgs(min_ratio=1.0, max_ratio=5.0)
    with pytest.raises(ValueError):
        CPUNormalizationArgs(min_ratio=0.5).validate()
