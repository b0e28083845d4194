"""One scheduling cycle: filter every node, score the survivors, pick one.

Failure messages follow kube-scheduler's ``FitError``: each node contributes
every reason it failed for, reasons are counted across nodes, the
"<count> <reason>" strings are sorted, e.g.
``0/3 nodes are available: 1 Too many pods, 2 Insufficient cpu.``
kube-scheduler breaks score ties at random; here the node whose name sorts
first wins, so the same inbox always gives the same placement.
"""

from __future__ import annotations

import collections
import dataclasses

import numpy as np

from streams.scheduler.columns import NodeColumns, PodRequest
from streams.scheduler.framework import FilterPlugin, ScorePlugin

NO_NODES_MESSAGE = "no nodes available to schedule pods"
TOP_SCORES = 3


@dataclasses.dataclass(frozen=True)
class CycleResult:
    node: str | None
    message: str
    filter_results: tuple[tuple[str, str, int], ...]
    """(plugin, reason, node count), sorted by plugin then reason."""
    scores: tuple[tuple[str, int], ...]
    """The best (node, score) pairs, best first."""


def run_cycle(pod: PodRequest, nodes: NodeColumns, plugins: list[object]) -> CycleResult:
    count = len(nodes)
    if count == 0:
        return CycleResult(None, NO_NODES_MESSAGE, (), ())
    candidates = ~nodes.unschedulable[:count]
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    unschedulable = int(count - candidates.sum())
    if unschedulable:
        counts[("NodeUnschedulable", "node(s) were unschedulable")] = unschedulable
    for plugin in plugins:
        if isinstance(plugin, FilterPlugin):
            result = plugin.filter(pod, nodes, candidates)
            for index in np.flatnonzero(candidates & ~result.passed):
                for reason in result.reasons[index]:
                    counts[(plugin.name, reason)] += 1
            candidates = result.passed
    filter_results = tuple(sorted((plugin, reason, n) for (plugin, reason), n in counts.items()))
    if not candidates.any():
        reasons = sorted(f"{n} {reason}" for (_, reason), n in counts.items())
        message = f"0/{count} nodes are available: {', '.join(reasons)}."
        return CycleResult(None, message, filter_results, ())
    total = np.zeros(count, dtype=np.int64)
    for plugin in plugins:
        if isinstance(plugin, ScorePlugin):
            total += plugin.score(pod, nodes, candidates)
    ranked = sorted(((-int(total[i]), nodes.names[i]) for i in np.flatnonzero(candidates)))
    scores = tuple((name, -negative) for negative, name in ranked[:TOP_SCORES])
    return CycleResult(scores[0][0], "", filter_results, scores)
