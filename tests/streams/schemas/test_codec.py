import json

import pytest
from fastavro.schema import fingerprint as fastavro_fingerprint
from fastavro.schema import to_parsing_canonical_form

from streams.schemas import codec
from streams.schemas.codec import SCHEMAS, CodecError, decode, encode, encode_own, fingerprint, schema_path

SCHEMA_FILES = sorted(codec.SCHEMA_DIR.glob("*.avsc"))


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=lambda p: p.stem)
def test_schema_file_is_one_documented_record(path):
    schema = json.loads(path.read_text())
    assert (schema["type"], schema["namespace"], schema["name"]) == ("record", "io.koordstream", path.stem)
    assert schema["doc"]
    assert [f["name"] for f in schema["fields"] if not f.get("doc")] == []


@pytest.mark.parametrize("name", SCHEMAS)
def test_schema_path_names_the_avsc_file(name):
    assert schema_path(name) == codec.SCHEMA_DIR / f"{name}.avsc"


@pytest.mark.parametrize("full", [False, True], ids=["defaults", "every-field-set"])
@pytest.mark.parametrize("name", SCHEMAS)
def test_round_trip(name, full, plain_avro, make_sample):
    record = make_sample(plain_avro.current(name), full)
    assert decode(encode(name, record)) == (name, record)


@pytest.mark.parametrize("name", SCHEMAS)
def test_fields_left_out_take_their_defaults(name, plain_avro, make_sample):
    schema = plain_avro.current(name)
    complete = make_sample(schema)
    required = {f["name"]: complete[f["name"]] for f in schema["fields"] if "default" not in f}
    assert decode(encode(name, required)) == (name, complete)


@pytest.mark.parametrize("name", SCHEMAS)
def test_header_is_marker_and_fingerprint(name, plain_avro, make_sample):
    data = encode(name, make_sample(plain_avro.current(name)))
    assert data[:2] == b"\xc3\x01"
    assert data[2:10] == fingerprint(name)


@pytest.mark.parametrize("name", SCHEMAS)
def test_fingerprint_is_crc64_avro_of_parsing_canonical_form(name, plain_avro):
    schema = plain_avro.current(name)
    from_fastavro = bytes.fromhex(fastavro_fingerprint(to_parsing_canonical_form(schema), "CRC-64-AVRO"))
    assert fingerprint(name) == plain_avro.fingerprint(schema) == from_fastavro


def test_fingerprints_are_distinct():
    assert len({fingerprint(name) for name in SCHEMAS}) == len(SCHEMAS)


# Published in the Avro repository, share/test/data/schema-tests.txt (Java longs).
@pytest.mark.parametrize(
    "schema, published",
    [
        pytest.param('"null"', 7195948357588979594, id="null"),
        pytest.param('"int"', 8247732601305521295, id="int"),
        pytest.param('{"type":"map","values":"string"}', -8732877298790414990, id="map"),
        pytest.param(
            '{"fields":[], "type":"record", "name":"foo", "namespace":"x.y"}', 5916914534497305771, id="record"
        ),
    ],
)
def test_reference_crc64_avro_matches_published_vectors(schema, published, plain_avro):
    fp = plain_avro.fingerprint(json.loads(schema))
    assert int.from_bytes(fp, "little", signed=True) == published


@pytest.mark.parametrize("name", SCHEMAS)
def test_plain_fastavro_decodes_with_the_avsc_files_alone(name, plain_avro, make_sample):
    schema = plain_avro.current(name)
    record = make_sample(schema, full=True)
    assert plain_avro.decode(encode(name, record), schema) == record


@pytest.mark.parametrize("name", SCHEMAS)
def test_encode_matches_an_independent_encoder(name, plain_avro, make_sample):
    schema = plain_avro.current(name)
    record = make_sample(schema, full=True)
    assert encode(name, record) == plain_avro.encode(schema, record)


@pytest.fixture
def pod(plain_avro, make_sample) -> bytes:
    return encode("Pod", make_sample(plain_avro.current("Pod")))


