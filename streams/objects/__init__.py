"""Kubernetes-form objects in, Avro-ready records out: the ingest side of ``koord apply`` and ``koord delete``.

- ``quantity``: Kubernetes quantities as exact numbers and canonical integers.
- ``documents``: files, directories and stdin into positioned documents.
- ``records``: documents into validated ObjectRecords (topic, key, record).
- ``size``: a record over the record size limit, and the field that makes it big.
- ``kinds``: the registry of supported kinds, one module per kind.
- ``delete``: the topic and key of ``koord delete KIND NAME``.
"""

from streams.objects.delete import parse_delete_target
from streams.objects.documents import Document, load_documents
from streams.objects.errors import ManifestError
from streams.objects.quantity import QuantityError, format_quantity, parse_quantity, resource_list, to_canonical
from streams.objects.records import ObjectRecord, load_and_validate, to_record

__all__ = [
    "Document",
    "ManifestError",
    "ObjectRecord",
    "QuantityError",
    "format_quantity",
    "load_and_validate",
    "load_documents",
    "parse_delete_target",
    "parse_quantity",
    "resource_list",
    "to_canonical",
    "to_record",
]
