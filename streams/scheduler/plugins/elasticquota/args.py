"""ElasticQuota's args (``ElasticQuotaArgs``); the defaults are Koordinator's."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from streams.objects.args import ArgsError, ArgsReader

NAME = "ElasticQuota"
HUGE = (2**63 - 1) // 5
"""Koordinator's default and system quota max is MaxInt64/5 (cpu in cores); here in canonical units."""


@dataclasses.dataclass(frozen=True)
class ElasticQuotaArgs:
    """Defaults are Koordinator's (``SetDefaults_ElasticQuotaArgs``)."""

    default_quota_group_max: Mapping[str, int] = dataclasses.field(
        default_factory=lambda: {"cpu": HUGE, "memory": HUGE})
    """``defaultQuotaGroupMax``: max of koordinator-default-quota (MaxInt64/5; cpu capped to fit milli-cores)."""
    system_quota_group_max: Mapping[str, int] = dataclasses.field(
        default_factory=lambda: {"cpu": HUGE, "memory": HUGE})
    """``systemQuotaGroupMax``: max of koordinator-system-quota."""
    quota_group_namespace: str = "koordinator-system"
    """``quotaGroupNamespace``: namespace of the built-in quotas."""
    enable_check_parent_quota: bool = False
    """``enableCheckParentQuota``: also check every ancestor's runtime in PreFilter."""
    enable_runtime_quota: bool = True
    """``enableRuntimeQuota``: check against the runtime quota (false: against max)."""
    enable_min_quota_scale: bool = True
    """``enableMinQuotaScale``: scale children's mins down when they exceed the parent's total."""
    disable_default_quota_preemption: bool = True
    """``disableDefaultQuotaPreemption``: pods of the default quota are never victims."""
    monitor_all_quotas: bool = False
    """``monitorAllQuotas``: accepted; the over-use revoke controller is not implemented."""
    delay_evict_time: str = "120s"
    """``delayEvictTime``: accepted for the revoke controller (not implemented)."""
    revoke_pod_interval: str = "1s"
    """``revokePodInterval``: accepted for the revoke controller (not implemented)."""

    @classmethod
    def from_config(cls, raw) -> "ElasticQuotaArgs":
        reader = ArgsReader(NAME, raw, {
            "delayEvictTime", "revokePodInterval", "defaultQuotaGroupMax", "systemQuotaGroupMax",
            "quotaGroupNamespace", "monitorAllQuotas", "enableCheckParentQuota", "enableRuntimeQuota",
            "enableMinQuotaScale", "disableDefaultQuotaPreemption", "enableQueueHint",
            "quotaSnapshotUpdateInterval", "hookPlugins"})
        if reader.sequence("hookPlugins"):
            raise ArgsError(f"{NAME}: hookPlugins are not supported")
        base = cls()
        args = cls(
            default_quota_group_max=reader.resources("defaultQuotaGroupMax") or base.default_quota_group_max,
            system_quota_group_max=reader.resources("systemQuotaGroupMax") or base.system_quota_group_max,
            quota_group_namespace=reader.string("quotaGroupNamespace", base.quota_group_namespace) or "",
            enable_check_parent_quota=reader.boolean("enableCheckParentQuota", False),
            enable_runtime_quota=reader.boolean("enableRuntimeQuota", True),
            enable_min_quota_scale=reader.boolean("enableMinQuotaScale", True),
            disable_default_quota_preemption=reader.boolean("disableDefaultQuotaPreemption", True),
            monitor_all_quotas=reader.boolean("monitorAllQuotas", False),
            delay_evict_time=reader.string("delayEvictTime", "120s") or "120s",
            revoke_pod_interval=reader.string("revokePodInterval", "1s") or "1s",
        )
        args.validate()
        return args

    def validate(self) -> None:
        """``ValidateElasticQuotaArgs``."""
        for field, values in (("defaultQuotaGroupMax", self.default_quota_group_max),
                              ("systemQuotaGroupMax", self.system_quota_group_max)):
            for name, value in values.items():
                if value < 0:
                    raise ArgsError(f"elasticQuotaArgs error, {field} should be a positive value, "
                                    f"resourceName:{name}, got {value}")
