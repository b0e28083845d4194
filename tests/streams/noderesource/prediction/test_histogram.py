"""Histograms, ported from Koordinator's ``pkg/util/histogram/*_test.go`` (ids: Go test name).

Each percentile case runs on the reference ``DecayingHistogram`` and on the compact ``HistogramSet``.
Go's ``startTime`` is ``time.Unix(1234567890, 0)``.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from streams.noderesource.prediction.histogram import (
    DecayingHistogram, ExponentialHistogramOptions, Family, HistogramSet, LinearHistogramOptions, round_to,
)

WEIGHT_EPSILON = 1e-15
TEST_OPTIONS = LinearHistogramOptions(10.0, 1.0, WEIGHT_EPSILON)
START = 1_234_567_890_000
HOUR = 3_600_000


class OneHistogram:
    """A HistogramSet holding one histogram (slot 0), with DecayingHistogram's interface."""

    def __init__(self, options, half_life_ms=None) -> None:
        self.set = HistogramSet((Family(options, half_life_ms),))

    def add_sample(self, value: float, weight: float, time_ms: int = 0) -> None:
        assert weight == 1, "HistogramSet adds samples of weight 1 (koordlet's training weight)"
        self.set = self.set.add_samples([0], [np.array([value], dtype=np.float64)], time_ms)

    def percentile(self, p: float) -> float:
        return self.set.percentiles((p,))[0].get(0, 0.0)


def both(options, half_life_ms=None):
    return [DecayingHistogram(options, half_life_ms), OneHistogram(options, half_life_ms)]


def test_linear_histogram_options():
    """TestLinearHistogramOptions."""
    o = LinearHistogramOptions(5.0, 0.3, 0.001)
    assert (o.epsilon, o.num_buckets) == (0.001, 18)
    assert (o.bucket_start(0), o.bucket_start(17)) == (0.0, 5.1)
    assert [o.find_bucket(v) for v in (-1.0, 0.0, 1.3, 100.0)] == [0, 0, 4, 17]
    assert o.find_buckets(np.array([-1.0, 0.0, 1.3, 100.0])).tolist() == [0, 0, 4, 17]


def test_exponential_histogram_options():
    """TestExponentialHistogramOptions."""
    o = ExponentialHistogramOptions(500.0, 40.0, 1.5, 0.001)
    assert (o.epsilon, o.num_buckets) == (0.001, 6)
    assert [o.bucket_start(b) for b in range(6)] == [0.0, 40.0, 100.0, 190.0, 325.0, 527.5]
    values = [-1.0, 39.99, 40.0, 100.0, 900.0]
    assert [o.find_bucket(v) for v in values] == [0, 0, 1, 2, 5]
    assert o.find_buckets(np.array(values)).tolist() == [0, 0, 1, 2, 5]


def test_koordlet_histogram_sizes():
    """``defaultCPUHistogram`` / ``defaultMemoryHistogram``: 158 and 205 buckets."""
    assert ExponentialHistogramOptions(1024, 0.025, 1.05, 1e-4).num_buckets == 158
    assert ExponentialHistogramOptions(float(1 << 41), float(5 << 20), 1.05, 1e-4).num_buckets == 205


@pytest.mark.parametrize("histogram", both(TEST_OPTIONS), ids=["reference", "set"])
def test_percentiles_empty_histogram(histogram):
    """TestPercentilesEmptyHistogram."""
    assert [histogram.percentile(p) for p in (-0.5, 0.0, 0.5, 1.0, 1.5)] == [0.0] * 5


def add_weighted(reference: DecayingHistogram, compact: OneHistogram, value: float, weight: int, time_ms: int = 0):
    """Go's ``AddSample(value, weight)``; the compact set (weight-1 samples only) gets ``weight`` samples."""
    reference.add_sample(value, float(weight), time_ms)
    for _ in range(weight):
        compact.add_sample(value, 1.0, time_ms)


def test_percentiles():
    """TestPercentiles: samples 1, 2, 3, 4 with weights 1, 2, 3, 4."""
    expected = {0.0: 2, 0.1: 2, 0.2: 3, 0.3: 3, 0.4: 4, 0.5: 4, 0.6: 4, 0.7: 5, 0.8: 5, 0.9: 5, 1.0: 5}
    reference, compact = both(TEST_OPTIONS)
    for value in range(1, 5):
        add_weighted(reference, compact, float(value), value)
    assert {p: reference.percentile(p) for p in expected} == expected
    assert {p: compact.percentile(p) for p in expected} == expected


def test_percentile_out_of_bounds():
    """TestPercentileOutOfBounds (reference: weights below 1 are not a training weight)."""
    h = DecayingHistogram(LinearHistogramOptions(1.0, 0.1, WEIGHT_EPSILON))
    h.add_sample(0.1, 0.1)
    h.add_sample(0.2, 0.2)
    assert h.percentile(-0.1) == pytest.approx(0.2, rel=1e-15)
    assert h.percentile(1.1) == pytest.approx(0.3, rel=1e-15)
    h.add_sample(0.0, 0.1)
    h.add_sample(1.0, 0.2)
    assert h.percentile(-0.1) == pytest.approx(0.1, rel=1e-15)
    assert h.percentile(1.1) == pytest.approx(1.0, rel=1e-15)


