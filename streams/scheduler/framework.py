"""Scheduling framework: extension points and the Status they return.

Shaped after kube-scheduler's framework (``pkg/scheduler/framework``): a
plugin implements any of the extension points below; the cycle calls them
in stage order. Filters and scores run over every node at once: a plugin
receives the domain's node columns (numpy arrays, see ``columns``) and returns
one verdict per node. No plugin logic lives here.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Protocol, runtime_checkable

import numpy as np

from streams.scheduler.columns import NodeColumns, PodRequest


class Code(enum.IntEnum):
    """kube-scheduler's status codes."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5


@dataclasses.dataclass(frozen=True)
class Status:
    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def ok(self) -> bool:
        return self.code in (Code.SUCCESS, Code.SKIP)


@dataclasses.dataclass(frozen=True)
class FilterResult:
    """Per-node outcome of one filter: ``reasons[i]`` lists why node i failed
    (empty for a node that passed). ``passed`` is the boolean mask."""

    passed: np.ndarray
    reasons: list[tuple[str, ...]]


class Plugin(Protocol):
    name: str


@runtime_checkable
class PreFilterPlugin(Protocol):
    name: str

    def pre_filter(self, pod: PodRequest, nodes: NodeColumns) -> Status: ...


@runtime_checkable
class FilterPlugin(Protocol):
    name: str

    def filter(self, pod: PodRequest, nodes: NodeColumns, candidates: np.ndarray) -> FilterResult: ...


@runtime_checkable
class ScorePlugin(Protocol):
    name: str

    def score(self, pod: PodRequest, nodes: NodeColumns, candidates: np.ndarray) -> np.ndarray:
        """Scores 0..100 (int64) for every node; only ``candidates`` are read."""
        ...


@runtime_checkable
class ReservePlugin(Protocol):
    name: str

    def reserve(self, pod: PodRequest, nodes: NodeColumns, node_index: int) -> Status: ...


MAX_NODE_SCORE = 100
