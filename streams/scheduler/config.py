"""KubeSchedulerConfiguration: profiles, plugins per extension point, score weights, plugin args.

The document (``kubescheduler.config.k8s.io/v1``) arrives as the manifest of a
KubeSchedulerConfiguration record and applies from its position in the inbox. Each
profile's ``plugins`` are merged into the default profile (``registry.DEFAULT_PLUGINS``)
the way kube-scheduler merges custom plugins into its defaults (``mergePluginSet``)::

    disabled "*"       -> none of the defaults of that extension point
    disabled <name>    -> that default removed
    enabled <default>  -> the default re-configured in place (e.g. a new score weight)
    enabled <other>    -> appended, in the order given
    multiPoint         -> enabled at every extension point the plugin implements, unless
                          disabled there or configured there explicitly; multiPoint.disabled
                          applies to the defaults of every point

A score weight of 0 (or none) is 1, as in kube-scheduler. ``pluginConfig`` gives each
plugin's args (Koordinator's field names), read strictly. The extension points kube-scheduler
has and the core does not model (queueSort, preScore, bind, postBind) are accepted
and ignored; so are the top-level fields that are about the process (leaderElection,
clientConnection, parallelism). ``podInitialBackoffSeconds`` / ``podMaxBackoffSeconds`` set the queue's
backoff; ``percentageOfNodesToScore`` (top level, and per profile where a profile sets it) how many
feasible nodes a cycle looks for (``cycle.nodes_to_find``), 0 meaning kube-scheduler's adaptive default.

A pod goes to the profile whose ``schedulerName`` it names; a pod naming no profile uses the
first profile (koordstream is the cluster's only scheduler, so kube-scheduler's "not my pod"
would leave it pending forever).

Anything wrong raises ``ConfigError`` with the reason; the domain then keeps its previous
configuration.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

from streams.objects.args import ArgsError
from streams.scheduler.framework import EXTENSION_POINTS
from streams.scheduler.registry import DEFAULT_PLUGINS, DEFAULT_SCHEDULER_NAME, REGISTRY

API_VERSIONS = ("kubescheduler.config.k8s.io/v1", "kubescheduler.config.k8s.io/v1beta3")
IGNORED_POINTS = ("queueSort", "preScore", "bind", "postBind")
TOP_LEVEL = {"apiVersion", "kind", "metadata", "profiles", "extenders", "parallelism", "leaderElection",
             "clientConnection", "healthzBindAddress", "metricsBindAddress", "enableProfiling",
             "enableContentionProfiling", "debuggingConfiguration", "percentageOfNodesToScore",
             "podInitialBackoffSeconds", "podMaxBackoffSeconds", "delayCacheUntilActive"}
PROFILE_FIELDS = {"schedulerName", "plugins", "pluginConfig", "percentageOfNodesToScore"}
DEFAULT_INITIAL_BACKOFF_S = 1
DEFAULT_MAX_BACKOFF_S = 10


class ConfigError(ValueError):
    """A KubeSchedulerConfiguration the domain cannot apply; the message says why."""


@dataclasses.dataclass(frozen=True)
class ProfileConfig:
    scheduler_name: str
    points: Mapping[str, tuple[str, ...]]
    """Plugin names per extension point, in call order."""
    weights: Mapping[str, int]
    """Score weight per score plugin."""
    args: Mapping[str, object]
    """Args per plugin (every plugin the profile uses)."""
    percentage_of_nodes_to_score: int = 0
    """The profile's ``percentageOfNodesToScore``, else the top-level one; 0 = adaptive."""


@dataclasses.dataclass(frozen=True)
class SchedulerConfig:
    profiles: tuple[ProfileConfig, ...]
    initial_backoff_ms: int = DEFAULT_INITIAL_BACKOFF_S * 1000
    max_backoff_ms: int = DEFAULT_MAX_BACKOFF_S * 1000

    def profile_for(self, scheduler_name: str) -> ProfileConfig:
        for profile in self.profiles:
            if profile.scheduler_name == scheduler_name:
                return profile
        return self.profiles[0]


