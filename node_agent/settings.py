"""Every knob of the node agent in one frozen dataclass: unit, default and trade-off.

The ``koord node-agent`` flags are derived from these fields
(``streams.cli.fieldoptions``: name, type, default, and the docstring as help;
``metadata`` names a flag that differs from its field, the allowed values and
what a path may name); a test pins the defaults taken from Koordinator
(koordlet's NodeMetric reporter and the slo-controller's colocation defaults).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from node_agent.collectors.yarn import validate_cgroup_dir

MEMORY_POLICIES = ("usageWithoutPageCache", "usageWithHotPageCache", "usageWithPageCache")
"""Koordinator's NodeMemoryCollectPolicy values (``apis/slo/v1alpha1/nodemetric_types.go``)."""

CGROUP_DRIVERS = ("auto", "cgroupfs", "systemd")
CGROUP_VERSIONS = ("auto", "v1", "v2")
INTERFACE_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,15}$")
"""A network interface name (IFNAMSIZ - 1 characters, no slash or space)."""


class SettingsError(ValueError):
    """A setting out of range; the message names the field."""


@dataclasses.dataclass(frozen=True)
class AgentSettings:
    node_name: str = ""
    """Name of the Node, NodeMetric and Device objects; empty means the host name."""

    collect_interval_s: float = 1.0
    """Seconds between two samples of /proc and the cgroups. Koordlet's
    CollectResUsedInterval is 1 s; shorter costs CPU, longer blurs peaks."""

    report_interval_s: float = 10.0
    """Seconds between two NodeMetric reports. Koordinator's
    metricReportIntervalSeconds default is 60 s; the issue asks for 10 s so the
    stream reacts faster. Each report is one record on the nodemetrics topic."""

    aggregate_duration_s: float = 300.0
    """Window of the averages reported as nodeUsage, systemUsage, podsMetric and
    hostApplicationMetric (Koordinator's metricAggregateDurationSeconds, 300 s)."""

    aggregate_windows_s: tuple[float, ...] = (300.0, 600.0, 1800.0)
    """Windows of aggregatedNodeUsages (Koordinator's NodeAggregatePolicy: 5m, 10m, 30m).
    The ring buffers hold the longest one, so memory is bounded by it."""

    memory_policy: str = dataclasses.field(default="usageWithoutPageCache", metadata={"choices": MEMORY_POLICIES})
    """How memory usage counts page cache (Koordinator's NodeMemoryCollectPolicy;
    default usageWithoutPageCache). usageWithHotPageCache needs kidled and falls
    back to usageWithoutPageCache without it, as koordlet does."""

    proc_root: Path = Path("/proc")
    sys_root: Path = Path("/sys")

    cgroup_root: Path = Path("/sys/fs/cgroup")
    """Root of the cgroup file systems (v1: one directory per subsystem below it;
    v2: the unified tree itself)."""

    kubepods_dir: str = "kubepods"
    """Name of the kubelet's pod cgroup below the root (``kubepods`` for the
    cgroupfs driver, ``kubepods.slice`` for systemd; either spelling works).
    Left at the default with driver auto, the running kubelet's is used
    (its ``cgroupRoot``/kubepods; ``node_agent/kubeletconfig.py``)."""

    cgroup_driver: str = dataclasses.field(default="auto", metadata={"choices": CGROUP_DRIVERS})
    """cgroupfs, systemd, or auto: the running kubelet's (its ``--cgroup-driver``
    or config file), else systemd when ``<kubepods>.slice`` exists."""

    cgroup_version: str = dataclasses.field(default="auto", metadata={"choices": CGROUP_VERSIONS})
    """v1, v2, or auto: v2 when the root holds ``cgroup.controllers``."""

    host_applications_file: Path | None = dataclasses.field(
        default=None, metadata={"flag": "host-applications", "path": "file"})
    """YAML/JSON list of host applications (Koordinator's NodeSLO
    spec.hostApplications shape); their usage is subtracted from system usage."""

    yarn_cgroup_dir: str = "hadoop-yarn"
    """The NodeManager's container cgroups, below the BE tier (yarn-copilot's
    ``kubepods/besteffort/hadoop-yarn``); reported as the BE host application
    ``hadoop-yarn``, their threads join the BE resctrl group and memory eviction
    kills them (``node_agent/yarnqos.py``). Empty: YARN containers are not looked for."""

    max_pods: int = 110
    """The ``pods`` capacity reported on the Node (kubelet's default maxPods)."""

    max_buffered_metrics: int = 360
    """NodeMetric records kept while the broker is unreachable: one hour at the
    default report interval. When full, the oldest is dropped and counted."""

    kube_api: bool = False
    """Also create and update this node's Device and NodeMetric objects on the API server, as
    koordlet does (``node_agent/kubereport.py``), for the tools that read them there."""

    kubeconfig: Path | None = dataclasses.field(default=None, metadata={"path": "file"})
    """The API server for ``--kube-api``; unset: the pod's service account (a DaemonSet), else
    ``~/.kube/config``."""

    actuate: bool = True
    """Apply the actuations addressed to this node (``node_agent.actuator``) and acknowledge them."""

    actuation_dry_run: bool = dataclasses.field(default=False, metadata={"flag": "dry-run"})
    """Print the writes each actuation would make; write nothing on the host, persist nothing,
    acknowledge nothing."""

    resctrl_root: Path = Path("/sys/fs/resctrl")
    """Mount point of the resctrl file system (LLC CAT and MBA groups). Without it,
    resctrl actuations are acknowledged as unsupported."""

    tc_interface: str = ""
    """Interface whose egress the tc backend shapes with HTB classes L0/L1/L2;
    empty: tc actuations are acknowledged as unsupported (nothing is shaped)."""

    state_dir: Path = dataclasses.field(default=Path("/var/lib/koordstream/node-agent"),
                                        metadata={"path": "directory"})
    """Where the actuator keeps the last applied sequence per target and its read
    offset, so a restart never re-applies an older actuation."""
    protection_after_s: float = 60.0
    """Seconds without an actuation or config from the stream (or at once when the broker is
    unreachable) after which the agent runs CPU suppress and memory-eviction reports itself on
    the last stored config (``actuator/protection.py``); 0 disables local protection. Shorter
    reacts sooner to an outage; on a quiet node it also means more rounds of local planning
    that repeat what the stream would decide."""

    def validate(self) -> "AgentSettings":
        if not 0.05 <= self.collect_interval_s <= 60:
            raise SettingsError(f"collect_interval_s must be in [0.05, 60], got {self.collect_interval_s}")
        if self.report_interval_s < self.collect_interval_s:
            raise SettingsError(f"report_interval_s ({self.report_interval_s}) must be >= collect_interval_s "
                                f"({self.collect_interval_s})")
        if self.aggregate_duration_s < self.collect_interval_s:
            raise SettingsError(f"aggregate_duration_s must be >= collect_interval_s, got {self.aggregate_duration_s}")
        if not self.aggregate_windows_s or min(self.aggregate_windows_s) <= 0:
            raise SettingsError(f"aggregate_windows_s must be positive, got {self.aggregate_windows_s}")
        if self.memory_policy not in MEMORY_POLICIES:
            raise SettingsError(f"memory_policy must be one of {', '.join(MEMORY_POLICIES)}, got {self.memory_policy!r}")
        if self.cgroup_driver not in CGROUP_DRIVERS:
            raise SettingsError(f"cgroup_driver must be one of {', '.join(CGROUP_DRIVERS)}, got {self.cgroup_driver!r}")
        if self.cgroup_version not in CGROUP_VERSIONS:
            raise SettingsError(f"cgroup_version must be one of {', '.join(CGROUP_VERSIONS)}, got {self.cgroup_version!r}")
        if not self.kubepods_dir or "/" in self.kubepods_dir or self.kubepods_dir.startswith("."):
            raise SettingsError(f"kubepods_dir must be one directory name, got {self.kubepods_dir!r}")
        if self.tc_interface and not INTERFACE_NAME.match(self.tc_interface):
            raise SettingsError(f"tc_interface must be an interface name, got {self.tc_interface!r}")
        if self.yarn_cgroup_dir:
            try:
                validate_cgroup_dir(self.yarn_cgroup_dir)
            except ValueError as err:
                raise SettingsError(str(err)) from None
        if self.max_buffered_metrics < 1 or self.max_pods < 0:
            raise SettingsError("max_buffered_metrics must be >= 1 and max_pods >= 0")
        return self

    @property
    def history_s(self) -> float:
        """Seconds of samples the ring buffers keep: the longest window reported."""
        return max(self.aggregate_duration_s, *self.aggregate_windows_s)
