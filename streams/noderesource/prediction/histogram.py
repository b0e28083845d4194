"""Koordinator's decaying histograms (``pkg/util/histogram``, after the Kubernetes VPA recommender's).

Buckets (``histogram_options.go``):

- linear: ``numBuckets = ceil(maxValue / bucketSize) + 1``, bucket ``n``
  starts at ``n * bucketSize``, ``FindBucket(v) = int(v / bucketSize)``
  clamped to ``[0, numBuckets)``;
- exponential: ``numBuckets = ceil(log_ratio(maxValue * (ratio - 1) /
  firstBucketSize + 1)) + 1``, bucket ``n >= 1`` starts at ``firstBucketSize
  * (ratio^n - 1) / (ratio - 1)``, bucket 0 at 0. ``FindBucket`` returns the
  bucket whose start is the largest one ``<= v`` (Koordinator evaluates
  ``floor(log_ratio(v * (ratio - 1) / first + 1))``; we search the table of
  bucket starts, which agrees except where that logarithm rounds below an
  exact boundary, and then agrees with ``GetBucketStart``, as Koordinator's
  own tests expect).

Decay (``decaying_histogram.go``): a sample of weight ``w`` at time ``t``
counts ``w * 2^((t - ref) / halfLife)``; ``ref`` is the first sample's time
rounded to the half-life and moves forward (all weights scaled by the exact
power of two, buckets falling under epsilon dropped) when a sample comes more
than 100 half-lives after it. Old samples thus weigh half as much per
half-life relative to new ones, without touching stored weights.

``Percentile(p)``: 0 for an empty histogram; otherwise walk the buckets from
the lowest non-empty one, accumulating weight until it reaches ``p *
total``, and return the *start of the next bucket* (the upper edge), or the
bucket's own start for the last bucket.

Two implementations share these options:

- ``DecayingHistogram`` — one histogram, dense float64 weights, a direct port
  used by the ported tests and as the reference;
- ``HistogramSet`` — the node profile's compact store: up to 256 histograms
  per family (options + half-life; a node has a CPU and a memory family) as
  sorted sparse entries (key = family, slot, bucket; ``float32`` weight), one
  reference time per family, sample adds and percentiles vectorised with
  numpy over all histograms at once. Differences from the reference, all
  below float rounding of the weights: weights are float32 (a sample is added
  in float32), cumulative sums are float64 over the whole set, totals are
  recomputed from the stored weights, and a bucket scaled under epsilon by a
  reference shift is dropped rather than kept in the total.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import struct

import numpy as np

MAX_DECAY_EXPONENT = 100
"""``maxDecayExponent``: half-lives after ``ref`` before the reference time moves."""


@dataclasses.dataclass(frozen=True)
class LinearHistogramOptions:
    max_value: float
    bucket_size: float
    epsilon: float

    def __post_init__(self) -> None:
        if self.max_value <= 0.0 or self.bucket_size <= 0.0 or self.epsilon <= 0.0:
            raise ValueError("maxValue and bucketSize must both be positive")
        object.__setattr__(self, "num_buckets", int(math.ceil(self.max_value / self.bucket_size)) + 1)
        object.__setattr__(self, "starts", np.arange(self.num_buckets, dtype=np.float64) * self.bucket_size)

    def find_bucket(self, value: float) -> int:
        bucket = int(value / self.bucket_size)
        return min(max(bucket, 0), self.num_buckets - 1)

    def find_buckets(self, values: np.ndarray) -> np.ndarray:
        buckets = np.trunc(values / self.bucket_size)
        return np.clip(buckets, 0, self.num_buckets - 1).astype(np.int64)

    def bucket_start(self, bucket: int) -> float:
        if not 0 <= bucket < self.num_buckets:
            raise IndexError(f"index {bucket} out of range [0..{self.num_buckets - 1}]")
        return float(bucket) * self.bucket_size


@dataclasses.dataclass(frozen=True)
class ExponentialHistogramOptions:
    max_value: float
    first_bucket_size: float
    ratio: float
    epsilon: float

    def __post_init__(self) -> None:
        if self.max_value <= 0.0 or self.first_bucket_size <= 0.0 or self.ratio <= 1.0 or self.epsilon <= 0.0:
            raise ValueError("maxValue, firstBucketSize and epsilon must be > 0.0, ratio must be > 1.0")
        count = int(math.ceil(math.log(self.max_value * (self.ratio - 1) / self.first_bucket_size + 1)
                              / math.log(self.ratio))) + 1
        object.__setattr__(self, "num_buckets", count)
        starts = [0.0] + [self.first_bucket_size * (math.pow(self.ratio, float(n)) - 1) / (self.ratio - 1)
                          for n in range(1, count)]
        object.__setattr__(self, "start_list", starts)
        object.__setattr__(self, "starts", np.array(starts, dtype=np.float64))
        object.__setattr__(self, "search_table", np.array([-math.inf] + starts[1:], dtype=np.float64))

    def find_bucket(self, value: float) -> int:
        if value < self.first_bucket_size:
            return 0
        return min(bisect.bisect_right(self.start_list, value) - 1, self.num_buckets - 1)

    def find_buckets(self, values: np.ndarray) -> np.ndarray:
        return self.search_table.searchsorted(values, side="right") - 1

    def bucket_start(self, bucket: int) -> float:
        if not 0 <= bucket < self.num_buckets:
            raise IndexError(f"index {bucket} out of range [0..{self.num_buckets - 1}]")
        return self.start_list[bucket]


HistogramOptions = LinearHistogramOptions | ExponentialHistogramOptions


def round_to(time_ms: int, half_life_ms: int) -> int:
    """Go's ``Time.Round(halfLife)`` (halves round up) on milliseconds since the epoch.

    Go rounds relative to year 1; the Unix epoch is a whole number of days after it, so the result
    is the same for every half-life that divides a day (Koordinator's are 12 h and 24 h).
    """
    quotient, remainder = divmod(time_ms, half_life_ms)
    return (quotient + (1 if 2 * remainder >= half_life_ms else 0)) * half_life_ms


def _go_round(value: float) -> int:
    return int(math.floor(value + 0.5))


class DecayingHistogram:
    """One histogram as Koordinator keeps it; ``half_life_ms=None`` gives the plain ``histogram``."""

    def __init__(self, options: HistogramOptions, half_life_ms: int | None = None) -> None:
        self.options = options
        self.half_life_ms = half_life_ms
        self.weights = np.zeros(options.num_buckets, dtype=np.float64)
        self.total = 0.0
        self.min_bucket = options.num_buckets - 1
        self.max_bucket = 0
        self.reference_ms: int | None = None

    def _decay_factor(self, time_ms: int) -> float:
        if self.half_life_ms is None:
            return 1.0
        if self.reference_ms is None or time_ms > self.reference_ms + self.half_life_ms * MAX_DECAY_EXPONENT:
            self._shift_reference(time_ms)
        return math.exp2(float(time_ms - self.reference_ms) / float(self.half_life_ms))

    def _shift_reference(self, time_ms: int) -> None:
        new_reference = round_to(time_ms, self.half_life_ms)
        if self.reference_ms is not None:
            exponent = _go_round(float(self.reference_ms - new_reference) / float(self.half_life_ms))
            self._scale(math.ldexp(1.0, exponent))
        self.reference_ms = new_reference

    def _scale(self, factor: float) -> None:
        self.weights[self.min_bucket:self.max_bucket + 1] *= factor
        self.total *= factor
        epsilon, last = self.options.epsilon, self.options.num_buckets - 1
        while self.weights[self.min_bucket] < epsilon and self.min_bucket < last:
            self.min_bucket += 1
        while self.weights[self.max_bucket] < epsilon and self.max_bucket > 0:
            self.max_bucket -= 1

    def add_sample(self, value: float, weight: float, time_ms: int = 0) -> None:
        if weight < 0.0:
            raise ValueError("sample weight must be non-negative")
        weight *= self._decay_factor(time_ms)
        bucket = self.options.find_bucket(value)
        self.weights[bucket] += weight
        self.total += weight
        if bucket < self.min_bucket and self.weights[bucket] >= self.options.epsilon:
            self.min_bucket = bucket
        if bucket > self.max_bucket and self.weights[bucket] >= self.options.epsilon:
            self.max_bucket = bucket

    def is_empty(self) -> bool:
        return bool(self.weights[self.min_bucket] < self.options.epsilon)

    def percentile(self, percentile: float) -> float:
        if self.is_empty():
            return 0.0
        partial, threshold = 0.0, percentile * self.total
        bucket = self.min_bucket
        while bucket < self.max_bucket:
            partial += float(self.weights[bucket])
            if partial >= threshold:
                break
            bucket += 1
        if bucket < self.options.num_buckets - 1:
            return self.options.bucket_start(bucket + 1)
        return self.options.bucket_start(bucket)


@dataclasses.dataclass(frozen=True)
class Family:
    """Options and half-life shared by the histograms of one kind (e.g. every CPU histogram of a node)."""

    options: HistogramOptions
    half_life_ms: int | None

    def __post_init__(self) -> None:
        if self.options.num_buckets > 256:
            raise ValueError("a HistogramSet holds at most 256 buckets per histogram")
        object.__setattr__(self, "upper_starts", self.options.starts[
            np.minimum(np.arange(self.options.num_buckets) + 1, self.options.num_buckets - 1)])


_EMPTY_KEYS = np.zeros(0, dtype=np.uint32)
_EMPTY_WEIGHTS = np.zeros(0, dtype=np.float32)


@dataclasses.dataclass(frozen=True, eq=False)
class HistogramSet:
    """Up to 256 decaying histograms per family, for a few families, as sorted sparse entries; immutable.

    An entry's key is ``family << 16 | slot << 8 | bucket``. Each family has its own reference time
    (shared by its histograms: weights of one histogram then differ from Koordinator's per-histogram
    reference by an exact power of two, which no percentile sees).
    """

    families: tuple[Family, ...]
    keys: np.ndarray = dataclasses.field(default_factory=lambda: _EMPTY_KEYS)
    """``uint32`` keys, strictly increasing."""
    weights: np.ndarray = dataclasses.field(default_factory=lambda: _EMPTY_WEIGHTS)
    """``float32`` weight of each entry (> 0)."""
    references: tuple[int | None, ...] = ()
    cache: list = dataclasses.field(default_factory=list, compare=False, repr=False)
    """Segment layout of ``keys`` (reused while the keys array is the same object); not persisted."""
    encoded: list = dataclasses.field(default_factory=list, compare=False, repr=False)
    """Memo of ``to_bytes``: a node state is encoded after every change, its histograms only change when it
    trains; not persisted."""

    def __post_init__(self) -> None:
        if not self.references:
            object.__setattr__(self, "references", (None,) * len(self.families))

    def _sample_factors(self, time_ms: int) -> tuple[np.ndarray, np.ndarray, tuple[int | None, ...], list[float]]:
        """Keys and weights after any reference shift, the new references and each family's sample weight."""
        keys, weights = self.keys, self.weights
        references, factors = list(self.references), []
        for index, family in enumerate(self.families):
            half_life = family.half_life_ms
            if half_life is None:
                factors.append(1.0)
                continue
            reference = references[index]
            if reference is None or time_ms > reference + half_life * MAX_DECAY_EXPONENT:
                new_reference = round_to(time_ms, half_life)
                if reference is not None:
                    exponent = _go_round(float(reference - new_reference) / float(half_life))
                    mine = (keys >> 16) == index
                    scaled = weights.copy()
                    scaled[mine] = np.ldexp(weights[mine], exponent).astype(np.float32)
                    keep = ~mine | (scaled >= family.options.epsilon)
                    keys, weights = keys[keep], scaled[keep]
                references[index] = reference = new_reference
            factors.append(math.exp2(float(time_ms - reference) / float(half_life)))
        return keys, weights, tuple(references), factors

    def add_samples(self, slots: list[int], values: list[np.ndarray], time_ms: int) -> HistogramSet:
        """One sample of weight 1 per slot and family at ``time_ms``; ``slots`` distinct,
        ``values[f][i]`` the value of ``slots[i]`` in family ``f``."""
        if len(slots) == 0:
            return self
        keys, weights, references, factors = self._sample_factors(time_ms)
        buckets = np.concatenate([family.options.find_buckets(values[index])
                                  for index, family in enumerate(self.families)])
        new_keys = buckets + np.array([(index << 16) | (slot << 8) for index in range(len(self.families))
                                       for slot in slots], dtype=np.int64)
        increments = np.repeat(np.array(factors, dtype=np.float32), len(slots))
        positions = keys.searchsorted(new_keys)
        hits = keys.take(positions, mode="clip") == new_keys if len(keys) else np.zeros(len(new_keys), bool)
        weights = weights.copy()
        if hits.all():
            weights[positions] += increments
        else:
            weights[positions[hits]] += increments[hits]
            misses = ~hits
            order = np.argsort(new_keys[misses])
            keys = np.insert(keys, positions[misses][order], new_keys[misses][order].astype(np.uint32))
            weights = np.insert(weights, positions[misses][order], increments[misses][order])
        result = HistogramSet(self.families, keys, weights, references)
        if keys is self.keys and self.cache:
            result.cache.extend(self.cache)
        return result

    def without_slots(self, slots: list[int]) -> HistogramSet:
        if not slots or not len(self.keys):
            return self
        keep = ~np.isin((self.keys >> 8) & 0xFF, np.asarray(slots, dtype=np.uint32))
        if keep.all():
            return self
        return HistogramSet(self.families, self.keys[keep], self.weights[keep], self.references)

    def _layout(self) -> tuple:
        """Segment (one histogram) boundaries, family and slot of each, and each entry's percentile value."""
        if not self.cache:
            keys = self.keys
            segment = keys >> 8
            first = np.flatnonzero(np.concatenate(([True], segment[1:] != segment[:-1])))
            end = np.concatenate((first[1:], [len(keys)]))
            family = (keys[first] >> 16).astype(np.int64)
            upper = np.empty(len(keys), dtype=np.float64)
            for index, fam in enumerate(self.families):
                mine = (keys >> 16) == index
                upper[mine] = fam.upper_starts[keys[mine] & 0xFF]
            self.cache.extend((first, end, end - 1, family, (segment[first] & 0xFF).astype(np.int64), upper, {}))
        return tuple(self.cache)

    def percentile_arrays(self, percentiles: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(family, slot, ``Percentile(percentiles[family])``) of every non-empty histogram, by family and slot.

        With cumulative sums ``C`` over all entries (0 first), a histogram's entries are ``first..end-1``;
        Koordinator's walk stops at the first entry whose cumulative weight reaches ``p * total``, i.e. the
        first ``j`` with ``C[j] >= C[first] + p * (C[end] - C[first])`` is entry ``j - 1``.
        """
        if not len(self.keys):
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64)
        first, end, last, family, slots, upper, per_segment = self._layout()
        shares = per_segment.get(percentiles)
        if shares is None:
            shares = per_segment[percentiles] = np.asarray(percentiles, dtype=np.float64)[family]
        cumulative = np.zeros(len(self.keys) + 1)
        np.cumsum(self.weights, dtype=np.float64, out=cumulative[1:])
        base = cumulative[first]
        index = cumulative.searchsorted(base + shares * (cumulative[end] - base)) - 1
        if min(percentiles) <= 0:
            index = np.maximum(index, first)
        return family, slots, upper[np.minimum(index, last)]

    def percentiles(self, percentiles: tuple[float, ...]) -> list[dict[int, float]]:
        """Per family, slot -> ``Percentile(percentiles[family])`` of every non-empty histogram."""
        result: list[dict[int, float]] = [{} for _ in self.families]
        family, slots, values = self.percentile_arrays(percentiles)
        for fam, slot, value in zip(family.tolist(), slots.tolist(), values.tolist()):
            result[fam][slot] = value
        return result

    def slots(self, family: int = 0) -> set[int]:
        mine = (self.keys >> 16) == family
        return set(((self.keys[mine] >> 8) & 0xFF).tolist())

    def to_bytes(self) -> bytes:
        """Per family its reference and histogram count; then each histogram's slot and entry count
        (``uint8``), each entry's bucket (``uint8``) and weight (``float32``)."""
        if self.encoded:
            return self.encoded[0]
        families = len(self.families)
        keys = self.keys
        family_of = (keys >> 16).astype(np.int64)
        segment = keys >> 8
        first = np.flatnonzero(np.concatenate(([True], segment[1:] != segment[:-1]))) if len(keys) else \
            np.zeros(0, np.int64)
        counts = np.diff(np.concatenate((first, [len(keys)])))
        segments = np.bincount(family_of[first], minlength=families) if len(keys) else np.zeros(families, np.int64)
        header = struct.pack(f"<{families}q{families}H", *(-1 if r is None else r for r in self.references),
                             *segments.tolist())
        data = b"".join((header, (segment[first] & 0xFF).astype(np.uint8).tobytes(), counts.astype(np.uint8).tobytes(),
                         (keys & 0xFF).astype(np.uint8).tobytes(), self.weights.tobytes()))
        self.encoded.append(data)
        return data

    @classmethod
    def from_bytes(cls, families: tuple[Family, ...], data: bytes, offset: int = 0) -> tuple[HistogramSet, int]:
        count = len(families)
        header = struct.unpack_from(f"<{count}q{count}H", data, offset)
        offset += 10 * count
        references = tuple(None if r < 0 else r for r in header[:count])
        segments = sum(header[count:])
        slots = np.frombuffer(data, dtype=np.uint8, count=segments, offset=offset).astype(np.uint32)
        offset += segments
        counts = np.frombuffer(data, dtype=np.uint8, count=segments, offset=offset).astype(np.int64)
        offset += segments
        total = int(counts.sum())
        buckets = np.frombuffer(data, dtype=np.uint8, count=total, offset=offset).astype(np.uint32)
        offset += total
        weights = np.frombuffer(data, dtype=np.float32, count=total, offset=offset).copy()
        offset += 4 * total
        family = np.repeat(np.arange(count, dtype=np.uint32), header[count:])
        keys = (np.repeat((family << 16) | (slots << 8), counts) | buckets).astype(np.uint32)
        return cls(families, keys, weights, references), offset
