"""The node state's binary form: ``dump_state`` and ``load_state``, compact and exact.

Layout (``FORMAT`` marker, three little-endian uint32 lengths, then the node's due time ``NodeState.due_ms``
as a float64, which ``due_ms`` reads without loading the state):

1. static: node, pod table (sorted by key), NUMA zones, the pods' decision marks (``replays.Mark``,
   sorted by key), the node's YARN share (``yarnshare.YarnShare``; null when none) and its Device
   (``views.DeviceView``), each left out when it and those after it are empty (an empty list before one
   that is not), as zlib-compressed JSON; memoised on the state
   (``NodeState.encoded``), so it is encoded again only when one of them changes;
2. dynamic: source offsets, when the node was last published and what, the
   last NodeUsage sent (``usage.Sent``, when one was), the published zone resources, as JSON;
   resources by name, except the few the format interns (``EXTENDED_NAMES``, ``ZONE_NAMES``:
   by their position in these tables, see ``_values``);
3. the NodeMetric packed (``_METRIC_HEADER``, host applications, pod metrics
   named by their position in the pod table);
4. the profile's histograms as packed integers and numpy arrays
   (``prediction.profile.profile_to_bytes``);
5. a zlib-compressed JSON tail: the QoS memory (``planner.QoSMemory``),
   the host-application names and classes of the NodeMetric and, when it
   reports them, its memory policy, cold page bytes and throttled ratios
   (``_metric_extras``); pod UIDs written as their position among the pod
   table's UIDs. States without it load with an empty memory and no extras,
   states without zones load without zones.

``load_state(dump_state(s))`` gives back ``s`` (field by field), and dumping
it again gives the same bytes: the table holds these bytes, and a state is
written back only when they change.

``load_state`` also reads the earlier formats a changelog may still hold: ``KNR2`` stored only the interned
resources (a name the code added would have shifted them), ``KNR1`` in addition had no due time (its states
load as due at once).
"""

from __future__ import annotations

import dataclasses
import json
import struct
import zlib
from collections.abc import Mapping
from types import MappingProxyType

from streams.koordinator.classes import KNOWN_PRIORITY_CLASSES, PRIORITY_CODES, QOS_BY_CODE, QOS_CODES
from streams.koordinator.resources import BATCH_CPU, BATCH_MEMORY, MID_CPU, MID_MEMORY
from streams.nodeaggregate.node import NodeState
from streams.nodeaggregate.replays import Mark
from streams.nodeaggregate.usage import Sent
from streams.nodeqos.planner import QoSMemory
from streams.noderesource.prediction.profile import profile_from_bytes, profile_to_bytes
from streams.noderesource.reconcile import Published
from streams.noderesource.yarnshare import YarnShare
from streams.noderesource.views import (
    DeviceView, HostAppMetric, MetricView, PodTable, PodView, Zone, build_node_view)

FORMAT = b"KNR3"
_HEADER = struct.Struct("<IIId")
_KNR2 = b"KNR2"
"""The previous format: the same layout, without resources stored by name."""
_KNR1, _KNR1_HEADER = b"KNR1", struct.Struct("<III")
EXTENDED_NAMES = (BATCH_CPU, BATCH_MEMORY, MID_CPU, MID_MEMORY)
"""The extended resources the format stores by position (``KNR2``'s), whatever names
``koordinator.resources`` lists. Part of the format: never reordered; a name appended needs a new
``FORMAT`` (older readers would drop its value), and the states written before still load."""
ZONE_NAMES = (BATCH_CPU, BATCH_MEMORY)
"""The zone resources the format stores by position (``KNR2``'s); as ``EXTENDED_NAMES``."""
_NO_PRIORITY = 255
"""Code of a pod or host-application metric without priority class (or with a name Koordinator does not know,
which every calculation treats alike)."""


