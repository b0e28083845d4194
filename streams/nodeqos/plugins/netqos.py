"""Network QoS: bandwidth classes L0/L1/L2 of terway-qos (and the ``tc`` policy), per node and per pod.

koordlet's runtime hook ``terwayqos`` (``terwayqos.go``, ``types.go``) and ``tc/helper.go``:

- total = ``system-config`` ``totalNetworkBandwidth`` (bits/s). Under ``netQOSPolicy: terway-qos`` the node
  setting is always written (``total_bps``, and 0 for a disabled class); under ``tc`` (the default) only when
  the total is known (> 0) and a class has ``networkQOS.enable``.
- Classes: LS -> ``L1`` (terway's ``offline_l1``), BE -> ``L2`` (``offline_l2``); ``L0`` (SYSTEM, prio 0) is
  not shaped. ``<class>.request_bps`` <- ``egressRequest``, ``<class>.limit_bps`` <- ``egressLimit`` of the
  class when enabled, else 0 (tc shapes egress; the contract has no ingress class settings).
- Values: a string is a bandwidth quantity in bits/s, rejected when above the total; an integer is a percent
  of the total, ``total * pct / 100``; unset is 0. Everything is in **bits** per second; terway's file holds
  bytes (/8), the actuator converts (terway's own percent form skips the /8, a quirk of its byte units that
  bits do not have).
- Pods: while the node's classes are in force (the node setting above is planned), every pod of the node that
  its latest NodeMetric reports running (so the kubelet has given it its address before the agent needs it) gets
  ``pod/<uid>`` ``tc`` with its ``priority`` (SYSTEM 0; LSE/LSR/LS 1; BE 2; else by Kubernetes QoS:
  Guaranteed/Burstable 1, BestEffort 2, unknown 0), as terway-qos lists every pod in its pod file; limits only
  where the annotation ``koordinator.sh/networkQOS`` gives them (``{"ingressLimit": "...", "egressLimit":
  "..."}``, keys matched case-insensitively as Go's JSON decoder does): ``ingress.limit_bps`` /
  ``egress.limit_bps``. A pod whose annotation does not parse is left out, as terway-qos skips it. The
  address the agent classifies by (``status.podIP``) is not planned: the pod gets it after scheduling, and the
  agent resolves it from the pods topic.

A value that does not parse or exceeds the total fails the node file, as terway's ``parseQuantity`` does:
nothing is planned for the node then.
"""

from __future__ import annotations

import json

from streams.actuation import MECHANISM_TC, TARGET_NODE, TARGET_POD, TOTAL_BPS
from streams.koordinator.annotations import ANNOTATION_NETWORK_QOS
from streams.koordinator.classes import (
    KUBE_BEST_EFFORT, KUBE_BURSTABLE, KUBE_GUARANTEED, QOS_BE, QOS_LS, QOS_LSE, QOS_LSR, QOS_SYSTEM)
from streams.nodeqos.framework import (
    LIMIT_BPS, NET_EGRESS_LIMIT, NET_INGRESS_LIMIT, NET_PRIORITY, REQUEST_BPS, Plan, Setting, Snapshot,
)
from streams.nodeqos.podmeta import kube_qos, raw_qos
from streams.sloconfig.document import ConfigError
from streams.sloconfig.nodeqos import NET_POLICY_TERWAY, bandwidth_bits

NAME = "NetQoS"
REASON_ABOVE_TOTAL = "bandwidth above totalNetworkBandwidth"
CLASSES = (("L1", QOS_LS), ("L2", QOS_BE))


def bandwidth(value: int | str | None, total: int) -> int:
    """``parseQuantity`` in bits/s: percent of ``total`` for an int, a quantity for a string; ValueError above
    the total."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value * total // 100
    bits = bandwidth_bits(value, "bandwidth")
    if bits > total:
        raise ValueError(f"{REASON_ABOVE_TOTAL}: {value} > {total}")
    return bits


def priority(qos_label: str, kube: str | None) -> int:
    if qos_label == QOS_SYSTEM:
        return 0
    if qos_label in (QOS_LSE, QOS_LSR, QOS_LS):
        return 1
    if qos_label == QOS_BE:
        return 2
    return {KUBE_GUARANTEED: 1, KUBE_BURSTABLE: 1, KUBE_BEST_EFFORT: 2}.get(kube or "", 0)


def pod_limits(annotation: str) -> tuple[int, int] | None:
    """(ingress, egress) bits/s of ``koordinator.sh/networkQOS``; None when it does not parse."""
    try:
        raw = json.loads(annotation)
        if not isinstance(raw, dict):
            return None
        fields = {key.lower(): value for key, value in raw.items()}
        result = []
        for name in ("ingresslimit", "egresslimit"):
            value = fields.get(name)
            result.append(0 if value is None else bandwidth_bits(str(value), name))
    except (ValueError, ConfigError):
        return None
    return result[0], result[1]


class NetQoS:
    name = NAME

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled

    def plan(self, snapshot: Snapshot) -> Plan:
        if not self.enabled:
            return Plan()
        strategy = snapshot.strategy.qos
        total = snapshot.strategy.system.total_network_bandwidth
        terway = strategy.net_policy == NET_POLICY_TERWAY
        any_enabled = any(strategy.of(qos).network.enable for _, qos in CLASSES)
        if not (terway or (total > 0 and any_enabled)):
            return Plan()
        values = {TOTAL_BPS: str(total)}
        try:
            for name, qos in CLASSES:
                network = strategy.of(qos).network
                request = bandwidth(network.egress_request, total) if network.enable else 0
                limit = bandwidth(network.egress_limit, total) if network.enable else 0
                values[f"{name}{REQUEST_BPS}"] = str(request)
                values[f"{name}{LIMIT_BPS}"] = str(limit)
        except (ValueError, ConfigError):
            return Plan()
        settings = [Setting(TARGET_NODE, snapshot.node.name, MECHANISM_TC, values)]
        running = snapshot.metric.pods if snapshot.metric is not None else {}
        for key in sorted(snapshot.pods):
            pod = snapshot.pods[key]
            if not pod.uid or key not in running:
                continue
            pod_values = {NET_PRIORITY: str(priority(raw_qos(pod.labels), kube_qos(pod.qos, pod.labels)))}
            annotation = pod.annotation(ANNOTATION_NETWORK_QOS)
            if annotation:
                limits = pod_limits(annotation)
                if limits is None:
                    continue
                pod_values.update({NET_INGRESS_LIMIT: str(limits[0]), NET_EGRESS_LIMIT: str(limits[1])})
            settings.append(Setting(TARGET_POD, pod.uid, MECHANISM_TC, pod_values))
        return Plan(tuple(settings))
