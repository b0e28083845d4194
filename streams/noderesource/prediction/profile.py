"""The node profile: koordlet's prediction models for one node, trained from its NodeMetrics.

Koordinator's koordlet trains, every ``TrainingInterval`` (1 min), one CPU and
one memory decaying histogram per model (``predict_server.go``):

- one per pod, with the pod's last usage;
- the node items: each priority class (sum of its pods' usage, 0 when it has
  none), the node (node usage), and ``sys`` = max(node usage - Σ pods, 0);

CPU histograms are exponential from 0.025 core, ratio 1.05, up to 1024 cores
(158 buckets), half-life 12 h; memory from 5 MiB, ratio 1.05, up to 2 TiB
(205 buckets), half-life 24 h; epsilon 1e-4. Models not updated for 30 min
are dropped. The predictors then read p95 (cpu) and p98 (memory).

koordstream trains the same models from the NodeMetric records (a report is
already an average over the report interval, so one report is one sample),
at most once per training interval of event time (the first report in each
interval window trains). It keeps only what the predictors read, which keeps
the state bounded: the node items (``node``, ``sys`` and the five priority
classes) and the pods whose class with default is koord-prod or None; a pod's
model goes when the pod is released or after 30 min without a sample. At most
``MAX_POD_SLOTS`` pods of a node have a model; further pods count as
"no prediction" (their request goes into the peak, as for a cold pod).
"""

from __future__ import annotations

import dataclasses
import math
import struct
from collections.abc import Mapping

import numpy as np

from streams.koordinator.classes import (
    KNOWN_PRIORITY_CLASSES, PRIORITY_CODES, PRIORITY_NONE, PRIORITY_PROD, priority_class_by_name,
)
from streams.noderesource.prediction.histogram import ExponentialHistogramOptions, Family, HistogramSet
from streams.noderesource.views import MetricView, NodeView, PodTable, PodView

MIN_SAMPLE_WEIGHT = 0.1
EPSILON = 0.001 * MIN_SAMPLE_WEIGHT
"""``epsilon``: the smallest weight a histogram keeps."""
CPU_OPTIONS = ExponentialHistogramOptions(1024, 0.025, 1.05, EPSILON)
"""``defaultCPUHistogram``: cores."""
MEMORY_OPTIONS = ExponentialHistogramOptions(float(1 << 41), float(5 << 20), 1.05, EPSILON)
"""``defaultMemoryHistogram``: bytes."""

NODE_SLOT, SYSTEM_SLOT = 0, 1
CLASS_SLOTS = {name: 2 + code for name, code in PRIORITY_CODES.items()}
"""Slot of each priority-class item, in ``KNOWN_PRIORITY_CLASSES`` order."""
FIRST_POD_SLOT = 2 + len(KNOWN_PRIORITY_CLASSES)
MAX_POD_SLOTS = 256 - FIRST_POD_SLOT
RECLAIMABLE_CLASSES = (PRIORITY_PROD, PRIORITY_NONE)
HOUR_MS = 3_600_000


@dataclasses.dataclass(frozen=True)
class PredictionArgs:
    """koordlet's prediction ``Config`` (``pkg/koordlet/prediction/config.go``) defaults; the histogram
    half-lives are ``CPU_HALF_LIFE_MS`` and ``MEMORY_HALF_LIFE_MS`` (part of a stored profile's format)."""

    cold_start_ms: int = 24 * HOUR_MS
    """A pod younger than this reclaims nothing (its request counts in the peak)."""
    safety_margin_percent: int = 10
    """Peak = percentile * (100 + margin) / 100."""
    training_interval_ms: int = 60_000
    """At most one training per interval window of event time. koordlet trains every minute; a NodeMetric
    already averages ``metricAggregateDurationSeconds`` (300 s), so 300_000 keeps the information and cuts
    the training cost per report by five."""
    model_expiration_ms: int = 30 * 60_000
    """A model without a sample for this long is dropped."""

    def validate(self) -> None:
        for name in ("cold_start_ms", "training_interval_ms", "model_expiration_ms"):
            if getattr(self, name) <= 0:
                raise ValueError(f"prediction: {name} must be positive, got {getattr(self, name)}")
        if self.safety_margin_percent < 0:
            raise ValueError(f"prediction: safety_margin_percent must be >= 0, got {self.safety_margin_percent}")


