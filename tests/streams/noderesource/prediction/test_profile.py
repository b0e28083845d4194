"""The node profile: training from NodeMetrics, bounded models, and ProdReclaimable from them."""

from __future__ import annotations

import random

import pytest

from streams.noderesource.prediction.predictor import SYSTEM_ITEM, PredictedPod, Prediction, prod_reclaimable
from streams.noderesource.prediction.profile import (
    CLASS_SLOTS, CPU_HALF_LIFE_MS, DEFAULT_PREDICTION_ARGS, FIRST_POD_SLOT, MAX_POD_SLOTS, MEMORY_HALF_LIFE_MS,
    NODE_SLOT, SYSTEM_SLOT, NodeProfile, PredictionArgs, forget_pod, predict, profile_from_bytes, profile_to_bytes,
    train,
)
from tests.streams.noderesource.support import Gi, NOW, metric, node, pod, pod_usage

HOUR = 3_600_000
PODS = {"default/prod-a": pod(2000, 4 * Gi, "koord-prod", "LS", since_ms=NOW - 48 * HOUR),
        "default/none-b": pod(1000, 2 * Gi, "", "", since_ms=NOW - 48 * HOUR),
        "default/batch-c": pod(0, 0, "koord-batch", "BE", since_ms=NOW - 48 * HOUR)}


def report(t: int, rng: random.Random, pods=PODS, node_usage=True):
    usages = [pod_usage(*key.split("/"), int(800 * rng.lognormvariate(0, 0.2)), int(1.5 * Gi * rng.lognormvariate(0, 0.05)))
              for key in pods]
    total_cpu = sum(u["usage"]["cpu"] for u in usages) + 300
    total_memory = sum(u["usage"]["memory"] for u in usages) + Gi
    return metric(update_time=t, node_usage={"cpu": total_cpu, "memory": total_memory} if node_usage else None,
                  system_usage={"cpu": 300, "memory": Gi}, pods=usages)


def trained(minutes: int, seed: int = 1, pods=PODS) -> NodeProfile:
    rng = random.Random(seed)
    profile = NodeProfile()
    for minute in range(minutes):
        profile = train(profile, report(NOW + minute * 60_000, rng, pods), pods, NOW + minute * 60_000)
    return profile


def test_training_keeps_node_items_and_prod_or_none_pods_only():
    profile = trained(3)
    assert set(profile.pod_slots) == {"default/prod-a", "default/none-b"}
    assert profile.histograms.slots(0) == {NODE_SLOT, SYSTEM_SLOT, *CLASS_SLOTS.values(),
                                           *(slot for slot, _ in profile.pod_slots.values())}
    assert min(slot for slot, _ in profile.pod_slots.values()) == FIRST_POD_SLOT


def test_training_happens_once_per_interval_window():
    profile = trained(1)
    again = train(profile, report(NOW + 30_000, random.Random(2)), PODS, NOW + 30_000)
    assert again is profile
    assert train(profile, report(NOW + 60_000, random.Random(2)), PODS, NOW + 60_000) is not profile


def test_released_and_silent_pods_lose_their_model():
    profile = forget_pod(trained(2), "default/prod-a")
    assert set(profile.pod_slots) == {"default/none-b"}
    quiet = {k: v for k, v in PODS.items() if k != "default/none-b"}
    later = NOW + DEFAULT_PREDICTION_ARGS.model_expiration_ms + 5 * 60_000
    profile = train(trained(2), report(later, random.Random(3), quiet), PODS, later)
    assert "default/none-b" not in profile.pod_slots


def test_models_per_node_are_bounded():
    pods = {f"default/p{i:03d}": pod(1000, Gi, "koord-prod", "LS") for i in range(MAX_POD_SLOTS + 5)}
    profile = trained(1, pods=pods)
    assert len(profile.pod_slots) == MAX_POD_SLOTS
    assert max(slot for slot, _ in profile.pod_slots.values()) == 255


