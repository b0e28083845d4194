"""The API server over HTTP: list, watch and the bridge's writes, as raw JSON over aiohttp.

lightkube (``lightkube.config``) loads the kubeconfig and context: the server, the TLS context (cluster CA,
client certificate) and the credentials. The requests go through aiohttp, whose client costs a fifth of
httpx's CPU per request here (a Binding POST over TLS to a local server: about 140 µs against 770 µs). The
calls are raw JSON, for three reasons: the manifest the bridge produces must be the object as the API server
returned it (no model round trip); lightkube's watch answers a 410 Gone by silently restarting from "now",
which would lose the changes in between, while the bridge must relist; and lightkube cannot decode the
``Status`` that ``pods/binding`` returns.

Credentials other than the client certificate (a token, a token file, an exec plugin, basic auth) are
lightkube's: its auth flow gives the ``Authorization`` header, asked again after a 401 (a rotated service
account token, an expired exec credential) and the request sent once more.

Every request, the watches' included, first takes a token of the client-side rate limit
(``streams.bridge.ratelimit``: kube-scheduler's ``clientConnection`` qps / burst). Every failure is an
:class:`ApiError` naming the verb and resource (``create pods/binding``), so a 403 says which RBAC rule is
missing; transport failures (server down, timeouts) are :class:`TransportError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import json
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import httpx2 as httpx
from aiohttp.helpers import get_env_proxy_for_url
from lightkube import KubeConfig
from lightkube.config.client_adapter import user_auth, verify_cluster
from yarl import URL

from streams.bridge.ratelimit import TokenBucket
from streams.bridge.resources import WATCHED, WatchedResource
from streams.bridge.statuses import PatchStatus
from streams.bridge.writes import DECISION_ANNOTATION, POD_SCHEDULED, Bind, Evict, MarkUnschedulable, PatchNodeStatus

GONE, CONFLICT, TOO_MANY_REQUESTS, FORBIDDEN, NOT_FOUND, UNAUTHORIZED = 410, 409, 429, 403, 404, 401
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


class TransportError(ConnectionError):
    """The API server did not answer: unreachable, the connection dropped, or a timeout."""


REQUEST_TIMEOUT_S = 30.0
"""How long a connect, or a wait for a request's next bytes, may take (a watch waits longer: it is quiet
between events, up to ``watch_timeout_s`` after which the server ends it)."""


class KubeApi:
    def __init__(self, kubeconfig: Path | None, context: str | None, watch_timeout_s: int = 300, qps: float = 0.0,
                 burst: int = 1) -> None:
        """``kubeconfig`` None: the pod's service account (in the cluster), else ``~/.kube/config``; ``qps`` 0:
        no client-side rate limit."""
        config = (KubeConfig.from_file(kubeconfig) if kubeconfig else KubeConfig.from_env()).get(context)
        if config is None:
            raise ValueError(f"{kubeconfig}: no context {context!r}" if context else f"{kubeconfig}: no current context")
        assert config.user, "Missing user"
        self.server = config.cluster.server.rstrip("/")
        self.watch_timeout_s = watch_timeout_s
        self.limit = TokenBucket(qps, burst)
        self._tls = verify_cluster(config.cluster, config.user, config.abs_file) \
            if self.server.startswith("https:") else None
        self._auth = user_auth(config.user)
        self._authorization: str | None = None
        try:
            self._proxy, self._proxy_auth = get_env_proxy_for_url(URL(self.server))
        except LookupError:
            self._proxy = self._proxy_auth = None
        self._http: aiohttp.ClientSession | None = None

    def _session(self) -> aiohttp.ClientSession:
        """The client session, made on first use (inside the event loop). Connections are kept for reuse
        without a bound: the bridge bounds its concurrent writes and watches itself. The proxy the environment
        names for the server (``HTTPS_PROXY``, ``NO_PROXY``) is looked up once above: aiohttp's ``trust_env``
        would look it up, and read ``~/.netrc``, in a thread for every request."""
        if self._http is None:
            self._http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=self._tls or False, limit=0))
        return self._http

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()

    async def _credentials(self, rejected: bool) -> None:
        """The ``Authorization`` header from lightkube's auth flow; after a 401 (``rejected``) the flow is told
        so, as httpx would tell it, and a token file is read again or an exec plugin run again."""
        request = httpx.Request("GET", self.server)
        flow = self._auth.async_auth_flow(request)
        sent = await flow.__anext__()
        if rejected:
            with contextlib.suppress(StopAsyncIteration):
                sent = await flow.asend(httpx.Response(UNAUTHORIZED, request=request))
        await flow.aclose()
        self._authorization = sent.headers.get("Authorization")

    async def _headers(self, content_type: str | None, rejected: bool = False) -> dict[str, str]:
        """The request's headers: its content type and the credentials (asked once, and again after a 401)."""
        if self._auth is not None and (rejected or self._authorization is None):
            await self._credentials(rejected)
        headers = {"Accept": "application/json"}
        if content_type is not None:
            headers["Content-Type"] = content_type
        if self._authorization is not None:
            headers["Authorization"] = self._authorization
        return headers

    async def _request(self, method: str, path: str, params: dict | None, data: bytes | None,
                       content_type: str | None, read_timeout_s: float) -> aiohttp.ClientResponse:
        """The response to one request, its body not yet read; sent once more with fresh credentials after a
        401. Transport failures raise :class:`TransportError`."""
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=REQUEST_TIMEOUT_S, sock_read=read_timeout_s)

        async def send(rejected: bool) -> aiohttp.ClientResponse:
            headers = await self._headers(content_type, rejected)
            try:
                return await self._session().request(method, self.server + path, params=params, data=data,
                                                     headers=headers, timeout=timeout, proxy=self._proxy,
                                                     proxy_auth=self._proxy_auth)
            except (aiohttp.ClientError, asyncio.TimeoutError) as error:
                raise TransportError(f"{method} {path}: {type(error).__name__}: {error}") from error

        response = await send(rejected=False)
        if response.status == UNAUTHORIZED and self._auth is not None:
            response.release()
            response = await send(rejected=True)
        return response

    async def call(self, verb: str, resource: str, method: str, path: str, body: dict | None = None,
                    content_type: str = "application/json", params: dict | None = None) -> dict:
        await self.limit.wait()
        response = await self._request(method, path, params, None if body is None else json.dumps(body).encode(),
                                       content_type, REQUEST_TIMEOUT_S)
        async with response:
            try:
                content = await response.read()
            except (aiohttp.ClientError, asyncio.TimeoutError) as error:
                raise TransportError(f"{method} {path}: {type(error).__name__}: {error}") from error
        if response.status >= 400:
            raise _error(verb, resource, response.status, content)
        return json.loads(content) if content else {}

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
        request; an ERROR event (410 Gone when ``version`` is too old) raises ApiError. An event is a line of
        JSON of any length (a huge object is the reader's to refuse)."""
        params = {"watch": "true", "resourceVersion": version, "allowWatchBookmarks": "true",
                  "timeoutSeconds": self.watch_timeout_s, **_selector(resource)}
        await self.limit.wait()
        response = await self._request("GET", resource.collection_path(), params, None, None,
                                       self.watch_timeout_s + REQUEST_TIMEOUT_S)
        async with response:
            try:
                if response.status >= 400:
                    raise _error("watch", resource.name, response.status, await response.read())
                pending = b""
                async for chunk in response.content.iter_any():
                    *lines, pending = (pending + chunk).split(b"\n")
                    for line in lines:
                        if line.strip():
                            yield _watch_event(resource, line)
                if pending.strip():
                    yield _watch_event(resource, pending)
            except (aiohttp.ClientError, asyncio.TimeoutError) as error:
                raise TransportError(f"watch {resource.name}: {type(error).__name__}: {error}") from error

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


def _watch_event(resource: WatchedResource, line: bytes) -> tuple[str, dict]:
    event = json.loads(line)
    if event["type"] == "ERROR":
        status = event["object"]
        raise ApiError("watch", resource.name, status.get("code", 500), status.get("message", ""))
    return event["type"], event["object"]


def _error(verb: str, resource: str, code: int, content: bytes) -> ApiError:
    try:
        message = json.loads(content).get("message", "")
    except ValueError:
        message = content.decode(errors="replace")[:500].strip()
    return ApiError(verb, resource, code, message)
