"""Quota trees: ElasticQuota objects, pod accounting and runtime quotas
(``core/group_quota_manager.go``, ``core/quota_info.go``,
``core/scale_minquota_when_over_root_res.go``, ``quota_handler.go``).

One ``QuotaTree`` per tree id (Koordinator's GroupQuotaManager): the default
tree ("") holds the built-in system and default quotas; a tree with an id is
built from the quotas labelled ``quota.scheduling.koordinator.sh/tree-id``
(with ``is-root=true`` on its top quota, whose ``total-resource`` annotation
gives the tree's total, subtracted from the default tree unless
``ignore-default-tree=true``).

Accounting, per resource, computed bottom-up from the pods::

    pod request   = effective pod request, masked to the names in its quota's max
    childRequest  = own pods' requests + sum of the children's limited requests
    request       = childRequest, or max(childRequest, min) when the quota does not lend
    limited       = min(request, max)                    (what the parent sees)
    used          = own assigned pods' requests + sum of the children's used

Runtime, top-down (``RefreshRuntime``): the root's total is the tree's total
minus what the system and default quotas use; each parent's runtime is split
over its children by ``calculator.redistribute`` on the parent's resource
names (the root: every name any quota's max uses), after min scaling. A
quota's runtime is read masked to its own max. The system and default quotas
are outside the split: their runtime is their max.

Min scaling (``enableMinQuotaScale``): for parent total T and children mins
summing to S per resource, where T < S each child's min becomes
``int(T * min / S)`` (float arithmetic, truncated), else stays.

Koordinator computes runtimes lazily along the path of the quota a pod asks
for, so a sibling's scaled min may lag until it is itself refreshed; here a
refresh leaves every quota with the values of a recomputation of the whole
tree, which Koordinator converges to (independent of the order of questions).
What is recomputed depends on what changed since the last refresh:

* a quota object, the total, or a pod of the system or default quota (whose
  used lowers the root's total): the whole tree (``dirty``);
* a pod of any other quota (added, removed, assigned or unassigned): the sums
  of that quota (only used and np_used for an assignment), then of its
  ancestors up to the first whose limited, used, np_request and np_used stayed
  the same (all that its parent reads of it). A distribution reads the
  parent's runtime and its children's limited (mins, weights and lending are
  specs), so runtimes are redistributed only under the highest parents one of
  whose children's limited changed, descending only into children whose
  runtime changed or below which a limited changed; nothing else moves.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from streams.quotas import DEFAULT, DEFAULT_TREE, ROOT, SYSTEM, QuotaSpec
from streams.scheduler.plugins.elasticquota.calculator import QuotaNode, redistribute

def _sum(*lists: Mapping[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for values in lists:
        for name, value in values.items():
            out[name] = out.get(name, 0) + value
    return out


def _add_signed(target: dict[str, int], values: dict[str, int], sign: int) -> dict[str, int]:
    out = dict(target)
    for name, value in values.items():
        out[name] = max(out.get(name, 0) + sign * value, 0)
    return out


def _nonnegative_sum(own: Mapping[str, int], children: list[Mapping[str, int]]) -> dict[str, int]:
    """``own`` plus every child's values, per name, negative sums as 0."""
    return {name: max(value, 0) for name, value in _sum(own, *children).items()}


@dataclasses.dataclass
class PodCharge:
    """One pod as its quota accounts it: its full request (masked by the quota when summed)."""

    request: dict[str, int]
    non_preemptible: bool
    assigned: bool


class QuotaInfo:
    def __init__(self, spec: QuotaSpec) -> None:
        self.spec = spec
        self.pods: dict[str, PodCharge] = {}
        self.self_request: dict[str, int] = {}
        self.self_used: dict[str, int] = {}
        self.self_np_request: dict[str, int] = {}
        self.self_np_used: dict[str, int] = {}
        self.child_request: dict[str, int] = {}
        self.request: dict[str, int] = {}
        self.limited: dict[str, int] = {}
        self.used: dict[str, int] = {}
        self.np_request: dict[str, int] = {}
        self.np_used: dict[str, int] = {}
        self.auto_min: dict[str, int] = dict(spec.min)
        self.runtime: dict[str, int] = {}

    @property
    def name(self) -> str:
        return self.spec.name

    def masked_runtime(self) -> dict[str, int]:
        """``getMaskedRuntimeNoLock``: the runtime on the names of this quota's max."""
        return {name: value for name, value in self.runtime.items() if name in self.spec.max}

    def _charge(self, charge: PodCharge, sign: int, used_only: bool = False) -> None:
        """Add (sign 1) or take away (-1) one pod's request, and its usage when assigned."""
        request = self.masked(charge.request)
        if not used_only:
            self.self_request = _add_signed(self.self_request, request, sign)
            if charge.non_preemptible:
                self.self_np_request = _add_signed(self.self_np_request, request, sign)
        if charge.assigned:
            self.self_used = _add_signed(self.self_used, request, sign)
            if charge.non_preemptible:
                self.self_np_used = _add_signed(self.self_np_used, request, sign)

    def masked(self, requests: Mapping[str, int]) -> dict[str, int]:
        """A pod's requests on the names of this quota's max (``quotav1.Mask``)."""
        return {name: value for name, value in requests.items() if name in self.spec.max}


