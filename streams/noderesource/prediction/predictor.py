"""Koordinator's ProdReclaimable predictors (``pkg/koordlet/prediction/peak_predictor.go``).

With ``k = (100 + safetyMarginPercent) / 100`` (1.1 by default), p95 for cpu and
p98 for memory, over the pods whose priority class with default is koord-prod
or None ("reclaimable for Prod"):

- ``PodReclaimablePredictor`` — per pod: a pod younger than the cold start
  (24 h) reclaims nothing and its request counts in the peak; a terminating
  pod is skipped; a pod without prediction reclaims nothing, counts its
  request in the peak and is an error; otherwise ``peak = k * (p95 cpu, p98
  memory)`` is unreclaimable and ``max(request - peak, 0)`` reclaimable.
  ``result = min(max(nodeAllocatable - Σ unreclaimable, 0), Σ reclaimable)``,
  ``peak = Σ unreclaimable + Σ unpredicted requests``.
- ``PriorityReclaimablePredictor`` — node items: ``unreclaimable = k * (sys +
  Σ_{prod, none} class)`` (p95 cpu, p98 memory; one multiplication of the
  sum), ``reclaimable = max(Σ requests - unreclaimable, 0)``, ``result =
  min(max(nodeAllocatable - unreclaimable, 0), reclaimable)``, ``peak =
  unreclaimable``. A missing sys or class prediction is an error.
- ``MinPredictor`` — both of the above: ``result`` is the per-resource minimum,
  ``peak`` (ProdPeak) the per-resource maximum. Adding a pod stops at the
  first predictor that fails, so a pod without prediction never reaches the
  priority predictor (Koordinator's loop returns early; kept).

``node_allocatable`` is the node's raw allocatable
(``node.koordinator.sh/raw-allocatable`` when present). cpu in milli-cores,
memory in bytes; products truncate toward zero (``MultiplyMilliQuant``,
``MultiplyQuant``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from streams.koordinator.classes import KNOWN_PRIORITY_CLASSES, PRIORITY_NONE, PRIORITY_PROD
from streams.noderesource.quantities import multiply, multiply_milli

SYSTEM_ITEM = "sys"
"""``SystemItemID``: node usage minus the usage of all pods."""
RECLAIMABLE_CLASSES = (PRIORITY_PROD, PRIORITY_NONE)
"""``isPriorityClassReclaimableForProd``."""


class PredictionError(Exception):
    pass


@dataclasses.dataclass(frozen=True, slots=True)
class Prediction:
    """The two percentiles of a model the predictors read (koordlet's ``Result`` has p60 ... max)."""

    cpu_p95: int
    """milli-cores: ``int64(Percentile(0.95) * 1000)`` of the cpu histogram (cores)."""
    memory_p98: int
    """bytes: ``int64(Percentile(0.98))`` of the memory histogram."""


@dataclasses.dataclass(frozen=True, slots=True)
class PredictedPod:
    key: str
    request: tuple[int, int]
    priority_class: str
    """With default."""
    created_ms: int
    terminating: bool = False


def _min(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return min(a[0], b[0]), min(a[1], b[1])


class PodReclaimablePredictor:
    name = "podReclaimablePredictor"

    def __init__(self, predictions: Callable[[str], Prediction | None], node_allocatable: tuple[int, int],
                 now_ms: int, cold_start_ms: int, safety_margin_percent: int) -> None:
        self.predictions = predictions
        self.node_allocatable = node_allocatable
        self.now_ms = now_ms
        self.cold_start_ms = cold_start_ms
        self.factor = float(100 + safety_margin_percent) / 100
        self.reclaimable = [0, 0]
        self.unreclaimable = [0, 0]
        self.unpredicted = [0, 0]
        self.pods: set[str] = set()

    def add_pod(self, pod: PredictedPod) -> None:
        if pod.priority_class not in RECLAIMABLE_CLASSES:
            return
        if pod.key in self.pods:
            raise PredictionError(f"pod {pod.key} already exist in the pod reclaimable predictor")
        self.pods.add(pod.key)
        if self.now_ms - pod.created_ms <= self.cold_start_ms:
            self.unpredicted[0] += pod.request[0]
            self.unpredicted[1] += pod.request[1]
            return
        if pod.terminating:
            return
        prediction = self.predictions(pod.key)
        if prediction is None:
            self.unpredicted[0] += pod.request[0]
            self.unpredicted[1] += pod.request[1]
            raise PredictionError(f"UID {pod.key} not found in predict server")
        peak_cpu = multiply_milli(prediction.cpu_p95, self.factor)
        peak_memory = multiply(prediction.memory_p98, self.factor)
        self.unreclaimable[0] += peak_cpu
        self.unreclaimable[1] += peak_memory
        self.reclaimable[0] += max(pod.request[0] - peak_cpu, 0)
        self.reclaimable[1] += max(pod.request[1] - peak_memory, 0)

    def result(self) -> tuple[int, int]:
        free = (max(self.node_allocatable[0] - self.unreclaimable[0], 0),
                max(self.node_allocatable[1] - self.unreclaimable[1], 0))
        return _min(free, (self.reclaimable[0], self.reclaimable[1]))

    def peak(self) -> tuple[int, int]:
        return self.unreclaimable[0] + self.unpredicted[0], self.unreclaimable[1] + self.unpredicted[1]


class PriorityReclaimablePredictor:
    name = "priorityReclaimablePredictor"

    def __init__(self, item_predictions: Callable[[str], Prediction | None], node_allocatable: tuple[int, int],
                 safety_margin_percent: int) -> None:
        self.item_predictions = item_predictions
        self.node_allocatable = node_allocatable
        self.factor = float(100 + safety_margin_percent) / 100
        self.reclaim_request = [0, 0]

    def add_pod(self, pod: PredictedPod) -> None:
        if pod.priority_class not in RECLAIMABLE_CLASSES or pod.terminating:
            return
        self.reclaim_request[0] += pod.request[0]
        self.reclaim_request[1] += pod.request[1]

    def unreclaimable(self) -> tuple[int, int]:
        system = self.item_predictions(SYSTEM_ITEM)
        if system is None:
            raise PredictionError("failed to get prediction of sys")
        cpu, memory = system.cpu_p95, system.memory_p98
        for priority_class in KNOWN_PRIORITY_CLASSES:
            if priority_class not in RECLAIMABLE_CLASSES:
                continue
            prediction = self.item_predictions(priority_class)
            if prediction is None:
                raise PredictionError(f"failed to get prediction of priority {priority_class}")
            cpu += prediction.cpu_p95
            memory += prediction.memory_p98
        return multiply_milli(cpu, self.factor), multiply(memory, self.factor)

    def result(self) -> tuple[int, int]:
        unreclaimable = self.unreclaimable()
        reclaimable = (max(self.reclaim_request[0] - unreclaimable[0], 0),
                       max(self.reclaim_request[1] - unreclaimable[1], 0))
        free = (max(self.node_allocatable[0] - unreclaimable[0], 0),
                max(self.node_allocatable[1] - unreclaimable[1], 0))
        return _min(free, reclaimable)

    def peak(self) -> tuple[int, int]:
        return self.unreclaimable()


class MinPredictor:
    name = "minPredictor"

    def __init__(self, *predictors) -> None:
        self.predictors = predictors

    def add_pod(self, pod: PredictedPod) -> None:
        for predictor in self.predictors:
            try:
                predictor.add_pod(pod)
            except PredictionError as err:
                raise PredictionError(f"failed to add pod ({pod.key}) to {predictor.name}. error: {err}") from None

    def result(self) -> tuple[int, int]:
        results = [predictor.result() for predictor in self.predictors]
        minimal = results[0]
        for result in results[1:]:
            minimal = _min(minimal, result)
        return minimal

    def peak(self) -> tuple[int, int]:
        peaks = [predictor.peak() for predictor in self.predictors]
        return max(p[0] for p in peaks), max(p[1] for p in peaks)


def prod_reclaimable(pods: list[PredictedPod], pod_predictions: Callable[[str], Prediction | None],
                     item_predictions: Callable[[str], Prediction | None], node_allocatable: tuple[int, int],
                     now_ms: int, cold_start_ms: int,
                     safety_margin_percent: int) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """(ProdReclaimable, ProdPeak) as koordlet reports them; None where the predictor fails.

    koordlet adds every pod that has metrics, ignores add errors, and reports an empty
    ``prodReclaimableMetric`` when the result fails.
    """
    predictor = MinPredictor(
        PodReclaimablePredictor(pod_predictions, node_allocatable, now_ms, cold_start_ms, safety_margin_percent),
        PriorityReclaimablePredictor(item_predictions, node_allocatable, safety_margin_percent))
    for pod in pods:
        try:
            predictor.add_pod(pod)
        except PredictionError:
            pass
    try:
        result = predictor.result()
    except PredictionError:
        result = None
    try:
        peak = predictor.peak()
    except PredictionError:
        peak = None
    return result, peak
