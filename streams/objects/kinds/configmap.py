"""ConfigMap (core/v1): string data, such as Koordinator's slo-controller-config."""

import re

from streams.objects.fields import FieldReader
from streams.objects.kind import CORE_GROUP, KindSpec

DATA_MAX_BYTES = 1024 * 1024
"""Total size of data keys and values (the API server's limit for a ConfigMap)."""

_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


def data_key_error(key: str) -> str | None:
    """ConfigMap keys: alphanumerics, '-', '_' or '.', at most 253 characters (apimachinery IsConfigMapKey)."""
    if len(key) > 253:
        return "must be no more than 253 characters"
    if not _KEY.match(key):
        return "must consist of alphanumeric characters, '-', '_' or '.'"
    if key in (".", ".."):
        return f"must not be '{key}'"
    return None


def convert(reader: FieldReader, body: dict, metadata: dict) -> dict:
    data = reader.string_map(body.get("data"), "data", key_error=data_key_error)
    size = sum(len(key.encode()) + len(value.encode()) for key, value in data.items())
    if size > DATA_MAX_BYTES:
        reader.fail("data", f"too long: {size} bytes, must have at most {DATA_MAX_BYTES}")
    return {"data": data}


SPEC = KindSpec(
    kind="ConfigMap",
    groups=(CORE_GROUP,),
    schema="ConfigMap",
    topic="configs",
    namespaced=True,
    plural="configmaps",
    short_names=("cm",),
    convert=convert,
)