@pytest.mark.parametrize(
    "corrupt, message",
    [
        pytest.param(lambda pod: b"", "too short", id="empty"),
        pytest.param(lambda pod: b"garbage", "too short", id="short-garbage"),
        pytest.param(lambda pod: b"garbage-garbage", "not single-object encoded", id="wrong-marker"),
        pytest.param(lambda pod: pod[:2] + bytes(8) + pod[10:], "unknown schema fingerprint", id="unknown-fingerprint"),
        pytest.param(lambda pod: pod[:-3], "corrupt Pod body", id="truncated-body"),
        pytest.param(lambda pod: pod[:10] + b"\xff" * 8, "corrupt Pod body", id="garbage-body"),
        pytest.param(lambda pod: pod + b"\x00", "bytes after the record", id="trailing-bytes"),
        pytest.param(lambda pod: pod.decode("latin-1"), "expected bytes", id="str"),
        pytest.param(lambda pod: None, "expected bytes", id="none"),
    ],
)
def test_decode_rejects(corrupt, message, pod):
    with pytest.raises(CodecError, match=message):
        decode(corrupt(pod))


def test_decode_accepts_bytearray_and_memoryview(pod):
    assert decode(bytearray(pod)) == decode(memoryview(pod)) == decode(pod)


OBJECT = {"metadata": {"name": "x"}, "manifest": "{}"}  # the fields every object record requires


@pytest.mark.parametrize(
    "name, record, message",
    [
        pytest.param("Pod", {**OBJECT, "priority": "high"}, "Pod.priority", id="union"),
        pytest.param("Node", {**OBJECT, "metadata": {"name": 5}}, "ObjectMeta.name", id="nested-record"),
        pytest.param("Node", {**OBJECT, "capacity": {"cpu": 1.5}}, "Node.capacity", id="map-value"),
        pytest.param("Node", {"metadata": {"name": "n"}}, "Node.manifest is missing", id="missing-field"),
        pytest.param("Node", ["not", "a", "record"], "record is", id="not-a-mapping"),
        pytest.param("Nope", OBJECT, "unknown schema 'Nope'", id="unknown-schema"),
    ],
)
def test_encode_rejects_and_names_the_field(name, record, message):
    with pytest.raises(CodecError, match=message):
        encode(name, record)


def test_a_record_that_fails_inside_the_validation_is_a_codec_error():
    class Failing(dict):
        def get(self, *args):
            raise RuntimeError("boom")

        def __getitem__(self, key):
            raise RuntimeError("boom")

    with pytest.raises(CodecError, match="cannot encode Node: RuntimeError"):
        encode("Node", Failing(OBJECT))


@pytest.mark.parametrize("name", SCHEMAS)
def test_encode_own_writes_what_encode_writes(name, plain_avro, make_sample):
    record = make_sample(plain_avro.current(name), full=True)
    assert encode_own(name, record) == encode(name, record)


@pytest.mark.parametrize(
    "name, record, message",
    [
        pytest.param("Pod", {**OBJECT, "priority": "high"}, "Pod.priority", id="union"),
        pytest.param("Node", {**OBJECT, "metadata": {"name": 5}}, "ObjectMeta.name", id="nested-record"),
        pytest.param("Node", {"metadata": {"name": "n"}}, "Node.manifest is missing", id="missing-field"),
        pytest.param("Node", ["not", "a", "record"], "record is", id="not-a-mapping"),
        pytest.param("Node", {**OBJECT, "capacity": {"cpu": 2**70}}, "Node.capacity", id="long-overflow"),
    ],
)
def test_encode_own_refuses_what_the_writer_cannot_write_with_the_validations_explanation(name, record, message):
    with pytest.raises(CodecError, match=message):
        encode_own(name, record)


@pytest.mark.parametrize("value", [True, 1.5], ids=["bool", "float"])
def test_encode_own_converts_what_only_the_validation_refuses(value):
    with pytest.raises(CodecError, match="Node.capacity"):
        encode("Node", {**OBJECT, "capacity": {"cpu": value}})
    assert decode(encode_own("Node", {**OBJECT, "capacity": {"cpu": value}}))[1]["capacity"] == {"cpu": 1}


def test_unknown_names_raise_codec_error():
    with pytest.raises(CodecError):
        fingerprint("Nope")
    with pytest.raises(CodecError):
        schema_path("Nope")