def _static_section(state: NodeState) -> tuple[bytes, list[str]]:
    """The compressed node and pod table, and the sorted pod keys the other sections index into."""
    if state.encoded:
        return state.encoded[0], state.encoded[1]
    keys = sorted(state.pods)
    node = state.node
    node_json = None if node is None else [node.name, node.capacity, node.allocatable, node.labels, node.annotations]
    pods_json = [[key, p.request_cpu, p.request_memory, PRIORITY_CODES[p.priority_class], QOS_CODES[p.qos],
                  p.since_ms, list(p.numa_nodes), p.uid, p.limit_cpu, p.request_batch_cpu, p.priority,
                  dict(p.labels), dict(p.annotations),
                  *([p.cpuset, p.request_batch_memory] if p.request_batch_memory else [p.cpuset] if p.cpuset else [])]
                 for key in keys for p in (state.pods[key],)]
    static = [node_json, pods_json]
    device = state.device
    if state.zones or state.decided or state.yarn or device:
        static.append([[zone.name, zone.cpu, zone.memory] for zone in state.zones])
    if state.decided or state.yarn or device:
        static.append([[key, mark.stream, mark.offset, mark.timestamp, *([mark.deleted_uid] * bool(mark.deleted_uid))]
                       for key, mark in sorted(state.decided.items())])
    if state.yarn or device:
        static.append(state.yarn.to_json() if state.yarn else None)
    if device:
        static.append(device.to_json())
    data = zlib.compress(json.dumps(static, separators=(",", ":")).encode(), 6)
    state.encoded[:] = [data, keys]
    return data, keys


_METRIC_HEADER = "<Bq6qHH"
_POD_METRIC = "<HiqB"
"""Pod index, cpu milli-cores (int32: up to 2 million cores), memory bytes, priority code."""
_POD_METRIC_SIZE = struct.calcsize(_POD_METRIC)


def _priority_code(name: str | None) -> int:
    return _NO_PRIORITY if name is None else PRIORITY_CODES.get(name, _NO_PRIORITY)


def _metric_section(metric: MetricView | None, index: Mapping[str, int]) -> tuple[bytes, list[str]]:
    """The NodeMetric packed; pods named by their index in the pod table, others listed by key."""
    if metric is None:
        return b"\x00", []
    flags = 1 | (2 if metric.node_usage is not None else 0) | (4 if metric.prod_reclaimable is not None else 0)
    node_usage = metric.node_usage or (0, 0)
    reclaimable = metric.prod_reclaimable or (0, 0)
    parts = [struct.pack(_METRIC_HEADER, flags, -1 if metric.update_time_ms is None else metric.update_time_ms,
                         *node_usage, *metric.system_usage, *reclaimable, len(metric.host_apps), len(metric.pods))]
    parts.extend(struct.pack("<Bqq", _priority_code(app.priority), app.cpu, app.memory) for app in metric.host_apps)
    others = []
    for key, (cpu, memory, priority) in metric.pods.items():
        position = index.get(key)
        if position is None:
            position = 0x8000 | len(others)
            others.append(key)
        parts.append(struct.pack(_POD_METRIC, position, cpu, memory, _priority_code(priority)))
    return b"".join(parts), others


def _values(resources: Mapping[str, int], names: tuple[str, ...]) -> list:
    """The values of ``resources`` in the order of the interned ``names`` (null: not there), then, when it
    holds others, an object of them by name (sorted): an interned name costs no bytes, any other keeps
    its value."""
    values = [resources.get(name) for name in names]
    if len(resources) > len(names) - values.count(None):
        values.append({name: resources[name] for name in sorted(resources) if name not in names})
    return values


def _resources(values: list, names: tuple[str, ...]) -> dict[str, int]:
    """The resources ``_values`` wrote (a list shorter than ``names`` was written before the last of them
    were interned)."""
    others = values[-1] if values and isinstance(values[-1], dict) else None
    interned = values if others is None else values[:-1]
    resources = {name: value for name, value in zip(names, interned) if value is not None}
    if others:
        resources.update(others)
    return resources


