"""``InboxReader`` with the deployment's signer, on forged claims: a source offset anywhere (below the
partition's end included), any partition, any time ahead of the record's own. An envelope the pipeline did not
sign is refused whatever it claims, so no claim of a foreign record moves the aggregate's dedupe mark (issue 37,
failure 1) or its event time (failure 8); a signed one is read exactly when its claims could be the router's:
a partition of its source topic, an offset not below zero, a time at most twice ``MAX_AHEAD_MS`` past when it
was written."""

from __future__ import annotations

import types

from hypothesis import given
from hypothesis import strategies as st

from streams import routing
from streams.events import MAX_AHEAD_MS
from streams.inbox import InboxReader, Rejected
from streams.schemas import codec
from streams.signing import Signer
from streams.topology import load_topology
from tests.streams.schemas.strategies import INT32, INT64

TOPOLOGY = load_topology()
INBOX = "inbox-scheduling"
SIGNER = Signer(b"k" * 32, "test")
OTHER = Signer(b"o" * 32, "other")
READER = InboxReader.of(TOPOLOGY, INBOX, signer=SIGNER)
PARTITIONS = TOPOLOGY.spec("pods").partitions
WRITTEN_MS = 1_700_000_000_000
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "forged", "namespace": "default"},
       "spec": {"containers": [{"name": "main", "image": "x", "resources": {"requests": {"cpu": "100m"}}}]}}
OFFSETS = st.integers(-1, 10) | st.integers(*INT64)
PARTITION_CLAIMS = st.integers(-1, PARTITIONS) | st.integers(*INT32)
AHEAD_MS = st.integers(-10**6, 4 * MAX_AHEAD_MS) | st.integers(0, 2**40)


def _pod() -> tuple[str, bytes]:
    from streams.bench.hostile import encoded

    _, key, value = encoded(POD)
    return key, value


KEY, PAYLOAD = _pod()


def _envelope(partition: int, offset: int, timestamp_ms: int) -> bytes:
    return codec.encode("InboxEvent", {"sourceTopic": TOPOLOGY.name("pods"), "sourcePartition": partition,
                                       "sourceOffset": offset, "timestamp": timestamp_ms, "key": KEY,
                                       "payload": PAYLOAD, "ack": False})


def _read(value: bytes, headers: list) -> object:
    message = types.SimpleNamespace(topic=TOPOLOGY.name(INBOX), partition=0, offset=3,
                                    key=routing.DEFAULT_DOMAIN.encode(), value=value, headers=headers,
                                    timestamp=WRITTEN_MS)
    try:
        return READER.read(message)[1]
    except Rejected as rejection:
        return str(rejection)


@given(PARTITION_CLAIMS, OFFSETS, AHEAD_MS, st.sampled_from(["none", "other-secret", "other-topic", "garbage"]))
def test_an_envelope_the_pipeline_did_not_sign_is_refused_whatever_it_claims(partition, offset, ahead_ms, forgery):
    value = _envelope(partition, offset, WRITTEN_MS + ahead_ms)
    key = routing.DEFAULT_DOMAIN.encode()
    headers = {"none": [], "other-secret": [OTHER.header(INBOX, key, value)],
               "other-topic": [SIGNER.header("inbox-node", key, value)],
               "garbage": [("koord-mac", b"\x00" * 32)]}[forgery]
    found = _read(value, headers)
    assert isinstance(found, str) and "koord-mac" in found


@given(PARTITION_CLAIMS, OFFSETS, AHEAD_MS)
def test_a_signed_envelope_is_read_exactly_when_its_claims_could_be_the_routers(partition, offset, ahead_ms):
    value = _envelope(partition, offset, WRITTEN_MS + ahead_ms)
    found = _read(value, [SIGNER.header(INBOX, routing.DEFAULT_DOMAIN.encode(), value)])
    possible = 0 <= partition < PARTITIONS and offset >= 0 and ahead_ms <= 2 * MAX_AHEAD_MS
    assert isinstance(found, str) != possible, found
    if possible:
        cause = found.causation
        assert (cause.source_partition, cause.source_offset, found.timestamp_ms) == (partition, offset,
                                                                                     WRITTEN_MS + ahead_ms)
