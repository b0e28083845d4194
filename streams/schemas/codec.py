"""Avro codec for every record koordstream writes to Kafka.

Wire format: Avro single-object encoding (Avro specification, "Single object
encoding")::

    C3 01 | CRC-64-AVRO fingerprint of the writer schema (8 bytes, little-endian) | Avro binary body

The fingerprint is taken over the schema's Parsing Canonical Form, so a value
names its own schema: any Avro library holding the ``.avsc`` files can decode
a topic without a schema registry, and records stay readable after a schema
evolves, because the fingerprint selects the historical writer schema
(``history/<Name>.v<N>.avsc``) and Avro schema resolution maps it onto the
current one.

The ``.avsc`` files hold one record each; shared sub-records are referenced by
full name. Parsing Canonical Form is defined on a self-contained schema, so
each top-level schema is inlined (a named type defined at its first use,
referenced by name after it) before it is parsed and fingerprinted. That is
also the form the history files hold.
"""

import json
from copy import deepcopy
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any

from fastavro import parse_schema, schemaless_reader, schemaless_writer
from fastavro.schema import to_parsing_canonical_form
from fastavro.validation import ValidationError, validate

NAMESPACE = "io.koordstream"
SCHEMA_DIR = Path(__file__).parent
HISTORY_DIR = SCHEMA_DIR / "history"
MARKER = b"\xc3\x01"
HEADER_SIZE = len(MARKER) + 8

SCHEMAS = (
    "Node",
    "Pod",
    "NodeMetric",
    "ConfigMap",
    "ElasticQuota",
    "ElasticQuotaProfile",
    "Reservation",
    "Device",
    "NodeResourceTopology",
    "InboxEvent",
    "SchedulingDecision",
    "NodeResource",
    "Actuation",
    "ActuationAck",
    "DeadLetter",
    "Tick",
    "KubeSchedulerConfiguration",
    "ElasticQuotaStatus",
    "Ack",
    "Eviction",
    "PodGroup",
    "PodMigrationJob",
    "DeschedulerConfiguration",
    "PodDisruptionBudget",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
    "CSINode",
    "NodeUsage",
    "YarnNode",
)
"""Top-level record schemas: the values that go on topics."""


class CodecError(ValueError):
    """A record that cannot be encoded, or bytes that are not a record we can decode."""


_CRC64_EMPTY = 0xC15D213AA4D7A795


def _crc64_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        fp = byte
        for _ in range(8):
            fp = (fp >> 1) ^ (_CRC64_EMPTY & -(fp & 1))
        table.append(fp)
    return tuple(table)


_CRC64_TABLE = _crc64_table()


def _crc64_avro(data: bytes) -> bytes:
    """CRC-64-AVRO (the Avro specification's reference algorithm), as 8 little-endian bytes."""
    fp = _CRC64_EMPTY
    for byte in data:
        fp = (fp >> 8) ^ _CRC64_TABLE[(fp ^ byte) & 0xFF]
    return fp.to_bytes(8, "little")


def _inline(schema: Any, named: dict[str, Any], defined: set[str]) -> Any:
    """`schema` with each named type from `named` defined at its first use."""
    if isinstance(schema, str):
        if schema in named and schema not in defined:
            return _inline(named[schema], named, defined)
        return schema
    if isinstance(schema, list):
        return [_inline(branch, named, defined) for branch in schema]
    kind = schema["type"]
    if kind == "record":
        defined.add(f"{schema.get('namespace', NAMESPACE)}.{schema['name']}")
        fields = [{**f, "type": _inline(f["type"], named, defined)} for f in schema["fields"]]
        return {**schema, "fields": fields}
    if kind == "array":
        return {**schema, "items": _inline(schema["items"], named, defined)}
    if kind == "map":
        return {**schema, "values": _inline(schema["values"], named, defined)}
    return schema


@dataclass(frozen=True, slots=True)
class _Version:
    """How to read the body behind one fingerprint."""

    name: str
    writer: dict
    reader: dict | None  # None: the writer is the current schema, no resolution needed


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except ValueError as exc:
        raise CodecError(f"{path}: not JSON: {exc}") from exc


def _parse(schema: dict, path: Path) -> tuple[dict, bytes]:
    """The parsed self-contained `schema` and its fingerprint."""
    try:
        parsed = parse_schema(schema)
    except Exception as exc:
        raise CodecError(f"{path}: invalid Avro schema: {exc}") from exc
    return parsed, _crc64_avro(to_parsing_canonical_form(parsed).encode())


def _load() -> tuple[dict[str, tuple[bytes, dict]], dict[bytes, _Version]]:
    """Header and schema per current record name; how to read each known fingerprint."""
    named = {f"{NAMESPACE}.{path.stem}": _read(path) for path in SCHEMA_DIR.glob("*.avsc")}
    current, versions = {}, {}
    for name in SCHEMAS:
        path = schema_path(name)
        schema, fp = _parse(_inline(named[f"{NAMESPACE}.{name}"], named, set()), path)
        current[name] = (MARKER + fp, schema)
        versions[fp] = _Version(name, schema, None)
        for old_path in HISTORY_DIR.glob(f"{name}.v*.avsc"):
            old_schema, old_fp = _parse(_read(old_path), old_path)
            versions.setdefault(old_fp, _Version(name, old_schema, schema))
    return current, versions