def dump_state(state: NodeState) -> bytes:
    """Compact bytes of the state; ``load_state`` gives it back exactly."""
    static, keys = _static_section(state)
    index = {key: position for position, key in enumerate(keys)}
    metric, other_keys = _metric_section(state.metric, index)
    published = state.published
    dynamic_json = [state.sources, published.synced_ms, _values(published.extended, EXTENDED_NAMES),
                    dict(published.annotations), other_keys]
    if state.usage_sent is not None:
        dynamic_json.append(state.usage_sent.to_json(state.metric.update_time_ms if state.metric else None))
    if published.zones or published.zones_synced_ms is not None:
        zones = {zone: _values(values, ZONE_NAMES) for zone, values in published.zones.items()}
        dynamic_json += [zones, published.zones_synced_ms]
    dynamic = json.dumps(dynamic_json, separators=(",", ":")).encode()
    profile = profile_to_bytes(state.profile, index)
    apps = [[app.name, app.qos] for app in state.metric.host_apps] if state.metric is not None else []
    extras = _metric_extras(state.metric)
    tail = b""
    if state.qos != QoSMemory() or any(name or qos for name, qos in apps) or extras:
        uids = _uids(state.pods)
        memory = state.qos.to_json({uid: position for position, uid in enumerate(uids)})
        tail = zlib.compress(json.dumps([memory, apps, *([extras] if extras else [])],
                                        separators=(",", ":")).encode(), 9)
    return b"".join((FORMAT, _HEADER.pack(len(static), len(dynamic), len(metric), state.due_ms),
                     static, dynamic, metric, profile, tail))


def _metric_extras(metric: MetricView | None) -> list:
    """The NodeMetric's memory policy, node cold page bytes, and pod cold page bytes and throttled ratios
    (sorted by pod key); empty when it reports none of them."""
    if metric is None or (metric.memory_policy is None and metric.cold_page_bytes is None
                          and not metric.pod_cold_page_bytes and not metric.throttled_ratio):
        return []
    return [metric.memory_policy, metric.cold_page_bytes, sorted(metric.pod_cold_page_bytes.items()),
            sorted(metric.throttled_ratio.items())]


def _load_metric(data: bytes, offset: int, keys: list[str], other_keys: list[str]) -> MetricView | None:
    if data[offset] == 0:
        return None
    flags, update, usage_cpu, usage_memory, system_cpu, system_memory, reclaim_cpu, reclaim_memory, apps, pods = \
        struct.unpack_from(_METRIC_HEADER, data, offset)
    offset += struct.calcsize(_METRIC_HEADER)
    names = {code: name for name, code in PRIORITY_CODES.items()}
    host_apps = []
    for _ in range(apps):
        code, cpu, memory = struct.unpack_from("<Bqq", data, offset)
        offset += 17
        host_apps.append(HostAppMetric(names.get(code), cpu, memory))
    pod_metrics = {}
    for _ in range(pods):
        position, cpu, memory, code = struct.unpack_from(_POD_METRIC, data, offset)
        offset += _POD_METRIC_SIZE
        key = other_keys[position & 0x7FFF] if position & 0x8000 else keys[position]
        pod_metrics[key] = (cpu, memory, names.get(code))
    return MetricView(
        update_time_ms=None if update < 0 else update,
        node_usage=(usage_cpu, usage_memory) if flags & 2 else None,
        system_usage=(system_cpu, system_memory),
        host_apps=tuple(host_apps),
        prod_reclaimable=(reclaim_cpu, reclaim_memory) if flags & 4 else None,
        pods=pod_metrics,
    )


def _uids(pods: Mapping[str, PodView]) -> list[str]:
    """The pods' UIDs, sorted: the QoS memory names pod targets by position in this list (the pod table
    already holds the UIDs)."""
    return sorted({pod.uid for pod in pods.values() if pod.uid})


