"""MigrationController's args (``MigrationControllerArgs``, descheduler/v1alpha2) with Koordinator's defaults:
maxMigratingPerNode 2, defaultJobMode ReservationFirst, defaultJobTTL 5m, objectLimiters
{workload: {duration 5m}}, arbitration on; maxMigratingGlobally, maxMigratingPerNamespace,
maxMigratingPerWorkload and maxUnavailablePerWorkload unset (no limit; per workload Koordinator's scaled
default, ``limits.max_migrating``). The evictor flags are ``evictor.EvictorArgs``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from streams.descheduler.evictor import EvictorArgs
from streams.objects.duration import parse_duration
from streams.objects.args import ArgsError, ArgsReader

NAME = "MigrationController"
MODE_RESERVATION_FIRST, MODE_EVICT_DIRECTLY = "ReservationFirst", "EvictDirectly"
FIELDS = {"maxConcurrentReconciles", "maxMigratingPerNode", "maxMigratingPerNamespace", "maxMigratingPerWorkload",
          "maxUnavailablePerWorkload", "maxMigratingGlobally", "skipCheckExpectedReplicas", "defaultJobMode",
          "defaultJobTTL", "evictionPolicy", "evictQPS", "evictBurst", "schedulerNames", "objectLimiters",
          "arbitrationArgs", "dryRun", "evictFailedBarePods", "evictAllBarePods", "evictLocalStoragePods",
          "evictSystemCriticalPods", "ignorePvcPods", "priorityThreshold", "labelSelector", "namespaces",
          "nodeFit", "nodeSelector", "skipEvictionGates", "defaultDeleteOptions"}


@dataclasses.dataclass(frozen=True)
class ObjectLimit:
    duration_ms: int
    max_migrating: int | str | None = None
    """None: derived from maxMigratingPerWorkload (workload limiter only)."""
    burst: int = 1


@dataclasses.dataclass(frozen=True)
class MigrationArgs:
    max_migrating_per_node: int | None = 2
    max_migrating_per_namespace: int | None = None
    max_migrating_globally: int | None = None
    max_migrating_per_workload: int | str | None = None
    max_unavailable_per_workload: int | str | None = None
    skip_check_expected_replicas: bool = False
    default_job_mode: str = MODE_RESERVATION_FIRST
    default_job_ttl_ms: int = 300_000
    object_limits: Mapping[str, ObjectLimit] = dataclasses.field(
        default_factory=lambda: {"workload": ObjectLimit(300_000)})
    """Token buckets per workload ("workload") or namespace ("namespace")."""
    include_namespaces: tuple[str, ...] = ()
    exclude_namespaces: tuple[str, ...] = ()
    dry_run: bool = False
    evictor: EvictorArgs = EvictorArgs()

    @classmethod
    def from_config(cls, raw: Mapping | None) -> "MigrationArgs":
        reader = ArgsReader(NAME, raw, FIELDS)
        data = reader.raw
        mode = reader.string("defaultJobMode", MODE_RESERVATION_FIRST)
        if mode not in (MODE_RESERVATION_FIRST, MODE_EVICT_DIRECTLY):
            raise reader.fail("defaultJobMode", f"must be {MODE_RESERVATION_FIRST} or {MODE_EVICT_DIRECTLY}")
        limits = {}
        raw_limits = data.get("objectLimiters")
        if raw_limits is None:
            limits = {"workload": ObjectLimit(300_000)}
        else:
            for kind, value in sorted(dict(raw_limits).items()):
                if kind not in ("workload", "namespace"):
                    raise reader.fail("objectLimiters", f"unknown limiter type {kind!r}")
                value = dict(value or {})
                duration = parse_duration(value["duration"]) if value.get("duration") else 0
                limits[kind] = ObjectLimit(duration, value.get("maxMigrating"), int(value.get("burst") or 1))
        namespaces = dict(data.get("namespaces") or {})
        include, exclude = tuple(namespaces.get("include") or ()), tuple(namespaces.get("exclude") or ())
        if include and exclude:
            raise reader.fail("namespaces", "only one of Include/Exclude namespaces can be set")
        ttl = data.get("defaultJobTTL")
        try:
            ttl_ms = parse_duration(ttl) if ttl is not None else 300_000
        except ValueError as error:
            raise ArgsError(f"{NAME}: defaultJobTTL: {error}") from None
        return cls(
            reader.integer("maxMigratingPerNode", 2), reader.integer("maxMigratingPerNamespace", None),
            reader.integer("maxMigratingGlobally", None), data.get("maxMigratingPerWorkload"),
            data.get("maxUnavailablePerWorkload"), reader.boolean("skipCheckExpectedReplicas", False), mode, ttl_ms,
            limits, include, exclude, reader.boolean("dryRun", False),
            EvictorArgs(reader.boolean("evictAllBarePods", False), reader.boolean("evictFailedBarePods", False),
                        reader.boolean("evictLocalStoragePods", False),
                        reader.boolean("evictSystemCriticalPods", False), reader.boolean("ignorePvcPods", False)))
