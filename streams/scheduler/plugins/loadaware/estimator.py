"""``DefaultEstimator.EstimatePod`` (Koordinator ``pkg/scheduler/plugins/loadaware/estimator``).

For the incoming pod and for assigned pods, per resource r with scaling factor f (percent), on the
resource name of the pod's priority class (batch pods: kubernetes.io/batch-cpu/-memory, mid:
mid-cpu/-memory)::

    q = limit if limit > request else request
    q == 0 -> 250m for cpu / batch-cpu, 200Mi for memory / batch-memory, else 0
    else   -> round(q * f / 100), capped at the limit when there is one
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from streams.koordinator.resources import BATCH_CPU, BATCH_MEMORY, translate_resource
from streams.objects.podinfo import PodInfo

DEFAULT_MILLI_CPU = 250
DEFAULT_MEMORY = 200 * 1024 * 1024


def go_round(x: float) -> int:
    """Go's math.Round for x >= 0: half away from zero, without the x + 0.5 pitfall."""
    whole = math.trunc(x)
    return whole + 1 if x - whole >= 0.5 else whole


def estimate(pod: PodInfo, factors: Mapping[str, int]) -> dict[str, int]:
    """``DefaultEstimator.EstimatePod`` for ``factors``."""
    klass = pod.priority_class
    out = {}
    for resource, factor in factors.items():
        real = translate_resource(resource, klass)
        limit, request = pod.limits.get(real, 0), pod.requests.get(real, 0)
        quantity = limit if limit > request else request
        if quantity == 0:
            if real in ("cpu", BATCH_CPU):
                value = DEFAULT_MILLI_CPU
            elif real in ("memory", BATCH_MEMORY):
                value = DEFAULT_MEMORY
            else:
                value = 0
        else:
            value = go_round(float(quantity) * float(factor) / 100)
            if limit > 0 and value > limit:
                value = limit
        out[resource] = value
    return out
