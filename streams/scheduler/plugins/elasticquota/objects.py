"""ElasticQuota objects of a domain: validation and profiles (which quota a pod belongs to is ``streams.quotas``).

Validation is what Koordinator's ElasticQuota webhook refuses
(``pkg/webhook/elasticquota/quota_topology_check.go``), with its messages; koordstream has
no admission webhook, so the scheduling aggregate rejects such a quota (dead letter) and
keeps the previous tree:

- the root and system quotas cannot be applied ("invalid quota <name>");
- min names must be in max, and min <= max;
- the parent must exist and be a parent quota (``is-parent: "true"``);
- a quota with children cannot stop being a parent;
- a quota's tree id must equal its parent's;
- the children's mins may not sum above the parent's min
  ("checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: <p>");
- quota names are unique in a domain (Koordinator keys quotas by name).

ElasticQuotaProfile (``pkg/quota-controller/profile``): the core plays the profile
controller. A profile makes a tree's top quota named ``spec.quotaName`` in the profile's
namespace, labelled ``profile``, ``tree-id`` and ``is-root: "true"`` (plus
``spec.quotaLabels``), with min = the total of the selected nodes' allocatable times
``resourceRatio`` for the resource keys (cpu, memory, or the ``resource-keys``
annotation), max = MaxInt64/2000, and the total in ``total-resource``. A quota applied
with the same name keeps its other fields.

Pod to quota (``GetQuotaName``): the ``quota.scheduling.koordinator.sh/name`` label; else
a quota named like the pod's namespace in that namespace; else a quota whose
``namespaces`` annotation lists the namespace (the first by name); else the default
quota. A name no quota has also means the default quota.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from streams.koordinator.annotations import ANNOTATION_QUOTA_RESOURCE_KEYS, ANNOTATION_QUOTA_TOTAL_RESOURCE
from streams.koordinator.labels import LABEL_QUOTA_IS_ROOT, LABEL_QUOTA_PROFILE, LABEL_QUOTA_TREE_ID
from streams.quotas import DEFAULT, ROOT, SYSTEM, QuotaSpec, profile_spec

PROFILE_MAX = (2**63 - 1) // 2000


class QuotaRejected(ValueError):
    """A quota or profile the domain refuses; the message is the reason."""


def profile_total(profile: Mapping, nodes: Iterable) -> dict[str, int]:
    """Sum of the allocatable of the nodes ``profile`` selects, times its resourceRatio (truncated)."""
    selector = profile.get("nodeSelector") or {}
    total: dict[str, int] = {}
    for node in nodes:
        if all(node.labels.get(k) == v for k, v in selector.items()):
            for name, value in node.allocatable.items():
                total[name] = total.get(name, 0) + value
    ratio = profile_spec(profile).get("resourceRatio")
    try:
        factor = float(ratio) if ratio is not None else 1.0
    except (TypeError, ValueError):
        factor = 1.0
    if factor != 1.0:
        total = {name: int(float(value) * factor) for name, value in total.items()}
    return total


def profile_quota(profile: Mapping, nodes: Iterable, existing: Mapping | None) -> dict:
    """The ElasticQuota record the profile controller would write for ``profile``."""
    spec = profile_spec(profile)
    meta = profile["metadata"]
    total = profile_total(profile, nodes)
    keys = ["cpu", "memory"]
    raw_keys = (meta.get("annotations") or {}).get(ANNOTATION_QUOTA_RESOURCE_KEYS)
    if raw_keys:
        try:
            parsed = json.loads(raw_keys)
            if isinstance(parsed, list):
                keys = [str(k) for k in parsed]
        except ValueError:
            pass
    base = existing or {"metadata": {"name": spec.get("quotaName"), "namespace": meta.get("namespace"),
                                     "labels": {}, "annotations": {}}, "manifest": "{}"}
    labels = dict(base["metadata"].get("labels") or {})
    labels.update({k: str(v) for k, v in (spec.get("quotaLabels") or {}).items()})
    labels[LABEL_QUOTA_PROFILE] = meta["name"]
    labels[LABEL_QUOTA_TREE_ID] = profile.get("quotaTreeId") or ""
    labels[LABEL_QUOTA_IS_ROOT] = "true"
    annotations = dict(base["metadata"].get("annotations") or {})
    annotations[ANNOTATION_QUOTA_TOTAL_RESOURCE] = json.dumps(
        {k: (f"{v}m" if k == "cpu" else str(v)) for k, v in sorted(total.items())}, separators=(",", ":"))
    cpu_max = PROFILE_MAX * 1000
    return {**base, "metadata": {**base["metadata"], "labels": labels, "annotations": annotations},
            "min": {k: total.get(k, 0) for k in keys},
            "max": {k: cpu_max if k == "cpu" else PROFILE_MAX for k in keys}}


def effective_quotas(quotas: Mapping[str, Mapping], profiles: Mapping[str, Mapping], nodes: Iterable) -> dict:
    """Quota records by name after the profiles wrote theirs."""
    out = dict(quotas)
    nodes = list(nodes)
    for key in sorted(profiles):
        profile = profiles[key]
        name = profile_spec(profile).get("quotaName")
        if name:
            out[name] = profile_quota(profile, nodes, quotas.get(name))
    return out


def validate(record: Mapping, specs: Mapping[str, QuotaSpec]) -> None:
    """Raise QuotaRejected when ``record`` may not join the quotas ``specs`` (by name, current ones)."""
    meta = record["metadata"]
    name = meta["name"]
    if name in (ROOT, SYSTEM):
        raise QuotaRejected(f"invalid quota {name}")
    old = specs.get(name)
    if old is not None and old.namespace != meta.get("namespace") and name != DEFAULT:
        raise QuotaRejected(f"quota {name} already exists in namespace {old.namespace}; "
                            "ElasticQuota names must be unique")
    spec = QuotaSpec.from_record(record)
    for key, minimum in spec.min.items():
        if key not in spec.max:
            raise QuotaRejected(f"resourceKey {key} of quota {name} is included in min, which is not included in max")
        if minimum > spec.max[key]:
            raise QuotaRejected(f"resourceKey {key} of quota {name} min {minimum} > max {spec.max[key]}")
    if name == DEFAULT:
        return
    if spec.parent != ROOT:
        parent = specs.get(spec.parent)
        if parent is None or spec.parent == name:
            raise QuotaRejected(f"{name} has parentName {spec.parent} but not find parentInfo in quotaInfoMap")
        if not parent.is_parent:
            raise QuotaRejected(f"{name} has parentName {spec.parent} but the parentQuotaInfo's IsParent is false")
        if parent.tree_id != spec.tree_id:
            raise QuotaRejected(f"{name} tree id is different from parent {parent.name}, "
                                f"[{spec.tree_id}] vs [{parent.tree_id}]")
        siblings = [s for s in specs.values() if s.parent == spec.parent and s.name != name]
        for key, parent_min in parent.min.items():
            if sum(s.min.get(key, 0) for s in siblings) + spec.min.get(key, 0) > parent_min:
                raise QuotaRejected(f"checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: {parent.name}")
    children = [s for s in specs.values() if s.parent == name]
    if children and not spec.is_parent:
        raise QuotaRejected(f"quota has children, isParent is forbidden to modify as false, quotaName:{name}")
    for child in children:
        if child.tree_id != spec.tree_id:
            raise QuotaRejected(f"{name} tree id is different from child {child.name}, "
                                f"[{spec.tree_id}] vs [{child.tree_id}]")


def validate_delete(name: str, specs: Mapping[str, QuotaSpec]) -> None:
    if name in (ROOT, SYSTEM, DEFAULT):
        raise QuotaRejected(f"invalid quota {name}")
    children = sorted(s.name for s in specs.values() if s.parent == name)
    if children:
        raise QuotaRejected(f"quota {name} still has children {children}; delete them first")