def reference_prediction(profile: NodeProfile, node_, pods, metric_, now):
    """Koordinator's MinPredictor over the same models (the slow path the fast one must equal)."""
    table = profile.predictions()
    fresh = now - profile.trained_ms <= DEFAULT_PREDICTION_ARGS.model_expiration_ms
    items = {SYSTEM_ITEM: SYSTEM_SLOT, "koord-prod": CLASS_SLOTS["koord-prod"], "": CLASS_SLOTS[""]} if fresh else {}

    def pod_prediction(key):
        entry = profile.pod_slots.get(key)
        if entry is None or now - entry[1] > DEFAULT_PREDICTION_ARGS.model_expiration_ms or entry[0] not in table:
            return None
        return Prediction(*table[entry[0]])

    def item_prediction(item):
        slot = items.get(item)
        return None if slot is None or slot not in table else Prediction(*table[slot])

    predicted = [PredictedPod(key, (p.request_cpu, p.request_memory), p.priority_class, p.since_ms)
                 for key, p in pods.items() if key in metric_.pods]
    return prod_reclaimable(predicted, pod_prediction, item_prediction, node_.raw_allocatable, now,
                            DEFAULT_PREDICTION_ARGS.cold_start_ms, DEFAULT_PREDICTION_ARGS.safety_margin_percent)


@pytest.mark.parametrize("seed", range(6))
def test_fast_prediction_equals_koordinator_predictors(seed):
    rng = random.Random(seed)
    pods = {f"default/p{i}": pod(rng.choice([500, 1000, 2000]), rng.choice([1, 2, 4]) * Gi,
                                 rng.choice(["koord-prod", "", "koord-mid", "koord-batch"]), "LS",
                                 since_ms=NOW - rng.choice([1, 30, 50]) * HOUR) for i in range(12)}
    profile = trained(120, seed, pods)
    node_ = node(cpu=16_000, memory=64 * Gi, alloc_cpu=rng.choice([4_000, 16_000]), alloc_memory=32 * Gi)
    later = NOW + 120 * 60_000
    metric_ = report(later, rng, {k: v for k, v in pods.items() if rng.random() < 0.8})
    assert predict(profile, node_, pods, metric_, later) == reference_prediction(profile, node_, pods, metric_, later)


def test_cold_pods_reclaim_nothing_and_missing_items_give_no_prediction():
    young = {k: pod(p.request_cpu, p.request_memory, p.priority_class, p.qos, since_ms=NOW) for k, p in PODS.items()}
    profile = trained(5, pods=young)
    reclaimable, peak = predict(profile, node(), young, report(NOW + 5 * 60_000, random.Random(1), young),
                                NOW + 5 * 60_000)
    assert reclaimable == (0, 0) and peak[0] >= 3000
    assert predict(NodeProfile(), node(), PODS, report(NOW, random.Random(1)), NOW) == (None, None)


def test_steady_prod_pods_give_reclaimable_below_their_requests():
    profile = trained(60 * 26)
    later = NOW + 60 * 26 * 60_000
    reclaimable, peak = predict(profile, node(), PODS, report(later, random.Random(9)), later)
    assert 0 < reclaimable[0] < 3000 and 0 < reclaimable[1] < 6 * Gi
    assert peak[0] > 0 and peak[1] > 0


def test_bytes_round_trip():
    profile = trained(30)
    keys = sorted(PODS)
    data = profile_to_bytes(profile, {key: i for i, key in enumerate(keys)})
    loaded, end = profile_from_bytes(data, 0, keys)
    assert end == len(data)
    assert loaded.pod_slots == profile.pod_slots and loaded.trained_ms == profile.trained_ms
    assert loaded.predictions() == profile.predictions()


def test_prediction_args_pin_koordlet_defaults():
    assert PredictionArgs() == PredictionArgs(cold_start_ms=24 * HOUR, safety_margin_percent=10,
                                              training_interval_ms=60_000, model_expiration_ms=30 * 60_000)
    assert (CPU_HALF_LIFE_MS, MEMORY_HALF_LIFE_MS) == (12 * HOUR, 24 * HOUR)
    with pytest.raises(ValueError):
        PredictionArgs(training_interval_ms=0).validate()
