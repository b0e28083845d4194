"""ScarceResourceAvoidance: keep pods that do not need a scarce resource off the nodes that have it
(Koordinator v1.6, ``scarceresourceavoidance``).

Score only. With node resources N = names with allocatable > 0 (cpu, memory,
ephemeral-storage, extended resources; never ``pods``), pod resources P =
names the pod requests (> 0), and S = ``resources`` (the scarce ones)::

    diff = N - P,  scarce = diff & S
    score = 100                                       if diff or scarce is empty
          = (|diff| - |scarce|) * 100 // |diff|       otherwise

so a CPU-only pod scores a GPU node lower the larger the share of its unused
resource types that are scarce. No args defaults (Koordinator has none).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from streams.objects.args import ArgsReader
from streams.objects.podinfo import PodInfo
from streams.scheduler.columns import PODS
from streams.scheduler.framework import MAX_NODE_SCORE, CycleState, register
from streams.scheduler.state import Cluster

NAME = "ScarceResourceAvoidance"


@dataclasses.dataclass(frozen=True)
class ScarceResourceAvoidanceArgs:
    resources: tuple[str, ...] = ()
    """``resources``: the scarce resource names, e.g. nvidia.com/gpu; none by default."""

    @classmethod
    def from_config(cls, raw) -> "ScarceResourceAvoidanceArgs":
        reader = ArgsReader(NAME, raw, {"resources"})
        return cls(tuple(str(name) for name in reader.sequence("resources") or ()))

    def validate(self) -> None:
        pass


class ScarceResourceAvoidance:
    name = NAME
    Args = ScarceResourceAvoidanceArgs
    events_to_register = register()
    """Score only: it rejects no pod."""

    def __init__(self, args: ScarceResourceAvoidanceArgs, cluster: Cluster) -> None:
        self.args = args
        self.cluster = cluster
        self._present: tuple[int, int, np.ndarray] | None = None

    def _positive(self, count: int) -> np.ndarray:
        columns = self.cluster.columns
        if self._present is None or self._present[:2] != (columns.version, len(columns.resources)):
            self._present = (columns.version, len(columns.resources), columns.allocatable[:, :count] > 0)
        return self._present[2]

    def score(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> np.ndarray:
        columns = self.cluster.columns
        count = len(candidates)
        positive = self._positive(count)
        requested = {name for name, value in pod.requests.items() if value > 0}
        diff_rows = [i for i, name in enumerate(columns.resources) if i != PODS and name not in requested]
        scarce_rows = sorted({columns.index[name] for name in self.args.resources
                              if name in columns.index and name not in requested and name != "pods"})
        diff = positive[diff_rows].sum(axis=0) if diff_rows else np.zeros(count, dtype=np.int64)
        scarce = positive[scarce_rows].sum(axis=0) if scarce_rows else np.zeros(count, dtype=np.int64)
        return np.where((diff == 0) | (scarce == 0), MAX_NODE_SCORE,
                        (diff - scarce) * MAX_NODE_SCORE // np.maximum(diff, 1)).astype(np.int64)
