"""The hostile-record generator: seeded, every class on its topics, and each record hostile as its class says."""

from __future__ import annotations

import collections

from streams import routing, validation
from streams.bench.hostile import CLASSES, FUTURE_AHEAD_MS, HUGE_OFFSET, Generator
from streams.limits import RECORD_MAX_BYTES, too_big
from streams.schemas import codec
from streams.signing import HEADER
from streams.topology import load_topology

TOPOLOGY = load_topology()


def _draw(seed: int, count: int) -> list:
    return Generator(seed, TOPOLOGY, now_ms=1_700_000_000_000).records(count)


def test_the_same_seed_draws_the_same_records_and_another_seed_others():
    assert _draw(3, 400) == _draw(3, 400)
    assert _draw(3, 400) != _draw(4, 400)


def test_every_class_is_drawn_and_every_source_inbox_output_and_actuation_topic_is_hit():
    """Every topic the router reads, and the decisions topic, whose readers (the read model, the bridge) check
    signatures; not the node aggregate's outputs, which no aggregate reads (it copies them to their inboxes
    itself), so nothing there could refuse a hostile record."""
    drawn = _draw(1, 3000)
    assert len(drawn) == 3000
    assert set(collections.Counter(h.kind for h in drawn)) == set(CLASSES)
    assert sum(h.kind in ("oversized", "oversized-valid") for h in drawn) <= 3
    wanted = {*routing.CHECKED_SOURCES, "inbox-node", "inbox-scheduling", "actuations", "acks", "actuation-acks",
              "quotastatus", "deadletters", "decisions"}
    topics = {h.topic_id for h in drawn}
    assert wanted <= topics and not topics & {"noderesources", "nodeusages"}
    assert {h.kind for h in drawn if h.topic_id == "decisions"} == {"decision-for-ghost-node", "forged-decision"}


def _decodes(value: bytes | None) -> tuple[str, dict] | None:
    try:
        return codec.decode(value)
    except codec.CodecError:
        return None


def test_each_record_is_hostile_the_way_its_class_says():
    generator = Generator(9, TOPOLOGY, now_ms=1)
    for _ in range(20):
        assert _decodes(generator.draw("garbage-source").value) is None
        assert validation.text_key(generator.draw("non-utf8-key-source").key)[1]
        assert generator.draw("missing-key-source").key is None
        tombstone = generator.draw("non-utf8-key-tombstone")
        assert tombstone.value is None and validation.text_key(tombstone.key)[1]
        assert _decodes(generator.draw("truncated-avro").value) is None
        wrong = generator.draw("wrong-schema")
        assert _decodes(wrong.value)[0] not in routing.KIND_BY_SOURCE[wrong.topic_id]
        _, pod = _decodes(generator.draw("negative-requests-pod").value)
        assert validation.problems("pods", None, "Pod", pod)
        _, decision = _decodes(generator.draw("decision-for-ghost-node").value)
        assert decision["result"] == "Scheduled" and decision["nodeName"].startswith("hostile-ghost-node")
        oversized = generator.draw("oversized")
        assert len(oversized.value) + len(oversized.key) > 1_040_000
        _, envelope = _decodes(generator.draw("inbox-huge-source-offset").value)
        assert envelope["sourceOffset"] >= HUGE_OFFSET
        _, envelope = _decodes(generator.draw("inbox-unknown-source-topic").value)
        assert envelope["sourceTopic"] not in {TOPOLOGY.name(s) for s in routing.KIND_BY_SOURCE}
        _, envelope = _decodes(generator.draw("inbox-negative-requests").value)
        assert validation.problems("pods", envelope["key"], "Pod", codec.decode(envelope["payload"])[1])



def test_every_topic_the_router_reads_has_a_valid_record_that_it_would_accept():
    generator = Generator(5, TOPOLOGY, now_ms=1)
    for source_id in routing.CHECKED_SOURCES:
        key, value = generator.valid(source_id)
        kind, record = codec.decode(value)
        assert validation.problems(source_id, key.decode(), kind, record) == [], source_id


def test_issue_37_classes_are_hostile_the_way_they_say():
    generator = Generator(11, TOPOLOGY, now_ms=1_000)
    for _ in range(10):
        forged = generator.draw("forged-decision")
        assert _decodes(forged.value)[1]["result"] == "Scheduled" and HEADER not in dict(forged.headers)
        assert forged.topic_id == "decisions" and forged.dead_letter is False
        ahead = generator.draw("future-timestamp")
        assert ahead.topic_id == "nodes" and ahead.timestamp_ms - 1_000 in FUTURE_AHEAD_MS
        assert validation.problems("nodes", ahead.key.decode(), *_decodes(ahead.value)) == []
        _, envelope = _decodes(generator.draw("inbox-forged-offset-below-end").value)
        assert envelope["sourceOffset"] == 0 and _decodes(envelope["payload"])[0] == "Pod"
        big = generator.draw("oversized-valid")
        kind, record = _decodes(big.value)
        assert too_big(big.value, big.key) is None and len(big.value) > RECORD_MAX_BYTES * 3 // 4
        assert validation.problems(big.topic_id, big.key.decode(), kind, record) == []
