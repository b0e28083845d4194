"""The assigned pods InterPodAffinity counts, indexed the way kube-scheduler's snapshot lists them.

kube-scheduler's NodeInfo keeps ``Pods``, ``PodsWithAffinity`` and ``PodsWithRequiredAntiAffinity``; here one
index over the domain keeps, for every assigned pod (bound, scheduled, or held by Permit: a pod placed earlier
in the same batch counts at once), its node and parsed terms, by namespace, and the keys of the pods with any
term and with a required anti-affinity term. It follows ``PodAssigned`` / ``PodUnassigned`` / ``PodChanged``,
so PreFilter reads only the pods that can matter: with no pod carrying required anti-affinity and an incoming
pod without terms, it reads none. Terms are parsed once per pod object (``terms_of``).

Iteration is in key order wherever it feeds a decision.
"""

from __future__ import annotations

from collections.abc import Iterator

from streams.objects.podinfo import PodInfo
from streams.scheduler.plugins.interpodaffinity.terms import PodTerms, parse
from streams.scheduler.state import Cluster, PodAssigned, PodChanged, PodUnassigned


class AssignedPods:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.node: dict[str, str] = {}
        """Assigned pod key -> its node."""
        self.namespace: dict[str, str] = {}
        self.by_namespace: dict[str, set[str]] = {}
        self.with_affinity: set[str] = set()
        self.with_required_anti_affinity: set[str] = set()
        self._parsed: dict[str, tuple[PodInfo, PodTerms]] = {}
        self.relabelled: dict[str, PodInfo] = {}
        """The assigned pod last changed, as it was before (the queueing hint of its Update compares both)."""
        for key in sorted(cluster.assignment):
            self._add(key, cluster.pods[key], cluster.assignment[key])

    def terms_of(self, pod: PodInfo) -> PodTerms:
        cached = self._parsed.get(pod.key)
        if cached is not None and cached[0] is pod:
            return cached[1]
        terms = parse(pod)
        self._parsed[pod.key] = (pod, terms)
        return terms

    def observe(self, change: object) -> None:
        if isinstance(change, PodAssigned):
            self._remove(change.key)
            self._add(change.key, change.pod, change.node)
        elif isinstance(change, PodUnassigned):
            self._remove(change.key)
        elif isinstance(change, PodChanged):
            if change.new is None:
                self._remove(change.key)
                self._parsed.pop(change.key, None)
                self.relabelled.pop(change.key, None)
            elif change.key in self.node:
                self.relabelled = {change.key: change.old} if change.old is not None else {}
                node = self.node[change.key]
                self._remove(change.key)
                self._add(change.key, change.new, node)

    def _add(self, key: str, pod: PodInfo, node: str) -> None:
        self.node[key] = node
        self.namespace[key] = pod.namespace
        self.by_namespace.setdefault(pod.namespace, set()).add(key)
        terms = self.terms_of(pod)
        if terms.any:
            self.with_affinity.add(key)
        if terms.required_anti_affinity:
            self.with_required_anti_affinity.add(key)

    def _remove(self, key: str) -> None:
        if self.node.pop(key, None) is None:
            return
        namespace = self.namespace.pop(key)
        keys = self.by_namespace[namespace]
        keys.discard(key)
        if not keys:
            del self.by_namespace[namespace]
        self.with_affinity.discard(key)
        self.with_required_anti_affinity.discard(key)

    def pods(self, keys, namespaces: frozenset[str] | None = None) -> Iterator[tuple[PodInfo, PodTerms, str]]:
        """(pod, terms, node) of ``keys`` (or, with ``namespaces``, of every assigned pod in them), in key order,
        skipping pods whose node the domain does not hold (kube-scheduler's snapshot has no NodeInfo for them)."""
        if namespaces is not None:
            keys = [key for namespace in namespaces for key in self.by_namespace.get(namespace, ())]
        nodes = self.cluster.nodes
        for key in sorted(keys):
            node = self.node[key]
            if node in nodes:
                pod = self.cluster.pods[key]
                yield pod, self.terms_of(pod), node
