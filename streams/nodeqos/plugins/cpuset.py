"""CPUSet: the cpuset the scheduler pinned a pod to reaches its cgroup; the LS share pool leaves it out.

koordlet's cpuset runtime hook (``runtimehooks/hooks/cpuset``: ``SetContainerCPUSet``, ``UnsetPodCPUQuota``,
``cpusetRule.getContainerCPUSet``) with the share pools of its states informer (``calCPUSharePools``), planned
per pod cgroup (``pod/<uid>``), pods in key order:

- **pinned**: a pod whose ``scheduling.koordinator.sh/resource-status`` carries a ``cpuset`` gets
  ``cpuset.cpus`` = that cpuset, and ``cpu.cfs_quota_us`` = -1 (``IsPodCfsQuotaNeedUnset``, koordinator#489:
  a quota on pinned CPUs only throttles; ``CPUSetArgs.unset_cpu_quota``, koordlet's
  ``--disable-unset-cpu-quota`` inverted).
- **share pool**: every other pod that is not BE (LS, LSE/LSR without a cpuset, SYSTEM, none) gets the LS
  share pool = the node's CPUs (``cpusuppress.node_processors``: ``0..ceil(capacity/1000)-1`` less the
  reservation annotation's ``reservedCPUs``) minus the cpuset of every pinned pod. An empty pool is not
  written.
- **LS host applications** (``host-application-config`` entries with ``qos: LS``; the v1.4 article's "CPUSet
  Allocation", ``cpusetRule.getHostAppCpuset``) get the same share pool on ``hostapp/<name>`` (with its
  ``cgroup.path``); koordlet refuses every other class (``only LS is supported for host application``), so
  they get nothing here.
- **BE** pods get nothing here: ``CPUSuppress`` writes the BE tier's cpuset, picked from the node's CPUs minus
  the LSE pods' cpusets (Koordinator's ``be-cpu-shared-pools`` and ``calcBECPUSet`` leave out LSE only; LSR
  CPUs stay shared with BE, in proportion).

Where Koordinator's source differs from "LSE and LSR pods get their cpuset", it is followed:

- the annotation's cpuset is applied to any pod that carries one (``SetContainerCPUSet`` reads it before the
  QoS rule), and the LS pool leaves out every such cpuset, whatever the pod's class. BE pods are the
  exception here: their cgroups live under the besteffort tier whose cpuset CPUSuppress shrinks, and on
  cgroup v1 a child's CPUs must lie within its parent's.
- an LSE pod without a cpuset gets the share pool like an LSR one (kubelet's ``none`` CPU manager policy).
- a cpuset that does not parse (or a resource status that does not): koordlet's hook fails for the pod, so
  nothing is written for it and its CPUs stay in the pools. ``pod_cpusets`` returns such pods with the
  reason (``podmeta.REASON_BAD_STATUS`` / ``REASON_BAD_CPUSET``), which ``CPUSet.ignored`` exposes.
- the class is the QoS with default; the scheduler pins only pods labelled LSE/LSR, where it is the label.

A pool of every CPU of the node is what a pod cgroup already holds (the kubelet gives it its parent's set):
as ``planner.BASELINE``, it is not sent to a pod (or host application) this plan never gave a cpuset, so a
node without pinned pods or reserved CPUs gets no cpuset actuation. Not modelled: NUMA-aware pools (the Node
record carries no topology: one NUMA node), the SYSTEM QoS cpuset, kubelet's static policy; container cpusets
are the node agent's (on cgroup v1 it writes the pod's set to the pod's descendants).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from streams.actuation import CPU_QUOTA, CPUSET_CPUS, HOSTAPP_PATH, MECHANISM_CGROUP, TARGET_HOSTAPP, TARGET_POD
from streams.koordinator.classes import QOS_BE, QOS_LS
from streams.nodeqos.framework import Plan, Setting, Snapshot
from streams.nodeqos.plugins.cpusuppress import format_cpuset, node_processors
from streams.nodeqos.podmeta import pinned_cpus

NAME = "CPUSet"
REASON_NO_UID = "pod has no UID"
UNLIMITED_QUOTA = "-1"


@dataclasses.dataclass(frozen=True)
class CPUSetArgs:
    unset_cpu_quota: bool = True
    """Unset a pinned pod's cfs quota (koordlet's ``--disable-unset-cpu-quota``, false by default)."""

    def validate(self) -> None:
        if not isinstance(self.unset_cpu_quota, bool):
            raise ValueError("CPUSetArgs.unset_cpu_quota must be a boolean")


def pod_cpusets(snapshot: Snapshot) -> tuple[dict[str, frozenset[int]], dict[str, str]]:
    """(pinned CPUs by pod key, reason by pod key for the cpusets ignored), pods in key order."""
    pinned, ignored = {}, {}
    for key in sorted(snapshot.pods):
        cpus, reason = pinned_cpus(snapshot.pods[key].cpuset)
        if reason is not None:
            ignored[key] = reason
        elif cpus:
            pinned[key] = cpus
    return pinned, ignored


def share_pool(snapshot: Snapshot, pinned: Mapping[str, frozenset[int]]) -> frozenset[int]:
    """``calCPUSharePools``: the node's CPUs less reserved ones and every pinned pod's."""
    taken = frozenset().union(*pinned.values())
    return frozenset(p[0] for p in node_processors(snapshot)) - taken


class CPUSet:
    name = NAME

    def __init__(self, args: CPUSetArgs = CPUSetArgs(), enabled: bool = True) -> None:
        args.validate()
        self.args = args
        self.enabled = enabled

    def ignored(self, snapshot: Snapshot) -> dict[str, str]:
        """Pods left alone and why: a resource status or cpuset that does not parse, or no UID."""
        _, ignored = pod_cpusets(snapshot)
        for key, pod in snapshot.pods.items():
            if not pod.uid and key not in ignored and pod.qos != QOS_BE:
                ignored[key] = REASON_NO_UID
        return dict(sorted(ignored.items()))

    def plan(self, snapshot: Snapshot) -> Plan:
        if not self.enabled:
            return Plan()
        pinned, ignored = pod_cpusets(snapshot)
        pool = share_pool(snapshot, pinned)
        everything = frozenset(range(-(-snapshot.node.capacity_cpu // 1000)))
        settings = []
        for key in sorted(snapshot.pods):
            pod = snapshot.pods[key]
            if not pod.uid or pod.qos == QOS_BE or key in ignored:
                continue
            target = (TARGET_POD, pod.uid, MECHANISM_CGROUP)
            if key in pinned:
                values = {CPUSET_CPUS: format_cpuset(pinned[key])}
                if self.args.unset_cpu_quota:
                    values[CPU_QUOTA] = UNLIMITED_QUOTA
            elif not pool or pool == everything and CPUSET_CPUS not in snapshot.previous.get(target, {}):
                continue
            else:
                values = {CPUSET_CPUS: format_cpuset(pool)}
            settings.append(Setting(*target, dict(sorted(values.items()))))
        for app in snapshot.strategy.host_apps:
            target = (TARGET_HOSTAPP, app.name, MECHANISM_CGROUP)
            if (app.qos != QOS_LS or not app.name or not app.cgroup_path or not pool
                    or pool == everything and CPUSET_CPUS not in snapshot.previous.get(target, {})):
                continue
            settings.append(Setting(*target, {HOSTAPP_PATH: app.cgroup_path, CPUSET_CPUS: format_cpuset(pool)}))
        return Plan(tuple(settings))
