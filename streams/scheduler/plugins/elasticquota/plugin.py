"""The ElasticQuota scheduler plugin (``plugin.go``, ``plugin_helper.go``, ``preempt.go``).

PreFilter, for the pod's quota q (see ``streams.quotas.quota_name``; runtime from ``tree``)::

    limit = runtime(q) (max for the system/default quotas, or when enableRuntimeQuota is false)
    req   = pod request masked to the names of q's max
    used + req > limit in a name the limit has ->
        "Insufficient quotas, quotaName: q, runtime: <limit>, used: <used>, pod's request: <req>,
         exceedDimensions: [<names>]"
    a non-preemptible pod (label quota.scheduling.koordinator.sh/preemptible=false):
        nonPreemptibleUsed + req > min(q) ->
        "Insufficient non-preemptible quotas, quotaName: q, min: <min>, nonPreemptibleUsed: <npu>,
         pod's request: <req>, exceedDimensions: [...]"
    enableCheckParentQuota: every ancestor below the root,
        used(a) + req (on the request's names) > runtime(a) ->
        "Insufficient quotas, quotaNameTopo: [a ... q], runtime: ..., used: ..., pod's request: ...,
         exceedDimensions: [...]"

Resource lists print as Koordinator's ``printResourceList`` does (sorted "name:quantity", "<empty>").
All failures are Unschedulable, so PostFilter may preempt.

PostFilter, quota preemption (kube-scheduler's evaluator with Koordinator's
``SelectVictimsOnNode``): victims are assigned pods of the same quota, preemptible, with a
lower priority than the preemptor (never pods of the default quota while
``disableDefaultQuotaPreemption``). On each node where the pod may fit: remove all its
victims; the node must then pass the filters; then, from the most important victim
(priority, then earliest assignment), put each back unless the pod then no longer fits
the node's resources or the quota (used + request <= limit). The node chosen minimizes,
in order, the highest victim priority, the sum of victim priorities, the number of
victims, then prefers the latest assignment of the most important victim, then the name.
Without candidates the message is kube-scheduler's "preemption: 0/N nodes are available:
..." (a node without victims counts as "No preemption victims found for incoming pod",
where Koordinator would name each node and pod).

Pods are charged to their quota when they become known (request) and when assigned
(used); min and max come from the quota objects.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from streams import quotas
from streams.objects.podinfo import PodInfo
from streams.quotas import DEFAULT, DEFAULT_TREE, ROOT, SYSTEM, QuotaSpec
from streams.scheduler.columns import PODS
from streams.scheduler.framework import (
    ASSIGNED_POD_DELETE, NODE_ADD, NODE_UPDATE, QUOTA, REASON_NOT_ELIGIBLE, REMOVED_PODS, SUCCESS, CycleState,
    Diagnosis, PostFilterResult, Status, Victim, every_action, preemption_failure, register)
from streams.scheduler.plugins.elasticquota import objects, webhook
from streams.scheduler.plugins.elasticquota.args import NAME, ElasticQuotaArgs
from streams.scheduler.plugins.elasticquota.tree import PodCharge, QuotaTree
from streams.scheduler.state import (
    Cluster, NodeChanged, PodAssigned, PodChanged, PodUnassigned, QuotaObjectsChanged)
from streams.scheduler.units import resource_list_string

INSUFFICIENT = ("Insufficient quotas, quotaName: {quota}, runtime: {limit}, used: {used}, "
                "pod's request: {request}, exceedDimensions: [{dims}]")
INSUFFICIENT_NON_PREEMPTIBLE = ("Insufficient non-preemptible quotas, quotaName: {quota}, min: {min}, "
                                "nonPreemptibleUsed: {used}, pod's request: {request}, exceedDimensions: [{dims}]")
INSUFFICIENT_PARENT = ("Insufficient quotas, quotaNameTopo: [{topo}], runtime: {limit}, used: {used}, "
                       "pod's request: {request}, exceedDimensions: [{dims}]")
def _over(used: Mapping[str, int], limit: Mapping[str, int]) -> list[str]:
    """``quotav1.LessThanOrEqual``'s exceeded names, sorted: names in both where used > limit."""
    return sorted(name for name, value in limit.items() if name in used and used[name] > value)


