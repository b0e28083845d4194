"""Replaying a run recorded by the code before issue 36's restructure reproduces every recorded output.

The recording (``tests/fixtures/recordings/``, made by its ``record.py`` at commit df06030 on the
embedded broker) holds the three inboxes, the output topics replay compares, each inbox's incarnation
token and the source partitions' end offsets. The replay library runs it through the code under test
exactly as ``koord replay`` runs what it reads from a broker: every recorded decision, eviction, quota
status, node resource, node usage and actuation must come out with the same id and content, no more,
and every route of the domain router must be reproduced. The Reservation and PodMigrationJob
statuses the scheduler writes back (no decision id, so ``koord replay`` does not compare them) must be
reproduced in order. Output keys and partitions are checked against ``output_key`` and Kafka's default
partitioner, the wire contract of every subscriber.
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
import types
from pathlib import Path

import pytest
from aiokafka.partitioner import DefaultPartitioner

from streams.inbox import InboxReader
from streams.outputs import OUTPUT_TOPICS, output_key
from streams.replay import routes, run
from streams.replay.compare import compare_by_schema
from streams.routing import ACK_HEADERS
from streams.schemas import codec
from streams.topology import load_topology

RECORDING = Path(__file__).parents[2] / "fixtures" / "recordings" / "scheduling-and-node.jsonl.gz"
REPRODUCED = {
    run.SCHEDULING: {"SchedulingDecision": 28, "ElasticQuotaStatus": 16, "Eviction": 2},
    run.NODE: {"NodeResource": 15, "NodeUsage": 9, "Actuation": 30},
}
"""Outputs with a decision id of each aggregate the recording holds, by schema: all must be reproduced."""
WRITE_BACKS = {"Reservation": 3, "PodMigrationJob": 2}
"""Objects the scheduler wrote back to their source topics (statuses; they carry no decision id)."""
ROUTES = 68
"""Routes the domain router sent to the scheduling inbox."""


@dataclasses.dataclass(frozen=True)
class Recording:
    incarnation_tokens: dict[str, str]
    """Inbox topic name -> its incarnation token when recorded."""
    records: dict[str, list[types.SimpleNamespace]]
    """Topic name -> its records as consumer records, in partition then offset order."""

    def topic(self, name: str) -> list[types.SimpleNamespace]:
        return self.records.get(name, [])


def load(path: Path = RECORDING) -> Recording:
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        header, *records = (json.loads(line) for line in lines)
    assert header["format"] == 1, header
    by_topic: dict[str, list[types.SimpleNamespace]] = {}
    for record in records:
        by_topic.setdefault(record["topic"], []).append(types.SimpleNamespace(
            topic=record["topic"], partition=record["partition"], offset=record["offset"],
            timestamp=record["timestamp"], key=_bytes(record["key"]), value=_bytes(record["value"]),
            headers=[(key, _bytes(value)) for key, value in record["headers"]]))
    return Recording(header["incarnationTokens"], by_topic)


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


@pytest.fixture(scope="module")
def recording() -> Recording:
    return load()


def inbox_events(recording: Recording, inbox_id: str) -> list:
    """The inbox's events as its aggregate reads them, with the recorded incarnation token; none refused."""
    topology = load_topology()
    name = topology.name(inbox_id)
    reader = InboxReader.of(topology, inbox_id, recording.incarnation_tokens[name])
    events, undecodable = run.decode(recording.topic(name), reader)
    assert undecodable == []
    return events


@pytest.mark.parametrize("aggregate", [run.SCHEDULING, run.NODE])
def test_every_recorded_output_is_reproduced_with_its_id_and_content(recording, aggregate):
    topology = load_topology()
    inbox = topology.name(run.INBOX_IDS[aggregate])
    caused = run.replay(aggregate, inbox_events(recording, run.INBOX_IDS[aggregate]))
    schemas = run.compared_schemas(aggregate, OUTPUT_TOPICS)
    raw = [record for name in sorted({topology.name(t) for t in schemas.values()}) for record in recording.topic(name)]
    held = run.decode_outputs(raw, schemas)
    of_this_inbox = [(s, r) for s, r in held if (r.get("causation") or {}).get("inboxTopic") == inbox]
    recorded = run.recorded_outputs(held, inbox, caused)
    assert sum(map(len, recorded.values())) == len(of_this_inbox), "every recorded output's cause was replayed"
    reports = compare_by_schema(recorded, run.as_recorded(run.replayed_outputs(caused), raw))
    assert {schema: report.to_dict() for schema, report in reports.items() if not report.ok} == {}
    assert {schema: report.reproduced for schema, report in reports.items()} == REPRODUCED[aggregate]
    assert run.dead_letters(caused) == 0


def test_every_route_of_the_domain_router_is_reproduced(recording):
    held = inbox_events(recording, "inbox-scheduling")
    replayed = routes.replay(inbox_events(recording, "inbox-routing"), held=held)
    reports = routes.compare(replayed, routes.recorded(held))
    assert {domain: report.to_dict() for domain, report in reports.items() if not report.ok} == {}
    assert sum(report.reproduced for report in reports.values()) == ROUTES
    assert replayed.dead_letters == 0


def test_write_backs_are_reproduced_in_order(recording):
    """Per object, the scheduler's write-backs are the recorded records of its topic but the ones
    ``koord apply`` wrote: those ask for an Ack, and of the outputs only forwarded NodeUsages do."""
    topology = load_topology()
    caused = run.replay(run.SCHEDULING, inbox_events(recording, "inbox-scheduling"))
    for schema, count in WRITE_BACKS.items():
        replayed, written_back = {}, {}
        for item in caused:
            for found, record in item.outputs:
                if found == schema:
                    replayed.setdefault(output_key(found, record), []).append(record)
        for record in recording.topic(topology.name(OUTPUT_TOPICS[schema])):
            if record.headers != ACK_HEADERS:
                written_back.setdefault(record.key.decode(), []).append(codec.decode(record.value)[1])
        assert replayed == written_back, schema
        assert sum(map(len, replayed.values())) == count, schema


def test_outputs_are_keyed_and_partitioned_as_recorded(recording):
    """Every record of an output schema on its topic (the Reservation ``koord apply`` wrote too) is keyed by
    ``output_key`` and on the partition of Kafka's default partitioner."""
    topology = load_topology()
    partitioner = DefaultPartitioner()
    checked: dict[str, int] = {}
    for schema, topic_id in OUTPUT_TOPICS.items():
        partitions = list(range(topology.spec(topic_id).partitions))
        for record in recording.topic(topology.name(topic_id)):
            found, value = codec.decode(record.value)
            if found == schema:
                assert record.key.decode() == output_key(schema, value)
                assert record.partition == partitioner(record.key, partitions, partitions)
                checked[schema] = checked.get(schema, 0) + 1
    applied = {"Reservation": 1}
    assert checked == {**REPRODUCED[run.SCHEDULING], **REPRODUCED[run.NODE],
                       **{schema: count + applied.get(schema, 0) for schema, count in WRITE_BACKS.items()}}
