"""Read-model projection: output and object topics into SQL.

A plain aiokafka consumer rather than a Faust agent, run as its own process
(``koord project``): it is the single writer of the read model (SQLite
allows one), it batches a whole fetch into one transaction, and it does not
take part in the workers' rebalances. Offsets are committed after the
transaction, and every write is idempotent, so a crash replays at most one
batch harmlessly.

It follows the rule of every koordstream consumer: a record that cannot be
decoded, validated or projected is recorded as a dead letter (stage
``projection``), counted (``koord_dead_letters_total``) and committed past;
one bad record never stops the projection nor loses the rest of its batch
(``state.projection``). A source record is checked with the router's own
check (``streams.validation.check_source``), so a record the router rejected
never appears as an object: it is in ``koord get deadletters`` instead.

Its dead letters go into the read model's dead-letter table, in the
transaction of their batch, and not to the dead-letters topic: the
projection is a reader (its ACLs give it no write rights), what it would
produce there would come back to it as input, and every source record that
fails validation is already on that topic, dead-lettered by the router; what
only the projection finds (a record the read model cannot store) concerns the
read model, which is where ``koord get deadletters`` shows it.

On start it compares the broker's incarnation of its topics with the one the
read model records (``state.incarnation``); on a difference it logs one line
and starts a clean read model. A new or clean read model is filled from the
beginning of its topics, whatever offsets the consumer group committed.
"""

from __future__ import annotations

import asyncio
import logging
import time

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition

from state import incarnation as read_model_incarnation
from state.projection import ProjectedRecord, Projector
from streams import deadletter, kafka, routing, validation
from streams.broker.incarnation import Incarnation, incarnation
from streams.metrics import CONSUMER_LAG
from streams.schemas import codec
from streams.signing import PIPELINE_SOURCES, Signer, signer
from streams.topology import Topology

log = logging.getLogger(__name__)

GROUP_ID = "koordstream-projection"
PROJECTED = ("pods", "nodes", "configs", "quotas", "reservations", "devices", "noderesourcetopologies", "nodemetrics",
             "podgroups", "podmigrationjobs", "poddisruptionbudgets", "persistentvolumes",
             "persistentvolumeclaims", "storageclasses", "csinodes", "decisions", "noderesources", "quotastatus", "acks",
             "actuations", "actuation-acks", "deadletters")
VALIDATED = frozenset(PROJECTED) & frozenset(routing.KIND_BY_SOURCE)
"""The projected source topics (``routing.KIND_BY_SOURCE``): their records must pass the router's validation, which
the router applies to those it reads; the decisions and node resources, which only the pipeline writes and the
router no longer reads, are checked here the same way (their signature first)."""


def to_projected(message, source_id: str | None = None, sign: Signer | None = None) -> ProjectedRecord:
    """The record of a consumed `message`, with the problem that makes it a dead letter, if any.

    `source_id` is the topology id of a source topic (see VALIDATED), else None: its
    record is checked exactly as the router checks it (its signature first, on the topics only the worker
    writes, with ``sign``: ``streams.signing``; then ``validation.check_source``: key, size, schema,
    contents), so a record the router dead-letters never becomes an object, and a decision nobody in the
    pipeline made never becomes a pod's. On the other topics the key
    names nothing the read model keeps, so one that is not UTF-8 is only left out (`key` None, `raw_key`
    kept). Never raises: whatever goes wrong reading the record becomes its problem."""
    key, problem, schema, value = None, None, None, None
    try:
        if source_id in PIPELINE_SOURCES and sign is not None:
            problem = sign.problem(source_id, message.key, message.value, message.headers)
        if source_id is not None and problem is None:
            key, schema, value, problem = validation.check_source(source_id, message, int(time.time() * 1000))
            schema = schema if value is not None else None
        elif source_id is not None:
            key = validation.text_key(message.key)[0]
        else:
            key, _ = validation.text_key(message.key)
            if message.value is not None:
                schema, value = codec.decode(message.value)
    except codec.CodecError as error:
        problem = problem or f"undecodable record: {error}"
    except Exception as error:
        problem = problem or f"record cannot be read: {type(error).__name__}: {error}"
    return ProjectedRecord(
        topic=message.topic, partition=message.partition, offset=message.offset,
        timestamp_ms=message.timestamp, key=key, schema=schema, value=value, raw=message.value,
        raw_key=message.key, problem=problem)


class _FromBeginning(ConsumerRebalanceListener):
    """Seeks each partition to its beginning the first time it is assigned: for a new or clean read
    model, which holds nothing of what the consumer group may have committed. Offset 0 below the log
    start is reset to the earliest offset by ``auto_offset_reset``."""

    def __init__(self, consumer: AIOKafkaConsumer) -> None:
        self._consumer = consumer
        self._seen: set[TopicPartition] = set()

    async def on_partitions_revoked(self, revoked) -> None:
        return None

    async def on_partitions_assigned(self, assigned) -> None:
        for tp in sorted(set(assigned) - self._seen):
            self._consumer.seek(tp, 0)
        self._seen.update(assigned)


async def broker_incarnation(bootstrap: str, topics) -> Incarnation:
    """The incarnation of `topics` on the broker at `bootstrap`."""
    async with kafka.admin_client(bootstrap) as admin:
        return await incarnation(admin, topics)


async def run_projection(bootstrap: str, topology: Topology, database_url: str, stop: asyncio.Event) -> None:
    names = topology.names()
    topics = [names[logical] for logical in PROJECTED]
    current = await broker_incarnation(bootstrap, topics)
    adoption = await asyncio.to_thread(read_model_incarnation.adopt, database_url, current, bootstrap)
    if adoption.reason is not None:
        log.warning("%s", adoption.describe(current, bootstrap))
    engine = adoption.engine
    projector = Projector(engine, topics={logical: names[logical] for logical in PROJECTED})
    sources = {names[logical]: logical for logical in VALIDATED}
    sign = signer()
    consumer = kafka.consumer(bootstrap, topics, GROUP_ID, from_beginning=True)
    if adoption.fresh:
        consumer.subscribe(topics, listener=_FromBeginning(consumer))
    await consumer.start()
    try:
        while not stop.is_set():
            batches = await consumer.getmany(timeout_ms=200, max_records=5000)
            records = [to_projected(m, sources.get(m.topic), sign) for messages in batches.values() for m in messages]
            if records:
                applied = await asyncio.to_thread(projector.apply, records)
                for letter in applied.dead_letters:
                    deadletter.count(letter)
                await consumer.commit()
            for tp in consumer.assignment():
                highwater = consumer.highwater(tp)
                if highwater is not None:
                    CONSUMER_LAG.labels(GROUP_ID, tp.topic, str(tp.partition)).set(highwater - await consumer.position(tp))
    finally:
        await consumer.stop()
        engine.dispose()