DEFAULT_PREDICTION_ARGS = PredictionArgs()


CPU_HALF_LIFE_MS = 12 * HOUR_MS
"""``CPUHistogramDecayHalfLife``: CPU samples lose half their weight relative to new ones per 12 h."""
MEMORY_HALF_LIFE_MS = 24 * HOUR_MS
"""``MemoryHistogramDecayHalfLife``."""
FAMILIES = (Family(CPU_OPTIONS, CPU_HALF_LIFE_MS), Family(MEMORY_OPTIONS, MEMORY_HALF_LIFE_MS))
"""The CPU family (cores) and the memory family (bytes) of a node's histograms."""
CPU, MEMORY = 0, 1
PERCENTILES = (0.95, 0.98)
"""What the predictors read: p95 of the CPU histograms, p98 of the memory ones."""


@dataclasses.dataclass(frozen=True, eq=False)
class NodeProfile:
    histograms: HistogramSet = HistogramSet(FAMILIES)
    pod_slots: Mapping[str, tuple[int, int]] = dataclasses.field(default_factory=dict)
    """Pod key -> (slot, time of its last sample)."""
    trained_ms: int | None = None
    """Time of the last training (the node items' last sample)."""
    cache: list = dataclasses.field(default_factory=list, compare=False, repr=False)
    """Memoised predictions per slot; not persisted."""

    def predictions(self) -> dict[int, tuple[int, int]]:
        """slot -> (cpu p95 milli-cores, memory p98 bytes) as ``GetPrediction`` rounds them."""
        if not self.cache:
            family, slots, values = self.histograms.percentile_arrays(PERCENTILES)
            split = int(family.searchsorted(MEMORY))
            cpu_slots, memory_slots = slots[:split].tolist(), slots[split:].tolist()
            cpu_milli = (values[:split] * 1000.0).astype(np.int64).tolist()
            memory = values[split:].astype(np.int64).tolist()
            if cpu_slots == memory_slots:
                self.cache.append(dict(zip(cpu_slots, zip(cpu_milli, memory))))
            else:
                memory_by_slot = dict(zip(memory_slots, memory))
                self.cache.append({slot: (milli, memory_by_slot[slot])
                                   for slot, milli in zip(cpu_slots, cpu_milli) if slot in memory_by_slot})
        return self.cache[0]


