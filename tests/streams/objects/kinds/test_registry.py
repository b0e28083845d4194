"""The kind registry: names line up with schemas and topics."""

import pytest

from streams.objects.kinds import KINDS, lookup
from streams.schemas import codec
from streams.topology import load_topology


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_registry_entry_matches_its_kind_and_a_schema(kind):
    spec = KINDS[kind]
    assert spec.kind == kind
    assert spec.schema in codec.SCHEMAS
    assert lookup(kind) is lookup(kind.upper()) is lookup(spec.plural) is spec


def test_every_topic_is_declared_in_the_topology():
    declared = {topic.id for topic in load_topology().topics}
    assert {spec.topic for spec in KINDS.values()} <= declared
