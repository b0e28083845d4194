"""Checks a decoded source record must pass before it enters an inbox.

The CLI validates manifests before producing, but anyone may produce to the
source topics (node agents, other tools). A record that decodes yet is not a
valid object (wrong kind for the topic, negative quantity, no name, key that
does not name it, over the size limit: ``check_source``) is sent to the
dead-letter topic instead, and the read model never shows it. The aggregates
check that each inbox record is one the router would have written
(``route_problems``), once its signature showed the pipeline did
(``streams.signing``); a record read without verifying its signature (a
replay of a recording from another home) is also checked as a source record.
"""

from __future__ import annotations

import json
from typing import Any

from streams import limits
from streams.events import MAX_AHEAD_MS, too_far_ahead
from streams.metrics import FUTURE_TIMES
from streams.objects.fields import FieldReader
from streams.objects.podresources import read_pod_resources
from streams.objects.size import state_problem
from streams.routing import KIND_BY_SOURCE, kind_of_deletion
from streams.schemas import codec

ROUTER_STAGE = "router"

QUANTITY_FIELDS = ("capacity", "allocatable", "requests", "limits", "min", "max", "nodeUsage")


_UNPARSED = object()
"""No parsed manifest given: the check parses the record's."""

def problems(source_id: str, key: str | None, kind: str, record: dict) -> list[str]:
    """Why a decoded source record is bad: its kind on this topic, its key, quantities and manifest."""
    return _problems(source_id, key, kind, record)[0]


def _problems(source_id: str, key: str | None, kind: str, record: dict) -> tuple[list[str], Any]:
    """``problems`` and the record's manifest parsed (``_UNPARSED`` when no check parsed it)."""
    allowed = KIND_BY_SOURCE.get(source_id, ())
    if kind not in allowed:
        return [f"a {kind} record does not belong on the {source_id} topic (expected {', '.join(allowed)})"], _UNPARSED
    if "metadata" not in record:
        return [], _UNPARSED
    found = []
    meta = record["metadata"]
    name = meta.get("name")
    if not name:
        found.append("metadata.name is empty")
    elif key is not None:
        expected = f"{meta['namespace']}/{name}" if meta.get("namespace") else name
        if key != expected:
            found.append(f"key {key!r} does not name the object (expected {expected!r})")
    for field in QUANTITY_FIELDS:
        for resource, value in sorted((record.get(field) or {}).items()):
            if value < 0:
                found.append(f"{field}.{resource}: quantity must not be negative: {value}")
    if "manifest" not in record:
        return found, _UNPARSED
    manifest, unreadable = _parsed(record)
    found += [unreadable] if unreadable else manifest_problems(kind, record, manifest)
    if kind == "Pod" and not found:
        found += pod_manifest_problems(record, manifest)
    return found, manifest


def _parsed(record: dict) -> tuple[Any, str | None]:
    """(the record's manifest parsed, None) or (None, why it is not JSON); parsed once for every check."""
    try:
        return json.loads(record["manifest"]), None
    except (ValueError, RecursionError, TypeError) as error:
        return None, f"manifest is not JSON: {error}"


UNNAMED_MANIFESTS = ("KubeSchedulerConfiguration", "DeschedulerConfiguration")
"""Kinds whose manifest has no ``metadata``: their record's name is the component's (``streams.objects``)."""


def manifest_problems(kind: str, record: dict, manifest: Any = _UNPARSED) -> list[str]:
    """The manifest is what ``koord get`` shows of the record: a JSON object (``{}`` when the writer kept
    none) naming the record's object, as ``koord apply`` and the bridge build both from one manifest. One that
    names another object, or none, would be listed as an object that is not the one the pipeline decides on.
    ``manifest`` is the record's, parsed, when the caller has it."""
    if manifest is _UNPARSED:
        manifest, unreadable = _parsed(record)
        if unreadable:
            return [unreadable]
    if not isinstance(manifest, dict):
        return [f"manifest is not a JSON object but {type(manifest).__name__}"]
    if not manifest or kind in UNNAMED_MANIFESTS:
        return []
    meta, typed = manifest.get("metadata"), record["metadata"]
    named = meta.get("name") if isinstance(meta, dict) else None
    spaced = meta.get("namespace") if isinstance(meta, dict) else None
    if named != typed.get("name") or (spaced and spaced != typed.get("namespace")):
        return [f"manifest names {spaced + '/' if spaced else ''}{named!r}, not the record's "
                f"{typed.get('namespace') + '/' if typed.get('namespace') else ''}{typed.get('name')!r}"]
    return []