class QuotaTree:
    """One quota tree (Koordinator's GroupQuotaManager)."""

    def __init__(self, tree_id: str, enable_min_scale: bool, system_max: Mapping[str, int],
                 default_max: Mapping[str, int]) -> None:
        self.tree_id = tree_id
        self.enable_min_scale = enable_min_scale
        self.quotas: dict[str, QuotaInfo] = {ROOT: QuotaInfo(QuotaSpec.builtin(ROOT, {}))}
        if tree_id == DEFAULT_TREE:
            self.quotas[SYSTEM] = QuotaInfo(QuotaSpec.builtin(SYSTEM, system_max))
            self.quotas[DEFAULT] = QuotaInfo(QuotaSpec.builtin(DEFAULT, default_max))
        self.total: dict[str, int] = {}
        self.dirty = True
        self.version = 0
        """Bumped by every refresh that recomputed something (statuses may have changed)."""
        self._children: dict[str, list[QuotaInfo]] | None = None
        self._keys: dict[str, list[str]] | None = None
        self._depth: dict[str, int] | None = None
        self._touched: dict[str, bool] = {}
        """Quotas whose pods changed since the last refresh (when not ``dirty``): whether their requests did
        too (else only their used)."""

    # -- objects -------------------------------------------------------------

    def upsert(self, spec: QuotaSpec) -> None:
        self._children = None
        self._keys = None
        self._depth = None
        info = self.quotas.get(spec.name)
        if info is None:
            self.quotas[spec.name] = QuotaInfo(spec)
        else:
            for charge in info.pods.values():
                info._charge(charge, -1)
            info.spec = spec
            info.auto_min = dict(spec.min)
            for charge in info.pods.values():
                info._charge(charge, 1)
        self.dirty = True

    def remove(self, name: str) -> dict[str, PodCharge]:
        """Drop quota ``name``; returns its pods so the caller can charge them elsewhere."""
        info = self.quotas.pop(name, None)
        self._children = None
        self._keys = None
        self._depth = None
        self.dirty = True
        return dict(info.pods) if info else {}

    def set_total(self, total: Mapping[str, int]) -> None:
        if dict(total) != self.total:
            self.total = dict(total)
            self.dirty = True

    def children(self, name: str) -> list[QuotaInfo]:
        if self._children is None:
            children: dict[str, list[QuotaInfo]] = {}
            for quota_name in sorted(self.quotas):
                quota = self.quotas[quota_name]
                if quota_name not in (SYSTEM, DEFAULT, ROOT):
                    children.setdefault(quota.spec.parent, []).append(quota)
            self._children = children
        return self._children.get(name, [])

    def _depths(self) -> dict[str, int]:
        """The depth below the root of every quota of the root's tree (not the system and default quotas, nor the
        quotas under them or under a missing parent)."""
        if self._depth is None:
            depth = {ROOT: 0}
            stack = [ROOT]
            while stack:
                name = stack.pop()
                for child in self.children(name):
                    depth[child.name] = depth[name] + 1
                    stack.append(child.name)
            self._depth = depth
        return self._depth

    def path(self, name: str) -> list[QuotaInfo]:
        """``name`` and its ancestors up to and including the root."""
        out = []
        info = self.quotas.get(name)
        while info is not None:
            out.append(info)
            if info.name == ROOT:
                break
            info = self.quotas.get(info.spec.parent)
        return out

    # -- pods ----------------------------------------------------------------

    def add_pod(self, quota: str, key: str, charge: PodCharge) -> None:
        """Charge (or re-charge) pod ``key`` to ``quota``; ``charge.request`` is the full pod request."""
        info = self.quotas[quota]
        old = info.pods.get(key)
        if old is not None:
            info._charge(old, -1)
        info.pods[key] = charge
        info._charge(charge, 1)
        self._touch(quota, requests=True)

    def remove_pod(self, quota: str, key: str) -> PodCharge | None:
        info = self.quotas.get(quota)
        if info is None or key not in info.pods:
            return None
        charge = info.pods.pop(key)
        info._charge(charge, -1)
        self._touch(quota, requests=True)
        return charge

    def set_assigned(self, quota: str, key: str, assigned: bool) -> None:
        """Pod ``key`` was assigned or unassigned: only used changes, so runtimes need no recomputation
        (unless the quota is the system or default one, whose used lowers the root's total)."""
        info = self.quotas[quota]
        old = info.pods[key]
        if old.assigned == assigned:
            return
        new = PodCharge(old.request, old.non_preemptible, assigned)
        if old.assigned:
            info._charge(old, -1, used_only=True)
        else:
            info._charge(new, 1, used_only=True)
        info.pods[key] = new
        self._touch(quota, requests=False)

    def _touch(self, quota: str, requests: bool) -> None:
        """The pods of ``quota`` changed (their requests too, or only their used). A quota outside the root's tree
        (the system and default quotas, whose used lowers the root's total; one whose parent is missing) needs
        the whole tree recomputed."""
        if self.dirty:
            return
        if quota in self._depths():
            self._touched[quota] = requests or self._touched.get(quota, False)
        else:
            self.dirty = True

    # -- refresh -------------------------------------------------------------

    def refresh(self) -> None:
        """Bring request, used and runtime of every quota up to date (see the module docstring for what)."""
        if self.dirty:
            self._refresh_all()
        elif self._touched:
            self._refresh_touched()

    def _refresh_all(self) -> None:
        """Recompute every quota: the sums bottom-up, the root's runtime, then every distribution top-down."""
        self.dirty = False
        self._touched.clear()
        self.version += 1
        self._accumulate(ROOT)
        for name in (SYSTEM, DEFAULT):
            if name in self.quotas:
                self._accumulate(name)
        root = self.quotas[ROOT]
        sys_default_used = _sum(*(self.quotas[n].used for n in (SYSTEM, DEFAULT) if n in self.quotas))
        root.runtime = {name: self.total.get(name, 0) - sys_default_used.get(name, 0)
                        for name in set(self.total) | set(sys_default_used)}
        for name in (SYSTEM, DEFAULT):
            if name in self.quotas:
                self.quotas[name].runtime = dict(self.quotas[name].spec.max)
        self._distribute(root)

    def _refresh_touched(self) -> None:
        """Re-sum the touched quotas and, deepest first, their ancestors up to where nothing the parent reads
        changed; then redistribute under the highest parents one of whose children's limited changed."""
        self.version += 1
        depth = self._depths()
        levels: dict[int, dict[str, bool]] = {}  # per depth, the quotas to re-sum: whether requests too, or used only
        for name, requests in self._touched.items():
            levels.setdefault(depth[name], {})[name] = requests
        self._touched = {}
        changed_parents: set[str] = set()
        for level in range(max(levels), -1, -1):
            for name, requests in levels.get(level, {}).items():
                info = self.quotas[name]
                limited, np_request, used, np_used = info.limited, info.np_request, info.used, info.np_used
                self._sum_up(info, requests)
                if level == 0:
                    continue  # the root: no quota above reads its sums
                if info.limited != limited:
                    changed_parents.add(info.spec.parent)
                requests_changed = info.limited != limited or info.np_request != np_request
                if requests_changed or info.used != used or info.np_used != np_used:
                    parents = levels.setdefault(level - 1, {})
                    parents[info.spec.parent] = requests_changed or parents.get(info.spec.parent, False)
        below_a_change = {info.name for name in changed_parents for info in self.path(name)}
        for name in changed_parents:
            if not any(info.name in changed_parents for info in self.path(name)[1:]):
                self._distribute(self.quotas[name], below_a_change)

    def _accumulate(self, name: str) -> None:
        """Sum up quota ``name``'s subtree."""
        for child in self.children(name):
            self._accumulate(child.name)
        self._sum_up(self.quotas[name])

    def _sum_up(self, info: QuotaInfo, requests: bool = True) -> None:
        """Set ``info``'s used and np_used, and (with ``requests``) its child_request, np_request, request and
        limited, from its own pods and its children's current values."""
        children = self.children(info.name)
        if children:
            info.used = _nonnegative_sum(info.self_used, [c.used for c in children])
            info.np_used = _nonnegative_sum(info.self_np_used, [c.np_used for c in children])
        else:
            info.used = info.self_used
            info.np_used = info.self_np_used
        if not requests:
            return
        if children:
            info.child_request = _nonnegative_sum(info.self_request, [c.limited for c in children])
            info.np_request = _nonnegative_sum(info.self_np_request, [c.np_request for c in children])
        else:
            info.child_request = info.self_request
            info.np_request = info.self_np_request
        request = dict(info.child_request)
        if not info.spec.allow_lent and info.name != ROOT:
            for resource, minimum in info.spec.min.items():
                request[resource] = max(request.get(resource, 0), minimum)
        info.request = request
        maximum = info.spec.max
        info.limited = {k: min(v, maximum[k]) if k in maximum else v for k, v in request.items()}

    def used(self, name: str, non_preemptible: bool = False) -> dict[str, int]:
        """A quota's used (or non-preemptible used). The system and default quotas are leaves whose used is
        their own pods', so asking theirs refreshes nothing: a pod without a quota of its own costs the tree
        no recomputation (the next runtime asked recomputes it)."""
        info = self.quotas[name]
        if name in (SYSTEM, DEFAULT) and not self.children(name):
            return dict(info.self_np_used if non_preemptible else info.self_used)
        if self.dirty or self._touched:
            self.refresh()
        return dict(info.np_used if non_preemptible else info.used)

    def resource_keys(self, parent: QuotaInfo) -> list[str]:
        if self._children is None or self._keys is None:
            self.children(ROOT)
            self._keys = {}
        keys = self._keys.get(parent.name)
        if keys is None:
            keys = self._keys[parent.name] = self._resource_keys(parent)
        return keys

    def _resource_keys(self, parent: QuotaInfo) -> list[str]:
        if parent.name == ROOT:
            keys: set[str] = set()
            for name, quota in self.quotas.items():
                if name not in (ROOT, SYSTEM, DEFAULT):
                    keys.update(quota.spec.max)
            return sorted(keys)
        return sorted(parent.spec.max)

    def _distribute(self, parent: QuotaInfo, below_a_change: set[str] | None = None) -> None:
        """Split ``parent``'s runtime over its children, and theirs over their children: over the whole subtree,
        or (given ``below_a_change``) only into children whose runtime changed or that are in that set."""
        children = self.children(parent.name)
        if not children:
            return
        total = parent.runtime
        if self.enable_min_scale:
            self._scale_mins(children, total)
        else:
            for child in children:
                child.auto_min = child.spec.min
        runtimes: list[dict[str, int]] = [{} for _ in children]
        for key in self.resource_keys(parent):
            nodes = [QuotaNode(c.name, c.spec.shared_weight.get(key, 0), c.limited.get(key, 0),
                               c.auto_min.get(key, 0), 0, c.spec.allow_lent) for c in children]
            redistribute(nodes, total.get(key, 0))
            for runtime, node in zip(runtimes, nodes):
                runtime[key] = node.runtime
        for child, runtime in zip(children, runtimes):
            descend = bool(self.children(child.name)) and (
                below_a_change is None or runtime != child.runtime or child.name in below_a_change)
            child.runtime = runtime
            if descend:
                self._distribute(child, below_a_change)

    @staticmethod
    def _scale_mins(children: list[QuotaInfo], total: Mapping[str, int]) -> None:
        """``ScaleMinQuotaManager.getScaledMinQuota`` for every child (all allowed to scale)."""
        sums = _sum(*(c.spec.min for c in children))
        short = [(name, available) for name, available in total.items() if available < sums.get(name, 0)]
        for child in children:
            if not short:
                child.auto_min = child.spec.min
                continue
            scaled = dict(child.spec.min)
            for name, available in short:
                if available <= 0:
                    scaled[name] = 0
                else:
                    scaled[name] = int(float(available) * float(child.spec.min.get(name, 0)) / float(sums[name]))
            child.auto_min = scaled

    def limit(self, name: str, enable_runtime: bool) -> dict[str, int]:
        """What PreFilter checks used against: the runtime (max for system/default), or the max.

        A max is the spec's, so only a runtime needs the tree refreshed."""
        info = self.quotas[name]
        if not enable_runtime or name in (SYSTEM, DEFAULT):
            return dict(info.spec.max)
        if self.dirty or self._touched:
            self.refresh()
        if name == ROOT:
            return dict(info.runtime)
        return info.masked_runtime()
