"""The ``slo-controller-config`` ConfigMap parsed into its typed sections, once (``parse_slo_config``).

Data keys (``apis/configuration/slo_controller_config.go``): ``colocation-config``
(``colocation``), ``cpu-normalization-config`` (``cpunormalization``), and the node-QoS keys
``resource-threshold-config``, ``resource-qos-config``, ``cpu-burst-config``, ``system-config``,
``host-application-config`` (``nodeqos``); ``resource-amplification-config`` is kept as parsed
JSON. Any invalid section rejects the whole ConfigMap with ``ConfigError`` (the webhook's rule),
so the caller keeps the previous ``SloConfig``. Unknown fields are ignored, as Go's JSON decoder
ignores them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType

from streams.sloconfig.colocation import ColocationConfig, parse_colocation_config
from streams.sloconfig.cpunormalization import CPUNormalizationConfig, parse_cpu_normalization_config
from streams.sloconfig.document import (
    COLOCATION_CONFIG_KEY, CONFIG_NAME, CONFIG_NAMESPACE, CPU_NORMALIZATION_CONFIG_KEY, OTHER_JSON_KEYS,
    RESOURCE_QOS_CONFIG_KEY, RESOURCE_THRESHOLD_CONFIG_KEY, SYSTEM_CONFIG_KEY, parse_json)
from streams.sloconfig.nodeqos import NodeQoSConfig, parse_qos_config


@dataclasses.dataclass(frozen=True)
class SloConfig:
    colocation: ColocationConfig = ColocationConfig()
    cpu_normalization: CPUNormalizationConfig = CPUNormalizationConfig()
    qos: NodeQoSConfig = NodeQoSConfig()
    """Thresholds, resource QoS, CPU burst, system and host applications, per node."""
    extra: Mapping[str, object] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    """Parsed JSON of the keys in ``OTHER_JSON_KEYS`` that are present."""


DEFAULT_CONFIG = SloConfig()
"""What Koordinator runs with when the ConfigMap is absent: co-location and CPU normalization disabled."""

_QOS_KEYS = (RESOURCE_THRESHOLD_CONFIG_KEY, RESOURCE_QOS_CONFIG_KEY, SYSTEM_CONFIG_KEY)


def parse_slo_config(configmap_record: dict | None, previous: SloConfig) -> SloConfig:
    """The SloConfig a ConfigMap record sets; ``previous`` when the record is another ConfigMap.

    A deleted slo-controller-config (``None``) gives ``DEFAULT_CONFIG``, as Koordinator falls back to its
    defaults. Raises ConfigError (the caller keeps ``previous``) for a config the webhook would reject.
    """
    if configmap_record is None:
        return DEFAULT_CONFIG
    metadata = configmap_record.get("metadata") or {}
    if metadata.get("name") != CONFIG_NAME or (metadata.get("namespace") or "") != CONFIG_NAMESPACE:
        return previous
    data = configmap_record.get("data") or {}
    extra = {key: parse_json(data[key], key) for key in OTHER_JSON_KEYS if key in data}
    colocation = parse_colocation_config(data.get(COLOCATION_CONFIG_KEY))
    cpu_normalization = parse_cpu_normalization_config(data.get(CPU_NORMALIZATION_CONFIG_KEY))
    sections = {key: parse_json(data[key], key) for key in _QOS_KEYS if key in data}
    return SloConfig(colocation, cpu_normalization, parse_qos_config({**sections, **extra}), MappingProxyType(extra))
