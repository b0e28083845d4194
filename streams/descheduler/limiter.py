"""The descheduler's eviction limiter (``pkg/descheduler/evictions/eviction_limiter.go``), v1.6's global
limits: at most ``per_node`` evictions per node, ``per_namespace`` per namespace and ``total`` in one
descheduling round (None = unlimited). A refused eviction does not count; a dry-run one does."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class EvictionLimiter:
    per_node: int | None = None
    per_namespace: int | None = None
    total: int | None = None
    node_counts: dict[str, int] = dataclasses.field(default_factory=dict)
    namespace_counts: dict[str, int] = dataclasses.field(default_factory=dict)
    evicted: int = 0

    def allow(self, namespace: str, node: str | None) -> bool:
        if node and self.per_node is not None and self.node_counts.get(node, 0) + 1 > self.per_node:
            return False
        if self.per_namespace is not None and self.namespace_counts.get(namespace, 0) + 1 > self.per_namespace:
            return False
        return self.total is None or self.evicted + 1 <= self.total

    def done(self, namespace: str, node: str | None) -> None:
        if node:
            self.node_counts[node] = self.node_counts.get(node, 0) + 1
        self.namespace_counts[namespace] = self.namespace_counts.get(namespace, 0) + 1
        self.evicted += 1

    def node_limit_exceeded(self, node: str) -> bool:
        return self.per_node is not None and self.node_counts.get(node, 0) == self.per_node