def pod_manifest_problems(record: dict, manifest: Any = _UNPARSED) -> list[str]:
    """A Pod record's typed ``requests`` and ``limits`` (what the scheduler uses) must be those its
    manifest's containers give (what ``koord get`` shows), as ``koord apply`` and the bridge build both from
    one manifest (``streams.objects.kinds.pod``): a record where they differ would be scheduled as one pod
    and shown as another. ``manifest`` is the record's, parsed, when the caller has it."""
    if manifest is _UNPARSED:
        manifest, unreadable = _parsed(record)
        if unreadable:
            return [unreadable]
    spec = manifest.get("spec") if isinstance(manifest, dict) else None
    reader = FieldReader()
    resources = read_pod_resources(reader, spec if isinstance(spec, dict) else {}, "spec")
    if reader.errors:
        return [f"manifest's containers cannot be read: {reader.errors[0]}"]
    found = []
    for field, stated in zip(("requests", "limits"), resources):
        typed = dict(record.get(field) or {})
        if typed != stated:
            found.append(f"{field} {dict(sorted(typed.items()))} contradict the manifest's containers, which "
                         f"give {dict(sorted(stated.items()))}")
    return found


def check_source(source_id: str, message, now_ms: int) -> tuple[str | None, str | None, dict | None, str | None]:
    """(key, kind, record, None) of a good source record, or a reason as the last item: the router forwards
    only a good one, and the read model shows only a good one. ``message`` has a Kafka record's ``key``,
    ``value`` and ``headers``. A Tick is the time itself, so one past the router's clock ``now_ms`` by more
    than ``MAX_AHEAD_MS`` is refused, not clamped (counted as the router's refusal: only the router reads
    Ticks)."""
    key, problem = text_key(message.key)
    problem = problem or limits.too_big(message.value, message.key, message.headers)
    if problem:
        return None, None, None, problem
    if message.value is None:
        return key, kind_of_deletion(source_id, key), None, None
    try:
        kind, record = codec.decode(message.value)
    except codec.CodecError as error:
        return key, None, None, f"undecodable record: {error}"
    found, manifest = _problems(source_id, key, kind, record)
    found = found or [reason for reason in [state_problem(kind, record, manifest)] if reason]
    if not found and kind == "Tick":
        ahead = too_far_ahead("the Tick's timestamp", int(record.get("timestamp") or 0), now_ms + MAX_AHEAD_MS)
        if ahead:
            FUTURE_TIMES.labels(ROUTER_STAGE, "refused").inc()
            found = [ahead]
    return key, kind, record, "; ".join(found) if found else None


def text_key(key: bytes | None, what: str = "record") -> tuple[str | None, str | None]:
    """(key as text, None) or (None, the reason it is unusable): a key must be present and UTF-8."""
    if key is None:
        return None, f"{what} has no key (the key must name the object)"
    try:
        return key.decode(), None
    except UnicodeDecodeError:
        return None, f"{what} key is not UTF-8: {key[:64]!r}"


def route_problems(inbox_id: str, inbox_key: str, inbox_partition: int, source_id: str, source_key: str,
                   kind: str, record: dict | None, partitions: dict[str, int]) -> list[str]:
    """An inbox record must sit where the router would have put its source record (``routing.routes``):
    the inbox, its key and, for the copies sent to every partition, its partition. A scheduling-inbox
    record is one the domain router forwarded: one the router sends to the domain router, under any
    domain's name (the domain router's table, not the record, says which)."""
    from streams.routing import SCHEDULING_INBOX, forwarded_kind, routes

    if inbox_id == SCHEDULING_INBOX:
        if forwarded_kind(source_id, source_key, kind, record, partitions):
            return []
        return [f"the domain router never sends a {kind} {source_key!r} of {source_id} to a scheduling domain"]
    for route in routes(source_id, source_key, kind, record, partitions):
        if route.inbox == inbox_id and route.key == inbox_key and route.partition in (None, inbox_partition):
            return []
    return [f"the router never sends a {kind} {source_key!r} of {source_id} to {inbox_id} "
            f"partition {inbox_partition} under key {inbox_key!r}"]


