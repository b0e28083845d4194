"""API objects to the records ``koord apply`` and ``koord delete`` produce: one conversion path.

A list response's items carry no ``apiVersion``/``kind``, so both are set from the watched resource;
``metadata.managedFields`` is dropped (server-side apply bookkeeping, often larger than the object, read
by nothing in koordstream). Everything else is the object as the API server returned it, so ``koord get``
shows what the cluster holds. An object ``to_record`` refuses, or whose record is over the record limit or
whose stored form is over the state budget (``streams.objects.size``, the checks ``koord apply`` and the
router make), becomes a dead letter naming kind/namespace/name/resourceVersion and the reason.
"""

from __future__ import annotations

import json
import time

from streams.bridge.resources import WatchedResource
from streams.deadletter import dead_letter
from streams.objects.documents import Document
from streams.objects.errors import ManifestError
from streams.objects.kinds import KINDS
from streams.objects.records import ObjectRecord, to_record
from streams.objects.size import size_problem, state_problem

STAGE = "bridge"
"""The dead-letter stage of objects the bridge cannot convert."""
PUBLISHED_BY = "koordstream.io/published-by"
"""Annotation of an object koordstream publishes to its topic itself and keeps on the API server too (the node
agent's Device and NodeMetric with ``--kube-api``): the bridge does not mirror it, nor tombstone it, so the topic
gets each state once, from its writer."""


def mirrored(obj: dict) -> bool:
    """Whether the bridge mirrors ``obj`` onto its topic: not when koordstream published it there itself."""
    return PUBLISHED_BY not in ((obj.get("metadata") or {}).get("annotations") or {})


def manifest(resource: WatchedResource, obj: dict) -> dict:
    """The object as a manifest: its apiVersion and kind, without managedFields."""
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {**obj, "apiVersion": resource.api_version, "kind": resource.kind, "metadata": metadata}


def describe(resource: WatchedResource, obj: dict) -> str:
    """"Pod default/web-1 resourceVersion 812": how logs and dead letters name an object."""
    metadata = obj.get("metadata") or {}
    where = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
    return f"{resource.kind} {where}{metadata.get('name')} resourceVersion {metadata.get('resourceVersion')}"


def to_object_record(resource: WatchedResource, obj: dict) -> ObjectRecord:
    """The record ``koord apply`` makes of this object; ManifestError when it cannot be converted or is too big."""
    body = manifest(resource, obj)
    record = to_record(Document(f"{resource.name}:{describe(resource, obj)}", 0, 0, body))
    too_big = (size_problem(record.schema, record.key, record.record, body)
               or state_problem(record.kind, record.record))
    if too_big:
        raise ManifestError(too_big)
    return record


def object_key(resource: WatchedResource, obj: dict) -> str:
    """The topic key of the object (what ``koord delete`` tombstones)."""
    metadata = obj.get("metadata") or {}
    return KINDS[resource.kind].key(metadata.get("namespace"), metadata["name"])


def topic_id(resource: WatchedResource) -> str:
    return KINDS[resource.kind].topic


def dead_letter_record(resource: WatchedResource, obj: dict, reason: str, source_topic: str) -> dict:
    """A DeadLetter for an object that cannot be converted. It never reached its topic, so the partition is
    -1 and the offset is the object's resourceVersion (an integer on every etcd-backed API server; -1 when
    it is not one), which keeps each version's dead letter distinct; the key is the topic key, the payload
    the object's JSON."""
    payload = json.dumps(manifest(resource, obj), sort_keys=True, separators=(",", ":")).encode()
    version = str((obj.get("metadata") or {}).get("resourceVersion", ""))
    offset = int(version) if version.isdigit() else -1
    return dead_letter(STAGE, source_topic, -1, offset, object_key(resource, obj).encode(), payload,
                       f"{describe(resource, obj)}: {reason}", int(time.time() * 1000))
