"""Shared fixtures for the schema tests.

`plain_avro` reads and writes records the way any Avro library holding the
``.avsc`` files would, using fastavro alone and an independent CRC-64-AVRO, so
the tests check ``streams.schemas.codec`` against something it does not share
code with. `make_sample` builds a valid record for any schema by walking it.
"""

import json
import re
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest
from fastavro import schemaless_reader, schemaless_writer
from fastavro.schema import expand_schema, load_schema_ordered, parse_schema, to_parsing_canonical_form

from streams.schemas.codec import SCHEMAS

SCHEMA_DIR = Path(__file__).resolve().parents[3] / "streams" / "schemas"
HISTORY_FILE = re.compile(r"(?P<name>\w+)\.v(?P<version>\d+)\.avsc")


def crc64_avro(data: bytes) -> int:
    """CRC-64-AVRO bit by bit, straight from the Avro specification (no table)."""
    empty = 0xC15D213AA4D7A795
    fp = empty
    for byte in data:
        fp ^= byte
        for _ in range(8):
            fp = (fp >> 1) ^ (empty & -(fp & 1))
    return fp


class PlainAvro:
    """Single-object encoding with nothing but fastavro and the schema files."""

    def current(self, name: str) -> dict:
        """The current schema `name`, self-contained, from the .avsc files (sub-records first)."""
        shared = [str(p) for p in sorted(SCHEMA_DIR.glob("*.avsc")) if p.stem not in SCHEMAS]
        return load_schema_ordered([*shared, str(SCHEMA_DIR / f"{name}.avsc")])

    def history(self, name: str) -> dict[int, dict]:
        """The historical schemas of `name` by version, each parsed from its file alone."""
        versions = {}
        for path in (SCHEMA_DIR / "history").glob(f"{name}.v*.avsc"):
            match = HISTORY_FILE.fullmatch(path.name)
            if match and match["name"] == name:
                versions[int(match["version"])] = parse_schema(json.loads(path.read_text()))
        return dict(sorted(versions.items()))

    def fingerprint(self, schema: Any) -> bytes:
        return crc64_avro(to_parsing_canonical_form(schema).encode()).to_bytes(8, "little")

    def encode(self, schema: dict, record: dict) -> bytes:
        out = BytesIO()
        out.write(b"\xc3\x01" + self.fingerprint(schema))
        schemaless_writer(out, schema, record)
        return out.getvalue()

    def decode(self, data: bytes, writer: dict, reader: dict | None = None) -> dict:
        """The body of `data`, read with `writer` and resolved to `reader`."""
        return schemaless_reader(BytesIO(data[10:]), writer, reader)


PRIMITIVE_SAMPLES = {
    "null": None,
    "boolean": True,
    "int": 7,
    "long": 1 << 40,
    "float": 0.5,
    "double": 0.25,
    "string": "s",
    "bytes": b"\x00\xff",
}


def sample_record(schema: Any, full: bool = False) -> Any:
    """A valid datum for `schema`.

    full=False: field defaults where there are any, the first union branch,
    empty arrays and maps. full=True: a value in every field, the first
    non-null union branch, one-element arrays and maps, so nested records are
    exercised too.
    """
    return _sample(expand_schema(schema), full)


def _sample(schema: Any, full: bool) -> Any:
    if isinstance(schema, list):
        return _sample(next(b for b in schema if b != "null") if full else schema[0], full)
    kind = schema if isinstance(schema, str) else schema["type"]
    if kind == "record":
        return {
            f["name"]: f["default"] if "default" in f and not full else _sample(f["type"], full)
            for f in schema["fields"]
        }
    if kind == "array":
        return [_sample(schema["items"], full)] if full else []
    if kind == "map":
        return {"k": _sample(schema["values"], full)} if full else {}
    return PRIMITIVE_SAMPLES[kind]


@pytest.fixture(scope="session")
def plain_avro() -> PlainAvro:
    return PlainAvro()


@pytest.fixture(scope="session")
def make_sample():
    return sample_record
