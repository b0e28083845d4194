"""Schema evolution: records written with any archived schema stay readable.

A change to ``streams/schemas/<Name>.avsc`` that changes its fingerprint comes
with ``history/<Name>.v<N+1>.avsc``: the new schema, self-contained (shared
sub-records inlined). Every archived version is checked against the current
schema twice: with data through ``codec.decode``, and with Avro's schema
resolution rules, which also cover branches a sample record does not take.
"""

import json
import re
from typing import Any

import pytest
from fastavro.schema import expand_schema, parse_schema

from streams.schemas import codec
from streams.schemas.codec import HISTORY_DIR, SCHEMAS, decode, fingerprint
from tests.streams.schemas.conftest import sample_record

VERSIONS = [
    pytest.param(name, int(match[1]), id=f"{name}.v{match[1]}")
    for name in SCHEMAS
    for path in sorted(HISTORY_DIR.glob(f"{name}.v*.avsc"))
    if (match := re.fullmatch(rf"{name}\.v(\d+)\.avsc", path.name))
]

PROMOTIONS = {
    ("int", "long"),
    ("int", "float"),
    ("int", "double"),
    ("long", "float"),
    ("long", "double"),
    ("float", "double"),
    ("string", "bytes"),
    ("bytes", "string"),
}


def incompatibilities(writer: Any, reader: Any, path: str = "") -> list[str]:
    """Why `reader` cannot read every datum of `writer` (Avro schema resolution); both expanded."""
    if isinstance(writer, list):
        return [problem for branch in writer for problem in incompatibilities(branch, reader, path)]
    if isinstance(reader, list):
        if any(not incompatibilities(writer, branch, path) for branch in reader):
            return []
        return [f"{path}: {_kind(writer)} matches no branch of the reader's union"]
    writer_kind, reader_kind = _kind(writer), _kind(reader)
    if writer_kind != reader_kind:
        if (writer_kind, reader_kind) in PROMOTIONS:
            return []
        return [f"{path}: {writer_kind} cannot be read as {reader_kind}"]
    if writer_kind == "record":
        if writer["name"] not in (reader["name"], *reader.get("aliases", [])):
            return [f"{path}: record {writer['name']} cannot be read as {reader['name']}"]
        written = {f["name"]: f for f in writer["fields"]}
        problems = []
        for field in reader["fields"]:
            field_path = f"{path}.{field['name']}"
            source = next((written[n] for n in (field["name"], *field.get("aliases", [])) if n in written), None)
            if source is not None:
                problems += incompatibilities(source["type"], field["type"], field_path)
            elif "default" not in field:
                problems.append(f"{field_path}: not written and has no default")
        return problems
    if writer_kind == "array":
        return incompatibilities(writer["items"], reader["items"], path + "[]")
    if writer_kind == "map":
        return incompatibilities(writer["values"], reader["values"], path + "{}")
    if writer_kind == "enum" and not set(writer["symbols"]) <= set(reader["symbols"]) and "default" not in reader:
        return [f"{path}: enum symbols removed"]
    if writer_kind == "fixed" and (writer["name"], writer["size"]) != (reader["name"], reader["size"]):
        return [f"{path}: fixed {writer['name']} cannot be read as {reader['name']}"]
    return []


def _kind(schema: Any) -> str:
    return schema if isinstance(schema, str) else schema["type"]


@pytest.mark.parametrize("name", SCHEMAS)
def test_history_versions_are_numbered_from_one(name, plain_avro):
    history = plain_avro.history(name)
    assert history, f"no history/{name}.v1.avsc"
    assert list(history) == list(range(1, len(history) + 1))
    assert {schema["name"] for schema in history.values()} == {f"io.koordstream.{name}"}


@pytest.mark.parametrize("name", SCHEMAS)
def test_current_schema_is_archived(name, plain_avro):
    history = plain_avro.history(name)
    latest = max(history)
    assert fingerprint(name) == plain_avro.fingerprint(history[latest]), (
        f"{name}.avsc differs from history/{name}.v{latest}.avsc: archive it as "
        f"history/{name}.v{latest + 1}.avsc (self-contained, sub-records inlined)"
    )


@pytest.mark.parametrize("full", [False, True], ids=["defaults", "every-field-set"])
@pytest.mark.parametrize("name, version", VERSIONS)
def test_record_written_with_a_historical_schema_decodes_to_current(name, version, full, plain_avro, make_sample):
    writer = plain_avro.history(name)[version]
    current = plain_avro.current(name)
    data = plain_avro.encode(writer, make_sample(writer, full))

    decoded_name, record = decode(data)

    assert decoded_name == name
    assert record == plain_avro.decode(data, writer, current)
    assert set(record) == {f["name"] for f in current["fields"]}
    added = [f for f in current["fields"] if f["name"] not in {w["name"] for w in writer["fields"]}]
    assert {f["name"]: record[f["name"]] for f in added} == {f["name"]: f["default"] for f in added}