def implements(plugin: str, point: str) -> bool:
    return isinstance(REGISTRY[plugin], type) and all(
        hasattr(REGISTRY[plugin], method) for method in _METHODS[point])


_METHODS = {
    "preEnqueue": ("pre_enqueue",), "preFilter": ("pre_filter",), "filter": ("filter",),
    "postFilter": ("post_filter",), "score": ("score",), "reserve": ("reserve", "unreserve"),
    "permit": ("permit",), "preBind": ("pre_bind",),
}


def _profile(scheduler_name: str, custom_plugins: Mapping, plugin_config: Mapping[str, Mapping],
             percentage: int = 0) -> ProfileConfig:
    where = f'profile "{scheduler_name}"'
    unknown_points = sorted(set(custom_plugins) - set(EXTENSION_POINTS) - set(IGNORED_POINTS) - {"multiPoint"})
    if unknown_points:
        raise ConfigError(f"{where}: plugins: unknown extension point {unknown_points[0]!r}")
    multi = _plugin_set(where, "multiPoint", custom_plugins.get("multiPoint"))
    points: dict[str, tuple[str, ...]] = {}
    weights: dict[str, int] = {}
    for point in EXTENSION_POINTS:
        enabled, disabled = _plugin_set(where, point, custom_plugins.get(point))
        disabled = disabled | multi[1]
        merged: list[tuple[str, int]] = []
        custom = {name: weight for name, weight in enabled}
        replaced = set()
        if "*" not in disabled:
            for name, weight in DEFAULT_PLUGINS[point]:
                if name in disabled:
                    continue
                if name in custom:
                    weight = custom[name]
                    replaced.add(name)
                merged.append((name, weight))
        for name, weight in enabled:
            if name not in replaced:
                merged.append((name, weight))
        for name, weight in multi[0]:
            if name in disabled or "*" in disabled or any(n == name for n, _ in merged):
                continue
            if name in REGISTRY and implements(name, point):
                merged.append((name, weight))
        seen = set()
        for name, weight in merged:
            if name not in REGISTRY:
                raise ConfigError(f"{where}: plugin {name!r} does not exist "
                                  f"(koordstream has: {', '.join(sorted(REGISTRY))})")
            if not implements(name, point):
                raise ConfigError(f"{where}: plugin {name!r} does not extend {point} plugin")
            if name in seen:
                raise ConfigError(f"{where}: plugin {name!r} already registered as {point!r}")
            seen.add(name)
            if point == "score":
                if weight < 0:
                    raise ConfigError(f"{where}: score plugin {name!r} weight must be positive, got {weight}")
                weights[name] = weight or 1
        points[point] = tuple(name for name, _ in merged)
    used = sorted({name for names in points.values() for name in names})
    args = {}
    for name in used:
        try:
            args[name] = REGISTRY[name].Args.from_config(plugin_config.get(name))
        except ArgsError as err:
            raise ConfigError(f"{where}: pluginConfig: {err}") from None
    return ProfileConfig(scheduler_name, points, weights, args, percentage)


