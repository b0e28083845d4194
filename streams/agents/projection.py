"""Read-model projection: output and object topics into SQL.

A plain aiokafka consumer rather than a Faust agent, run as its own process
(``koord project``): it is the single writer of the read model (SQLite
allows one), it batches a whole fetch into one transaction, and it does not
take part in the workers' rebalances. Offsets are committed after the
transaction, and every write is idempotent, so a crash replays at most one
batch harmlessly.
"""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy import Engine

from state.projection import Projector, ProjectedRecord
from streams import kafka
from streams.metrics import CONSUMER_LAG
from streams.schemas import codec
from streams.topology import Topology

log = logging.getLogger(__name__)

GROUP_ID = "koordstream-projection"
PROJECTED = ("pods", "nodes", "configs", "quotas", "reservations", "devices", "noderesourcetopologies", "nodemetrics",
             "decisions", "noderesources", "quotastatus", "acks", "actuations", "actuation-acks", "deadletters")


def to_projected(message) -> ProjectedRecord:
    schema, value = None, None
    if message.value is not None:
        try:
            schema, value = codec.decode(message.value)
        except codec.CodecError as error:
            log.warning("not projected %s[%d]@%d: %s", message.topic, message.partition, message.offset, error)
    return ProjectedRecord(
        topic=message.topic, partition=message.partition, offset=message.offset,
        timestamp_ms=message.timestamp, key=message.key.decode() if message.key else None,
        schema=schema, value=value, raw=message.value)


async def run_projection(bootstrap: str, topology: Topology, engine: Engine, stop: asyncio.Event) -> None:
    names = topology.names()
    projector = Projector(engine, topics={logical: names[logical] for logical in PROJECTED})
    consumer = kafka.consumer(bootstrap, [names[logical] for logical in PROJECTED], GROUP_ID, from_beginning=True)
    await consumer.start()
    try:
        while not stop.is_set():
            batches = await consumer.getmany(timeout_ms=200, max_records=5000)
            records = [to_projected(m) for messages in batches.values() for m in messages]
            if records:
                await asyncio.to_thread(projector.apply, records)
                await consumer.commit()
            for tp in batches:
                highwater = consumer.highwater(tp)
                if highwater is not None:
                    CONSUMER_LAG.labels(GROUP_ID, tp.topic, str(tp.partition)).set(highwater - await consumer.position(tp))
    finally:
        await consumer.stop()