def schema_path(name: str) -> Path:
    """The ``.avsc`` file of record `name` (top-level or shared sub-record)."""
    path = SCHEMA_DIR / f"{name}.avsc"
    if not path.is_file():
        raise CodecError(f"no schema named {name!r}")
    return path


_CURRENT, _VERSIONS = _load()


def fingerprint(name: str) -> bytes:
    """The 8-byte CRC-64-AVRO fingerprint (little-endian) of the current schema `name`."""
    return _current(name)[0][len(MARKER) :]


def encode(name: str, record: dict) -> bytes:
    """`record` single-object encoded with the current schema `name`; fields with defaults may be left out."""
    header, schema = _current(name)
    try:
        # raise_errors=False is ~3x faster: failing union branches then cost no exceptions.
        if not validate(record, schema, raise_errors=False):
            validate(record, schema, raise_errors=True)
    except ValidationError as exc:
        raise CodecError(f"cannot encode {name}: {_explain(exc)}") from exc
    except Exception as exc:
        raise CodecError(f"cannot encode {name}: {exc!r}") from exc
    return _write(name, header, schema, record)


def encode_own(name: str, record: dict) -> bytes:
    """``encode`` for a record the pipeline built itself (its outputs, its envelopes), without the separate
    validation pass (about 40 % of ``encode``'s time): fastavro's writer still refuses a value of the wrong
    type as it writes it, and the validation then explains. What the writer alone converts, and ``encode``
    refuses: a bool for an int or long (written 0 or 1), a float for one (truncated), an int beyond 32 bits
    in an int field (written as a long). The pipeline's records hold none: its quantities are integers."""
    header, schema = _current(name)
    try:
        return _write(name, header, schema, record)
    except CodecError:
        return encode(name, record)


def _write(name: str, header: bytes, schema: dict, record: dict) -> bytes:
    out = BytesIO()
    out.write(header)
    try:
        schemaless_writer(out, schema, record)
    except Exception as exc:
        raise CodecError(f"cannot encode {name}: {exc!r}") from exc
    return out.getvalue()


def decode(data: bytes) -> tuple[str, dict]:
    """The schema name and the record in `data`, resolved to the current schema."""
    if not isinstance(data, bytes):
        if not isinstance(data, (bytearray, memoryview)):
            raise CodecError(f"expected bytes, got {type(data).__name__}")
        data = bytes(data)
    if len(data) < HEADER_SIZE:
        raise CodecError(f"too short for a single-object encoded record: {len(data)} bytes")
    if data[:2] != MARKER:
        raise CodecError(f"not single-object encoded: starts with {data[:2].hex()}, expected c301")
    version = _VERSIONS.get(data[2:HEADER_SIZE])
    if version is None:
        raise CodecError(f"unknown schema fingerprint {data[2:HEADER_SIZE].hex()}")
    body = BytesIO(data)
    body.seek(HEADER_SIZE)
    try:
        record = schemaless_reader(body, version.writer, version.reader)
    except Exception as exc:
        raise CodecError(f"corrupt {version.name} body: {exc!r}") from exc
    if body.tell() != len(data):
        raise CodecError(f"corrupt {version.name} body: {len(data) - body.tell()} bytes after the record")
    if version.reader is not None:
        # Resolution fills missing fields with the reader schema's own default objects.
        record = deepcopy(record)
    return version.name, record


def as_written(data: bytes, record: dict) -> dict:
    """``record`` (of the current schema) as the writer schema of ``data`` would hold it, read back: a field
    that schema lacks takes its default. How a replay compares its outputs with ones an older version recorded;
    ``record`` itself when ``data`` was written with the current schema or cannot be written with its own."""
    version = _VERSIONS.get(bytes(data[len(MARKER):HEADER_SIZE])) if len(data) >= HEADER_SIZE else None
    if version is None or version.reader is None:
        return record
    body = BytesIO()
    try:
        schemaless_writer(body, version.writer, record)
    except Exception:
        return record
    body.seek(0)
    return deepcopy(schemaless_reader(body, version.writer, version.reader))


def _current(name: str) -> tuple[bytes, dict]:
    try:
        return _CURRENT[name]
    except (KeyError, TypeError):
        raise CodecError(f"unknown schema {name!r}; known: {', '.join(SCHEMAS)}") from None


def _explain(exc: ValidationError) -> str:
    """One line per bad field: where it is, what it holds and which types it accepts."""
    expected: dict[str, list[str]] = {}
    found: dict[str, Any] = {}
    for error in exc.errors:
        field = error.field.removeprefix(f"{NAMESPACE}.") or "record"
        schema = error.schema
        if isinstance(schema, dict):
            schema = schema.get("name", schema["type"])
        expected.setdefault(field, []).append(str(schema).removeprefix(f"{NAMESPACE}."))
        found[field] = error.datum
    return "; ".join(
        f"{field} is {_show(found[field])}, expected {' or '.join(types)}" for field, types in expected.items()
    )


def _show(datum: Any) -> str:
    if datum is None:
        return "missing or null"
    text = repr(datum)
    return f"{text[:60]}... ({type(datum).__name__})" if len(text) > 60 else f"{text} ({type(datum).__name__})"
