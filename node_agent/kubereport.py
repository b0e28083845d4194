"""The node's Device and NodeMetric objects on the API server, kept as koordlet keeps them.

Followed: koordlet's ``statesinformer/impl/states_device_linux.go`` (``reportDevice``) and
``states_nodemetric.go`` (``sync``, ``statusUpdater.updateStatus``):

- **Device** ``<node>``: read; missing -> created, owned by the Node (``ownerReferences`` with
  ``controller`` and ``blockOwnerDeletion``, so it goes with the Node); equal ``spec.devices`` (sorted by
  type, minor) and equal agent labels -> nothing written; else the read object with the new
  ``spec.devices`` and labels is written back with the ``resourceVersion`` it was read at (an update). A
  node without devices has a Device with no devices, as koordlet's. Labels and annotations the agent does not
  write (an administrator's ``gpu-partitions`` table) are kept; koordlet replaces them all.
- **NodeMetric** ``<node>``: read; missing -> created with the agent's ``spec`` (koord-manager's
  nodemetric controller creates it in a Koordinator install, and koordlet skips a node without one; here
  the agent is the only writer); then the status replaces the read object's through the ``status``
  subresource, at the ``resourceVersion`` read.

A 409 (the object changed since it was read, or a create raced another) is retried from a fresh read, as
client-go's ``retry.RetryOnConflict(retry.DefaultBackoff, ...)``: 4 attempts, 10 ms growing fivefold. So an
object is never written over a newer version. The API client is the bridge's (``streams.bridge.api``):
its kubeconfig handling, rate limit and errors naming verb and resource.
"""

from __future__ import annotations

import asyncio
import logging

import httpx2 as httpx

from node_agent.publisher import RETRY_S, wait_or_stop
from streams.bridge.api import CONFLICT, NOT_FOUND, ApiError, KubeApi
from streams.bridge.convert import PUBLISHED_BY
from streams.koordinator.labels import LABEL_GPU_DRIVER_VERSION, LABEL_GPU_MODEL, LABEL_GPU_VENDOR

log = logging.getLogger(__name__)

DEVICES = "/apis/scheduling.koordinator.sh/v1alpha1/devices"
NODEMETRICS = "/apis/slo.koordinator.sh/v1alpha1/nodemetrics"
AGENT_LABELS = (LABEL_GPU_VENDOR, LABEL_GPU_MODEL, LABEL_GPU_DRIVER_VERSION)
"""The Device labels the agent owns (koordlet's ``fillGPUDevice``)."""
CONFLICT_ATTEMPTS, CONFLICT_FIRST_DELAY_S, CONFLICT_FACTOR = 4, 0.01, 5.0
"""client-go's ``retry.DefaultBackoff``."""
CREATED, UPDATED, UNCHANGED = "created", "updated", "unchanged"
PUBLISHED = {PUBLISHED_BY: "node-agent"}
"""On the objects the agent creates: it publishes them to their topics itself, so the bridge does not mirror them."""


