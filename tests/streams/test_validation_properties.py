"""``validation.problems`` on hostile records: any decodable record of any schema, on any topic, with any key
gives a list of reasons and never raises; a negative quantity or a kind foreign to the topic is always one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from streams import routing, validation
from streams.schemas import codec
from tests.streams.schemas.strategies import records, schema

SOURCES = st.sampled_from([*routing.KIND_BY_SOURCE, "inbox-node", "unknown"])
KEYS = st.none() | st.text(max_size=12) | st.just("default/web")
KINDED_RECORDS = st.sampled_from(codec.SCHEMAS).flatmap(lambda kind: st.tuples(st.just(kind), records(kind)))


def _fields(kind: str) -> set[str]:
    return {field["name"] for field in schema(kind)["fields"]}


QUANTITIES = st.sampled_from([(source, kind, field) for source, kinds in routing.KIND_BY_SOURCE.items()
                              for kind in kinds if "metadata" in _fields(kind)
                              for field in validation.QUANTITY_FIELDS if field in _fields(kind)])


@given(SOURCES, KEYS, KINDED_RECORDS)
def test_problems_of_any_record_are_a_list_of_reasons(source_id, key, kinded):
    kind, record = kinded
    found = validation.problems(source_id, key, kind, record)
    assert isinstance(found, list) and all(isinstance(reason, str) and reason for reason in found)
    if kind not in routing.KIND_BY_SOURCE.get(source_id, ()):
        assert found


@given(QUANTITIES.flatmap(lambda drawn: st.tuples(st.just(drawn), records(drawn[1]))), KEYS,
       st.integers(-(2**63), -1))
def test_a_negative_quantity_is_always_a_problem(drawn, key, value):
    (source_id, kind, field), record = drawn
    record = {**record, field: {**record[field], "cpu": value}}
    assert any(reason.startswith(f"{field}.cpu:") for reason in validation.problems(source_id, key, kind, record))