def _pod_view(entry: list) -> PodView:
    """A pod-table entry: seven fields, thirteen with what the node-QoS plan reads (UID, cpu limit, batch-cpu
    request, spec priority, labels, annotations), fourteen when the pod has a pinned cpuset, fifteen when it
    requests batch-memory (``yarnshare``); missing fields load with their defaults."""
    _, cpu, memory, priority, qos, since, numa, *more = entry
    uid, limit_cpu, batch_cpu, spec_priority, labels, annotations, *pinned = more or (None, 0, 0, None, {}, {})
    return PodView(cpu, memory, KNOWN_PRIORITY_CLASSES[priority], QOS_BY_CODE[qos], since, tuple(numa), uid, limit_cpu,
                   batch_cpu, spec_priority, tuple(sorted(labels.items())), tuple(sorted(annotations.items())),
                   pinned[0] if pinned else "", pinned[1] if len(pinned) > 1 else 0)


def due_ms(data: bytes) -> float:
    """``NodeState.due_ms`` of the state ``data``, read from its header alone."""
    return _HEADER.unpack_from(data, 4)[3] if data[:4] in (FORMAT, _KNR2) else 0


def load_state(data: bytes) -> NodeState:
    if data[:4] in (FORMAT, _KNR2):
        static_length, dynamic_length, metric_length, due = _HEADER.unpack_from(data, 4)
        start = 4 + _HEADER.size
    elif data[:4] == _KNR1:
        (static_length, dynamic_length, metric_length), due = _KNR1_HEADER.unpack_from(data, 4), 0
        start = 4 + _KNR1_HEADER.size
    else:
        raise ValueError("not a node-aggregate state (bad format marker)")
    offset = start
    node_json, pods_json, *extra_json = json.loads(zlib.decompress(data[offset:offset + static_length]))
    offset += static_length
    sources, synced, extended, annotations, other_keys, *zones_published = \
        json.loads(data[offset:offset + dynamic_length])
    usage_sent = zones_published.pop(0) if zones_published and isinstance(zones_published[0], list) else None
    offset += dynamic_length
    keys = [entry[0] for entry in pods_json]
    metric = _load_metric(data, offset, keys, other_keys)
    offset += metric_length
    profile, offset = profile_from_bytes(data, offset, keys)
    pods = PodTable((entry[0], _pod_view(entry)) for entry in pods_json)
    qos_memory = QoSMemory()
    if offset < len(data):
        memory_json, apps, *extras = json.loads(zlib.decompress(data[offset:]))
        qos_memory = QoSMemory.from_json(memory_json, _uids(pods))
        if metric is not None:
            metric = dataclasses.replace(metric, host_apps=tuple(
                dataclasses.replace(app, name=name, qos=qos) for app, (name, qos) in zip(metric.host_apps, apps)))
        if metric is not None and extras:
            policy, cold, pod_cold, throttled = extras[0]
            metric = dataclasses.replace(metric, memory_policy=policy, cold_page_bytes=cold,
                                         pod_cold_page_bytes=dict(pod_cold), throttled_ratio=dict(throttled))
    node = None if node_json is None else build_node_view(*node_json)
    zones = tuple(Zone(*entry) for entry in extra_json[0]) if extra_json else ()
    decided = {entry[0]: Mark(*entry[1:]) for entry in extra_json[1]} if len(extra_json) > 1 else {}
    yarn = YarnShare.from_json(extra_json[2]) if len(extra_json) > 2 and extra_json[2] is not None else None
    device = DeviceView.from_json(extra_json[3]) if len(extra_json) > 3 else None
    published_zones, zones_synced = zones_published or ({}, None)
    published = Published(synced, MappingProxyType(_resources(extended, EXTENDED_NAMES)),
                          MappingProxyType(annotations),
                          MappingProxyType({zone: _resources(values, ZONE_NAMES)
                                            for zone, values in published_zones.items()}), zones_synced)
    if usage_sent is not None:
        usage_sent = Sent.from_json(usage_sent, metric.update_time_ms if metric else None)
    state = NodeState(sources, node, zones, pods, metric, profile, published, qos_memory, due, usage_sent, decided,
                      yarn, device)
    state.encoded[:] = [data[start:start + static_length], keys]
    return state
