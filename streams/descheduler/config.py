"""The DeschedulerConfiguration document (descheduler/v1alpha2) as the scheduling domain applies it.

Read: ``deschedulingInterval`` (a Go duration; a round runs when that much event time has passed since the
last one — Koordinator's koord-descheduler with no interval runs once and exits, which has no meaning on a
stream, so unset means ``DEFAULT_INTERVAL_MS``), ``dryRun``, ``nodeSelector``, v1.6's
``maxNoOfPodsToEvictPerNode`` / ``PerNamespace`` / ``Total``, and the profiles: a profile that enables
``LowNodeLoad`` in ``plugins.balance`` runs it with its ``pluginConfig`` args; ``MigrationController``
(the evictor every profile has by default, as in Koordinator) takes its args from the first profile
that configures it. Unknown balance or deschedule plugins are refused: koordstream has only LowNodeLoad.
"""

from __future__ import annotations

import dataclasses
import json

from streams.descheduler.limiter import EvictionLimiter
from streams.descheduler.lownodeload.args import NAME as LOW_NODE_LOAD
from streams.descheduler.lownodeload.args import LowNodeLoadArgs
from streams.descheduler.migration.args import NAME as MIGRATION_CONTROLLER
from streams.descheduler.migration.args import MigrationArgs
from streams.objects.duration import parse_duration
from streams.objects.args import ArgsError
from streams.sloconfig.selectors import LabelSelector, parse_selector

DEFAULT_INTERVAL_MS = 60_000
KNOWN = {LOW_NODE_LOAD, MIGRATION_CONTROLLER, "DefaultEvictor"}


class DeschedulerConfigError(ValueError):
    """A DeschedulerConfiguration the domain cannot apply; the message names the field."""


@dataclasses.dataclass(frozen=True)
class DeschedulerConfig:
    interval_ms: int = DEFAULT_INTERVAL_MS
    dry_run: bool = False
    node_selector: LabelSelector | None = None
    max_per_node: int | None = None
    max_per_namespace: int | None = None
    max_total: int | None = None
    balance: tuple[tuple[str, LowNodeLoadArgs], ...] = ()
    """(profile name, LowNodeLoad args) per profile that enables it."""
    migration: MigrationArgs = MigrationArgs()

    def limiter(self) -> EvictionLimiter:
        """A fresh limiter for one round (the counters reset each round)."""
        return EvictionLimiter(self.max_per_node, self.max_per_namespace, self.max_total)


def _limit(document: dict, field: str) -> int | None:
    value = document.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DeschedulerConfigError(f"{field}: must be a non-negative integer, got {value!r}")
    return value


def _enabled(plugins: dict, point: str) -> list[str]:
    names = []
    for entry in (plugins.get(point) or {}).get("enabled") or []:
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str):
            raise DeschedulerConfigError(f"plugins.{point}.enabled: each entry needs a name")
        names.append(name)
    return names


def parse(manifest: str) -> DeschedulerConfig:
    document = json.loads(manifest)
    if document.get("kind", "DeschedulerConfiguration") != "DeschedulerConfiguration":
        raise DeschedulerConfigError(f"kind must be DeschedulerConfiguration, got {document.get('kind')!r}")
    interval = document.get("deschedulingInterval")
    try:
        interval_ms = parse_duration(interval) if interval else DEFAULT_INTERVAL_MS
    except ValueError as error:
        raise DeschedulerConfigError(f"deschedulingInterval: {error}") from None
    if interval_ms <= 0:
        interval_ms = DEFAULT_INTERVAL_MS
    try:
        selector = parse_selector(document["nodeSelector"], "nodeSelector") if document.get("nodeSelector") else None
    except ValueError as error:
        raise DeschedulerConfigError(str(error)) from None
    balance, migration = [], None
    for index, profile in enumerate(document.get("profiles") or [{}]):
        name = profile.get("name") or "koord-descheduler"
        plugins = profile.get("plugins") or {}
        args = {entry.get("name"): entry.get("args") for entry in profile.get("pluginConfig") or []
                if isinstance(entry, dict)}
        for point in ("balance", "deschedule"):
            for plugin in _enabled(plugins, point):
                if plugin not in KNOWN:
                    raise DeschedulerConfigError(
                        f"profiles[{index}].plugins.{point}: plugin {plugin!r} does not exist "
                        f"(koordstream has: {LOW_NODE_LOAD})")
        try:
            if LOW_NODE_LOAD in _enabled(plugins, "balance"):
                balance.append((name, LowNodeLoadArgs.from_config(args.get(LOW_NODE_LOAD))))
            if migration is None and MIGRATION_CONTROLLER in args:
                migration = MigrationArgs.from_config(args[MIGRATION_CONTROLLER])
        except ArgsError as error:
            raise DeschedulerConfigError(f"profiles[{index}]: {error}") from None
    return DeschedulerConfig(interval_ms, bool(document.get("dryRun", False)), selector,
                             _limit(document, "maxNoOfPodsToEvictPerNode"),
                             _limit(document, "maxNoOfPodsToEvictPerNamespace"),
                             _limit(document, "maxNoOfPodsToEvictTotal"), tuple(balance),
                             migration or MigrationArgs())
