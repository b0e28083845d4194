"""The ``slo-controller-config`` ConfigMap as a document: its keys, Go's JSON decoding, the one merge
rule (``overlay``) and the sections it builds (``Section``: a cluster strategy and ``nodeConfigs``).

Koordinator merges every strategy with ``util.MergeCfg``: the newer strategy is encoded with
``json.Marshal`` and decoded with ``json.Unmarshal`` into a copy of the older one. So the rule is
Go's ``encoding/json`` on the typed fields:

- a field absent or null keeps the older value (nil pointers are omitted when encoded), and so does
  an empty string in a string field that is not a pointer (``omitempty``);
- a scalar replaces the older value;
- an object given for a struct merges into it field by field;
- an object given for a map keeps the older keys and replaces the entry of each key it names (the
  entry is decoded into a fresh zero value, not merged);
- a list replaces the older list, except an empty one, which ``omitempty`` drops.

A value of the wrong JSON type fails as ``json.Unmarshal`` fails; ``ConfigError`` carries the reason
(``cannot unmarshal string into Go value of type bool``) and the caller keeps the previous config,
as the ConfigMap webhook rejects the ConfigMap.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Generic, TypeVar

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


OMITTED = object()
"""What a decoder returns for a value that ``omitempty`` drops: the older value stays."""

Decoder = Callable[[object, str], object]
"""A JSON value and where it stands -> the field's value, or ``OMITTED``; ConfigError when Go would fail."""


def _json_kind(value: object, numeric: bool = False) -> str:
    """The JSON kind as Go's ``UnmarshalTypeError`` names it (with the literal of a number into a number)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return f"number {json.dumps(value)}" if numeric else "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), "null")


def type_error(value: object, go_type: str, where: str) -> ConfigError:
    return ConfigError(f"{where}: cannot unmarshal {_json_kind(value, go_type in ('int64', 'float64'))} "
                       f"into Go value of type {go_type}")


def decode_bool(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise type_error(value, "bool", where)
    return value


_INT64 = (-(2**63), 2**63 - 1)


def decode_int(value: object, where: str) -> int:
    """An ``int64``: an integer literal within range (``60.5`` and ``1e3`` fail, as in Go)."""
    if isinstance(value, bool) or not isinstance(value, int) or not _INT64[0] <= value <= _INT64[1]:
        raise type_error(value, "int64", where)
    return value


def decode_float(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise type_error(value, "float64", where)
    return float(value)


def decode_string(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise type_error(value, "string", where)
    return value


def decode_omitempty_string(value: object, where: str) -> object:
    """A string field that is not a pointer (``Policy string `json:",omitempty"```): ``""`` is dropped."""
    return decode_string(value, where) or OMITTED


def decode_int_or_string(value: object, where: str) -> int | str:
    """``intstr.IntOrString``: an integer or a string."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise type_error(value, "intstr.IntOrString", where)
    return value


_DURATION = re.compile(r"^([0-9]*(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$|^0$")


def decode_durations(value: object, where: str) -> object:
    """``AggregatePolicy{Durations []metav1.Duration `json:"durations,omitempty"`}`` held as its durations:
    null or empty durations are dropped (``{}`` keeps the older windows)."""
    policy = require_object(value, where)
    durations = policy.get("durations")
    if durations is None:
        return OMITTED
    if not isinstance(durations, list) or not all(isinstance(d, str) and _DURATION.match(d) for d in durations):
        raise ConfigError(f"{where}.durations: expected a list of durations such as \"5m0s\"")
    return tuple(durations) or OMITTED


def require_object(value: object, where: str) -> dict:
    if not isinstance(value, dict):
        raise type_error(value, "struct", where)
    return value


@dataclasses.dataclass(frozen=True)
class Struct:
    """A nested Go struct: the JSON object given for it is merged into the older value field by field."""

    fields: Fields


@dataclasses.dataclass(frozen=True)
class MapOf:
    """``map[string]Struct``: each key given gets ``zero`` overlaid by its JSON; other keys stay."""

    value: Struct
    zero: object


Fields = Mapping[str, tuple[str, Decoder | Struct | MapOf]]
"""JSON name -> (attribute, how the value decodes) of one Go struct."""

T = TypeVar("T")


