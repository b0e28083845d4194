"""The objects the webhook decides with, read from the API server by list + watch into a ``ClusterView``.

ClusterColocationProfiles, Namespaces (their labels, for ``namespaceSelector``), PriorityClasses (the
value and preemption policy a profile's ``priorityClassName`` gives) and ElasticQuotas (the tree a quota
change must keep). Each resource is listed, then watched from the list's resourceVersion; a watch that
ends is resumed, one that is too old (410) or fails is relisted after ``RETRY_S``. A profile or quota in
the cluster that koordstream refuses is left out of the view and logged (it cannot onboard or parent).
"""

from __future__ import annotations

import asyncio
import logging

from streams.bridge.api import ApiError, KubeApi, TransportError
from streams.bridge.resources import WatchedResource
from streams.colocationprofile.profile import ProfileError, parse_profile
from streams.koordinator.colocationprofile import API_GROUP, KIND as PROFILE_KIND, PLURAL
from streams.objects import ManifestError, to_record
from streams.objects.documents import Document
from streams.webhook.review import ClusterView

log = logging.getLogger(__name__)
RETRY_S = 1.0
PAGE = 500

RESOURCES = {
    "profiles": WatchedResource(PROFILE_KIND, API_GROUP, "v1alpha1", PLURAL),
    "namespaces": WatchedResource("Namespace", "", "v1", "namespaces"),
    "priorityclasses": WatchedResource("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses"),
    "quotas": WatchedResource("ElasticQuota", "scheduling.sigs.k8s.io", "v1alpha1", "elasticquotas"),
}


def _entry(resource: str, obj: dict) -> tuple[str, object] | None:
    """(name, what the view keeps) of one object; None for one koordstream refuses."""
    name = (obj.get("metadata") or {}).get("name", "")
    if resource == "profiles":
        try:
            return name, parse_profile(obj)
        except ProfileError as error:
            log.warning("ClusterColocationProfile %s left out: %s", name, error)
            return None
    if resource == "namespaces":
        return name, dict((obj.get("metadata") or {}).get("labels") or {})
    if resource == "priorityclasses":
        return name, (int(obj.get("value", 0)), obj.get("preemptionPolicy"))
    try:
        return name, to_record(Document("apiserver", 0, 1, obj)).record
    except ManifestError as error:
        log.warning("ElasticQuota %s left out: %s", name, error)
        return None


def _table(view: ClusterView, resource: str) -> dict:
    return {"profiles": view.profiles, "namespaces": view.namespaces, "priorityclasses": view.priority_classes,
            "quotas": view.quotas}[resource]


def replace(view: ClusterView, resource: str, items: list[dict]) -> None:
    """The view's table of ``resource`` becomes ``items`` (a list's answer)."""
    table = _table(view, resource)
    table.clear()
    for obj in items:
        entry = _entry(resource, obj)
        if entry:
            table[entry[0]] = entry[1]


def apply_event(view: ClusterView, resource: str, event_type: str, obj: dict) -> None:
    """One watch event into the view."""
    table = _table(view, resource)
    name = (obj.get("metadata") or {}).get("name", "")
    if event_type == "DELETED":
        table.pop(name, None)
    elif event_type in ("ADDED", "MODIFIED"):
        entry = _entry(resource, obj)
        if entry:
            table[name] = entry[1]
        else:
            table.pop(name, None)


async def read_namespace(api: KubeApi, view: ClusterView, name: str) -> None:
    """Put namespace ``name`` into the view from a GET; left out when it cannot be read (then, as in
    Koordinator's webhook, a profile's namespaceSelector does not exclude the pod)."""
    try:
        obj = await api.call("get", "namespaces", "GET", f"/api/v1/namespaces/{name}")
    except (ApiError, TransportError) as error:
        log.info("namespace %s: %s", name, error)
        return
    apply_event(view, "namespaces", "ADDED", obj)


async def inform(api: KubeApi, view: ClusterView, resource: str, synced: asyncio.Event) -> None:
    """List and watch ``resource`` forever; ``synced`` is set after the first list."""
    watched = RESOURCES[resource]
    while True:
        try:
            items, version = await api.list(watched, PAGE)
            replace(view, resource, items)
            synced.set()
            while True:
                async for event_type, obj in api.watch(watched, version):
                    version = (obj.get("metadata") or {}).get("resourceVersion", version)
                    apply_event(view, resource, event_type, obj)
        except (ApiError, TransportError, ValueError) as error:
            log.info("%s: %s; listing again in %gs", watched.name, error, RETRY_S)
            await asyncio.sleep(RETRY_S)
