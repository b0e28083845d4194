"""Predictors, ported from Koordinator's ``pkg/koordlet/prediction/peak_predictor_test.go`` (ids: Go test / case).

The mock predict server returns fixed predictions; pods are (key, request, class, created).
"""

from __future__ import annotations

import pytest

from streams.noderesource.prediction.predictor import (
    SYSTEM_ITEM, MinPredictor, PodReclaimablePredictor, PredictedPod, Prediction, PredictionError,
    PriorityReclaimablePredictor, prod_reclaimable,
)
from tests.streams.noderesource.support import Gi, Mi, NOW

HOUR = 3_600_000
MINUTE = 60_000
COLD_START = HOUR

SYS = Prediction(cpu_p95=300, memory_p98=512 * Mi)
PROD = Prediction(cpu_p95=1000, memory_p98=1 * Gi)
POD = Prediction(cpu_p95=500, memory_p98=1 * Gi)
"""TestProdReclaimablePredictor_AddPod: pod p95 {500m, 768Mi}, p98 {1000m, 1Gi}."""

POD1 = PredictedPod("pod-1-uid", (1000, 1 * Gi), "koord-prod", NOW - MINUTE)
"""Cold start."""
POD2 = PredictedPod("pod-2-uid", (2000, 2 * Gi), "koord-prod", NOW - 2 * HOUR)
POD3 = PredictedPod("pod-3-uid", (2000, 2 * Gi), "koord-prod", NOW - 2 * HOUR, terminating=True)
"""No priority: Burstable -> LS -> Prod; being deleted."""


def predictions(table: dict):
    return lambda key: table.get(key)


def min_predictor(node_allocatable, margin=10):
    items = predictions({SYSTEM_ITEM: SYS, "koord-prod": PROD, "koord-batch": Prediction(0, 0), "": Prediction(0, 0)})
    pods = predictions({"pod-1-uid": POD, "pod-2-uid": POD, "pod-3-uid": Prediction(0, 0)})
    return MinPredictor(PodReclaimablePredictor(pods, node_allocatable, NOW, COLD_START, margin),
                        PriorityReclaimablePredictor(items, node_allocatable, margin))


POD_RESULT = (2000 - 550, 2 * Gi - int(1.1 * 1024 * 1024 * 1024))
PRIORITY_RESULT = (3000 - int(1300 * 1.1), 3 * Gi - int(1.1 * 1536 * 1024 * 1024))


@pytest.mark.parametrize("allocatable, pod_result, priority_result", [
    pytest.param((3000, 3 * Gi), POD_RESULT, PRIORITY_RESULT,
                 id="TestProdReclaimablePredictor_AddPod/node_allocatable_==_pods'_requests"),
    pytest.param((8000, 8 * Gi), POD_RESULT, PRIORITY_RESULT,
                 id="TestProdReclaimablePredictor_AddPod/node_allocatable_>_pods'_requests"),
    pytest.param((1000, 1 * Gi), (1000 - 550, 0), (0, 0),
                 id="TestProdReclaimablePredictor_AddPod/node_allocatable_<_pods'_requests"),
])
def test_min_predictor(allocatable, pod_result, priority_result):
    predictor = min_predictor(allocatable)
    for pod in (POD1, POD2, POD3):
        predictor.add_pod(pod)
    pod_predictor, priority_predictor = predictor.predictors
    assert pod_predictor.result() == pod_result
    assert priority_predictor.result() == priority_result
    assert predictor.result() == (min(pod_result[0], priority_result[0]), min(pod_result[1], priority_result[1]))
    pod_peak, priority_peak = pod_predictor.peak(), priority_predictor.peak()
    assert predictor.peak() == (max(pod_peak[0], priority_peak[0]), max(pod_peak[1], priority_peak[1]))


def test_min_predictor_numbers():
    """The same case in numbers: 1450m / 966367642 B (pod predictor wins)."""
    predictor = min_predictor((3000, 3 * Gi))
    for pod in (POD1, POD2, POD3):
        predictor.add_pod(pod)
    assert predictor.result() == (1450, 966_367_642)