def _percentage(path: str, value) -> int:
    """kube-scheduler's ``validatePercentageOfNodesToScore``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{path} must be an integer, got {value!r}")
    if not 0 <= value <= 100:
        raise ConfigError(f"{path}: Invalid value: {value}: not in valid range [0-100]")
    return value


def _plugin_set(where: str, point: str, raw) -> tuple[list[tuple[str, int]], set[str]]:
    if raw is None:
        return [], set()
    if not isinstance(raw, dict) or set(raw) - {"enabled", "disabled"}:
        raise ConfigError(f"{where}: plugins.{point} must have only enabled and disabled lists")
    enabled = []
    for item in raw.get("enabled") or ():
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or set(item) - {"name", "weight"}:
            raise ConfigError(f"{where}: plugins.{point}.enabled: each entry is {{name, weight}}, got {item!r}")
        weight = item.get("weight", 0)
        if isinstance(weight, bool) or not isinstance(weight, int):
            raise ConfigError(f"{where}: plugins.{point}.enabled[{item['name']}].weight must be an integer")
        enabled.append((item["name"], weight))
    disabled = set()
    for item in raw.get("disabled") or ():
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise ConfigError(f"{where}: plugins.{point}.disabled: each entry is {{name}}, got {item!r}")
        disabled.add(item["name"])
    return enabled, disabled


def default_config() -> SchedulerConfig:
    return SchedulerConfig((_profile(DEFAULT_SCHEDULER_NAME, {}, {}),))


def parse(document: Mapping) -> SchedulerConfig:
    """The configuration of a KubeSchedulerConfiguration document; ConfigError names the problem."""
    if not isinstance(document, dict):
        raise ConfigError("the document must be an object")
    if document.get("kind", "KubeSchedulerConfiguration") != "KubeSchedulerConfiguration":
        raise ConfigError(f"kind must be KubeSchedulerConfiguration, got {document.get('kind')!r}")
    if document.get("apiVersion", API_VERSIONS[0]) not in API_VERSIONS:
        raise ConfigError(f"apiVersion must be one of {', '.join(API_VERSIONS)}, got {document.get('apiVersion')!r}")
    unknown = sorted(set(document) - TOP_LEVEL)
    if unknown:
        raise ConfigError(f'strict decoding error: unknown field "{unknown[0]}"')
    if document.get("extenders"):
        raise ConfigError("extenders are not supported")
    raw_profiles = document.get("profiles") or [{}]
    if not isinstance(raw_profiles, list):
        raise ConfigError("profiles must be a list")
    top = document.get("percentageOfNodesToScore")
    percentage = 0 if top is None else _percentage("percentageOfNodesToScore", top)
    profiles = []
    names = set()
    for index, raw in enumerate(raw_profiles):
        if not isinstance(raw, dict):
            raise ConfigError(f"profiles[{index}] must be an object")
        extra = sorted(set(raw) - PROFILE_FIELDS)
        if extra:
            raise ConfigError(f'profiles[{index}]: strict decoding error: unknown field "{extra[0]}"')
        name = raw.get("schedulerName") or DEFAULT_SCHEDULER_NAME
        if name in names:
            raise ConfigError(f'profiles[{index}]: duplicate profile with scheduler name "{name}"')
        names.add(name)
        plugin_config: dict[str, Mapping] = {}
        for entry in raw.get("pluginConfig") or ():
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                raise ConfigError(f'profile "{name}": pluginConfig entries need a name, got {entry!r}')
            if entry["name"] in plugin_config:
                raise ConfigError(f'profile "{name}": pluginConfig: repeated config for plugin {entry["name"]!r}')
            args = entry.get("args") or {}
            if not isinstance(args, dict):
                raise ConfigError(f'profile "{name}": pluginConfig[{entry["name"]}].args must be an object')
            plugin_config[entry["name"]] = args
        plugins = raw.get("plugins") or {}
        if not isinstance(plugins, dict):
            raise ConfigError(f'profile "{name}": plugins must be an object')
        own = raw.get("percentageOfNodesToScore")
        profiles.append(_profile(name, plugins, plugin_config, percentage if own is None else
                                 _percentage(f"profiles[{index}].percentageOfNodesToScore", own)))
    initial = document.get("podInitialBackoffSeconds", DEFAULT_INITIAL_BACKOFF_S)
    maximum = document.get("podMaxBackoffSeconds", DEFAULT_MAX_BACKOFF_S)
    for field, value in (("podInitialBackoffSeconds", initial), ("podMaxBackoffSeconds", maximum)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ConfigError(f"{field} must be a positive integer, got {value!r}")
    if maximum < initial:
        raise ConfigError("podMaxBackoffSeconds must be greater than or equal to podInitialBackoffSeconds")
    return SchedulerConfig(tuple(profiles), initial * 1000, maximum * 1000)


def parse_manifest(manifest: str) -> SchedulerConfig:
    try:
        document = json.loads(manifest)
    except ValueError as err:
        raise ConfigError(f"the manifest is not JSON: {err}") from None
    return parse(document)
