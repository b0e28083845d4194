"""The NUMA topology manager (Koordinator ``frameworkext/topologymanager``): merging hints and admitting a pod.

A hint is a NUMA affinity (a bitmask of NUMA node ids; None means "no preference") with ``preferred``,
``unsatisfied`` and a ``score``. One hint provider (NodeNUMAResource) gives, per resource, the hints it can
place the pod in. ``merge`` follows ``Policy.Merge``::

    per resource: no hint list entry -> "don't care" (preferred); an empty list -> unsatisfied,
                  reason "Unsatisfied NUMA <resource>"
    every combination of one hint per resource (cross product, resources in name order):
        affinity  = AND of the hints' masks (all NUMA nodes when none has one)
        preferred = every hint preferred and every mask equal
        unsatisfied when the AND is narrower than the widest input
        a merged hint failing the exclusive check is not preferred
        score = sum of the scores of the inputs whose mask equals the merged one
    best: preferred beats not preferred, then narrower (fewer nodes, then lower mask), then on equal
          node count the higher score

BestEffort admits always (an unsatisfied best becomes all NUMA nodes); Restricted admits a preferred best,
else "Unaligned NUMA Hint cause <summaries joined by ' & '>"; SingleNUMANode keeps only one-node and
don't-care preferred hints, turns a best spanning every NUMA node into "don't care", and admits a preferred
best, else "Unaligned NUMA Hint cause <summaries joined by ','>". A summary reads
"<resource> prefer [<masks>] among [<masks>]", masks printed as Go's ``bitmask.String`` ("01", "11", "0101").

Go ranges over the resource map in random order; here resources are taken in name order, so reasons and
ties are deterministic.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Mapping, Sequence

from streams.koordinator.labels import NUMA_TOPOLOGY_POLICY_BEST_EFFORT

POLICY_NONE = ""
POLICY_BEST_EFFORT = NUMA_TOPOLOGY_POLICY_BEST_EFFORT
POLICY_RESTRICTED = "Restricted"
POLICY_SINGLE_NUMA_NODE = "SingleNUMANode"

EXCLUSIVE_PREFERRED = "Preferred"
EXCLUSIVE_REQUIRED = "Required"

STATUS_IDLE = "idle"
STATUS_SINGLE = "single"
STATUS_SHARED = "shared"

ERR_UNSATISFIED = "Unsatisfied NUMA {}"
ERR_UNALIGNED = "Unaligned NUMA Hint cause {}"


@dataclasses.dataclass(frozen=True)
class Hint:
    """``NUMATopologyHint``: ``affinity`` is a bitmask of NUMA node ids, None for "no preference"."""

    affinity: int | None = None
    preferred: bool = False
    unsatisfied: bool = False
    score: int = 0

    @property
    def nodes(self) -> list[int]:
        return bits(self.affinity or 0)


def mask_of(nodes: Iterable[int]) -> int:
    mask = 0
    for node in nodes:
        mask |= 1 << node
    return mask


def bits(mask: int) -> list[int]:
    """The NUMA node ids set in ``mask``, ascending (``GetBits``)."""
    return [i for i in range(mask.bit_length()) if mask >> i & 1]


def count(mask: int) -> int:
    return bin(mask).count("1")


def narrower(mask: int, other: int) -> bool:
    """``IsNarrowerThan``: fewer NUMA nodes, or as many and a lower mask value."""
    if count(mask) == count(other):
        return mask < other
    return count(mask) < count(other)


def mask_string(mask: int) -> str:
    """Go's ``bitMask.String``: binary, zero-padded to the smallest even width that holds the mask."""
    for shift in range(62, 0, -2):
        if mask > 1 << shift:
            return format(mask, f"0{shift + 2}b")
    return format(mask, "02b")


def iterate_masks(nodes: Sequence[int]) -> Iterable[int]:
    """``IterateBitMasks``: every non-empty subset of ``nodes``, by size, then in list order."""
    for size in range(1, len(nodes) + 1):
        for subset in itertools.combinations(nodes, size):
            yield mask_of(subset)


def check_exclusive_policy(hint: Hint, exclusive: str, statuses: Sequence[str]) -> bool:
    """``checkExclusivePolicy``: with ``Required``, a multi-NUMA affinity may not use a ``single`` node and a
    one-NUMA affinity may not use a ``shared`` one. A hint without affinity never passes."""
    if hint.affinity is None:
        return False
    if exclusive == EXCLUSIVE_REQUIRED:
        nodes = hint.nodes
        status = [statuses[n] if n < len(statuses) else STATUS_IDLE for n in nodes]
        if len(nodes) > 1:
            return STATUS_SINGLE not in status
        return status[0] != STATUS_SHARED
    return True


