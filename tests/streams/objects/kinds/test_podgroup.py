"""PodGroup: minMember, scheduleTimeoutSeconds and minResources typed; the rest kept in the manifest."""

from pathlib import Path

from streams.schemas import codec
from tests.streams.objects.support import problems_of, record_of

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "kinds" / "podgroup.yaml"
PODGROUP = "apiVersion: scheduling.sigs.k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {{name: g}}\nspec: {spec}\n"


def test_the_fixture_converts_to_its_typed_fields():
    record = record_of(FIXTURE.read_text())
    assert (record.topic, record.key, record.schema) == ("podgroups", "default/gang-trainer", "PodGroup")
    assert (record.record["minMember"], record.record["scheduleTimeoutSeconds"]) == (4, 100)
    assert record.record["minResources"] == {"cpu": 4000, "memory": 8 << 30}
    assert record.record["metadata"]["annotations"]["gang.scheduling.koordinator.sh/mode"] == "NonStrict"
    assert codec.decode(codec.encode("PodGroup", record.record)) == ("PodGroup", record.record)


def test_absent_fields_take_go_zero_values_or_null():
    record = record_of(PODGROUP.format(spec="{}")).record
    assert (record["minMember"], record["scheduleTimeoutSeconds"], record["minResources"]) == (0, None, {})


def test_fields_are_validated():
    assert problems_of(PODGROUP.format(spec="{minMember: -1, scheduleTimeoutSeconds: ten}")) == [
        "spec.minMember: must be between 0 and 2147483647, got -1",
        'spec.scheduleTimeoutSeconds: must be an integer, got string "ten"',
    ]
