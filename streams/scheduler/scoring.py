"""Vectorized resource scores shared by the score plugins (kube-scheduler's ``leastRequestedScore``
and ``mostRequestedScore``, Koordinator's ``leastUsedScore``), exact integer results.

numpy's int64 floor division is several times slower than float64 division, so shares are
computed in float64 and floored: ``floor((A - R) * 100 / A)`` is exact while the operands
stay below 2**53 and A below 2**46 (64 Ti of a resource), because a quotient within one
float rounding of an integer would need A >= 2**46. ``Capacity`` precomputes the float
forms of a capacity vector once per node change and falls back to integer division for
larger capacities.
"""

from __future__ import annotations

import numpy as np

EXACT_FLOAT_LIMIT = 2**46
ALL = slice(None)


class Capacity:
    """One resource's capacity over the nodes, prepared for repeated scoring."""

    def __init__(self, capacity: np.ndarray) -> None:
        self.values = capacity.copy()
        self.exact = not capacity.size or int(capacity.max()) < EXACT_FLOAT_LIMIT
        self.as_float = capacity.astype(np.float64)
        self.safe = np.maximum(self.as_float, 1.0)
        self.present = capacity > 0
        self._share = np.empty_like(self.as_float)

    def least_requested(self, used: np.ndarray, rows: slice = ALL) -> np.ndarray:
        """(A - used) * 100 // A, 0 when used > A or A == 0 (as float64), over the nodes of ``rows`` (``used``
        holds theirs).

        The result is a buffer this Capacity reuses: consume it before the next call."""
        if not self.exact:
            capacity = self.values[rows]
            share = np.where(self.present[rows] & (used <= capacity),
                             (capacity - used) * 100 // np.maximum(capacity, 1), 0)
            return share.astype(np.float64)
        share = np.subtract(self.as_float[rows], used, out=self._share[rows])
        share *= 100.0
        share /= self.safe[rows]
        np.maximum(share, 0.0, out=share)
        return np.floor(share, out=share)

    def most_requested(self, used: np.ndarray, rows: slice = ALL) -> np.ndarray:
        """min(used, A) * 100 // A, 0 when A == 0 (as float64), over ``rows``; a reused buffer, as
        least_requested."""
        if not self.exact:
            capacity = self.values[rows]
            share = np.where(self.present[rows], np.minimum(used, capacity) * 100 // np.maximum(capacity, 1), 0)
            return share.astype(np.float64)
        share = np.minimum(used, self.as_float[rows], out=self._share[rows])
        share *= 100.0
        share /= self.safe[rows]
        return np.floor(share, out=share)


def least_requested(used: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    return Capacity(capacity).least_requested(used)


def most_requested(used: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    return Capacity(capacity).most_requested(used)


def normalized(scores: np.ndarray, candidates: np.ndarray, reverse: bool = False) -> np.ndarray:
    """kube-scheduler's ``helper.DefaultNormalizeScore(MaxNodeScore, reverse, scores)`` over the ``candidates``::

        score = 100 * score // max          (then 100 - score when reversed)

    where ``max`` is the highest score of a candidate; when it is 0, every score stays 0, or is 100 when
    reversed. Non-negative int64 scores; the entries of other nodes are 0."""
    top = int(scores[candidates].max()) if candidates.any() else 0
    if top == 0:
        out = np.full(len(scores), 100 if reverse else 0, dtype=np.int64)
    else:
        out = scores.astype(np.int64) * 100 // top
        if reverse:
            out = 100 - out
    out[~candidates] = 0
    return out

