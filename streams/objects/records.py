"""Documents to Avro-ready object records: ``to_record`` for one, ``load_and_validate`` for a whole apply.

An apply is all or nothing: ``load_and_validate`` converts every document and
checks that its record fits the record size limit and its stored form the state
budget (``streams.objects.size``);
if any is bad, it raises one ManifestError listing every problem of every bad
document, so a broken file applies nothing. Each problem is one
self-contained line::

    FILE:LINE: document INDEX (KIND NAMESPACE/NAME): FIELD.PATH: REASON
    pods.yaml:12: document 2 (Pod default/web-1): spec.containers[0].resources.requests.cpu: quantity must ...
"""

import json
import os
from dataclasses import dataclass

from streams.limits import Headers
from streams.objects.documents import STDIN, STDIN_LABEL, Document, load_documents
from streams.objects.errors import ManifestError
from streams.objects.fields import FieldReader, type_name
from streams.objects.kind import KindSpec
from streams.objects.kinds import KINDS, lookup, supported
from streams.objects.metadata import read_metadata
from streams.objects.size import size_problem, state_problem


@dataclass(frozen=True)
class ObjectRecord:
    """One object ready for Kafka: ``codec.encode(schema, record)`` is the value, ``key`` the key."""

    kind: str
    schema: str
    topic: str
    key: str
    record: dict


def to_record(doc: Document) -> ObjectRecord:
    """The record of one document, or ManifestError naming every problem with it."""
    prefix = f"{doc.location}: document {doc.index}"
    body = doc.body
    if not isinstance(body, dict):
        raise ManifestError(f"{prefix}: must be an object with apiVersion and kind, got {type_name(body)}")
    spec = KINDS.get(body.get("kind")) if isinstance(body.get("kind"), str) else None
    if spec is None:
        raise ManifestError(f"{prefix}: {_kind_problem(body.get('kind'))}")
    reader = FieldReader()
    api_version = body.get("apiVersion")
    if not isinstance(api_version, str) or not spec.accepts(api_version):
        shown = f'"{api_version}"' if isinstance(api_version, str) else type_name(api_version)
        reader.fail("apiVersion", f"{shown} is not a version of {spec.kind} (expected {spec.expected_api_versions()})")
    metadata = read_metadata(reader, _named(body, spec), namespaced=spec.namespaced,
                             default_namespace=spec.default_namespace)
    typed = spec.convert(reader, body, metadata)
    reader.json_compatible(body)
    if reader.errors:
        header = f"{prefix} ({spec.kind}{_identity(body, spec)})"
        raise ManifestError([f"{header}: {error}" for error in reader.errors])
    manifest = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    key = spec.key(metadata["namespace"], metadata["name"])
    return ObjectRecord(spec.kind, spec.schema, spec.topic, key, {"metadata": metadata, "manifest": manifest, **typed})


def _named(body: dict, spec) -> dict:
    """``body`` with the kind's default name when it has none (the manifest keeps the original)."""
    meta = body.get("metadata")
    if spec.default_name is None or (isinstance(meta, dict) and meta.get("name")):
        return body
    return {**body, "metadata": {**(meta if isinstance(meta, dict) else {}), "name": spec.default_name}}


def load_and_validate(source: str | os.PathLike, *, stdin_text: str | None = None,
                      headers: Headers = ()) -> list[ObjectRecord]:
    """The records of every document of ``source``; ManifestError lists every bad one and nothing is returned.

    A record sent with ``headers`` that would exceed the record size limit, or whose stored form would exceed
    the state budget, is a problem of its document."""
    documents = load_documents(source, stdin_text=stdin_text)
    if not documents:
        raise ManifestError(f"{STDIN_LABEL if str(source) == STDIN else source}: no objects to apply")
    return validate_documents(documents, headers)


def validate_documents(documents: list[Document], headers: Headers = ()) -> list[ObjectRecord]:
    """``load_and_validate`` of documents already loaded (``koord apply`` onboards its pods first)."""
    records, problems = [], []
    for doc in documents:
        try:
            record = to_record(doc)
        except ManifestError as err:
            problems.extend(err.problems)
            continue
        too_big = (size_problem(record.schema, record.key, record.record, doc.body, headers)
                   or state_problem(record.kind, record.record))
        if too_big:
            problems.append(f"{doc.location}: document {doc.index} ({record.kind} {record.key}): {too_big}")
        else:
            records.append(record)
    if problems:
        raise ManifestError(problems)
    return records


def _kind_problem(kind: object) -> str:
    if kind is None or kind == "":
        return f"kind: required (supported: {supported()})"
    if not isinstance(kind, str):
        return f"kind: must be a string, got {type_name(kind)}"
    known = lookup(kind)
    hint = f'; did you mean "{known.kind}"?' if known else ""
    return f'kind "{kind}" is not supported (supported: {supported()}){hint}'


def _identity(body: dict, spec: KindSpec) -> str:
    """" <namespace>/<name>" or " <name>" as written, for the message header; "" without a name."""
    metadata = body.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(name, str) or not name:
        return ""
    if not spec.namespaced:
        return f" {name}"
    namespace = metadata.get("namespace")
    namespace = namespace if isinstance(namespace, str) and namespace else spec.default_namespace
    return f" {namespace}/{name}"
