"""The ``slo-controller-config`` ConfigMap as a document: its keys, the JSON decoding every section
shares (Go's ``encoding/json`` rules for the field types), the merge rule and the ``nodeConfigs`` /
``nodeStrategies`` lists of node selectors.

Merging follows Koordinator (``util.MergeCfg`` is a JSON overlay: a field given in the newer
document replaces the older one, objects are merged field by field; a null or absent field does
not replace). Validation follows the ConfigMap webhook: ``ConfigError`` carries the reason and
the caller keeps the previous config.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from streams.sloconfig.selectors import LabelSelector, parse_selector

CONFIG_NAMESPACE = "koordinator-system"
CONFIG_NAME = "slo-controller-config"

COLOCATION_CONFIG_KEY = "colocation-config"
CPU_NORMALIZATION_CONFIG_KEY = "cpu-normalization-config"
RESOURCE_THRESHOLD_CONFIG_KEY = "resource-threshold-config"
RESOURCE_QOS_CONFIG_KEY = "resource-qos-config"
SYSTEM_CONFIG_KEY = "system-config"
CPU_BURST_CONFIG_KEY = "cpu-burst-config"
HOST_APPLICATION_CONFIG_KEY = "host-application-config"
RESOURCE_AMPLIFICATION_CONFIG_KEY = "resource-amplification-config"
OTHER_JSON_KEYS = (CPU_BURST_CONFIG_KEY, HOST_APPLICATION_CONFIG_KEY, RESOURCE_AMPLIFICATION_CONFIG_KEY)
"""Further keys Koordinator reads; kept as parsed JSON (the node-QoS sections decode the first two)."""


class ConfigError(ValueError):
    """An slo-controller-config that Koordinator's webhook would reject; the reason is the message."""


_INT64 = (-(2**63), 2**63 - 1)
_DURATION = re.compile(r"^([0-9]*(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$|^0$")


def decode_value(value: object, kind: object, where: str) -> object:
    """One JSON value decoded into a Go field type; ValueError when ``encoding/json`` would fail."""
    if kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"{where}: expected a boolean, got {json.dumps(value)}")
        return value
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int) or not _INT64[0] <= value <= _INT64[1]:
            raise ValueError(f"{where}: expected an integer, got {json.dumps(value)}")
        return value
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{where}: expected a number, got {json.dumps(value)}")
        return float(value)
    if kind is str:
        if not isinstance(value, str):
            raise ValueError(f"{where}: expected a string, got {json.dumps(value)}")
        return value
    if kind == "durations":
        if not isinstance(value, dict):
            raise ValueError(f"{where}: expected an object")
        durations = value.get("durations")
        if durations is None:
            return ()
        if not isinstance(durations, list) or not all(isinstance(d, str) and _DURATION.match(d) for d in durations):
            raise ValueError(f"{where}.durations: expected a list of durations such as \"5m0s\"")
        return tuple(durations)
    raise AssertionError(kind)


def parse_json(text: str, key: str) -> object:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{key}: not valid JSON: {exc}") from None


def node_profiles(raw: object, key: str, strict: bool) -> list[tuple[str, LabelSelector, dict]]:
    """``nodeConfigs`` entries as (name, selector, raw entry).

    ``strict`` applies the checks of Koordinator's ConfigMap webhook (it has them for colocation-config
    only): a selector must be present, non-empty and valid, and no two selectors may overlap. Otherwise a
    missing or invalid selector is kept and matches no node, as the controller treats it.
    """
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ConfigError(f"{key}: nodeConfigs must be a list")
    profiles = []
    for index, entry in enumerate(raw):
        where = f"{key}: nodeConfigs[{index}]"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where} must be an object")
        name = entry.get("name") or ""
        if not isinstance(name, str):
            raise ConfigError(f"{where}.name must be a string")
        raw_selector = entry.get("nodeSelector")
        if raw_selector is None:
            if strict:
                raise ConfigError(f"{where} ({name or 'unnamed'}): nodeSelector must not be empty")
            profiles.append((name, LabelSelector(error="no nodeSelector"), entry))
            continue
        try:
            selector = parse_selector(raw_selector, f"{where}.nodeSelector")
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        if strict and selector.empty:
            raise ConfigError(f"{where} ({name or 'unnamed'}): nodeSelector must not be empty")
        if strict and selector.error is not None:
            raise ConfigError(selector.error)
        profiles.append((name, selector, entry))
    if strict:
        for node in (node for _, selector, _ in profiles for node in selector.virtual_nodes()):
            matching = [name or f"nodeConfigs[{i}]" for i, (name, selector, _) in enumerate(profiles)
                        if selector.matches(node)]
            if len(matching) > 1:
                raise ConfigError(f"{key}: node selectors overlap: {', '.join(matching)} all match labels "
                                  f"{json.dumps(node, sort_keys=True)}")
    return profiles
