"""Objects near the record limit, of every kind ``koord bench hostile`` applies, through ``streams.objects``.

A valid manifest with one field padded to between a tenth of the record limit and just over it, with
characters whose JSON escape is longer than themselves (``"`` and ``\\`` take two bytes, a control character
six): ``load_and_validate`` (which builds the records ``koord apply`` sends) returns records or raises
ManifestError, never anything else, and every record it returns encodes within ``RECORD_MAX_BYTES``, so
``koord apply`` refuses an object before the broker would (issue 37, failure 3, begins with such objects)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from streams.bench.hostile import _MANIFESTS
from streams.limits import RECORD_MAX_BYTES
from streams.objects import ManifestError, load_and_validate
from streams.schemas import codec

SCHEDULER_CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                    "profiles": [{"schedulerName": "default-scheduler"}]}
MANIFESTS = {**{topic: make("oversized") for topic, make in _MANIFESTS.items()}, "scheduler": SCHEDULER_CONFIG}
CHARACTERS = st.sampled_from(['"', "\\", "x", "\u00e9", "\x01", "\u2028", "\U0001f600", "'", "\n"])
SIZES = st.integers(RECORD_MAX_BYTES // 10, RECORD_MAX_BYTES + 4096) | st.integers(RECORD_MAX_BYTES - 8192,
                                                                                   RECORD_MAX_BYTES + 4096)
"""Bytes of the padding as JSON escapes it."""
PLACES = st.sampled_from(["annotation", "spec", "data", "label"])


def _padded(manifest: dict, place: str, padding: str) -> dict:
    manifest = json.loads(json.dumps(manifest))
    metadata = manifest.setdefault("metadata", {"name": "oversized"})
    if place == "annotation":
        metadata["annotations"] = {"example.com/padding": padding}
    elif place == "label":
        metadata["labels"] = {"padding": padding}
    else:
        manifest.setdefault(place, {})["padding"] = padding
    return manifest


@settings(max_examples=40)
@given(st.sampled_from(sorted(MANIFESTS)), PLACES, CHARACTERS, SIZES)
def test_an_object_near_the_record_limit_gives_records_within_it_or_a_manifest_error(kind, place, character, size):
    padding = character * max(size // (len(json.dumps(character)) - 2), 1)
    text = json.dumps(_padded(MANIFESTS[kind], place, padding))
    try:
        records = load_and_validate("-", stdin_text=text)
    except ManifestError as error:
        assert error.problems
        return
    for record in records:
        value = codec.encode(record.schema, record.record)
        assert len(value) + len(record.key.encode()) <= RECORD_MAX_BYTES
