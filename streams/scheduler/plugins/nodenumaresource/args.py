"""NodeNUMAResource's args (``NodeNUMAResourceArgs``, Koordinator's defaults): the default cpu bind policy and the
node and NUMA scoring strategies."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from streams.objects.args import ArgsError, ArgsReader
from streams.scheduler.plugins.nodenumaresource.accumulator import (
    FULL_PCPUS, LEAST_ALLOCATED, MOST_ALLOCATED, SPREAD_BY_PCPUS)

NAME = "NodeNUMAResource"
DEFAULT_WEIGHTS = (("cpu", 1), ("memory", 1))


def _weights(reader: ArgsReader, strategy: Mapping | None, field: str, what: str) -> tuple[str, tuple]:
    """(type, weights) of one scoring strategy; Koordinator's defaults when the field is absent."""
    if strategy is None:
        return LEAST_ALLOCATED, DEFAULT_WEIGHTS
    sub = ArgsReader(NAME, strategy, {"type", "resources"})
    kind = sub.string("type", "")
    if kind not in (LEAST_ALLOCATED, MOST_ALLOCATED):
        raise ArgsError(f"{NAME}: {what} {kind} is not supported")
    pairs = []
    for index, item in enumerate(sub.sequence("resources") or ()):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise reader.fail(field, f"resources[{index}] needs a name, got {item!r}")
        weight = item.get("weight", 0)
        if isinstance(weight, bool) or not isinstance(weight, int) or not 0 < weight <= 100:
            raise ArgsError(f"{NAME}: resources[{index}].weight: Invalid value: {weight!r}: resource weight of "
                            f"{item['name']} not in valid range (0, 100]")
        pairs.append((item["name"], weight))
    return kind, tuple(pairs)


@dataclasses.dataclass(frozen=True)
class NodeNUMAResourceArgs:
    default_cpu_bind_policy: str = FULL_PCPUS
    """``defaultCPUBindPolicy``: "", FullPCPUs or SpreadByPCPUs ("" binds no cpus unless the pod asks)."""
    scoring_type: str = LEAST_ALLOCATED
    scoring_weights: tuple[tuple[str, int], ...] = DEFAULT_WEIGHTS
    numa_scoring_type: str = LEAST_ALLOCATED
    """``numaScoringStrategy.type``; its weights are read and validated but, as in Koordinator, unused."""

    @property
    def numa_allocate_strategy(self) -> str:
        """``GetDefaultNUMAAllocateStrategy``: MostAllocated only when the NUMA scoring strategy is."""
        return MOST_ALLOCATED if self.numa_scoring_type == MOST_ALLOCATED else LEAST_ALLOCATED

    @classmethod
    def from_config(cls, raw: Mapping | None) -> "NodeNUMAResourceArgs":
        reader = ArgsReader(NAME, raw, {"defaultCPUBindPolicy", "scoringStrategy", "numaScoringStrategy"})
        policy = reader.string("defaultCPUBindPolicy", FULL_PCPUS)
        if policy not in ("", FULL_PCPUS, SPREAD_BY_PCPUS):
            raise ArgsError(f'{NAME}: defaultCPUBindPolicy: Invalid value: "{policy}": must specified CPU bind '
                            f"policy FullPCPUs or SpreadByPCPUs")
        kind, weights = _weights(reader, reader.mapping("scoringStrategy"), "scoringStrategy", "scoring strategy")
        numa_kind, _ = _weights(reader, reader.mapping("numaScoringStrategy"), "numaScoringStrategy",
                                "numa scoring strategy")
        return cls(policy, kind, weights, numa_kind)
