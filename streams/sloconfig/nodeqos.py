"""The node-QoS sections of ``slo-controller-config``, parsed into frozen strategies with Koordinator's defaults.

Keys and shapes (``apis/configuration/slo_controller_config.go``, types in
``apis/slo/v1alpha1/nodeslo_types.go``):

- ``resource-threshold-config``: ``{"clusterStrategy": ResourceThresholdStrategy, "nodeStrategies": [...]}``;
- ``resource-qos-config``: ``{"clusterStrategy": ResourceQOSStrategy, "nodeStrategies": [...]}``;
- ``cpu-burst-config``: ``{"clusterStrategy": CPUBurstStrategy, "nodeStrategies": [...]}``;
- ``system-config``: ``{"clusterStrategy": SystemStrategy, "nodeStrategies": [...]}``;
- ``host-application-config``: ``{"applications": [...], "nodeConfigs": [{..., "applications": [...]}]}``.

Each node strategy carries ``name`` and ``nodeSelector`` inline. Merging is
``document.overlay`` (``util.MergeCfg``): the cluster strategy over the defaults
(``sloconfig.Default*Strategy``), a node strategy over the merged cluster
strategy; for a node, the first node strategy whose selector matches its labels
wins (an invalid or missing selector matches no node, as the controller treats
it). Host applications of a matching node config replace the cluster list.

Validation follows the struct tags (the webhook): percents in [0, 100],
``memoryEvictLowerPercent < memoryEvictThresholdPercent``,
``cpuEvictBESatisfactionLowerPercent < ...UpperPercent``,
``cpuEvictTimeWindowSeconds > 0``, ``catRangeStartPercent < catRangeEndPercent``,
group identity in [-1, 2], schedIdle in [0, 1], ``cpuBurstPercent`` in [1, 10000],
``cfsQuotaBurstPercent >= 100``, ``cfsQuotaBurstPeriodSeconds >= -1``, network
bandwidths that parse. Anything else raises ``ConfigError`` so the previous
config stays in force.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TypeVar

from streams.koordinator.classes import QOS_BE, QOS_LS, QOS_LSE, QOS_LSR, QOS_SYSTEM
from streams.objects.quantity import QuantityError, to_canonical
from streams.sloconfig.document import (
    CPU_BURST_CONFIG_KEY, HOST_APPLICATION_CONFIG_KEY, RESOURCE_QOS_CONFIG_KEY, RESOURCE_THRESHOLD_CONFIG_KEY,
    SYSTEM_CONFIG_KEY, ConfigError, Section, Struct, decode_bool, decode_int, decode_int_or_string,
    decode_omitempty_string, decode_string, overlay, parse_section, require_object, strategy_decoder,
    type_error)

T = TypeVar("T")

SUPPRESS_CPUSET = "cpuset"
SUPPRESS_CFS_QUOTA = "cfsQuota"
EVICT_BY_REAL_LIMIT = "evictByRealLimit"
EVICT_BY_ALLOCATABLE = "evictByAllocatable"
CPU_POLICY_GROUP_IDENTITY = "groupIdentity"
CPU_POLICY_CORE_SCHED = "coreSched"
NET_POLICY_TC = "tc"
NET_POLICY_TERWAY = "terway-qos"
BURST_NONE = "none"
BURST_CPU_ONLY = "cpuBurstOnly"
BURST_CFS_QUOTA_ONLY = "cfsQuotaBurstOnly"
BURST_AUTO = "auto"
QOS_CLASS_KEYS = {QOS_LSR: "lsrClass", QOS_LS: "lsClass", QOS_BE: "beClass", QOS_SYSTEM: "systemClass"}
"""QoS class -> its field in ``ResourceQOSStrategy``."""


@dataclasses.dataclass(frozen=True)
class ResourceThresholdStrategy:
    """``ResourceThresholdStrategy``; defaults are ``DefaultResourceThresholdStrategy()``."""

    enable: bool = False
    """Suppress and evict BE on this node at all."""
    cpu_suppress_threshold_percent: int = 65
    """BE may use ``capacity * p / 100`` minus what LS pods, LS host apps and the system use."""
    cpu_suppress_min_percent: int | None = None
    """Floor of the BE share as a percent of capacity; None: no floor."""
    cpu_suppress_policy: str = SUPPRESS_CPUSET
    """``cpuset`` (shrink BE's cpuset) or ``cfsQuota`` (set BE's cfs quota); other values act as ``cpuset``."""
    memory_evict_threshold_percent: int = 70
    """Evict BE pods when node memory usage reaches this percent."""
    memory_evict_lower_percent: int | None = None
    """Evict until usage is below this percent; None: threshold - 2."""
    cpu_evict_be_satisfaction_upper_percent: int | None = None
    """Evict until BE's limit/request reaches this percent."""
    cpu_evict_be_satisfaction_lower_percent: int | None = None
    """Evict when BE's limit/request is at or below this percent (valid in (0, 60])."""
    cpu_evict_be_usage_threshold_percent: int | None = None
    """Only when BE uses at least this percent of its limit; None: 90."""
    cpu_evict_time_window_seconds: int | None = None
    """Averaging window of the BE metrics; None: the collect interval."""
    cpu_evict_policy: str = EVICT_BY_REAL_LIMIT
    """``evictByRealLimit`` (BE's cgroup limit) or ``evictByAllocatable`` (node batch-cpu allocatable)."""

    def validate(self, where: str) -> None:
        for name in ("cpu_suppress_threshold_percent", "cpu_suppress_min_percent", "memory_evict_threshold_percent",
                     "memory_evict_lower_percent", "cpu_evict_be_satisfaction_upper_percent",
                     "cpu_evict_be_satisfaction_lower_percent", "cpu_evict_be_usage_threshold_percent"):
            _percent(getattr(self, name), f"{where}.{_camel(name)}")
        lower = self.memory_evict_lower_percent
        if lower is not None and lower >= self.memory_evict_threshold_percent:
            raise ConfigError(f"{where}: memoryEvictLowerPercent ({lower}) must be below "
                              f"memoryEvictThresholdPercent ({self.memory_evict_threshold_percent})")
        upper, low = self.cpu_evict_be_satisfaction_upper_percent, self.cpu_evict_be_satisfaction_lower_percent
        if upper is not None and low is not None and low >= upper:
            raise ConfigError(f"{where}: cpuEvictBESatisfactionLowerPercent ({low}) must be below "
                              f"cpuEvictBESatisfactionUpperPercent ({upper})")
        window = self.cpu_evict_time_window_seconds
        if window is not None and window <= 0:
            raise ConfigError(f"{where}: cpuEvictTimeWindowSeconds must be greater than 0, got {window}")


