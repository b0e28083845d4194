"""Coverage-guided fuzzing (atheris) of the readers of hostile bytes, beside the property tests.

Run by hand, not by pytest: ``.venv/bin/python tests/fuzz/fuzz_readers.py -runs=100000``. Each input is
split by its first byte into one target:

0. the codec;
1. the manifest reader;
2. the inbox reader (and, for a record it reads, the clock check: a time past the bound is always refused);
3. the signature check, ``Signer.problem``, on any headers, key and value (it must never raise);
4. an object of a kind ``koord bench hostile`` applies, padded near the record limit with a character the
   input chooses (``load_and_validate`` gives records within the limit or a ManifestError);
5. a pod InboxEvent with the offset, partition and time the input claims, signed or not, through the
   inbox reader with a signer (unsigned: always refused; signed: read exactly when its claims could be the
   router's);
6. a decision or pod record with a UTF-8 key through the node agent's pod follower (``records.decode``, then
   ``_apply`` into a pod directory; the follower's guard is a closure of its loop, so what it guards is
   fuzzed: an exception ``_apply`` raises is a record the directory cannot take, which the guard would only
   dead-letter).

Any exception other than the reader's own refusal, or a failed assertion, is a crash that atheris reports
with the input that caused it.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

with atheris.instrument_imports():
    from node_agent.pods import PodDirectory
    from node_agent.run import _apply
    from streams import records, routing
    from streams.bench.hostile import _MANIFESTS, encoded, pod_manifest
    from streams.events import MAX_AHEAD_MS
    from streams.inbox import InboxReader, Rejected
    from streams.limits import RECORD_MAX_BYTES
    from streams.objects import ManifestError, load_and_validate
    from streams.schemas import codec
    from streams.signing import Signer
    from streams.topology import load_topology

TOPOLOGY = load_topology()
READER = InboxReader.of(TOPOLOGY, "inbox-scheduling")
SIGNER = Signer(b"fuzz" * 8, "fuzz")
SIGNED_READER = InboxReader.of(TOPOLOGY, "inbox-scheduling", signer=SIGNER)
POD_PARTITIONS = TOPOLOGY.spec("pods").partitions
NOW_MS = 1_700_000_000_000
KINDS = sorted(_MANIFESTS)
_, POD_KEY, POD_VALUE = encoded(pod_manifest("fuzz"))


def _message(topic_id: str, key: bytes | None, value: bytes | None, headers=()) -> types.SimpleNamespace:
    return types.SimpleNamespace(topic=TOPOLOGY.name(topic_id), partition=0, offset=0, key=key, value=value,
                                 timestamp=NOW_MS, headers=list(headers))


def _codec(data: atheris.FuzzedDataProvider) -> None:
    try:
        codec.decode(data.ConsumeBytes(data.remaining_bytes()))
    except codec.CodecError:
        pass


def _manifest(data: atheris.FuzzedDataProvider) -> None:
    try:
        load_and_validate("-", stdin_text=data.ConsumeUnicodeNoSurrogates(data.remaining_bytes()))
    except ManifestError:
        pass


def _inbox(data: atheris.FuzzedDataProvider) -> None:
    key = data.ConsumeBytes(data.ConsumeIntInRange(0, 16)) or None
    message = _message("inbox-scheduling", key, data.ConsumeBytes(data.remaining_bytes()))
    try:
        _, event = READER.read(message)
    except Rejected:
        return
    if event.timestamp_ms > NOW_MS + 2 * MAX_AHEAD_MS:
        raise AssertionError(f"a record timed {event.timestamp_ms}, written at {NOW_MS}, was not refused")


def _signature(data: atheris.FuzzedDataProvider) -> None:
    signer = Signer(data.ConsumeBytes(data.ConsumeIntInRange(0, 40)), "fuzz")
    topic_id = data.ConsumeUnicodeNoSurrogates(data.ConsumeIntInRange(0, 20))
    headers = []
    for _ in range(data.ConsumeIntInRange(0, 3)):
        name = data.PickValueInList(["koord-mac", b"koord-mac", "koord-ack", b"\xff"]) if data.ConsumeBool() else \
            data.ConsumeBytes(data.ConsumeIntInRange(0, 12))
        headers.append((name, data.ConsumeBytes(data.ConsumeIntInRange(0, 40)) if data.ConsumeBool() else None))
    key = data.ConsumeBytes(data.ConsumeIntInRange(0, 20)) if data.ConsumeBool() else None
    value = data.ConsumeBytes(data.remaining_bytes()) if data.ConsumeBool() else None
    problem = signer.problem(topic_id, key, value, headers if data.ConsumeBool() else dict(
        (n.decode("utf-8", "replace") if isinstance(n, bytes) else n, v) for n, v in headers))
    assert problem is None or isinstance(problem, str)


def _oversized(data: atheris.FuzzedDataProvider) -> None:
    manifest = _MANIFESTS[data.PickValueInList(KINDS)]("fuzz-oversized")
    character = data.ConsumeUnicodeNoSurrogates(1) or '"'
    padding = character * data.ConsumeIntInRange(1, RECORD_MAX_BYTES // max(len(json.dumps(character)) - 2, 1) + 64)
    place = data.PickValueInList(["annotations", "labels", "spec", "data"])
    if place in ("annotations", "labels"):
        manifest["metadata"][place] = {"example.com/padding" if place == "annotations" else "padding": padding}
    else:
        manifest.setdefault(place, {})["padding"] = padding
    try:
        found = load_and_validate("-", stdin_text=json.dumps(manifest))
    except ManifestError:
        return
    for record in found:
        assert len(codec.encode(record.schema, record.record)) + len(record.key.encode()) <= RECORD_MAX_BYTES


def _forged_inbox(data: atheris.FuzzedDataProvider) -> None:
    partition = data.ConsumeIntInRange(-2, POD_PARTITIONS + 1)
    offset = data.ConsumeIntInRange(-(2**63), 2**63 - 1)
    ahead_ms = data.ConsumeIntInRange(-(2**40), 2**40)
    signed = data.ConsumeBool()
    value = codec.encode("InboxEvent", {"sourceTopic": TOPOLOGY.name("pods"), "sourcePartition": partition,
                                        "sourceOffset": offset, "timestamp": NOW_MS + ahead_ms, "key": POD_KEY,
                                        "payload": POD_VALUE, "ack": False})
    key = routing.DEFAULT_DOMAIN.encode()
    headers = [SIGNER.header("inbox-scheduling", key, value)] if signed else []
    try:
        SIGNED_READER.read(_message("inbox-scheduling", key, value, headers))
        read = True
    except Rejected:
        read = False
    possible = signed and 0 <= partition < POD_PARTITIONS and offset >= 0 and ahead_ms <= 2 * MAX_AHEAD_MS
    assert read == possible, (signed, partition, offset, ahead_ms)


def _decision(data: atheris.FuzzedDataProvider) -> None:
    topic_id = data.PickValueInList(["decisions", "pods"])
    key = data.ConsumeUnicodeNoSurrogates(data.ConsumeIntInRange(0, 20)).encode() or None
    value = data.ConsumeBytes(data.remaining_bytes()) or None
    item = records.decode(_message(topic_id, key, value))
    if isinstance(item, str):
        return
    reason = _apply(types.SimpleNamespace(pods=PodDirectory("fuzz-node")), topic_id, item)
    assert reason is None or isinstance(reason, str)


TARGETS = (_codec, _manifest, _inbox, _signature, _oversized, _forged_inbox, _decision)


def one_input(raw: bytes) -> None:
    if not raw:
        return
    TARGETS[raw[0] % len(TARGETS)](atheris.FuzzedDataProvider(raw[1:]))


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
