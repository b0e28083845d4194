"""CPU QoS: group identity (``cpu.bvt_warp_ns``), cgroup idle (``cpu.idle``) and core-scheduling groups.

koordlet's runtime hooks ``groupidentity`` (``rule.go``, ``interceptor.go``) and ``coresched``
(``rule.go``, ``helper.go``), driven by ``resource-qos-config``'s ``policies.cpuPolicy`` and each class's
``cpuQOS`` (defaults ``DefaultCPUQOS``: LSR/LS ``{groupIdentity 2, schedIdle 0, coreExpeller true}``,
BE ``{-1, 0, false}``, every class disabled).

- **Group identity** (policy ``groupIdentity``, the default): a class's value is its ``groupIdentity`` when
  enabled, else 0. Pod value by QoS: LSE/LSR -> LSR's, LS -> LS's, BE -> BE's; a pod without a QoS class
  falls back on its Kubernetes QoS: Guaranteed -> LSR's if LSR is enabled, else LS's if LS is, else 0, when
  the node's kubelet runs the ``static`` CPU manager policy, and LS's under any other policy (Koordinator
  1.0's QoS table, ``classes.qos_for_guaranteed``); Burstable -> LS's; BestEffort -> BE's. The besteffort
  directory (``qos/BE``) gets BE's value; ``kubepods`` keeps 0 (the guaranteed directory is always 0).
  The burstable directory has no target of its own in the actuation contract; its pods carry LS's value.
- **Pod annotation** ``koordinator.sh/cpuQOS`` (``{"enable": true, "groupIdentity": 1}``, v1.6), as the
  groupidentity hook's ``SetPodBvtValue`` reads it: only a pod **labelled** LS is overridden (the hook's
  comment: LS may move towards BE, BE never towards LS, LSR/LSE never change). Its ``groupIdentity``
  replaces the value, and ``enable`` absent or false makes it 0; an annotation that does not parse (or a
  value outside [-1, 2]) leaves the pod alone, as the hook fails. A pod without the label (the v1.6
  article's example) keeps its class's value. koordlet applies the annotation when the sandbox starts and
  its rule reconcile writes the class value back; the plan keeps the annotation's value.
- **cgroup idle** (policy ``coreSched``): ``qos/BE`` ``cpu.idle = 1`` when BE is enabled with
  ``schedIdle: 1``, else 0.
- **Core scheduling** (policy ``coreSched``): per pod (SYSTEM pods skipped) the class param is
  ``enabled = class.enable``, ``expeller = class.coreExpeller``; Guaranteed pods without a class use LSR's
  param if LSR is enabled, else LS's (LS's unless the kubelet policy is ``static``, as above). The group is
  the label ``koordinator.sh/core-sched-group-id`` (default ""), the pod UID with
  ``koordinator.sh/core-sched-policy: exclusive``; ``none`` disables; an expeller class appends ``-expeller``.
  A disabled pod gets ``CORE_SCHED_NONE`` (the default cookie).

Values that are the kernel's defaults (bvt 0, not idle, default cookie) are emitted only to undo an earlier
setting (``planner.BASELINE``).
"""

from __future__ import annotations

import json

from streams.actuation import CPU_BVT_WARP, CPU_IDLE, MECHANISM_CGROUP, TARGET_POD, TARGET_QOS
from streams.koordinator.annotations import ANNOTATION_CPU_QOS
from streams.koordinator.classes import (
    KUBE_BEST_EFFORT, KUBE_BURSTABLE, KUBE_GUARANTEED, QOS_BE, QOS_LS, QOS_LSE, QOS_LSR, QOS_NONE, QOS_SYSTEM,
    qos_for_guaranteed)
from streams.koordinator.labels import LABEL_CORE_SCHED_GROUP, LABEL_CORE_SCHED_GROUP_ID, LABEL_CORE_SCHED_POLICY
from streams.nodeqos.framework import CORE_SCHED_GROUP, CORE_SCHED_NONE, Plan, Setting, Snapshot
from streams.nodeqos.podmeta import cpu_manager_policy, kube_qos, raw_qos
from streams.noderesource.views import PodView
from streams.sloconfig.nodeqos import CPU_POLICY_CORE_SCHED, ResourceQoSStrategy

NAME = "CgroupIdle"
REASON_BAD_ANNOTATION = "cpuQOS annotation does not parse"
EXPELLER_SUFFIX = "-expeller"


def _pod_qos(pod: PodView) -> tuple[str, str | None]:
    """(the ``koordinator.sh/qosClass`` label, the Kubernetes QoS when there is no label)."""
    return raw_qos(pod.labels), kube_qos(pod.qos, pod.labels)


