"""ElasticQuotaProfile (quota.koordinator.sh): the nodes whose capacity forms one quota tree.

The tree id is the profile's ``quota.scheduling.koordinator.sh/tree-id`` label;
without it, Koordinator's profile controller derives the id as the decimal
FNV-1a 64-bit hash of "<namespace>/<name>", and so do we.

Only ``matchLabels`` selectors are supported: a ``matchExpressions`` selector is
rejected rather than silently widened to its labels.
"""

from streams.koordinator.labels import LABEL_QUOTA_TREE_ID
from streams.objects import names
from streams.objects.fields import FieldReader
from streams.objects.kind import KindSpec

_FNV64_OFFSET = 0xCBF29CE484222325
_FNV64_PRIME = 0x100000001B3


def fnv1a_64(text: str) -> int:
    """The FNV-1a 64-bit hash of ``text``'s UTF-8 bytes (Go's hash/fnv New64a)."""
    digest = _FNV64_OFFSET
    for byte in text.encode():
        digest = ((digest ^ byte) * _FNV64_PRIME) % 2**64
    return digest


def quota_tree_id(namespace: str, name: str) -> str:
    """Koordinator's generated tree id: FNV-1a 64 of "<namespace>/<name>", in decimal."""
    return str(fnv1a_64(f"{namespace}/{name}"))


def convert(reader: FieldReader, body: dict, metadata: dict) -> dict:
    spec = reader.mapping(body.get("spec"), "spec")
    reader.object_name(spec.get("quotaName"), "spec.quotaName", required=True)
    selector = reader.mapping(spec.get("nodeSelector"), "spec.nodeSelector", required=True)
    if reader.sequence(selector.get("matchExpressions"), "spec.nodeSelector.matchExpressions"):
        reader.fail("spec.nodeSelector.matchExpressions", "not supported: select nodes with matchLabels")
    node_selector = reader.string_map(
        selector.get("matchLabels"),
        "spec.nodeSelector.matchLabels",
        key_error=names.qualified_name_error,
        value_error=names.label_value_error,
    )
    tree_id = metadata["labels"].get(LABEL_QUOTA_TREE_ID) or quota_tree_id(metadata["namespace"], metadata["name"])
    return {"quotaTreeId": tree_id, "nodeSelector": node_selector}


SPEC = KindSpec(
    kind="ElasticQuotaProfile",
    groups=("quota.koordinator.sh",),
    schema="ElasticQuotaProfile",
    topic="quotas",
    namespaced=True,
    plural="elasticquotaprofiles",
    short_names=("eqp",),
    convert=convert,
)