@dataclasses.dataclass(frozen=True)
class CPUQoS:
    """``CPUQOSCfg`` of one class."""

    enable: bool = False
    group_identity: int = 0
    """``cpu.bvt_warp_ns`` of the class (-1..2) under the groupIdentity policy."""
    sched_idle: int = 0
    """``cpu.idle`` of the class (0/1) under the coreSched policy."""
    core_expeller: bool = False
    """Under coreSched: the class takes its own cookie (``-expeller`` group suffix)."""


@dataclasses.dataclass(frozen=True)
class ResctrlQoS:
    """``ResctrlQOSCfg`` of one class: the LLC ways range and the memory bandwidth percent."""

    enable: bool = False
    """Pods of the class join the class's resctrl group (the schemata are written regardless)."""
    cat_range_start_percent: int = 0
    cat_range_end_percent: int = 100
    mba_percent: int = 100


@dataclasses.dataclass(frozen=True)
class NetworkQoS:
    """``NetworkQOSCfg`` of one class; bandwidths are bits per second (int: percent of the total, str: a quantity)."""

    enable: bool = False
    ingress_request: int | str | None = None
    ingress_limit: int | str | None = None
    egress_request: int | str | None = None
    egress_limit: int | str | None = None


@dataclasses.dataclass(frozen=True)
class ClassQoS:
    cpu: CPUQoS = CPUQoS()
    resctrl: ResctrlQoS = ResctrlQoS()
    network: NetworkQoS = NetworkQoS()