def _class_of(strategy: ResourceQoSStrategy, qos: str, kube: str | None, policy: str) -> str | None:
    """The class whose settings a pod takes: by label, else by Kubernetes QoS (Guaranteed under the kubelet's
    ``static`` CPU manager ``policy``: LSR when LSR's cpuQOS is enabled, else LS if enabled; under others LS)."""
    if qos in (QOS_LSE, QOS_LSR):
        return QOS_LSR
    if qos in (QOS_LS, QOS_BE):
        return qos
    if kube == KUBE_GUARANTEED:
        if qos_for_guaranteed(policy) == QOS_LS:
            return QOS_LS
        return QOS_LSR if strategy.of(QOS_LSR).cpu.enable else QOS_LS if strategy.of(QOS_LS).cpu.enable else None
    return {KUBE_BURSTABLE: QOS_LS, KUBE_BEST_EFFORT: QOS_BE}.get(kube or "")


def pod_bvt(strategy: ResourceQoSStrategy, qos: str, kube: str | None, *, policy: str) -> int:
    """``getPodBvtValue``: by QoS label, else by Kubernetes QoS and the kubelet's CPU manager ``policy``."""
    cls = _class_of(strategy, qos, kube, policy)
    return 0 if cls is None else strategy.group_identity(cls)


def bvt_with_annotation(value: int, qos: str, annotation: str | None) -> int | None:
    """The override of ``koordinator.sh/cpuQOS`` on a pod labelled LS (``qos``: the label's class); None when
    the annotation is invalid."""
    if annotation is None or qos != QOS_LS:
        return value
    try:
        raw = json.loads(annotation)
    except ValueError:
        return None
    if not isinstance(raw, dict):
        return None
    identity = raw.get("groupIdentity")
    if identity is not None:
        if isinstance(identity, bool) or not isinstance(identity, int) or not -1 <= identity <= 2:
            return None
        value = identity
    return value if raw.get("enable") is True else 0


def core_sched_group(strategy: ResourceQoSStrategy, qos: str, kube: str | None, uid: str,
                     labels: tuple[tuple[str, str], ...], *, policy: str) -> tuple[bool, str]:
    """``isPodEnabled``: (enabled, group id with the expeller suffix)."""
    core = strategy.cpu_policy == CPU_POLICY_CORE_SCHED
    cls = _class_of(strategy, qos, kube, policy)
    if kube == KUBE_GUARANTEED and cls is None:
        cls = QOS_LS
    param = strategy.of(cls).cpu if cls is not None else strategy.of(QOS_NONE).cpu
    enabled, expeller = core and param.enable, core and param.core_expeller
    mapping = dict(labels)
    policy = mapping.get(LABEL_CORE_SCHED_POLICY, "")
    group = uid if policy == "exclusive" else (mapping.get(LABEL_CORE_SCHED_GROUP_ID)
                                                or mapping.get(LABEL_CORE_SCHED_GROUP, ""))
    if policy == "none":
        enabled = False
    return enabled, group + EXPELLER_SUFFIX if expeller else group


class CgroupIdle:
    name = NAME

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled

    def plan(self, snapshot: Snapshot) -> Plan:
        if not self.enabled:
            return Plan()
        strategy = snapshot.strategy.qos
        policy = cpu_manager_policy(snapshot.node.annotations)
        core = strategy.cpu_policy == CPU_POLICY_CORE_SCHED
        be = strategy.of(QOS_BE).cpu
        idle = "1" if core and be.enable and be.sched_idle == 1 else "0"
        settings = [Setting(TARGET_QOS, QOS_BE, MECHANISM_CGROUP,
                            {CPU_BVT_WARP: str(strategy.group_identity(QOS_BE)), CPU_IDLE: idle})]
        for key in sorted(snapshot.pods):
            pod = snapshot.pods[key]
            if not pod.uid:
                continue
            qos, kube = _pod_qos(pod)
            values = {}
            bvt = bvt_with_annotation(pod_bvt(strategy, qos, kube, policy=policy), qos,
                                      pod.annotation(ANNOTATION_CPU_QOS))
            if bvt is not None:
                values[CPU_BVT_WARP] = str(bvt)
            if qos != QOS_SYSTEM:
                enabled, group = core_sched_group(strategy, qos, kube, pod.uid, pod.labels, policy=policy)
                values[CORE_SCHED_GROUP] = group if enabled else CORE_SCHED_NONE
            if values:
                settings.append(Setting(TARGET_POD, pod.uid, MECHANISM_CGROUP, values))
        return Plan(tuple(settings))