def _add(*lists: Mapping[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for values in lists:
        for name, value in values.items():
            out[name] = out.get(name, 0) + value
    return out


def check_quota(quota: str, limit: Mapping[str, int], used: Mapping[str, int],
                request: Mapping[str, int]) -> str | None:
    """The "Insufficient quotas" message, or None when ``used + request`` fits ``limit``."""
    dims = _over(_add(request, used), limit)
    if not dims:
        return None
    return INSUFFICIENT.format(quota=quota, limit=resource_list_string(dict(limit)),
                               used=resource_list_string(dict(used)), request=resource_list_string(dict(request)),
                               dims=" ".join(dims))


def check_non_preemptible(quota: str, minimum: Mapping[str, int], used: Mapping[str, int],
                          request: Mapping[str, int]) -> str | None:
    dims = _over(_add(request, used), minimum)
    if not dims:
        return None
    return INSUFFICIENT_NON_PREEMPTIBLE.format(
        quota=quota, min=resource_list_string(dict(minimum)), used=resource_list_string(dict(used)),
        request=resource_list_string(dict(request)), dims=" ".join(dims))


def check_parent(topo: list[str], limit: Mapping[str, int], used: Mapping[str, int],
                 request: Mapping[str, int]) -> str | None:
    """``checkQuotaRecursive`` at one ancestor: used + request on the request's names against its runtime."""
    new_used = {name: value for name, value in _add(request, used).items() if name in request}
    dims = _over(new_used, limit)
    if not dims:
        return None
    return INSUFFICIENT_PARENT.format(topo=" ".join(topo), limit=resource_list_string(dict(limit)),
                                      used=resource_list_string(dict(used)),
                                      request=resource_list_string(dict(request)), dims=" ".join(dims))


class ElasticQuota:
    name = NAME
    Args = ElasticQuotaArgs
    events_to_register = register(NODE_ADD, NODE_UPDATE, ASSIGNED_POD_DELETE, *every_action(QUOTA))
    """Node events too: the quota total follows the nodes (Koordinator registers none for ElasticQuota)."""
    admitted_kinds = webhook.ADMITTED_KINDS
    admit = staticmethod(webhook.admit)

    def __init__(self, args: ElasticQuotaArgs, cluster: Cluster) -> None:
        args.validate()
        self.args = args
        self.cluster = cluster
        self.trees: dict[str, QuotaTree] = {}
        self.specs: dict[str, QuotaSpec] = {}
        self.tree_of: dict[str, str] = {}
        self.pod_quota: dict[str, tuple[str, str]] = {}
        self._epoch = 0
        self._rebuild()

    # -- bookkeeping -------------------------------------------------------------

    def _new_tree(self, tree_id: str) -> QuotaTree:
        return QuotaTree(tree_id, self.args.enable_min_quota_scale, self.args.system_quota_group_max,
                         self.args.default_quota_group_max)

    def _rebuild(self) -> None:
        self._epoch += 1
        cluster = self.cluster
        records = objects.effective_quotas(cluster.quotas, cluster.profiles, cluster.nodes.values())
        self.specs = quotas.specs_of(records)
        self.trees = {DEFAULT_TREE: self._new_tree(DEFAULT_TREE)}
        self.tree_of = {DEFAULT: DEFAULT_TREE, SYSTEM: DEFAULT_TREE}
        for name in sorted(self.specs):
            spec = self.specs[name]
            tree_id = DEFAULT_TREE if name == DEFAULT else spec.tree_id
            if name == DEFAULT:
                spec = dataclasses.replace(spec, parent=ROOT, is_parent=False)
            tree = self.trees.get(tree_id) or self.trees.setdefault(tree_id, self._new_tree(tree_id))
            tree.upsert(spec)
            self.tree_of[name] = tree_id
        self._set_totals()
        self.pod_quota = {}
        for key in sorted(cluster.pods):
            self._charge(key, cluster.pods[key])

    def _set_totals(self) -> None:
        columns = self.cluster.columns
        count = len(columns)
        cluster_total = {name: int(columns.allocatable[i, :count].sum()) for i, name in enumerate(columns.resources)}
        default_total = dict(cluster_total)
        for tree_id, tree in self.trees.items():
            if tree_id == DEFAULT_TREE:
                continue
            roots = [tree.quotas[n].spec for n in sorted(tree.quotas) if tree.quotas[n].spec.is_root
                     and tree.quotas[n].spec.total_resource is not None]
            total = dict(roots[0].total_resource) if roots else {}
            tree.set_total(total)
            if roots and not roots[0].ignore_default_tree:
                for name, value in total.items():
                    default_total[name] = default_total.get(name, 0) - value
        self.trees[DEFAULT_TREE].set_total(default_total)

    def resolve(self, pod: PodInfo) -> tuple[str, str]:
        """(quota name, tree id) of ``pod``."""
        name = quotas.quota_name(pod.labels, pod.namespace, self.specs)
        return name, self.tree_of.get(name, DEFAULT_TREE)

    def _charge(self, key: str, pod: PodInfo | None) -> None:
        old = self.pod_quota.get(key)
        if pod is not None and old is not None:
            name, tree_id = self.resolve(pod)
            charge = self.trees[tree_id].quotas[name].pods.get(key) if (name, tree_id) == old else None
            if charge is not None and charge.request == pod.requests and charge.non_preemptible == pod.non_preemptible:
                self.trees[tree_id].set_assigned(name, key, key in self.cluster.assignment)
                return
        old = self.pod_quota.pop(key, None)
        if old is not None:
            self.trees[old[1]].remove_pod(old[0], key)
        if pod is None:
            return
        name, tree_id = self.resolve(pod)
        assigned = key in self.cluster.assignment
        self.trees[tree_id].add_pod(name, key, PodCharge(dict(pod.requests), pod.non_preemptible, assigned))
        self.pod_quota[key] = (name, tree_id)

    def observe(self, change: object) -> None:
        if isinstance(change, PodChanged):
            self._charge(change.key, change.new)
        elif isinstance(change, (PodAssigned, PodUnassigned)):
            self._charge(change.key, self.cluster.pods.get(change.key))
        elif isinstance(change, QuotaObjectsChanged):
            self._rebuild()
        elif isinstance(change, NodeChanged):
            if self.cluster.profiles:
                self._rebuild()
            else:
                self._set_totals()

    # -- the cycle ---------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        name, tree_id = self.resolve(pod)
        tree = self.trees[tree_id]
        info = tree.quotas[name]
        limit = tree.limit(name, self.args.enable_runtime_quota)
        request = info.masked(pod.requests)
        state[NAME] = (name, tree_id, request, limit)
        used = tree.used(name)
        message = check_quota(name, limit, used, request)
        if message:
            return Status.unschedulable(message, NAME)
        if pod.non_preemptible:
            np_used = tree.used(name, non_preemptible=True)
            message = check_non_preemptible(name, info.spec.min, np_used, request)
            if message:
                return Status.unschedulable(message, NAME)
        if self.args.enable_check_parent_quota:
            topo = [name]
            for ancestor in tree.path(name)[1:]:
                if ancestor.name == ROOT:
                    break
                topo.insert(0, ancestor.name)
                message = check_parent(topo, tree.limit(ancestor.name, self.args.enable_runtime_quota),
                                       tree.used(ancestor.name), request)
                if message:
                    return Status.unschedulable(message, NAME)
        return SUCCESS

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        pass

    # -- preemption --------------------------------------------------------------

    def _victims(self, pod: PodInfo, quota: str) -> dict[str, list[str]]:
        """Potential victims by node: assigned, same quota, preemptible, lower priority."""
        if self.args.disable_default_quota_preemption and quota == DEFAULT:
            return {}
        cluster = self.cluster
        out: dict[str, list[str]] = {}
        for key, (name, _) in self.pod_quota.items():
            if name != quota or key not in cluster.assignment or key == pod.key:
                continue
            victim = cluster.pods[key]
            if victim.non_preemptible or victim.sort_priority >= pod.sort_priority:
                continue
            out.setdefault(cluster.assignment[key], []).append(key)
        return out

    def post_filter(self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis) -> PostFilterResult:
        cluster = self.cluster
        count = len(cluster.columns)
        if pod.preemption_policy == "Never":
            return PostFilterResult(Status.unschedulable("preemption: " + REASON_NOT_ELIGIBLE, NAME))
        if NAME not in state:
            self.pre_filter(state, pod)
        quota, tree_id, request, limit = state[NAME]
        resolvable = diagnosis.resolvable
        victims_by_node = {node: keys for node, keys in self._victims(pod, quota).items()
                           if node in cluster.columns.row and resolvable[cluster.columns.row[node]]}
        candidates = self._candidates(state, pod, quota, tree_id, request, limit, victims_by_node, diagnosis)
        if not candidates:
            message = preemption_failure(count, int(resolvable[:count].sum()))
            return PostFilterResult(Status.unschedulable(message, NAME, resolvable=quota == DEFAULT))
        best = min(candidates, key=lambda c: c[0])
        node, keys = best[1], best[2]
        return PostFilterResult(SUCCESS, node, tuple(Victim(key, node) for key in keys))

    def _importance(self, key: str) -> tuple:
        """Most important first: higher priority, then earlier assignment (``MoreImportantPod``)."""
        pod = self.cluster.pods[key]
        return (-pod.sort_priority, self.cluster.assigned_at.get(key, 0), key)

    def _candidates(self, state, pod, quota, tree_id, request, limit, victims_by_node, diagnosis) -> list:
        cluster = self.cluster
        columns = cluster.columns
        tree = self.trees[tree_id]
        info = tree.quotas[quota]
        wanted = {name: value for name, value in pod.requests.items() if value > 0}
        out = []
        for node in sorted(victims_by_node):
            keys = sorted(victims_by_node[node], key=self._importance)
            row = columns.row[node]
            for key in keys:
                victim = cluster.pods[key]
                columns.add_pod(node, victim.requests, victim.nonzero_requests(), -1)
            state[REMOVED_PODS] = frozenset(keys)
            try:
                fits = bool(diagnosis.run_filters()[row]) if diagnosis.run_filters else True
            finally:
                state.pop(REMOVED_PODS, None)
                for key in keys:
                    victim = cluster.pods[key]
                    columns.add_pod(node, victim.requests, victim.nonzero_requests(), 1)
            if not fits:
                continue
            freed: dict[str, int] = {}
            used = tree.used(info.name)
            for key in keys:
                for name, value in info.masked(cluster.pods[key].requests).items():
                    used[name] = used.get(name, 0) - value
                for name, value in cluster.pods[key].requests.items():
                    freed[name] = freed.get(name, 0) + value
            freed_pods = len(keys)
            chosen = []
            for key in keys:
                victim = cluster.pods[key]
                trial_freed = {n: v - victim.requests.get(n, 0) for n, v in freed.items()}
                node_fits = self._fits(row, wanted, trial_freed, freed_pods - 1)
                trial_used = _add(used, info.masked(victim.requests))
                new_used = {n: v for n, v in _add(trial_used, request).items() if n in request}
                if node_fits and not _over(new_used, limit):
                    freed, used, freed_pods = trial_freed, trial_used, freed_pods - 1
                else:
                    chosen.append(key)
            if not chosen:
                continue
            priorities = [cluster.pods[k].sort_priority for k in chosen]
            top = max(priorities)
            latest = max(cluster.assigned_at.get(k, 0) for k in chosen if cluster.pods[k].sort_priority == top)
            out.append(((top, sum(priorities), len(chosen), -latest, node), node, chosen))
        return out

    def _fits(self, row: int, wanted: Mapping[str, int], freed: Mapping[str, int], freed_pods: int) -> bool:
        columns = self.cluster.columns
        if columns.requested[PODS, row] - freed_pods + 1 > columns.allocatable[PODS, row]:
            return False
        for name, value in wanted.items():
            index = columns.index.get(name)
            allocatable = int(columns.allocatable[index, row]) if index is not None else 0
            requested = int(columns.requested[index, row]) if index is not None else 0
            if requested - freed.get(name, 0) + value > allocatable:
                return False
        return True

    # -- statuses ----------------------------------------------------------------

    def status_version(self) -> tuple:
        """Changes whenever a quota's statuses may have changed (refreshes the trees)."""
        for tree in self.trees.values():
            tree.refresh()
        return (id(self), self._epoch, tuple(sorted((t, tree.version) for t, tree in self.trees.items())))

    def statuses(self) -> list[dict]:
        """Every quota's min, max, runtime, used and request, as ElasticQuotaStatus fields (tree order).

        ``request`` is what Koordinator writes to the quota's request annotation
        (``CalculateInfo.Request``: the children's limited requests plus the quota's own pods,
        at least min for a quota that does not lend) — not capped at max, although the schema's
        field description says so; Koordinator's behaviour is followed. ``runtime`` is masked to
        the quota's max names; for the system and default quotas it is their max (what PreFilter
        checks), where Koordinator's annotation stays empty."""
        out = []
        for tree_id in sorted(self.trees):
            tree = self.trees[tree_id]
            tree.refresh()
            for name in sorted(tree.quotas):
                if name == ROOT:
                    continue
                info = tree.quotas[name]
                builtin = name in (SYSTEM, DEFAULT) and name not in self.cluster.quotas
                out.append({
                    "domain_tree": tree_id,
                    "namespace": None if builtin else info.spec.namespace,
                    "name": name,
                    "parent": info.spec.parent or None,
                    "min": dict(info.spec.min),
                    "max": dict(info.spec.max),
                    "runtime": tree.limit(name, True),
                    "used": dict(info.used),
                    "request": dict(info.request),
                })
        return out

    def close(self) -> None:
        pass

    def mutate_pod(self, pod: PodInfo) -> PodInfo:
        """The multi-quota-tree webhook (``webhook.with_tree_affinity``)."""
        return webhook.with_tree_affinity(pod, self.quota_selector(pod))

    def quota_selector(self, pod: PodInfo) -> Mapping[str, str] | None:
        """The nodeSelector of the profile of the pod's quota tree (the multi-tree webhook adds it)."""
        _, tree_id = self.resolve(pod)
        if tree_id == DEFAULT_TREE:
            return None
        for key in sorted(self.cluster.profiles):
            profile = self.cluster.profiles[key]
            if (profile.get("quotaTreeId") or "") == tree_id:
                return dict(profile.get("nodeSelector") or {})
        return None
