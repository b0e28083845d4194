"""``koord webhook``'s loop: certificates, informers, the HTTPS server, registration, rotation.

Order, and why: the certificates first (the bundle goes into the configurations); the informers' first
lists next, so the first pod admitted already sees every profile; then the server listens, and only then
are the configurations registered, so the API server never calls a webhook that is not answering. Every
``CHECK_EVERY_S`` the certificates are checked (``streams.webhook.certs``): a new serving pair is loaded
into the running TLS context, a new CA re-registers the configurations with its bundle. On stop the
configurations stay: pods keep being admitted (the pod hooks Ignore a missing webhook), Koordinator's
objects wait for it (``registration``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from pathlib import Path

from streams.bridge.api import NOT_FOUND, ApiError, KubeApi
from streams.webhook import certs, registration
from streams.webhook.informers import RESOURCES, inform, read_namespace
from streams.webhook.review import ClusterView
from streams.webhook.server import serve, tls_context

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class WebhookOptions:
    host: str = "127.0.0.1"
    port: int = 9443
    url: str | None = None
    """Base URL the API server calls (default ``https://<host>:<port>``); ignored with ``service``."""
    service: tuple[str, str, int] | None = None
    """(namespace, name, port) of the Service in front of the webhook, in a cluster."""
    cert_dir: Path = Path("webhook")
    register: bool = True

    @property
    def base_url(self) -> str:
        return self.url or f"https://{self.host}:{self.port}"

    def dns_names(self) -> tuple[str, ...]:
        return ("localhost",) + (certs.service_names(self.service[0], self.service[1]) if self.service else ())


async def register(api: KubeApi, options: WebhookOptions, ca_bundle: bytes) -> None:
    """Create or replace both configurations with ``ca_bundle``."""
    service = options.service
    for configuration in (registration.mutating(options.base_url, service, ca_bundle),
                          registration.validating(options.base_url, service, ca_bundle)):
        collection = registration.path_of(configuration)
        resource = collection.rsplit("/", 1)[1]
        try:
            current = await api.call("get", resource, "GET", f"{collection}/{registration.NAME}")
        except ApiError as error:
            if error.code != NOT_FOUND:
                raise
            await api.call("create", resource, "POST", collection, configuration)
            continue
        configuration["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        await api.call("update", resource, "PUT", f"{collection}/{registration.NAME}", configuration)


async def run(api: KubeApi, options: WebhookOptions, stop: asyncio.Event, ready: asyncio.Event | None = None) -> None:
    paths = certs.WebhookCerts(options.cert_dir, options.dns_names())
    certs.ensure(paths)
    view = ClusterView()
    synced = {name: asyncio.Event() for name in RESOURCES}
    informers = [asyncio.create_task(inform(api, view, name, event)) for name, event in synced.items()]
    try:
        await asyncio.wait_for(asyncio.gather(*(event.wait() for event in synced.values())), 60)
        context = tls_context(*map(str, paths.serving))
        server = await serve(options.host, options.port, context, view,
                             lambda namespace: read_namespace(api, view, namespace))
        log.info("serving on %s:%d", options.host, options.port)
        if options.register:
            await register(api, options, paths.ca_bundle())
        if ready is not None:
            ready.set()
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), certs.CHECK_EVERY_S)
            except asyncio.TimeoutError:
                changed = certs.ensure(paths)
                if changed:
                    context.load_cert_chain(*map(str, paths.serving))
                    log.info("rotated %s", ", ".join(sorted(changed)))
                if "ca" in changed and options.register:
                    await register(api, options, paths.ca_bundle())
        server.close()
        await server.wait_closed()
    finally:
        for task in informers:
            task.cancel()
        await asyncio.gather(*informers, return_exceptions=True)
