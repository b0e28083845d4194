"""Table recovery read in bulk (``streams.faustcompat.recovery``) restores exactly what Faust's per-record
recovery restores, on both brokers: the same changelog partitions, written by a real producer (overwrites,
removals, records no table could have written, a value Faust would read as a model), read once in bulk and once as Faust's recovery does it (each
record through the changelog channel's decoder, applied in buffers of ``recovery_buffer_size``), give the same
table, the same partition of every key and the latest value of every key; a read stops at the highwater it was
given and goes on from the offsets it reached."""

from __future__ import annotations

import asyncio
import json
import os
import random

import faust
import pytest
from faust.types import TP

from streams import kafka
from streams.app import changelog_reader
from streams.faustcompat.changelogs import install_skip_undecodable
from streams.faustcompat.recovery import read_changelogs
from streams.faustcompat.tables import raw_changelog
from streams.replay.reader import read_topic
from streams.topology import load_topology
from tests.integration.conftest import start_broker

pytestmark = pytest.mark.integration

RECORDS_PER_PARTITION = 1500
KEYS = 120
GARBAGE = [(b"\xff\xfe not utf-8", b'{"seq": 1}'), (b"not json", b"{not json"), (b"12345", b'"x"'),
           (b'"p%d/bad-value"', b"\xc3\x28 not utf-8"), (b'"p%d/model"', b'{"__faust": {"ns": "no.such.Model"}}')]
"""(key, value) records no JSON table could have written; a raw table takes the last one's value."""


@pytest.fixture(scope="module")
def broker(tmp_path_factory, broker_kind):
    topology = load_topology()
    broker = start_broker(broker_kind, tmp_path_factory.mktemp("bulk-recovery"), topology)
    saved = {name: os.environ.get(name) for name in broker.env()}
    os.environ.update(broker.env())
    try:
        yield broker, topology
    finally:
        broker.stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _value(rng: random.Random, raw: bool, index: int) -> bytes | None:
    if rng.random() < 0.15:
        return None
    if raw:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40))) + index.to_bytes(4, "big")
    return json.dumps({"seq": index, "node": f"n{rng.randrange(50)}", "rows": [rng.random()] * rng.randrange(4)},
                      separators=(",", ":")).encode()


async def _write(bootstrap: str, topic: str, raw: bool, seed: int, start: int) -> None:
    rng = random.Random(seed)
    async with kafka.producer(bootstrap) as producer:
        futures = []
        for partition in range(4):
            for index in range(start, start + RECORDS_PER_PARTITION):
                if index % 97 == 0:
                    key, value = GARBAGE[(index // 97) % len(GARBAGE)]
                    key = key.replace(b"%d", str(partition).encode())
                else:
                    key, value = json.dumps(f"p{partition}/k{rng.randrange(KEYS)}").encode(), _value(rng, raw, index)
                    if not raw and index % 89 == 0:
                        value = b"{not json"  # replaces nothing: the key keeps its value before it
                futures.append(await producer.send(topic, key=key, value=value, partition=partition))
        for future in futures:
            await future


def _table(app_id: str, bootstrap: str, name: str, raw: bool):
    install_skip_undecodable()
    app = faust.App(app_id, broker=f"kafka://{bootstrap}", store="memory://", web_enabled=False)
    table = app.Table(name, partitions=4)
    if raw:
        raw_changelog(table)
    return app, table


async def _bulk(app, table, tps, offsets, highwaters) -> None:
    await read_changelogs(app, changelog_reader(app), {tp: table for tp in tps}, tps, offsets, highwaters)


def _state(table) -> tuple[dict, dict]:
    return dict(table.data.data), dict(table.data._key_partition)


async def _faust_recovery(table, records) -> None:
    """Each record as Faust's recovery takes it: decoded by the changelog channel, buffered, applied."""
    buffer = []
    for record in records:
        buffer.append(await table.changelog_topic.decode(record, propagate=True))
        if len(buffer) >= table.recovery_buffer_size:
            table.apply_changelog_batch(buffer)
            buffer.clear()
    table.apply_changelog_batch(buffer)


def _latest(records, raw: bool) -> dict:
    """The latest value of every key the table could have written, removals removed."""
    latest = {}
    for record in records:
        try:
            key = json.loads(record.key)
            value = None if record.value is None else record.value if raw else json.loads(record.value)
        except ValueError:
            continue
        if not isinstance(key, str) or (isinstance(value, dict) and "__faust" in value):
            continue
        if value is None:
            latest.pop(key, None)
        else:
            latest[key] = value
    return latest


@pytest.mark.parametrize("raw", [False, True], ids=["json", "raw"])
def test_bulk_recovery_restores_what_faust_recovery_restores(broker, raw):
    broker, topology = broker
    changelog_id = "changelog-node" if raw else "changelog-scheduling"
    name = "node-state" if raw else "scheduling-state"
    topic = topology.name(changelog_id)
    asyncio.run(_write(broker.bootstrap, topic, raw, seed=1, start=0))
    middle = asyncio.run(kafka.read_end_offsets(broker.bootstrap, [(topic, p) for p in range(4)]))
    asyncio.run(_write(broker.bootstrap, topic, raw, seed=2, start=RECORDS_PER_PARTITION))
    end = asyncio.run(kafka.read_end_offsets(broker.bootstrap, [(topic, p) for p in range(4)]))
    records = asyncio.run(read_topic(broker.bootstrap, topic))

    app, table = _table(topology.app_id, broker.bootstrap, name, raw)
    assert table.changelog_topic.get_topic_name() == topic
    tps = {TP(topic, partition) for partition in range(4)}
    offsets = {tp: -1 for tp in tps}
    highwaters = {tp: middle[(topic, tp.partition)] - 1 for tp in tps}
    asyncio.run(_bulk(app, table, tps, offsets, highwaters))
    assert offsets == highwaters

    halfway_app, halfway = _table(topology.app_id, broker.bootstrap, name, raw)
    asyncio.run(_faust_recovery(halfway, [r for r in records if r.offset <= highwaters[TP(topic, r.partition)]]))
    assert _state(table) == _state(halfway)

    highwaters = {tp: end[(topic, tp.partition)] - 1 for tp in tps}
    asyncio.run(_bulk(app, table, tps, offsets, highwaters))
    assert offsets == highwaters

    reference_app, reference = _table(topology.app_id, broker.bootstrap, name, raw)
    asyncio.run(_faust_recovery(reference, records))
    assert _state(table) == _state(reference)
    data, partitions = _state(table)
    assert data == _latest(records, raw)
    assert len(data) > KEYS and all(partitions[key] == int(key[1]) for key in data)