def merge_permutation(numa_nodes: Sequence[int], permutation: Sequence[Hint]) -> Hint:
    """``mergePermutation``."""
    preferred = True
    satisfied = True
    masks = []
    widest = 0
    for hint in permutation:
        if hint.affinity is not None:
            masks.append(hint.affinity)
            if hint.affinity != masks[0]:
                preferred = False
            widest = max(widest, count(hint.affinity))
        if not hint.preferred:
            preferred = False
        if hint.unsatisfied:
            satisfied = False
    merged = mask_of(numa_nodes)
    for mask in masks:
        merged &= mask
    satisfied = (not masks or widest == count(merged)) and satisfied
    return Hint(merged, preferred, not satisfied)


def filter_providers_hints(providers: Sequence[Mapping[str, Sequence[Hint]]]
                           ) -> tuple[list[list[Hint]], list[str], list[str]]:
    """``filterProvidersHints``: (hint lists to combine, reasons, sorted summaries)."""
    lists: list[list[Hint]] = []
    reasons: list[str] = []
    summary: list[str] = []
    for hints in providers:
        if not hints:
            lists.append([Hint(preferred=True)])
            continue
        for resource in sorted(hints):
            if len(hints[resource]) == 0:
                lists.append([Hint(unsatisfied=True)])
                reasons.append(ERR_UNSATISFIED.format(resource))
                continue
            summary.append(_summary(resource, hints[resource]))
            lists.append(list(hints[resource]))
    return lists, reasons, sorted(summary)


def _summary(resource: str, hints: Sequence[Hint]) -> str:
    preferred = [mask_string(h.affinity or 0) for h in hints if not h.unsatisfied and h.preferred]
    possible = [mask_string(h.affinity or 0) for h in hints if not h.unsatisfied]
    return f"{resource} prefer [{' '.join(preferred)}] among [{' '.join(possible)}]"


def merge_filtered_hints(numa_nodes: Sequence[int], lists: Sequence[Sequence[Hint]], exclusive: str,
                         statuses: Sequence[str]) -> Hint:
    """``mergeFilteredHints``: the best merged hint over the cross product of ``lists``."""
    best = Hint(mask_of(numa_nodes))
    for permutation in itertools.product(*lists):
        merged = merge_permutation(numa_nodes, permutation)
        if count(merged.affinity) == 0:
            continue
        preferred = merged.preferred and check_exclusive_policy(merged, exclusive, statuses)
        score = sum(h.score for h in permutation if h.affinity is not None and h.affinity == merged.affinity)
        merged = dataclasses.replace(merged, preferred=preferred, score=score)
        if merged.preferred and not best.preferred:
            best = merged
            continue
        if not merged.preferred and best.preferred:
            continue
        if not narrower(merged.affinity, best.affinity):
            if count(merged.affinity) == count(best.affinity) and merged.score > best.score:
                best = merged
            continue
        best = merged
    return best


def merge(policy: str, numa_nodes: Sequence[int], providers: Sequence[Mapping[str, Sequence[Hint]]],
          exclusive: str, statuses: Sequence[str]) -> tuple[Hint, bool, list[str]]:
    """``Policy.Merge`` of ``policy``: (best hint, admit, reasons)."""
    every = mask_of(numa_nodes)
    if policy == POLICY_BEST_EFFORT:
        lists, _, _ = filter_providers_hints(providers)
        best = merge_filtered_hints(numa_nodes, lists, exclusive, statuses)
        return (Hint(every) if best.unsatisfied else best), True, []
    if policy == POLICY_RESTRICTED:
        lists, reasons, summary = filter_providers_hints(providers)
        if reasons:
            return Hint(every), False, reasons
        best = merge_filtered_hints(numa_nodes, lists, exclusive, statuses)
        if not best.preferred:
            return best, False, [ERR_UNALIGNED.format(" & ".join(summary))]
        return best, True, []
    if policy == POLICY_SINGLE_NUMA_NODE:
        lists, reasons, summary = filter_providers_hints(providers)
        if reasons:
            return Hint(), False, reasons
        single = [[h for h in hints if h.preferred and (h.affinity is None or count(h.affinity) == 1)]
                  for hints in lists]
        best = merge_filtered_hints(numa_nodes, single, exclusive, statuses)
        if best.affinity == every:
            best = Hint(preferred=best.preferred)
        if not best.preferred:
            return best, False, [ERR_UNALIGNED.format(",".join(summary))]
        return best, True, []
    return Hint(), True, []