_DEFAULT_CLASSES = MappingProxyType({
    QOS_LSR: ClassQoS(CPUQoS(False, 2, 0, True), ResctrlQoS()),
    QOS_LS: ClassQoS(CPUQoS(False, 2, 0, True), ResctrlQoS()),
    QOS_BE: ClassQoS(CPUQoS(False, -1, 0, False), ResctrlQoS(False, 0, 30, 100)),
    QOS_SYSTEM: ClassQoS(CPUQoS(False, 0, 0, False), ResctrlQoS()),
})
"""``DefaultResourceQOSStrategy()``: ``DefaultCPUQOS`` and ``DefaultResctrlQOS`` per class, all disabled."""
_DISABLED = ClassQoS()


@dataclasses.dataclass(frozen=True)
class ResourceQoSStrategy:
    """``ResourceQOSStrategy``: policies and the per-class settings."""

    cpu_policy: str = CPU_POLICY_GROUP_IDENTITY
    """``groupIdentity`` or ``coreSched``."""
    net_policy: str = NET_POLICY_TC
    """``tc`` or ``terway-qos``."""
    classes: Mapping[str, ClassQoS] = dataclasses.field(default_factory=lambda: _DEFAULT_CLASSES)
    """QoS class (LSR, LS, BE, SYSTEM) -> its settings; LSE uses LSR's."""

    def of(self, qos: str) -> ClassQoS:
        """The settings of a pod's QoS class (LSE as LSR; None and unknown classes get the disabled defaults)."""
        return self.classes.get(QOS_LSR if qos == QOS_LSE else qos, _DISABLED)

    def group_identity(self, qos: str) -> int:
        """The class's bvt under the groupIdentity policy: its value when enabled, else 0."""
        if self.cpu_policy not in (CPU_POLICY_GROUP_IDENTITY, ""):
            return 0
        cpu = self.of(qos).cpu
        return cpu.group_identity if cpu.enable else 0

    def validate(self, where: str) -> None:
        for qos, settings in self.classes.items():
            cpu, resctrl = settings.cpu, settings.resctrl
            name = f"{where}.{QOS_CLASS_KEYS[qos]}"
            if not -1 <= cpu.group_identity <= 2:
                raise ConfigError(f"{name}.cpuQOS.groupIdentity must be in [-1, 2], got {cpu.group_identity}")
            if cpu.sched_idle not in (0, 1):
                raise ConfigError(f"{name}.cpuQOS.schedIdle must be 0 or 1, got {cpu.sched_idle}")
            for field in ("cat_range_start_percent", "cat_range_end_percent", "mba_percent"):
                _percent(getattr(resctrl, field), f"{name}.resctrlQOS.{_camel(field)}")
            if resctrl.cat_range_start_percent >= resctrl.cat_range_end_percent:
                raise ConfigError(f"{name}.resctrlQOS: catRangeStartPercent ({resctrl.cat_range_start_percent}) must "
                                  f"be below catRangeEndPercent ({resctrl.cat_range_end_percent})")
            for field in ("ingress_request", "ingress_limit", "egress_request", "egress_limit"):
                value = getattr(settings.network, field)
                if isinstance(value, int):
                    _percent(value, f"{name}.networkQOS.{_camel(field)}")
                elif isinstance(value, str):
                    bandwidth_bits(value, f"{name}.networkQOS.{_camel(field)}")