TEST_PREDICTION = Prediction(cpu_p95=500, memory_p98=768 * Mi)
"""``testPredictionResult``: p95 {500m, 512Mi}, p98 {800m, 768Mi}."""
POD4 = PredictedPod("pod-4-uid", (2000, 2 * Gi), "koord-batch", NOW - 2 * HOUR)
PEAK_MEMORY = int(1.1 * 768 * 1024 * 1024)


@pytest.mark.parametrize("allocatable, expected", [
    pytest.param((3000, 3 * Gi), (2000 - 550, 2 * Gi - PEAK_MEMORY),
                 id="TestPodReclaimablePredictor/node_allocatable_>_pods'_requests"),
    pytest.param((1000, 1 * Gi), (1000 - 550, 1 * Gi - PEAK_MEMORY),
                 id="TestPodReclaimablePredictor/node_allocatable_<_pods'_requests"),
])
def test_pod_reclaimable_predictor(allocatable, expected):
    predictor = PodReclaimablePredictor(lambda key: TEST_PREDICTION, allocatable, NOW, COLD_START, 10)
    for pod in (POD1, POD2, POD3, POD4):
        predictor.add_pod(pod)
    assert predictor.result() == expected


def test_pod_reclaimable_predictor_get_peak():
    """TestPodReclaimablePredictor_GetPeak: cold-start and prediction-failed pods count by request."""
    cold = PredictedPod("pod-cold-start-uid", (1000, 1 * Gi), "koord-prod", NOW - MINUTE)
    normal = PredictedPod("pod-normal-uid", (2000, 2 * Gi), "koord-prod", NOW - 2 * HOUR)
    failed = PredictedPod("pod-predict-failed-uid", (500, 512 * Mi), "koord-prod", NOW - 2 * HOUR)
    predictor = PodReclaimablePredictor(predictions({"pod-normal-uid": TEST_PREDICTION}), (0, 0), NOW, COLD_START, 10)
    predictor.add_pod(cold)
    predictor.add_pod(normal)
    with pytest.raises(PredictionError):
        predictor.add_pod(failed)
    assert predictor.peak() == (550 + 1000 + 500, PEAK_MEMORY + 1 * Gi + 512 * Mi)


@pytest.mark.parametrize("allocatable, expected", [
    pytest.param((3000, 3 * Gi), (1000 - 800, (2048 - 1536) * Mi),
                 id="Test_priorityReclaimablePredictor/node_allocatable_>_pods'_requests"),
    pytest.param((900, 1 * Gi), (900 - 800, 0), id="Test_priorityReclaimablePredictor/node_allocatable_<_pods'_requests"),
])
def test_priority_reclaimable_predictor(allocatable, expected):
    items = predictions({SYSTEM_ITEM: SYS, "koord-prod": Prediction(500, 1 * Gi), "koord-batch": Prediction(1000, 2 * Gi),
                         "": Prediction(0, 0)})
    predictor = PriorityReclaimablePredictor(items, allocatable, 0)
    predictor.add_pod(PredictedPod("pod-1-uid", (1000, 2048 * Mi), "koord-prod", NOW - MINUTE))
    predictor.add_pod(PredictedPod("pod-2-uid", (0, 0), "koord-batch", NOW - 2 * HOUR))
    assert predictor.result() == expected


def test_pod_without_prediction_never_reaches_the_priority_predictor():
    """minPredictor.AddPod returns at the first failing predictor (Koordinator's loop, kept)."""
    predictor = MinPredictor(PodReclaimablePredictor(lambda key: None, (8000, 8 * Gi), NOW, COLD_START, 10),
                             PriorityReclaimablePredictor(lambda item: Prediction(0, 0), (8000, 8 * Gi), 10))
    with pytest.raises(PredictionError):
        predictor.add_pod(POD2)
    assert predictor.predictors[1].reclaim_request == [0, 0]


def test_prod_reclaimable_reports_nothing_when_an_item_is_missing():
    result, peak = prod_reclaimable([POD2], lambda key: POD, lambda item: None, (8000, 8 * Gi), NOW, COLD_START, 10)
    assert (result, peak) == (None, None)
