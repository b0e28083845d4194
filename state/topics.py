"""The topics the read model projects, by logical name.

Logical names (the topic name without the `koord.` prefix) are what the projection and queries
dispatch on; the real names come from one mapping so a deployment that renames or prefixes its
topics passes that mapping instead of editing code here.
"""

from collections.abc import Mapping
from types import MappingProxyType

DEFAULT_TOPICS: Mapping[str, str] = MappingProxyType(
    {
        "pods": "koord.pods",
        "nodes": "koord.nodes",
        "configs": "koord.configs",
        "quotas": "koord.quotas",
        "reservations": "koord.reservations",
        "devices": "koord.devices",
        "podgroups": "koord.podgroups",
        "poddisruptionbudgets": "koord.poddisruptionbudgets",
        "podmigrationjobs": "koord.podmigrationjobs",
        "persistentvolumes": "koord.persistentvolumes",
        "persistentvolumeclaims": "koord.persistentvolumeclaims",
        "storageclasses": "koord.storageclasses",
        "csinodes": "koord.csinodes",
        "noderesourcetopologies": "koord.noderesourcetopologies",
        "nodemetrics": "koord.nodemetrics",
        "decisions": "koord.decisions",
        "noderesources": "koord.noderesources",
        "quotastatus": "koord.quotastatus",
        "acks": "koord.acks",
        "actuations": "koord.actuations",
        "actuation-acks": "koord.actuation-acks",
        "deadletters": "koord.deadletters",
    }
)

LATEST_STATE_TOPICS = frozenset({"pods", "nodes", "configs", "quotas", "reservations", "devices",
                                 "noderesourcetopologies", "nodemetrics", "podgroups", "podmigrationjobs",
                                 "poddisruptionbudgets", "persistentvolumes", "persistentvolumeclaims",
                                 "storageclasses", "csinodes"})
"""Topics holding the latest state per key (compacted); the others carry events."""


def resolve_topics(overrides: Mapping[str, str] | None = None) -> Mapping[str, str]:
    """Return DEFAULT_TOPICS with `overrides` (logical name -> real name) applied.

    Raises ValueError for an unknown logical name or two logical names on one real topic, since
    either would make dispatch by topic name ambiguous.
    """
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(DEFAULT_TOPICS))
    if unknown:
        raise ValueError(f"unknown logical topic names {unknown}; known: {sorted(DEFAULT_TOPICS)}")
    resolved = {**DEFAULT_TOPICS, **overrides}
    shared = sorted(real for real in set(resolved.values()) if list(resolved.values()).count(real) > 1)
    if shared:
        raise ValueError(f"topics {shared} are mapped from more than one logical name")
    return MappingProxyType(resolved)