@pytest.mark.parametrize("name, version", VERSIONS)
def test_historical_schema_resolves_to_current(name, version, plain_avro):
    writer = expand_schema(plain_avro.history(name)[version])
    reader = expand_schema(plain_avro.current(name))
    assert incompatibilities(writer, reader, name) == []


def test_fields_an_older_writer_lacked_decode_to_fresh_defaults(plain_avro, make_sample, monkeypatch):
    """A synthetic older Pod, written before any of its defaulted fields existed.

    It is registered in the codec's private fingerprint table because the real
    history holds no version older than the current one yet.
    """
    latest = json.loads((HISTORY_DIR / f"Pod.v{max(plain_avro.history('Pod'))}.avsc").read_text())
    older = parse_schema({**latest, "fields": [f for f in latest["fields"] if "default" not in f]})
    monkeypatch.setitem(
        codec._VERSIONS, plain_avro.fingerprint(older), codec._Version("Pod", older, plain_avro.current("Pod"))
    )
    written = make_sample(older, full=True)
    data = plain_avro.encode(older, written)

    _, first = decode(data)
    first["requests"]["cpu"] = 1000
    first["tolerations"].append({})
    _, second = decode(data)

    assert second == {**make_sample(plain_avro.current("Pod")), **written}


def _record(*fields: dict) -> dict:
    return {"type": "record", "name": "R", "fields": list(fields)}


def _field(name: str, type_: Any, **extra: Any) -> dict:
    return {"name": name, "type": type_, **extra}


ID = _field("id", "string")
NULLABLE_ID = _field("id", ["null", "string"])


@pytest.mark.parametrize(
    "writer, reader, compatible",
    [
        pytest.param(_record(ID), _record(ID, _field("n", "int", default=0)), True, id="added-with-default"),
        pytest.param(_record(ID), _record(ID, _field("n", "int")), False, id="added-without-default"),
        pytest.param(_record(ID, _field("n", "int")), _record(ID), True, id="removed"),
        pytest.param(_record(_field("n", "int")), _record(_field("n", "long")), True, id="int-to-long"),
        pytest.param(_record(_field("n", "long")), _record(_field("n", "int")), False, id="long-to-int"),
        pytest.param(_record(ID), _record(NULLABLE_ID), True, id="made-nullable"),
        pytest.param(_record(NULLABLE_ID), _record(ID), False, id="made-required"),
        pytest.param(_record(ID), _record(_field("key", "string", aliases=["id"])), True, id="renamed-with-alias"),
        pytest.param(
            _record(_field("m", {"type": "map", "values": "long"})),
            _record(_field("m", {"type": "map", "values": "string"})),
            False,
            id="map-values-changed",
        ),
    ],
)
def test_compatibility_check(writer, reader, compatible):
    assert (incompatibilities(writer, reader) == []) is compatible


def test_node_metric_v2_reads_without_throttling_or_cold_pages(plain_avro, make_sample):
    """A NodeMetric from before v3 (no throttled ratios, cold page bytes or memory policy) decodes with those
    unset, and the node aggregate's view of it has none: quota burst then only keeps or lowers quotas."""
    from streams.noderesource.views import metric_view

    writer = plain_avro.history("NodeMetric")[2]
    written = make_sample(writer, True)
    _, record = decode(plain_avro.encode(writer, written))

    assert (record["memoryCollectPolicy"], record["coldPageBytes"]) == (None, None)
    assert record["podsMetric"] and all((pod["throttledRatio"], pod["coldPageBytes"]) == (None, None)
                                        for pod in record["podsMetric"])
    view = metric_view(record)
    assert (view.throttled_ratio, view.pod_cold_page_bytes, view.cold_page_bytes) == ({}, {}, None)


def test_a_record_seen_as_an_older_writer_holds_it_has_the_newer_fields_at_their_defaults(plain_avro):
    """``codec.as_written``: what a replay compares with a decision recorded before NodeScore had ``plugins``."""
    old = plain_avro.history("SchedulingDecision")[4]
    recorded = plain_avro.encode(old, sample_record(old, full=True))
    replayed = decode(codec.encode("SchedulingDecision", sample_record(plain_avro.current("SchedulingDecision"),
                                                                       full=True)))[1]
    replayed["scores"] = [{"node": "n1", "score": 7, "plugins": {"NodeResourcesFit": 7}}]
    seen = codec.as_written(recorded, replayed)
    assert seen["scores"] == [{"node": "n1", "score": 7, "plugins": {}}]
    current = codec.encode("SchedulingDecision", replayed)
    assert codec.as_written(current, replayed) is replayed
