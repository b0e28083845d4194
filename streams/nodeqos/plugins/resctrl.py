"""Resctrl: LLC ways (CAT) and memory bandwidth (MBA) per QoS class, and per pod by annotation.

koordlet's ``qosmanager/plugins/resctrl/resctrl_reconcile.go`` and the resctrl runtime hook. Every plan
writes the schemata of the three groups ``LSR`` (QoS LSE and LSR), ``LS`` and ``BE`` from their classes'
``resctrlQOS`` (defaults ``DefaultResctrlQOS``: LSR and LS CAT 0-100 %, BE CAT **0-30 %**, MBA 100 %, all
``enable: false``), whether or not the class is enabled, then puts the pods of the enabled classes in their
group (``tasks.pods``: sorted pod UIDs; koordlet adds the pods' task ids, the actuator does that). A pod's
class is ``podmeta.qos_on_node``: a Guaranteed pod without a QoS label is LSR only when the node's kubelet
runs the ``static`` CPU manager policy, else LS.

A pod with the annotation ``node.koordinator.sh/resctrl`` (v1.6; koordlet's resctrl runtime hook,
``apiext.ResctrlConfig``: ``{"llc": {"schemata": {"range": [start, end]}}, "mb": {"schemata": {"percent":
p}}}``) is left out of its class's group and gets its own group (``pod/<uid>``, the agent's
``koordlet-<uid>``) with that range (default 0-100) and percent (default 100), whatever its class's
``enable``; an annotation that does not parse, or a range outside 0 <= start < end <= 100, leaves the pod in
no group (``schemataPerCache`` is not read).

A pod group planned before and not planned now (its pod left the node, or its annotation went away or
stopped parsing) is removed: ``group.remove = 1`` on its target, once. koordlet removes it when the sandbox
is removed and garbage-collects groups of pods it no longer has (``RemoveUnusedResctrlPath``); here the
removal is part of the plan, so it is in the actuation log and a replay of the inbox gives the same removals,
where an agent-side collection would depend on what the host held when it ran.

The agent turns percents into the host's bit masks:
``startWay = ceil(ways * start / 100)``, ``endWay = ceil(ways * end / 100)``,
``mask = (1 << endWay) - (1 << startWay)`` (``l3_mask``), and rounds MBA up to a multiple of 10 on Intel.
"""

from __future__ import annotations

import json
import math
from types import MappingProxyType

from streams.actuation import (
    GROUP_REMOVE, L3_END, L3_START, MB_PERCENT, MECHANISM_RESCTRL, QOS_GROUPS, TARGET_POD, TARGET_QOS, TASKS_PODS,
)
from streams.koordinator.annotations import ANNOTATION_RESCTRL
from streams.koordinator.classes import QOS_BE, QOS_LS, QOS_LSE, QOS_LSR
from streams.nodeqos.framework import Plan, Setting, Snapshot
from streams.nodeqos.podmeta import cpu_manager_policy, qos_on_node

NAME = "Resctrl"
REASON_BAD_ANNOTATION = "resctrl annotation does not parse"
GROUP_OF_QOS = {QOS_LSE: QOS_LSR, QOS_LSR: QOS_LSR, QOS_LS: QOS_LS, QOS_BE: QOS_BE}
REMOVED = MappingProxyType({GROUP_REMOVE: "1"})


def l3_mask(cbm: int, start: int, end: int) -> str:
    """``CalculateCatL3MaskValue``: the hex mask of [start, end) percent of the ways of ``cbm``."""
    if cbm <= 0 or (cbm + 1) & cbm:
        raise ValueError(f"illegal cbm {cbm:#x}")
    if start < 0 or end > 100 or end <= start:
        raise ValueError(f"illegal l3 cat percent: start {start}, end {end}")
    ways = cbm.bit_length()
    start_way, end_way = math.ceil(ways * start / 100), math.ceil(ways * end / 100)
    return format((1 << end_way) - (1 << start_way), "x")


def pod_schemata(annotation: str) -> tuple[int, int, int] | None:
    """(l3 start, l3 end, mb percent) of a pod's resctrl annotation; None when it is not usable."""
    try:
        raw = json.loads(annotation)
        if not isinstance(raw, dict):
            return None
        llc = ((raw.get("llc") or {}).get("schemata") or {})
        mb = ((raw.get("mb") or {}).get("schemata") or {})
        start, end = (llc.get("range") or [0, 100])[:2]
        percent = mb.get("percent") or 100
    except (ValueError, AttributeError, TypeError):
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end, percent)):
        return None
    if not 0 <= start < end <= 100 or not 0 < percent <= 100:
        return None
    return start, end, percent


class Resctrl:
    name = NAME

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled

    def plan(self, snapshot: Snapshot) -> Plan:
        if not self.enabled:
            return Plan()
        strategy = snapshot.strategy.qos
        policy = cpu_manager_policy(snapshot.node.annotations)
        members: dict[str, list[str]] = {group: [] for group in QOS_GROUPS}
        settings = []
        for key in sorted(snapshot.pods):
            pod = snapshot.pods[key]
            if not pod.uid:
                continue
            annotation = pod.annotation(ANNOTATION_RESCTRL)
            if annotation is not None:
                schemata = pod_schemata(annotation)
                if schemata is not None:
                    settings.append(Setting(TARGET_POD, pod.uid, MECHANISM_RESCTRL, {
                        L3_START: str(schemata[0]), L3_END: str(schemata[1]), MB_PERCENT: str(schemata[2]),
                        TASKS_PODS: pod.uid}))
                continue
            qos = qos_on_node(pod, policy)
            group = GROUP_OF_QOS.get(qos)
            if group is not None and strategy.of(qos).resctrl.enable:
                members[group].append(pod.uid)
        groups = [Setting(TARGET_QOS, group, MECHANISM_RESCTRL, {
            L3_START: str(resctrl.cat_range_start_percent), L3_END: str(resctrl.cat_range_end_percent),
            MB_PERCENT: str(resctrl.mba_percent), TASKS_PODS: ",".join(sorted(members[group]))})
            for group in QOS_GROUPS for resctrl in (strategy.of(group).resctrl,)]
        return Plan(tuple(groups + settings + removed_groups(snapshot, {s.target_id for s in settings})))


def removed_groups(snapshot: Snapshot, planned: set[str]) -> list[Setting]:
    """``group.remove`` for each pod group emitted before (``snapshot.previous``) that is not in ``planned``
    and was not removed already, by pod UID."""
    return [Setting(TARGET_POD, target_id, MECHANISM_RESCTRL, REMOVED)
            for (kind, target_id, mechanism), values in sorted(snapshot.previous.items())
            if kind == TARGET_POD and mechanism == MECHANISM_RESCTRL and target_id not in planned
            and values != REMOVED]