@dataclasses.dataclass(frozen=True)
class CPUBurstStrategy:
    """``CPUBurstStrategy``; defaults are ``DefaultCPUBurstStrategy()``."""

    policy: str = BURST_NONE
    """``none``, ``cpuBurstOnly``, ``cfsQuotaBurstOnly`` or ``auto``."""
    cpu_burst_percent: int = 1000
    """``cpu.cfs_burst_us`` = cpu limit * p / 100 (in quota units)."""
    cfs_quota_burst_percent: int = 300
    """Ceiling of a scaled-up ``cpu.cfs_quota_us`` as a percent of the limit's quota."""
    cfs_quota_burst_period_seconds: int = -1
    """How long a pod may burst its quota (token bucket); -1: unlimited."""
    share_pool_threshold_percent: int = 50
    """Share-pool usage at which the node counts as overloaded (quotas scale down)."""

    def validate(self, where: str) -> None:
        if not 1 <= self.cpu_burst_percent <= 10000:
            raise ConfigError(f"{where}.cpuBurstPercent must be in [1, 10000], got {self.cpu_burst_percent}")
        if self.cfs_quota_burst_percent < 100:
            raise ConfigError(f"{where}.cfsQuotaBurstPercent must be 100 or greater, got {self.cfs_quota_burst_percent}")
        if self.cfs_quota_burst_period_seconds < -1:
            raise ConfigError(f"{where}.cfsQuotaBurstPeriodSeconds must be -1 or greater, "
                              f"got {self.cfs_quota_burst_period_seconds}")
        _percent(self.share_pool_threshold_percent, f"{where}.sharePoolThresholdPercent")


@dataclasses.dataclass(frozen=True)
class SystemStrategy:
    """``SystemStrategy`` (the fields the node-QoS plan reads)."""

    total_network_bandwidth: int = 0
    """``totalNetworkBandwidth`` in bits per second; 0: unknown (terway-qos writes 0, tc plans nothing)."""


@dataclasses.dataclass(frozen=True)
class HostApplication:
    """``HostApplicationSpec``: a process tree outside Kubernetes that koordlet treats like pods of its QoS."""

    name: str
    priority: str = ""
    qos: str = ""
    cgroup_path: str = ""
    """``GetHostAppCgroupRelativePath``: base dir (CgroupRoot "", Kubepods ``kubepods``, KubepodsBurstable
    ``kubepods/burstable``, KubepodsBesteffort ``kubepods/besteffort``) / parentDir / relativePath; without
    ``cgroupPath``: ``host-latency-sensitive/<name>`` (LSE/LSR/LS), ``host-best-effort/<name>`` (BE), else the name."""
    cgroup_base: str = ""


@dataclasses.dataclass(frozen=True)
class NodeQoSStrategy:
    """Everything the node-QoS plan reads from the config, resolved for one node."""

    threshold: ResourceThresholdStrategy = ResourceThresholdStrategy()
    qos: ResourceQoSStrategy = ResourceQoSStrategy()
    burst: CPUBurstStrategy = CPUBurstStrategy()
    system: SystemStrategy = SystemStrategy()
    host_apps: tuple[HostApplication, ...] = ()


@dataclasses.dataclass(frozen=True)
class NodeQoSConfig:
    """The node-QoS keys; ``for_node`` resolves each for a node's labels."""

    threshold: Section[ResourceThresholdStrategy] = Section(ResourceThresholdStrategy())
    qos: Section[ResourceQoSStrategy] = Section(ResourceQoSStrategy())
    burst: Section[CPUBurstStrategy] = Section(CPUBurstStrategy())
    system: Section[SystemStrategy] = Section(SystemStrategy())
    host_apps: Section[tuple[HostApplication, ...]] = Section(())

    def for_node(self, labels: Mapping[str, str]) -> NodeQoSStrategy:
        return NodeQoSStrategy(self.threshold.for_node(labels), self.qos.for_node(labels),
                               self.burst.for_node(labels), self.system.for_node(labels),
                               self.host_apps.for_node(labels))


DEFAULT_QOS_CONFIG = NodeQoSConfig()


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.upper() if part in ("cpu", "be", "mba", "cat") else part.title() for part in rest)


def _percent(value: int | None, where: str) -> None:
    if value is not None and not 0 <= value <= 100:
        raise ConfigError(f"{where} must be in [0, 100], got {value}")