class KubeReporter:
    """Writes the latest Device and NodeMetric it was offered; ``run`` sends them as they come."""

    def __init__(self, api: KubeApi, node_name: str) -> None:
        self.api = api
        self.node_name = node_name
        self._pending: dict[str, dict | None] = {}
        self._offered = asyncio.Event()

    def offer_device(self, device: dict | None) -> None:
        """The node's Device (None: no device), replacing one not sent yet."""
        self._offer("Device", device)

    def offer_node_metric(self, metric: dict) -> None:
        """The newest NodeMetric, replacing one not sent yet."""
        self._offer("NodeMetric", metric)

    def _offer(self, kind: str, manifest: dict | None) -> None:
        self._pending[kind] = manifest
        self._offered.set()

    async def run(self, stop: asyncio.Event) -> None:
        """Send what was offered until ``stop``. A failure is logged, never raised (the agent goes on
        collecting), and the newest object of that kind is tried again after ``RETRY_S``."""
        while not stop.is_set():
            waiter = asyncio.ensure_future(self._offered.wait())
            stopper = asyncio.ensure_future(stop.wait())
            await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            stopper.cancel()
            self._offered.clear()
            for kind, manifest in list(self._pending.items()):
                try:
                    await (self.report_device(manifest) if kind == "Device" else self.report_node_metric(manifest))
                except Exception as err:
                    if isinstance(err, (ApiError, httpx.TransportError)):
                        log.warning("could not write %s %s to the API server: %s", kind, self.node_name, err)
                    else:
                        log.exception("could not write %s %s to the API server", kind, self.node_name)
                    if await wait_or_stop(stop, RETRY_S):
                        return
                    self._offered.set()
                    continue
                if self._pending.get(kind) is manifest:
                    del self._pending[kind]

    async def report_device(self, device: dict | None) -> str:
        """Create or update Device ``<node>`` to ``device`` (None: the node has no device)."""
        devices = _sorted((device or {}).get("spec", {}).get("devices", []))
        labels = dict((device or {}).get("metadata", {}).get("labels") or {})
        path = f"{DEVICES}/{self.node_name}"

        async def attempt() -> str:
            current = await self.api.get_path("devices", path)
            if current is None:
                await self._create_device(devices, labels)
                return CREATED
            metadata = current["metadata"]
            held = dict(metadata.get("labels") or {})
            mine = {key: value for key, value in held.items() if key in AGENT_LABELS}
            old = _sorted((current.get("spec") or {}).get("devices") or [])
            if old == devices and mine == labels:
                return UNCHANGED
            metadata["labels"] = {**{k: v for k, v in held.items() if k not in AGENT_LABELS}, **labels}
            current["spec"] = {**(current.get("spec") or {}), "devices": devices}
            await self.api.call("update", "devices", "PUT", path, current)
            return UPDATED
        return await _on_conflict(attempt)

    async def _create_device(self, devices: list[dict], labels: dict[str, str]) -> None:
        node = await self.api.get_path("nodes", f"/api/v1/nodes/{self.node_name}")
        if node is None:
            raise ApiError("get", "nodes", NOT_FOUND, f"node {self.node_name} is not registered yet")
        metadata: dict = {"name": self.node_name, "annotations": PUBLISHED, "ownerReferences": [
            {"apiVersion": "v1", "kind": "Node", "name": self.node_name, "uid": node["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}]}
        if labels:
            metadata["labels"] = labels
        await self.api.call("create", "devices", "POST", DEVICES,
                             {"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Device",
                              "metadata": metadata, "spec": {"devices": devices}})

    async def report_node_metric(self, metric: dict) -> str:
        """Create NodeMetric ``<node>`` when missing, then write ``metric``'s status through ``/status``."""
        path = f"{NODEMETRICS}/{self.node_name}"

        async def attempt() -> str:
            current = await self.api.get_path("nodemetrics", path)
            made = current is None
            if made:
                current = await self.api.call(
                    "create", "nodemetrics", "POST", NODEMETRICS,
                    {"apiVersion": metric["apiVersion"], "kind": "NodeMetric",
                     "metadata": {"name": self.node_name, "annotations": PUBLISHED},
                     "spec": metric.get("spec") or {}})
            current["status"] = metric["status"]
            await self.api.call("update", "nodemetrics/status", "PUT", f"{path}/status", current)
            return CREATED if made else UPDATED
        return await _on_conflict(attempt)


def _sorted(devices: list[dict]) -> list[dict]:
    """By type, then minor: koordlet's order before it compares a Device's devices."""
    return sorted(devices, key=lambda d: (d.get("type", ""), d.get("minor", 0)))


async def _on_conflict(attempt) -> str:
    """``attempt()`` again from a fresh read after a 409, as ``retry.RetryOnConflict``; the last 409 raises."""
    delay = CONFLICT_FIRST_DELAY_S
    for _ in range(CONFLICT_ATTEMPTS - 1):
        try:
            return await attempt()
        except ApiError as error:
            if error.code != CONFLICT:
                raise
        await asyncio.sleep(delay)
        delay *= CONFLICT_FACTOR
    return await attempt()