def overlay(base: T, raw: object, fields: Fields, where: str) -> T:
    """``util.MergeCfg(base, raw)``: the JSON object ``raw`` decoded into a copy of the frozen ``base``."""
    if raw is None:
        return base
    raw = require_object(raw, where)
    changes = {}
    for name, (attribute, kind) in fields.items():
        value = raw.get(name)
        if value is None:
            continue
        at = f"{where}.{name}"
        if isinstance(kind, Struct):
            changes[attribute] = overlay(getattr(base, attribute), value, kind.fields, at)
        elif isinstance(kind, MapOf):
            entries = {key: overlay(kind.zero, entry, kind.value.fields, f"{at}[{key!r}]")
                       for key, entry in require_object(value, at).items()}
            if entries:
                changes[attribute] = MappingProxyType({**getattr(base, attribute), **entries})
        elif (decoded := kind(value, at)) is not OMITTED:
            changes[attribute] = decoded
    return dataclasses.replace(base, **changes) if changes else base


def strategy_decoder(fields: Fields) -> Callable[[T, object, str], T]:
    """``overlay`` with ``fields``, then the strategy's own ``validate(where)`` when its type has one."""
    def decode(base: T, raw: object, where: str) -> T:
        strategy = overlay(base, raw, fields, where)
        if hasattr(strategy, "validate"):
            strategy.validate(where)
        return strategy
    return decode


def parse_json(text: str, key: str) -> object:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{key}: not valid JSON: {exc}") from None


@dataclasses.dataclass(frozen=True)
class NodeConfig(Generic[T]):
    """One ``nodeConfigs`` (or ``nodeStrategies``) entry: its strategy is already merged over the cluster's."""

    name: str
    selector: LabelSelector
    strategy: T


@dataclasses.dataclass(frozen=True)
class Section(Generic[T]):
    """One key of the ConfigMap: the cluster strategy (merged over Koordinator's defaults) and the node configs."""

    strategy: T
    node_configs: tuple[NodeConfig[T], ...] = ()

    def for_node(self, labels: Mapping[str, str]) -> T:
        """The strategy of the first node config whose selector matches ``labels``, else the cluster's."""
        for node_config in self.node_configs:
            if node_config.selector.matches(labels):
                return node_config.strategy
        return self.strategy


def parse_section(raw: object, key: str, default: T, decode: Callable[[T, object, str], T], *,
                  cluster: str | None, nodes: str, strict: bool) -> Section[T]:
    """A key's section: ``decode(default, cluster strategy)``, then ``decode(cluster, entry)`` per node config.

    ``cluster`` names the field holding the cluster strategy (``clusterStrategy``), None when its fields
    stand inline in the object; ``nodes`` names the list (``nodeConfigs`` / ``nodeStrategies``), whose
    entries carry ``name`` and ``nodeSelector`` inline. ``decode`` validates what it returns.
    """
    if raw is None:
        return Section(default)
    if not isinstance(raw, dict):
        raise ConfigError(f"{key}: must be a JSON object")
    where = key if cluster is None else f"{key}.{cluster}"
    strategy = decode(default, raw if cluster is None else raw.get(cluster), where)
    node_configs = tuple(NodeConfig(name, selector, decode(strategy, entry, f"{key}.{nodes}[{index}]"))
                         for index, (name, selector, entry) in enumerate(node_profiles(raw.get(nodes), key, nodes,
                                                                                       strict)))
    return Section(strategy, node_configs)


def node_profiles(raw: object, key: str, nodes: str, strict: bool) -> list[tuple[str, LabelSelector, dict]]:
    """The entries of the ``nodes`` list as (name, selector, raw entry).

    ``strict`` applies the checks of Koordinator's ConfigMap webhook (it has them for colocation-config
    only): a selector must be present, non-empty and valid, and no two selectors may overlap. Otherwise a
    missing or invalid selector is kept and matches no node, as the controller treats it.
    """
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ConfigError(f"{key}: {nodes} must be a list")
    profiles = []
    for index, entry in enumerate(raw):
        where = f"{key}: {nodes}[{index}]"
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
            matching = [name or f"{nodes}[{i}]" for i, (name, selector, _) in enumerate(profiles)
                        if selector.matches(node)]
            if len(matching) > 1:
                raise ConfigError(f"{key}: node selectors overlap: {', '.join(matching)} all match labels "
                                  f"{json.dumps(node, sort_keys=True)}")
    return profiles
