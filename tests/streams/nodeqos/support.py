"""Builders for node-QoS tests: pods, snapshots and configs as Koordinator's tests write them."""

from __future__ import annotations

import dataclasses
import json

from streams.nodeqos.framework import Snapshot
from streams.noderesource.views import PodView
from streams.sloconfig.configmap import DEFAULT_CONFIG, parse_slo_config
from streams.sloconfig.nodeqos import NodeQoSStrategy
from tests.streams.noderesource.support import G, NOW, host_app, metric, node, pod_usage

__all__ = ["G", "NOW", "host_app", "metric", "node", "pod", "pod_usage", "qos_strategy", "snapshot", "slo"]


def pod(qos: str, uid: str | None = None, *, cpu: int = 0, memory: int = 0, limit_cpu: int = 0, batch_cpu: int = 0,
        priority: int | None = None, labels: dict | None = None, annotations: dict | None = None) -> PodView:
    labels = dict(labels or {})
    return PodView(cpu, memory, "", qos, NOW, (), uid, limit_cpu, batch_cpu, priority,
                   tuple(sorted(labels.items())), tuple(sorted((annotations or {}).items())))


def slo(**keys: object):
    """An SloConfig from ConfigMap data keys given as Python objects (dumped to JSON)."""
    data = {key.replace("_", "-"): json.dumps(value) for key, value in keys.items()}
    record = {"metadata": {"name": "slo-controller-config", "namespace": "koordinator-system"}, "data": data}
    return parse_slo_config(record, DEFAULT_CONFIG)


def qos_strategy(labels: dict | None = None, **keys: object) -> NodeQoSStrategy:
    return slo(**keys).qos.for_node(labels or {})


def snapshot(strategy: NodeQoSStrategy | None = None, *, cpu: int = 20_000, memory: int = 120 * G, pods=None,
             node_metric=None, previous=None, now_ms: int = NOW, last_eviction_ms=None, **node_kwargs) -> Snapshot:
    return Snapshot(node(cpu=cpu, memory=memory, **node_kwargs), dict(pods or {}), node_metric,
                    strategy or NodeQoSStrategy(), now_ms, dict(previous or {}), dict(last_eviction_ms or {}))


def replace(strategy: NodeQoSStrategy, **threshold) -> NodeQoSStrategy:
    return dataclasses.replace(strategy, threshold=dataclasses.replace(strategy.threshold, **threshold))
