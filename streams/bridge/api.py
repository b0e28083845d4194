"""The API server over HTTP: list, watch and the bridge's writes, as raw JSON through lightkube's client.

lightkube (``lightkube.config``) loads the kubeconfig and context and builds the httpx client with its
TLS and credentials; the calls themselves are raw JSON, for three reasons: the manifest the bridge
produces must be the object as the API server returned it (no model round trip); lightkube's watch
answers a 410 Gone by silently restarting from "now", which would lose the changes in between, while
the bridge must relist; and lightkube cannot decode the ``Status`` that ``pods/binding`` returns.

Every request, the watches' included, first takes a token of the client-side rate limit
(``streams.bridge.ratelimit``: kube-scheduler's ``clientConnection`` qps / burst). Every failure is an
:class:`ApiError` naming the verb and resource (``create pods/binding``), so a 403 says which RBAC rule is
missing; transport failures (server down) are ``httpx.TransportError``.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2 as httpx
from lightkube import KubeConfig
from lightkube.config.client_adapter import ConnectionParams

from streams.bridge import coalesce
from streams.bridge.ratelimit import TokenBucket
from streams.bridge.resources import WATCHED, WatchedResource
from streams.bridge.statuses import PatchStatus
from streams.bridge.writes import DECISION_ANNOTATION, POD_SCHEDULED, Bind, Evict, MarkUnschedulable, PatchNodeStatus

GONE, CONFLICT, TOO_MANY_REQUESTS, FORBIDDEN, NOT_FOUND = 410, 409, 429, 403, 404
REFUSED = "KoordstreamRefused"
"""The reason of the Event the bridge writes on an object it does not produce."""
BRIDGE = "koord-bridge"
EVENT_MESSAGE_MAX = 1024
"""Refusal messages are cut to this many characters, the limit of an ``events.k8s.io`` note."""


@dataclasses.dataclass
class ApiError(Exception):
    verb: str
    resource: str
    code: int
    message: str

    def __str__(self) -> str:
        return f"{self.verb} {self.resource}: HTTP {self.code}: {self.message}"


KEEP_ALIVE = httpx.Limits(max_connections=None, max_keepalive_connections=None)
"""Every connection is kept for reuse until idle for 5 s: httpx keeps 20 by default, fewer than the bridge's
writers (``write_concurrency``, 32) and watches use at once, so a write past 20 closed its connection and a
later one paid a new TLS handshake (seen in a profile while binding). The concurrency bounds how many there are."""


class KubeApi:
    def __init__(self, kubeconfig: Path | None, context: str | None, watch_timeout_s: int = 300, qps: float = 0.0,
                 burst: int = 1) -> None:
        """``kubeconfig`` None: the pod's service account (in the cluster), else ``~/.kube/config``; ``qps`` 0:
        no client-side rate limit."""
        config = (KubeConfig.from_file(kubeconfig) if kubeconfig else KubeConfig.from_env()).get(context)
        if config is None:
            raise ValueError(f"{kubeconfig}: no context {context!r}" if context else f"{kubeconfig}: no current context")
        self.server = config.cluster.server
        self.watch_timeout_s = watch_timeout_s
        self.limit = TokenBucket(qps, burst)
        params = ConnectionParams(timeout=httpx.Timeout(30.0, read=watch_timeout_s + 30.0)).httpx_params(config)
        coalesce.install()
        self.http = httpx.AsyncClient(**params, limits=KEEP_ALIVE)

    async def close(self) -> None:
        await self.http.aclose()

    async def call(self, verb: str, resource: str, method: str, path: str, body: dict | None = None,
                    content_type: str = "application/json", params: dict | None = None) -> dict:
        await self.limit.wait()
        response = await self.http.request(method, path, params=params,
                                           content=None if body is None else json.dumps(body).encode(),
                                           headers={"Content-Type": content_type})
        if response.status_code >= 400:
            raise _error(verb, resource, response.status_code, response.content)
        return response.json() if response.content else {}

    async def list(self, resource: WatchedResource, page: int) -> tuple[list[dict], str]:
        """Every object of ``resource`` (paged) and the collection's resourceVersion."""
        items, params = [], {"limit": page, **_selector(resource)}
        while True:
            body = await self.call("list", resource.name, "GET", resource.collection_path(), params=params)
            items.extend(body.get("items") or [])
            if not (cont := (body.get("metadata") or {}).get("continue")):
                return items, body["metadata"]["resourceVersion"]
            params = {**params, "continue": cont}

    async def watch(self, resource: WatchedResource, version: str) -> AsyncIterator[tuple[str, dict]]:
        """(type, object) events after ``version``, bookmarks included, until the server ends the
        request; an ERROR event (410 Gone when ``version`` is too old) raises ApiError."""
        params = {"watch": "true", "resourceVersion": version, "allowWatchBookmarks": "true",
                  "timeoutSeconds": self.watch_timeout_s, **_selector(resource)}
        await self.limit.wait()
        async with self.http.stream("GET", resource.collection_path(), params=params) as response:
            if response.status_code >= 400:
                raise _error("watch", resource.name, response.status_code, await response.aread())
            async for line in response.aiter_lines():
                if not line:
                    continue
                event = json.loads(line)
                if event["type"] == "ERROR":
                    status = event["object"]
                    raise ApiError("watch", resource.name, status.get("code", 500), status.get("message", ""))
                yield event["type"], event["object"]

    async def get_pod(self, namespace: str, name: str) -> dict | None:
        return await self.get_path("pods", f"/api/v1/namespaces/{namespace}/pods/{name}")

    async def patch_pod_metadata(self, write: Bind) -> None:
        """PATCH the pod's annotations and labels in one JSON merge patch of ``metadata``, as kube-scheduler's
        PreBind plugins patch the pod they modified. The patch names the pod's uid, which the API server takes
        as a precondition: 409 when the name now holds another pod."""
        metadata: dict = {"uid": write.uid}
        if write.annotations:
            metadata["annotations"] = dict(write.annotations)
        if write.labels:
            metadata["labels"] = dict(write.labels)
        await self.call("patch", "pods", "PATCH", f"/api/v1/namespaces/{write.namespace}/pods/{write.name}",
                         {"metadata": metadata}, "application/merge-patch+json")

    async def bind(self, write: Bind) -> None:
        """POST ``pods/binding``: the pod's node and :data:`DECISION_ANNOTATION` in one write (the API server
        copies a Binding's annotations onto the pod); a second Binding of the pod is a 409.

        Sent as raw JSON because lightkube cannot decode the ``Status`` this subresource answers with."""
        binding = {"apiVersion": "v1", "kind": "Binding",
                   "metadata": {"name": write.name, "namespace": write.namespace, "uid": write.uid,
                                "annotations": {DECISION_ANNOTATION: write.decision_id}},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": write.node}}
        await self.call("create", "pods/binding", "POST",
                         f"/api/v1/namespaces/{write.namespace}/pods/{write.name}/binding", binding)

    async def mark_unschedulable(self, write: MarkUnschedulable, scheduler_name: str) -> None:
        """An Event (FailedScheduling, named after the decision; a 409 means it exists) then the pod's
        ``PodScheduled=False`` condition, as kube-scheduler writes both."""
        now = _now()
        await self._warning(write.namespace, write.event_name,
                            {"apiVersion": "v1", "kind": "Pod", "namespace": write.namespace, "name": write.name,
                             "uid": write.uid}, "FailedScheduling", write.message, scheduler_name, now)
        condition = {"type": POD_SCHEDULED, "status": "False", "reason": write.reason, "message": write.message,
                     "lastProbeTime": None, "lastTransitionTime": now}
        await self.call("patch", "pods/status", "PATCH",
                         f"/api/v1/namespaces/{write.namespace}/pods/{write.name}/status",
                         {"metadata": {"uid": write.uid}, "status": {"conditions": [condition]}},
                         "application/strategic-merge-patch+json")

    async def refusal_event(self, kind: str, api_version: str, obj: dict, reason: str) -> None:
        """A Warning Event ``KoordstreamRefused`` on ``obj``, named after its resourceVersion (a 409 means it
        exists): koordstream will not schedule by this version of the object, and why."""
        metadata = obj.get("metadata") or {}
        await self._warning(metadata.get("namespace") or "default",
                            f"{str(metadata.get('name'))[:200]}.koordstream-refused.{metadata.get('resourceVersion')}",
                            {"apiVersion": api_version, "kind": kind, "namespace": metadata.get("namespace"),
                             "name": metadata.get("name"), "uid": metadata.get("uid"),
                             "resourceVersion": metadata.get("resourceVersion")},
                            REFUSED, reason[:EVENT_MESSAGE_MAX], BRIDGE, _now())

    async def _warning(self, namespace: str, name: str, involved: dict, reason: str, message: str, component: str,
                       now: str) -> None:
        """Create the Warning Event ``name`` about ``involved``; one that exists (409) was created before."""
        event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": namespace},
                 "involvedObject": involved, "reason": reason, "message": message, "type": "Warning",
                 "source": {"component": component}, "reportingComponent": component,
                 "firstTimestamp": now, "lastTimestamp": now, "count": 1}
        try:
            await self.call("create", "events", "POST", f"/api/v1/namespaces/{namespace}/events", event)
        except ApiError as error:
            if error.code != CONFLICT:
                raise

    async def patch_node_status(self, write: PatchNodeStatus) -> None:
        """JSON merge patches of only the keys the NodeResource owns: the node's annotations and labels, then
        its status capacity and allocatable (a None value removes the key); kubelet's keys are not in them."""
        if write.annotations or write.labels:
            metadata = {key: dict(value) for key, value in (("annotations", write.annotations),
                                                             ("labels", write.labels)) if value}
            await self.call("patch", "nodes", "PATCH", f"/api/v1/nodes/{write.node}", {"metadata": metadata},
                             "application/merge-patch+json")
        if write.capacity or write.allocatable:
            await self.call("patch", "nodes/status", "PATCH", f"/api/v1/nodes/{write.node}/status",
                             {"status": {"capacity": dict(write.capacity), "allocatable": dict(write.allocatable)}},
                             "application/merge-patch+json")

    async def get_path(self, resource: str, path: str) -> dict | None:
        """A GET of the object at ``path`` (``resource`` names it in errors); None when there is none."""
        try:
            return await self.call("get", resource, "GET", path)
        except ApiError as error:
            if error.code == NOT_FOUND:
                return None
            raise

    async def get_object(self, kind: str, namespace: str | None, name: str) -> dict | None:
        """A fresh GET of the watched kind's object; None when there is none."""
        resource = _resource(kind)
        return await self.get_path(resource.name, _object_path(resource, namespace, name))

    async def patch_status(self, write: PatchStatus) -> dict:
        """JSON merge patches of the object's annotations, then of its ``status`` subresource, each with the
        planned object's uid and resourceVersion as preconditions (409 when the object changed since; the
        second patch names the version the first one made). Returns the object as the last patch left it."""
        resource = _resource(write.kind)
        path = _object_path(resource, write.namespace, write.name)
        version, patched = write.resource_version, {}
        if write.annotations:
            patched = await self.call("patch", resource.name, "PATCH", path,
                                       {"metadata": {"uid": write.uid, "resourceVersion": version,
                                                     "annotations": dict(write.annotations)}},
                                       "application/merge-patch+json")
            version = patched["metadata"]["resourceVersion"]
        if write.status is not None:
            patched = await self.call("patch", f"{resource.name}/status", "PATCH", f"{path}/status",
                                       {"metadata": {"uid": write.uid, "resourceVersion": version},
                                        "status": dict(write.status)}, "application/merge-patch+json")
        return patched

    async def evict(self, write: Evict) -> None:
        """POST ``pods/eviction`` (policy/v1) with the pod's uid as precondition; 429 when a
        PodDisruptionBudget does not allow it now."""
        eviction = {"apiVersion": "policy/v1", "kind": "Eviction",
                    "metadata": {"name": write.name, "namespace": write.namespace},
                    "deleteOptions": {"preconditions": {"uid": write.uid}} if write.uid else {}}
        await self.call("create", "pods/eviction", "POST",
                         f"/api/v1/namespaces/{write.namespace}/pods/{write.name}/eviction", eviction)


def _resource(kind: str) -> WatchedResource:
    return next(resource for resource in WATCHED if resource.kind == kind)


def _object_path(resource: WatchedResource, namespace: str | None, name: str) -> str:
    root = f"/apis/{resource.group}/{resource.version}" if resource.group else f"/api/{resource.version}"
    scope = f"/namespaces/{namespace}" if namespace else ""
    return f"{root}{scope}/{resource.plural}/{name}"


def _selector(resource: WatchedResource) -> dict:
    return {"fieldSelector": resource.field_selector} if resource.field_selector else {}


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _error(verb: str, resource: str, code: int, content: bytes) -> ApiError:
    try:
        message = json.loads(content).get("message", "")
    except ValueError:
        message = content.decode(errors="replace")[:500].strip()
    return ApiError(verb, resource, code, message)
