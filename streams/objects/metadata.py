"""``metadata`` of any object, validated as the API server does and shaped as the ObjectMeta record.

Names are the Kafka key, so they are required (``generateName`` cannot give a
stable key) and must be DNS-1123 subdomains; a namespaced object without a
namespace lands in its kind's default, like ``kubectl apply`` without ``-n``.
A cluster-scoped object's namespace is dropped, as the API server drops it.
"""

from streams.objects import names
from streams.objects.fields import FieldReader, child

ANNOTATIONS_MAX_BYTES = 256 * 1024
"""Total size of all annotation keys and values (apimachinery TotalAnnotationSizeLimitB)."""


def read_metadata(reader: FieldReader, body: dict, *, namespaced: bool, default_namespace: str) -> dict:
    """The ObjectMeta record of ``body``; problems go to ``reader``."""
    meta = reader.mapping(body.get("metadata"), "metadata", required=True)
    name = _name(reader, meta) if isinstance(body.get("metadata"), dict) else None
    namespace = None
    if namespaced:
        namespace = reader.string(meta.get("namespace"), "metadata.namespace") or default_namespace
        if reason := names.dns1123_label_error(namespace):
            reader.fail("metadata.namespace", f'invalid namespace "{namespace}": {reason}')
    labels = reader.string_map(
        meta.get("labels"),
        "metadata.labels",
        key_error=names.qualified_name_error,
        value_error=names.label_value_error,
    )
    annotations = reader.string_map(
        meta.get("annotations"), "metadata.annotations", key_error=names.qualified_name_error
    )
    size = sum(len(key.encode()) + len(value.encode()) for key, value in annotations.items())
    if size > ANNOTATIONS_MAX_BYTES:
        reader.fail("metadata.annotations", f"too long: {size} bytes, must have at most {ANNOTATIONS_MAX_BYTES}")
    return {
        "name": name or "",
        "namespace": namespace,
        "uid": reader.string(meta.get("uid"), child("metadata", "uid")),
        "labels": labels,
        "annotations": annotations,
        "generation": reader.integer(meta.get("generation"), "metadata.generation", low=0) or 0,
    }


def _name(reader: FieldReader, meta: dict) -> str | None:
    if meta.get("name") in (None, "") and meta.get("generateName"):
        reader.fail("metadata.name", "required (generateName is not supported: objects are keyed by name)")
        return None
    return reader.object_name(meta.get("name"), "metadata.name", required=True)