_THRESHOLD_FIELDS = {
    "enable": ("enable", decode_bool),
    "cpuSuppressThresholdPercent": ("cpu_suppress_threshold_percent", decode_int),
    "cpuSuppressMinPercent": ("cpu_suppress_min_percent", decode_int),
    "cpuSuppressPolicy": ("cpu_suppress_policy", decode_omitempty_string),
    "memoryEvictThresholdPercent": ("memory_evict_threshold_percent", decode_int),
    "memoryEvictLowerPercent": ("memory_evict_lower_percent", decode_int),
    "cpuEvictBESatisfactionUpperPercent": ("cpu_evict_be_satisfaction_upper_percent", decode_int),
    "cpuEvictBESatisfactionLowerPercent": ("cpu_evict_be_satisfaction_lower_percent", decode_int),
    "cpuEvictBEUsageThresholdPercent": ("cpu_evict_be_usage_threshold_percent", decode_int),
    "cpuEvictTimeWindowSeconds": ("cpu_evict_time_window_seconds", decode_int),
    "cpuEvictPolicy": ("cpu_evict_policy", decode_omitempty_string),
}
"""``ResourceThresholdStrategy``: pointers but for the two policies (``omitempty`` strings)."""

_POLICY_FIELDS = {
    "cpuPolicy": ("cpu_policy", decode_string),
    "netQOSPolicy": ("net_policy", decode_string),
}
"""``ResourceQOSPolicies``, held on ``ResourceQoSStrategy`` itself."""

_CLASS_FIELDS = {
    "cpuQOS": ("cpu", Struct({
        "enable": ("enable", decode_bool),
        "groupIdentity": ("group_identity", decode_int),
        "schedIdle": ("sched_idle", decode_int),
        "coreExpeller": ("core_expeller", decode_bool),
    })),
    "resctrlQOS": ("resctrl", Struct({
        "enable": ("enable", decode_bool),
        "catRangeStartPercent": ("cat_range_start_percent", decode_int),
        "catRangeEndPercent": ("cat_range_end_percent", decode_int),
        "mbaPercent": ("mba_percent", decode_int),
    })),
    "networkQOS": ("network", Struct({
        "enable": ("enable", decode_bool),
        "ingressRequest": ("ingress_request", decode_int_or_string),
        "ingressLimit": ("ingress_limit", decode_int_or_string),
        "egressRequest": ("egress_request", decode_int_or_string),
        "egressLimit": ("egress_limit", decode_int_or_string),
    })),
}
"""``ResourceQOS`` of one class."""

BURST_CONFIG_FIELDS = {
    "policy": ("policy", decode_omitempty_string),
    "cpuBurstPercent": ("cpu_burst_percent", decode_int),
    "cfsQuotaBurstPercent": ("cfs_quota_burst_percent", decode_int),
    "cfsQuotaBurstPeriodSeconds": ("cfs_quota_burst_period_seconds", decode_int),
}
"""``CPUBurstConfig``, which a pod's ``koordinator.sh/cpuBurst`` annotation also holds."""

_BURST_FIELDS = {**BURST_CONFIG_FIELDS, "sharePoolThresholdPercent": ("share_pool_threshold_percent", decode_int)}


def _decode_qos(base: ResourceQoSStrategy, raw: object, where: str) -> ResourceQoSStrategy:
    """``policies`` and the four ``<class>Class`` structs, each overlaid on the base's."""
    raw = {} if raw is None else require_object(raw, where)
    strategy = overlay(base, raw.get("policies"), _POLICY_FIELDS, f"{where}.policies")
    classes = {qos: overlay(base.classes.get(qos, ClassQoS()), raw.get(key), _CLASS_FIELDS, f"{where}.{key}")
               for qos, key in QOS_CLASS_KEYS.items()}
    strategy = dataclasses.replace(strategy, classes=MappingProxyType(classes))
    strategy.validate(where)
    return strategy


def bandwidth_bits(text: str, where: str) -> int:
    """A bandwidth quantity (``"100M"``) as an integer; ConfigError when it does not parse or is negative."""
    try:
        value = to_canonical("bandwidth", text)
    except QuantityError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if value < 0:
        raise ConfigError(f"{where}: must not be negative, got {text!r}")
    return value


