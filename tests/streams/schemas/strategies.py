"""Hypothesis strategies for valid Avro data of koordstream's schemas, drawn from the schema files alone."""

from __future__ import annotations

import functools
from typing import Any

from fastavro.schema import expand_schema
from hypothesis import strategies as st

from tests.streams.schemas.conftest import PlainAvro

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
SMALL = 3
"""Most elements of a drawn array or map: enough to exercise nesting, cheap to encode."""

_PRIMITIVES = {
    "null": st.none(),
    "boolean": st.booleans(),
    "int": st.integers(*INT32),
    "long": st.integers(*INT64),
    "float": st.floats(width=32, allow_nan=False),
    "double": st.floats(allow_nan=False),
    "string": st.text(max_size=20),
    "bytes": st.binary(max_size=40),
}


@functools.cache
def schema(name: str) -> Any:
    """The current schema ``name``, self-contained and with every named type written out."""
    return expand_schema(PlainAvro().current(name))


def datum(avro: Any) -> st.SearchStrategy:
    """Any valid datum of the (expanded) Avro schema ``avro``."""
    if isinstance(avro, list):
        return st.one_of([datum(branch) for branch in avro])
    kind = avro if isinstance(avro, str) else avro["type"]
    if kind in _PRIMITIVES:
        return _PRIMITIVES[kind]
    if kind == "record":
        return st.fixed_dictionaries({field["name"]: datum(field["type"]) for field in avro["fields"]})
    if kind == "array":
        return st.lists(datum(avro["items"]), max_size=SMALL)
    if kind == "map":
        return st.dictionaries(st.text(max_size=12), datum(avro["values"]), max_size=SMALL)
    if kind == "enum":
        return st.sampled_from(avro["symbols"])
    if kind == "fixed":
        return st.binary(min_size=avro["size"], max_size=avro["size"])
    raise ValueError(f"no strategy for Avro type {kind!r}")


def records(name: str) -> st.SearchStrategy[dict]:
    """Valid records of the top-level schema ``name``."""
    return datum(schema(name))
