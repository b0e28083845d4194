"""Host applications: processes outside Kubernetes that get the LS or BE treatment of their QoS class.

Koordinator v1.4 "QoS for host applications" (``host-application-config``; koordlet's runtime hooks
``groupidentity`` ``SetHostAppBvtValue`` and ``coresched``): each configured application's cgroup
(``HOSTAPP_PATH``: ``config.HostApplication.cgroup_path``, relative to the cgroup root) gets

- ``cpu.bvt_warp_ns``: its class's group identity (LSE/LSR -> LSR, LS -> LS, BE -> BE; 0 when the class is
  disabled or the policy is not ``groupIdentity``);
- ``cpu.idle``: 1 for a BE application when the policy is ``coreSched`` and BE has ``schedIdle: 1``.

An application whose settings are all kernel defaults is not actuated unless it was before (then it is
reset). An LS application's share-pool cpuset is the ``CPUSet`` strategy's. CPU suppress counts BE
applications under ``KubepodsBesteffort`` as BE (``cpusuppress``).
"""

from __future__ import annotations

from streams.actuation import CPU_BVT_WARP, CPU_IDLE, HOSTAPP_PATH, MECHANISM_CGROUP, TARGET_HOSTAPP
from streams.koordinator.classes import QOS_BE, QOS_LSE, QOS_LSR
from streams.nodeqos.framework import Plan, Setting, Snapshot
from streams.sloconfig.nodeqos import CPU_POLICY_CORE_SCHED

NAME = "HostApps"


class HostApps:
    name = NAME

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled

    def plan(self, snapshot: Snapshot) -> Plan:
        if not self.enabled:
            return Plan()
        strategy = snapshot.strategy.qos
        settings = []
        for app in snapshot.strategy.host_apps:
            if not app.name or not app.cgroup_path:
                continue
            cls = QOS_LSR if app.qos in (QOS_LSE, QOS_LSR) else app.qos
            be = strategy.of(QOS_BE).cpu
            idle = cls == QOS_BE and strategy.cpu_policy == CPU_POLICY_CORE_SCHED and be.enable and be.sched_idle == 1
            values = {CPU_BVT_WARP: str(strategy.group_identity(cls)), CPU_IDLE: "1" if idle else "0"}
            target = (TARGET_HOSTAPP, app.name, MECHANISM_CGROUP)
            if values == {CPU_BVT_WARP: "0", CPU_IDLE: "0"} and target not in snapshot.previous:
                continue
            settings.append(Setting(*target, {HOSTAPP_PATH: app.cgroup_path, **values}))
        return Plan(tuple(settings))