def train(profile: NodeProfile, metric: MetricView, pods: Mapping[str, PodView], now_ms: int,
          args: PredictionArgs = DEFAULT_PREDICTION_ARGS) -> NodeProfile:
    """The profile after one training on ``metric``; unchanged when this interval window already trained."""
    interval = args.training_interval_ms
    if profile.trained_ms is not None and now_ms // interval <= profile.trained_ms // interval:
        return profile
    expiration = args.model_expiration_ms
    pod_slots = {key: entry for key, entry in profile.pod_slots.items()
                 if key in pods and now_ms - entry[1] <= expiration}
    used = {slot for slot, _ in pod_slots.values()}
    free = (slot for slot in range(FIRST_POD_SLOT, 256) if slot not in used)
    class_cpu = dict.fromkeys(KNOWN_PRIORITY_CLASSES, 0)
    class_memory = dict.fromkeys(KNOWN_PRIORITY_CLASSES, 0)
    slots: list[int] = []
    cpu_values: list[float] = []
    memory_values: list[float] = []
    all_cpu = all_memory = 0
    for key, (cpu, memory, reported_class) in metric.pods.items():
        pod = pods.get(key)
        priority_class = pod.priority_class if pod is not None else priority_class_by_name(reported_class)
        class_cpu[priority_class] += cpu
        class_memory[priority_class] += memory
        all_cpu += cpu
        all_memory += memory
        if pod is None or priority_class not in RECLAIMABLE_CLASSES:
            continue
        entry = pod_slots.get(key)
        slot = entry[0] if entry is not None else next(free, None)
        if slot is None:
            continue
        pod_slots[key] = (slot, now_ms)
        slots.append(slot)
        cpu_values.append(cpu / 1000.0)
        memory_values.append(memory)
    node_cpu, node_memory = metric.node_usage or (0, 0)
    if metric.node_usage is not None:
        slots.append(NODE_SLOT)
        cpu_values.append(node_cpu / 1000.0)
        memory_values.append(node_memory)
    slots.append(SYSTEM_SLOT)
    cpu_values.append(max(node_cpu / 1000.0 - all_cpu / 1000.0, 0.0))
    memory_values.append(max(float(node_memory) - float(all_memory), 0.0))
    for priority_class, slot in CLASS_SLOTS.items():
        slots.append(slot)
        cpu_values.append(class_cpu[priority_class] / 1000.0)
        memory_values.append(class_memory[priority_class])
    dropped = [slot for key, (slot, _) in profile.pod_slots.items() if key not in pod_slots]
    histograms = profile.histograms.without_slots(dropped).add_samples(
        slots, [np.array(cpu_values), np.array(memory_values, dtype=np.float64)], now_ms)
    return NodeProfile(histograms, pod_slots, now_ms)


def forget_pod(profile: NodeProfile, key: str) -> NodeProfile:
    """The profile without the model of a released pod."""
    entry = profile.pod_slots.get(key)
    if entry is None:
        return profile
    pod_slots = dict(profile.pod_slots)
    del pod_slots[key]
    return NodeProfile(profile.histograms.without_slots([entry[0]]), pod_slots, profile.trained_ms)
def reclaimable_pods(pods: Mapping[str, PodView]) -> list[tuple[str, int, int, int]]:
    """(key, cpu request, memory request, since) of the Prod/None pods (memoised on a ``PodTable``)."""
    if isinstance(pods, PodTable):
        return pods.memo("reclaimable", _reclaimable_pods)
    return _reclaimable_pods(pods)


def _reclaimable_pods(pods: Mapping[str, PodView]) -> list[tuple[str, int, int, int]]:
    return [(key, pod.request_cpu, pod.request_memory, pod.since_ms) for key, pod in pods.items()
            if pod.priority_class in RECLAIMABLE_CLASSES]


def next_prediction_change_ms(profile: NodeProfile, pods: Mapping[str, PodView], metric: MetricView, now_ms: int,
                              args: PredictionArgs = DEFAULT_PREDICTION_ARGS) -> float:
    """The earliest time after ``now_ms`` at which :func:`predict` can answer differently for the same
    inputs: a predicted pod leaving its cold start, a pod model or the priority models expiring."""
    cold_start, expiration = args.cold_start_ms, args.model_expiration_ms
    times = [] if profile.trained_ms is None else [profile.trained_ms + expiration + 1]
    for key, _, _, since_ms in reclaimable_pods(pods):
        if key in metric.pods:
            times.append(since_ms + cold_start + 1)
            entry = profile.pod_slots.get(key)
            if entry is not None:
                times.append(entry[1] + expiration + 1)
    return min((t for t in times if t > now_ms), default=math.inf)