@pytest.mark.parametrize("histogram", both(TEST_OPTIONS, HOUR), ids=["reference", "set"])
def test_percentiles_empty_decaying_histogram(histogram):
    """TestPercentilesEmptyDecayingHistogram."""
    assert [histogram.percentile(p) for p in (-0.5, 0.0, 0.5, 1.0, 1.5)] == [0.0] * 5


def test_simple_decay():
    """TestSimpleDecay: weight 1000 at value 2, then 20 half-lives later weight 1 at value 1."""
    h = DecayingHistogram(TEST_OPTIONS, HOUR)
    h.add_sample(2, 1000, START)
    h.add_sample(1, 1, START + 20 * HOUR)
    assert (h.percentile(0.999), h.percentile(1.0)) == (2, 3)


@pytest.mark.parametrize("histogram", both(TEST_OPTIONS, HOUR), ids=["reference", "set"])
def test_longterm_decay(histogram):
    """TestLongtermDecay: the second sample comes after more than 2^maxDecayExponent of decay."""
    histogram.add_sample(2, 1, START)
    histogram.add_sample(1, 1, START + 101 * HOUR)
    assert histogram.percentile(1.0) == 2


def test_decaying_histogram_percentiles():
    """TestDecayingHistogramPercentiles: samples 1..4 (weights 1..4), one half-life apart."""
    expected = {0.00: 2, 0.02: 2, 0.03: 3, 0.10: 3, 0.11: 4, 0.34: 4, 0.35: 5, 1.00: 5}
    reference, compact = both(TEST_OPTIONS, HOUR)
    for i in range(1, 5):
        add_weighted(reference, compact, float(i), i, START + (i - 1) * HOUR)
    assert {p: reference.percentile(p) for p in expected} == expected
    assert {p: compact.percentile(p) for p in expected} == expected


def test_no_decay():
    """TestNoDecay: a decaying histogram at a fixed time is a plain one.

    0.1, 0.3 and 0.6 are exact ties (the cumulative weight equals p * total in exact arithmetic) with
    weights 2^-0.475 per sample; Go's answer there depends on float64 rounding of its particular sums, so
    the compact set (float32 weights, sums of unit samples) is checked on the other points.
    """
    expected = {0.0: 2, 0.1: 2, 0.2: 3, 0.3: 3, 0.4: 4, 0.5: 4, 0.6: 4, 0.7: 5, 0.8: 5, 0.9: 5, 1.0: 5}
    reference, compact = both(TEST_OPTIONS, HOUR)
    for value in range(1, 5):
        add_weighted(reference, compact, float(value), value, START)
    assert {p: reference.percentile(p) for p in expected} == expected
    untied = {p: v for p, v in expected.items() if p not in (0.1, 0.3, 0.6)}
    assert {p: compact.percentile(p) for p in untied} == untied


def test_reference_time_rounds_half_up_to_the_half_life():
    assert round_to(START, HOUR) == 1_234_569_600_000
    assert round_to(1_800_000, HOUR) == HOUR


def test_set_matches_reference_on_koordlet_histograms():
    """Many histograms of a node at once: every percentile equals the reference's, sample by sample."""
    rng = random.Random(7)
    cpu = ExponentialHistogramOptions(1024, 0.025, 1.05, 1e-4)
    families = (Family(cpu, 12 * HOUR), Family(cpu, 24 * HOUR))
    slots = [0, 3, 9, 40]
    references = {(f, s): DecayingHistogram(cpu, families[f].half_life_ms) for f in (0, 1) for s in slots}
    compact = HistogramSet(families)
    for minute in range(600):
        time_ms = START + minute * 60_000
        values = [[rng.lognormvariate(0, 0.4) * (s + 1) for s in slots] for _ in families]
        compact = compact.add_samples(slots, [np.array(v) for v in values], time_ms)
        for f in (0, 1):
            for s, v in zip(slots, values[f]):
                references[(f, s)].add_sample(v, 1.0, time_ms)
        if minute % 50 == 49:
            for p in (0.5, 0.95, 0.98, 1.0):
                got = compact.percentiles((p, p))
                assert {(f, s): got[f][s] for f in (0, 1) for s in slots} == \
                    {key: h.percentile(p) for key, h in references.items()}


def test_set_bytes_round_trip_and_slot_removal():
    options = ExponentialHistogramOptions(1024, 0.025, 1.05, 1e-4)
    families = (Family(options, 12 * HOUR), Family(options, 24 * HOUR))
    h = HistogramSet(families).add_samples([1, 7], [np.array([0.5, 2.0]), np.array([1.0, 3.0])], START)
    loaded, end = HistogramSet.from_bytes(families, h.to_bytes())
    assert end == len(h.to_bytes())
    assert loaded.keys.tolist() == h.keys.tolist() and loaded.weights.tolist() == h.weights.tolist()
    assert loaded.references == h.references
    assert h.without_slots([7]).slots(0) == {1} and h.without_slots([7]).slots(1) == {1}
