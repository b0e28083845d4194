"""Which quota and quota tree an object belongs to: the part of Koordinator's ElasticQuota model the
ElasticQuota plugin and the domain router (``streams.domains``) share, so neither reaches into the other.

- ``QuotaSpec``: an ElasticQuota as the quota manager reads it (``NewQuotaInfoFromQuota``);
- ``quota_name``: a pod's quota (``GetQuotaName``, then the default-quota fallback);
- ``profile_spec``: an ElasticQuotaProfile's spec (its ``quotaName``, ``resourceRatio``, ...);
- the built-in quotas' names and the default tree's id ("").
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

from streams.koordinator.annotations import (
    ANNOTATION_QUOTA_NAMESPACES, ANNOTATION_QUOTA_SHARED_WEIGHT, ANNOTATION_QUOTA_TOTAL_RESOURCE)
from streams.koordinator.labels import (
    LABEL_QUOTA_ALLOW_LENT_RESOURCE, LABEL_QUOTA_IGNORE_DEFAULT_TREE, LABEL_QUOTA_IS_PARENT, LABEL_QUOTA_IS_ROOT,
    LABEL_QUOTA_NAME, LABEL_QUOTA_PARENT, LABEL_QUOTA_TREE_ID)
from streams.objects.quantity import QuantityError, resource_list

ROOT = "koordinator-root-quota"
SYSTEM = "koordinator-system-quota"
DEFAULT = "koordinator-default-quota"
DEFAULT_TREE = ""


def _json_resources(text: str | None) -> dict[str, int] | None:
    if not text:
        return None
    try:
        value = json.loads(text)
        return resource_list(value) if isinstance(value, dict) else None
    except (ValueError, QuantityError):
        return None


@dataclasses.dataclass(frozen=True)
class QuotaSpec:
    """An ElasticQuota as the quota manager reads it (``NewQuotaInfoFromQuota``)."""

    name: str
    namespace: str | None
    parent: str
    is_parent: bool
    allow_lent: bool
    max: Mapping[str, int]
    min: Mapping[str, int]
    shared_weight: Mapping[str, int]
    tree_id: str = DEFAULT_TREE
    is_root: bool = False
    ignore_default_tree: bool = False
    total_resource: Mapping[str, int] | None = None
    namespaces: tuple[str, ...] = ()

    @classmethod
    def from_record(cls, record: Mapping) -> "QuotaSpec":
        meta = record["metadata"]
        labels = meta.get("labels") or {}
        annotations = meta.get("annotations") or {}
        name = meta["name"]
        maximum = dict(record.get("max") or {})
        weight = _json_resources(annotations.get(ANNOTATION_QUOTA_SHARED_WEIGHT))
        if not weight or not any(weight.values()):
            weight = dict(maximum)
        parent = labels.get(LABEL_QUOTA_PARENT, "")
        try:
            namespaces = json.loads(annotations.get(ANNOTATION_QUOTA_NAMESPACES) or "[]")
        except ValueError:
            namespaces = []
        return cls(
            name=name,
            namespace=meta.get("namespace"),
            parent=parent or (ROOT if name != ROOT else ""),
            is_parent=labels.get(LABEL_QUOTA_IS_PARENT) == "true",
            allow_lent=labels.get(LABEL_QUOTA_ALLOW_LENT_RESOURCE) != "false",
            max=maximum,
            min=dict(record.get("min") or {}),
            shared_weight=weight,
            tree_id=labels.get(LABEL_QUOTA_TREE_ID, DEFAULT_TREE),
            is_root=labels.get(LABEL_QUOTA_IS_ROOT) == "true",
            ignore_default_tree=labels.get(LABEL_QUOTA_IGNORE_DEFAULT_TREE) == "true",
            total_resource=_json_resources(annotations.get(ANNOTATION_QUOTA_TOTAL_RESOURCE)),
            namespaces=tuple(str(n) for n in namespaces) if isinstance(namespaces, list) else (),
        )

    @classmethod
    def builtin(cls, name: str, maximum: Mapping[str, int]) -> "QuotaSpec":
        """The root (no max), system and default quotas Koordinator creates."""
        if name == ROOT:
            return cls(ROOT, None, "", True, False, {}, {}, {})
        return cls(name, None, ROOT, False, True, dict(maximum), {}, {})


def quota_name(labels: Mapping[str, str], namespace: str, specs: Mapping[str, QuotaSpec]) -> str:
    """``GetQuotaName`` then the default-quota fallback of ``getPodAssociateQuotaName``."""
    name = labels.get(LABEL_QUOTA_NAME, "")
    if not name:
        named = specs.get(namespace)
        if named is not None and named.namespace == namespace:
            name = namespace
        else:
            listing = sorted(s.name for s in specs.values() if namespace in s.namespaces)
            name = listing[0] if listing else DEFAULT
    return name if name in specs or name in (DEFAULT, SYSTEM) else DEFAULT


def specs_of(quotas: Mapping[str, Mapping]) -> dict[str, QuotaSpec]:
    return {name: QuotaSpec.from_record(record) for name, record in quotas.items()}


def profile_spec(profile: Mapping) -> dict:
    try:
        manifest = json.loads(profile.get("manifest") or "{}")
    except ValueError:
        return {}
    spec = manifest.get("spec") if isinstance(manifest, dict) else None
    return spec if isinstance(spec, dict) else {}