def _decode_bandwidth(value: object, where: str) -> int:
    """``resource.Quantity``: a string or a number, as bits per second."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise type_error(value, "resource.Quantity", where)
    return bandwidth_bits(str(value), where)


_SYSTEM_FIELDS = {"totalNetworkBandwidth": ("total_network_bandwidth", _decode_bandwidth)}


_CGROUP_BASES = {"": "", "CgroupRoot": "", "Kubepods": "kubepods", "KubepodsBurstable": "kubepods/burstable",
                 "KubepodsBesteffort": "kubepods/besteffort"}
_DEFAULT_HOST_DIRS = {QOS_LSE: "host-latency-sensitive", QOS_LSR: "host-latency-sensitive",
                      QOS_LS: "host-latency-sensitive", QOS_BE: "host-best-effort"}


def _join(*parts: str) -> str:
    """``filepath.Join`` of relative parts: empty parts dropped, slashes collapsed."""
    return "/".join(piece for part in parts for piece in part.split("/") if piece and piece != ".")


def _string(raw: Mapping, name: str, where: str) -> str:
    value = raw.get(name)
    return "" if value is None else decode_string(value, f"{where}.{name}")


def decode_host_apps(raw: object, where: str) -> tuple[HostApplication, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise type_error(raw, "[]HostApplicationSpec", where)
    apps = []
    for index, entry in enumerate(raw):
        at = f"{where}[{index}]"
        entry = {} if entry is None else require_object(entry, at)
        name, qos = _string(entry, "name", at), _string(entry, "qos", at)
        path_raw = entry.get("cgroupPath")
        if path_raw is None:
            base, path = "", _join(_DEFAULT_HOST_DIRS.get(qos, ""), name)
        else:
            path_raw = require_object(path_raw, f"{at}.cgroupPath")
            base = _string(path_raw, "base", f"{at}.cgroupPath")
            if base not in _CGROUP_BASES:
                raise ConfigError(f"{at}.cgroupPath.base: unknown base {base!r} "
                                  f"(known: {', '.join(b for b in _CGROUP_BASES if b)})")
            path = _join(_CGROUP_BASES[base], _string(path_raw, "parentDir", f"{at}.cgroupPath"),
                         _string(path_raw, "relativePath", f"{at}.cgroupPath"))
        if ".." in path.split("/"):
            raise ConfigError(f"{at}.cgroupPath: must not leave the cgroup root, got {path!r}")
        apps.append(HostApplication(name, _string(entry, "priority", at), qos, path, base))
    return tuple(apps)


def _decode_host_apps(base: tuple[HostApplication, ...], raw: object, where: str) -> tuple[HostApplication, ...]:
    """``applications`` of the cluster or of a matching node config; a node config's list replaces the
    cluster's even when absent (``getHostApplicationConfig`` returns the node config's list as it is)."""
    raw = {} if raw is None else require_object(raw, where)
    return decode_host_apps(raw.get("applications"), f"{where}.applications")


def parse_qos_config(sections: Mapping[str, object]) -> NodeQoSConfig:
    """The node-QoS config from the parsed JSON of the ConfigMap's keys (absent keys: defaults);
    ConfigError when invalid."""
    def strategies(key: str, default: T, decode: Callable[[T, object, str], T]) -> Section[T]:
        return parse_section(sections.get(key), key, default, decode, cluster="clusterStrategy",
                             nodes="nodeStrategies", strict=False)

    return NodeQoSConfig(
        threshold=strategies(RESOURCE_THRESHOLD_CONFIG_KEY, ResourceThresholdStrategy(),
                             strategy_decoder(_THRESHOLD_FIELDS)),
        qos=strategies(RESOURCE_QOS_CONFIG_KEY, ResourceQoSStrategy(), _decode_qos),
        burst=strategies(CPU_BURST_CONFIG_KEY, CPUBurstStrategy(), strategy_decoder(_BURST_FIELDS)),
        system=strategies(SYSTEM_CONFIG_KEY, SystemStrategy(), strategy_decoder(_SYSTEM_FIELDS)),
        host_apps=parse_section(sections.get(HOST_APPLICATION_CONFIG_KEY), HOST_APPLICATION_CONFIG_KEY, (),
                                _decode_host_apps, cluster=None, nodes="nodeConfigs", strict=False),
    )