def predict(profile: NodeProfile, node: NodeView, pods: Mapping[str, PodView], metric: MetricView, now_ms: int,
            args: PredictionArgs = DEFAULT_PREDICTION_ARGS) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """(ProdReclaimable, ProdPeak) from the profile, as koordlet would put them in the NodeMetric.

    The arithmetic of ``predictor.prod_reclaimable`` (``MinPredictor`` over the pod and priority
    predictors) written out in one loop, because it runs on every calculation; a test checks the two
    agree. Only pods with a metric in ``metric`` are predicted (koordlet adds the pods it collected
    metrics for). Models without a sample for longer than the expiration count as missing.
    """
    predictions = profile.predictions()
    factor = float(100 + args.safety_margin_percent) / 100
    cold_start, expiration = args.cold_start_ms, args.model_expiration_ms
    pod_slots, metric_pods = profile.pod_slots, metric.pods
    unreclaimable_cpu = unreclaimable_memory = reclaimable_cpu = reclaimable_memory = 0
    unpredicted_cpu = unpredicted_memory = request_cpu = request_memory = 0
    for key, pod_cpu, pod_memory, since_ms in reclaimable_pods(pods):
        if key not in metric_pods:
            continue
        if now_ms - since_ms > cold_start:
            entry = pod_slots.get(key)
            prediction = predictions.get(entry[0]) if entry is not None and now_ms - entry[1] <= expiration else None
            if prediction is None:
                unpredicted_cpu += pod_cpu
                unpredicted_memory += pod_memory
                continue
            peak_cpu = int(float(prediction[0]) * factor)
            peak_memory = int(float(prediction[1]) * factor)
            unreclaimable_cpu += peak_cpu
            unreclaimable_memory += peak_memory
            if pod_cpu > peak_cpu:
                reclaimable_cpu += pod_cpu - peak_cpu
            if pod_memory > peak_memory:
                reclaimable_memory += pod_memory - peak_memory
        else:
            unpredicted_cpu += pod_cpu
            unpredicted_memory += pod_memory
        request_cpu += pod_cpu
        request_memory += pod_memory
    allocatable_cpu, allocatable_memory = node.raw_allocatable
    result = (min(max(allocatable_cpu - unreclaimable_cpu, 0), reclaimable_cpu),
              min(max(allocatable_memory - unreclaimable_memory, 0), reclaimable_memory))
    peak = (unreclaimable_cpu + unpredicted_cpu, unreclaimable_memory + unpredicted_memory)
    items_fresh = profile.trained_ms is not None and now_ms - profile.trained_ms <= expiration
    item_slots = (SYSTEM_SLOT, CLASS_SLOTS[PRIORITY_PROD], CLASS_SLOTS[PRIORITY_NONE])
    if not items_fresh or any(slot not in predictions for slot in item_slots):
        return None, None
    item_cpu = int(float(sum(predictions[slot][0] for slot in item_slots)) * factor)
    item_memory = int(float(sum(predictions[slot][1] for slot in item_slots)) * factor)
    priority_result = (min(max(allocatable_cpu - item_cpu, 0), max(request_cpu - item_cpu, 0)),
                       min(max(allocatable_memory - item_memory, 0), max(request_memory - item_memory, 0)))
    return ((min(result[0], priority_result[0]), min(result[1], priority_result[1])),
            (max(peak[0], item_cpu), max(peak[1], item_memory)))


def profile_to_bytes(profile: NodeProfile, pod_index: Mapping[str, int]) -> bytes:
    """Histograms plus the pod slots, each pod named by its index in ``pod_index``."""
    entries = [(pod_index[key], slot, seen) for key, (slot, seen) in profile.pod_slots.items() if key in pod_index]
    header = struct.pack("<qH", -1 if profile.trained_ms is None else profile.trained_ms, len(entries))
    body = b"".join(struct.pack("<HBq", index, slot, seen) for index, slot, seen in entries)
    return header + body + profile.histograms.to_bytes()


def profile_from_bytes(data: bytes, offset: int, pod_keys: list[str]) -> tuple[NodeProfile, int]:
    trained, count = struct.unpack_from("<qH", data, offset)
    offset += 10
    pod_slots = {}
    for _ in range(count):
        index, slot, seen = struct.unpack_from("<HBq", data, offset)
        offset += 11
        pod_slots[pod_keys[index]] = (slot, seen)
    histograms, offset = HistogramSet.from_bytes(FAMILIES, data, offset)
    return NodeProfile(histograms, pod_slots, None if trained < 0 else trained), offset
