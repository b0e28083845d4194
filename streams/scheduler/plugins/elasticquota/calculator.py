"""The runtime-quota distribution of one parent, one resource dimension
(``core/runtime_quota_calculator.go``, ``quotaTree.redistribution``).

Input: the parent's total T and per child c its shared weight w, its limited
request r (min(request, max)), its min m (after min scaling), guarantee g and
whether it lends unused resources.

Step 1, per child: m' = max(m, g). If r > m' the child gets m' and joins the
set that needs more (W += w); otherwise it gets r when it lends, m' when it
does not. R = T - sum(runtime).

Step 2, while R > 0, W > 0 and the set is not empty: split R by weight with
the largest-remainder (Hamilton) method::

    base_c = floor(w_c * R / W)    rem_c = w_c * R mod W
    leftover = R - sum(base_c): +1 each to the children with the largest rem_c,
    ties to the smaller quota name; children with w_c <= 0 get nothing

A child that reaches its request gives the excess back to the pool and leaves
the set; R becomes the pooled excess, W the weights still in the set.
Python integers are exact, so the 128-bit arithmetic of the Go code needs no
counterpart. When the mins exceed T nothing is redistributed (R <= 0) and the
children keep their mins even beyond T, as in Koordinator.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class QuotaNode:
    name: str
    shared_weight: int
    request: int
    min: int
    guarantee: int = 0
    allow_lent: bool = True
    runtime: int = 0


def hamilton_deltas(total: int, total_weight: int, nodes: list[QuotaNode]) -> list[int]:
    """``computeHamiltonDeltas``: ``total`` split over ``nodes`` by shared weight, summing exactly to ``total``."""
    deltas = [0] * len(nodes)
    if total_weight <= 0 or total <= 0 or not nodes:
        return deltas
    remainders = []
    distributed = 0
    for i, node in enumerate(nodes):
        if node.shared_weight <= 0:
            continue
        base, rem = divmod(node.shared_weight * total, total_weight)
        deltas[i] = base
        distributed += base
        remainders.append((-rem, node.name, i))
    residual = total - distributed
    for _, _, i in sorted(remainders)[: max(residual, 0)]:
        deltas[i] += 1
    return deltas


def redistribute(nodes: list[QuotaNode], total: int) -> None:
    """Set ``runtime`` of every node: the parent's ``total`` distributed over its children."""
    remaining = total
    weight = 0
    needy: list[QuotaNode] = []
    for node in nodes:
        floor = max(node.min, node.guarantee)
        if node.request > floor:
            needy.append(node)
            weight += node.shared_weight
            node.runtime = floor
        else:
            node.runtime = node.request if node.allow_lent else floor
        remaining -= node.runtime
    if remaining > 0:
        _iterate(remaining, weight, needy)


def _iterate(total: int, total_weight: int, nodes: list[QuotaNode]) -> None:
    while total_weight > 0 and total > 0 and nodes:
        deltas = hamilton_deltas(total, total_weight, nodes)
        still: list[QuotaNode] = []
        pool = weight = 0
        for node, delta in zip(nodes, deltas):
            node.runtime += delta
            if node.runtime < node.request:
                still.append(node)
                weight += node.shared_weight
            else:
                pool += node.runtime - node.request
                node.runtime = node.request
        if pool <= 0 or not still:
            return
        total, total_weight, nodes = pool, weight, still
