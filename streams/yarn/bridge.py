"""``koord yarn-bridge``: a YARN ResourceManager's NodeManagers onto ``koord.yarnnodes``, totals back to it.

The shell around ``sync.plan``: every ``poll_interval_s`` it reads the NodeManagers
(``resourcemanager.list_node_managers``), reads the NodeResources the node aggregate published since
the last round (the NodeManager total of each node with a YARN share), publishes the changed YarnNode
records and writes the totals due with ``UpdateNodeResource``. yarn-copilot reads YARN's
allocations back every second; so does the default interval.

Bad input never stops it: a ResourceManager that is down or answers garbage is logged, counted
(``koord_yarn_bridge_errors_total{kind="resourcemanager"}``) and retried with exponential backoff up
to ``max_backoff_s``; a NodeManager no node is known for is logged once and counted in
``koord_yarn_unknown_nodemanagers``; an update YARN refuses is a DeadLetter (stage ``yarn-bridge``)
with YARN's message, and is not retried before ``min_update_interval_s``. After every round the bridge's
health (``status.BridgeStatus``) goes to ``<state dir>/status.json`` for ``koord status``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections.abc import Mapping
from pathlib import Path

from prometheus_client import Counter, Gauge

from streams import deadletter, kafka
from streams.noderesource.yarnshare import ANNOTATION_YARN_NODE_RESOURCE
from streams.schemas import codec
from streams.stopsignals import stop_on_signals
from streams.yarn.cluster import site_xml
from streams.yarn.status import BridgeStatus
from streams.yarn.resourcemanager import (ResourceManagerError, UpdateRefused, list_node_managers,
                                          update_node_resource)
from streams.yarn.sync import Update, plan
from streams.yarn.sync import refused as refused_update

log = logging.getLogger(__name__)

ERRORS = Counter("koord_yarn_bridge_errors", "YARN bridge rounds that failed, by kind", ["kind"])
UPDATES = Counter("koord_yarn_node_resource_updates", "UpdateNodeResource calls, by result", ["result"])
UNKNOWN = Gauge("koord_yarn_unknown_nodemanagers", "NodeManagers no Kubernetes node is known for")


@dataclasses.dataclass(frozen=True)
class YarnBridgeSettings:
    rm_url: str
    """The ResourceManager's web address (``ws/v1/cluster/nodes``)."""
    admin_address: str
    """The ResourceManager's admin address (``yarn.resourcemanager.admin.address``, Hadoop's default port 8033)."""
    node_map: Mapping[str, str]
    """NodeManager id (``host:port``) or host -> Kubernetes node name."""
    state_dir: Path
    poll_interval_s: float = 1.0
    """How often the NodeManagers are read (yarn-copilot: every second)."""
    min_update_interval_s: float = 5.0
    """Rate limit: a NodeManager's total is written at most this often."""
    max_backoff_s: float = 30.0

    def validate(self) -> "YarnBridgeSettings":
        if not self.rm_url.startswith(("http://", "https://")):
            raise ValueError(f"--rm: expected an http(s) URL, got {self.rm_url!r}")
        if self.admin_address.count(":") != 1:
            raise ValueError(f"--rm-admin: expected host:port, got {self.admin_address!r}")
        if self.poll_interval_s <= 0 or self.min_update_interval_s < 0:
            raise ValueError("--poll-interval must be positive and --min-update-interval not negative")
        return self


def admin_conf(settings: YarnBridgeSettings) -> Path:
    """A Hadoop configuration folder naming the ResourceManager's admin address, for ``rmadmin``."""
    folder = settings.state_dir / "conf"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "yarn-site.xml").write_text(site_xml({"yarn.resourcemanager.admin.address": settings.admin_address}))
    return folder


def targets_of(records: list[dict]) -> dict[str, tuple[int, int]]:
    """NodeManager id -> (vcores, memory MB) from NodeResource records, the last one of a node winning."""
    targets = {}
    for record in records:
        text = (record.get("annotations") or {}).get(ANNOTATION_YARN_NODE_RESOURCE)
        if not text:
            continue
        try:
            value = json.loads(text)
            targets[value["nodeId"]] = (int(value["vcores"]), int(value["memoryMB"]))
        except (ValueError, KeyError, TypeError):
            log.warning("NodeResource of %s: unreadable %s: %r", record.get("nodeName"),
                        ANNOTATION_YARN_NODE_RESOURCE, text)
    return targets


class YarnBridge:
    def __init__(self, settings: YarnBridgeSettings, producer, consumer, topics: dict[str, str]) -> None:
        self.settings, self.producer, self.consumer, self.topics = settings, producer, consumer, topics
        self.conf = admin_conf(settings)
        self.targets: dict[str, tuple[int, int]] = {}
        self.published: dict[str, dict] = {}
        self.last_update_s: dict[str, float] = {}
        self.reported_unknown: set[str] = set()
        self.backoff_s = 0.0
        self.status = BridgeStatus(settings.rm_url)

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self._read_targets()
            delay = self.settings.poll_interval_s
            try:
                await self.round()
                self.backoff_s = 0.0
            except ResourceManagerError as error:
                ERRORS.labels(kind="resourcemanager").inc()
                self.status.failed(time.time(), str(error))
                self.backoff_s = min(max(self.backoff_s * 2, self.settings.poll_interval_s), self.settings.max_backoff_s)
                delay = self.backoff_s
                log.warning("%s; retrying in %.1f s", error, delay)
            self.status.save(self.settings.state_dir)
            try:
                await asyncio.wait_for(stop.wait(), delay)
            except asyncio.TimeoutError:
                pass

    async def _read_targets(self) -> None:
        batches = await self.consumer.getmany(timeout_ms=50)
        records = []
        for messages in batches.values():
            for message in messages:
                try:
                    schema, record = codec.decode(message.value)
                except codec.CodecError:
                    continue
                if schema == "NodeResource":
                    records.append(record)
        self.targets.update(targets_of(records))

    async def round(self) -> None:
        reports = await asyncio.to_thread(list_node_managers, self.settings.rm_url)
        now = time.time()
        result = plan(reports, self.settings.node_map, self.targets, self.published, self.last_update_s, now,
                      self.settings.rm_url, self.settings.min_update_interval_s)
        UNKNOWN.set(len(result.unknown))
        for node_id in sorted(set(result.unknown) - self.reported_unknown):
            log.warning("NodeManager %s runs on no known Kubernetes node (give --node %s=NODE); not synced",
                        node_id, node_id)
        self.reported_unknown = set(result.unknown)
        self.status.synced(now, len(reports), result.unknown)
        for node, record in result.publish:
            await self.producer.send_and_wait(self.topics["yarnnodes"], key=node.encode(),
                                              value=codec.encode("YarnNode", record))
            self.published[node] = record
        for update in result.updates:
            await self._update(update, now)

    async def _update(self, update: Update, now: float) -> None:
        self.last_update_s[update.node_id] = now
        try:
            await asyncio.to_thread(update_node_resource, self.conf, update.node_id, update.memory_mb, update.vcores)
        except UpdateRefused as refused:
            UPDATES.labels(result="refused").inc()
            log.warning("ResourceManager refused %s -> %d vcores %d MB: %s", update.node_id, update.vcores,
                        update.memory_mb, refused)
            record = refused_update(update, str(refused), self.settings.rm_url, int(now * 1000))
            self.status.refused(now, f"UpdateNodeResource {update.node_id}: {refused}")
            deadletter.count(record)
            await self.producer.send_and_wait(self.topics["deadletters"], key=deadletter.reference_key(record).encode(),
                                              value=codec.encode("DeadLetter", record))
            return
        UPDATES.labels(result="written").inc()
        self.status.updates_written += 1
        log.info("%s (node %s): total set to %d vcores, %d MB", update.node_id, update.node_name, update.vcores,
                 update.memory_mb)


async def run(settings: YarnBridgeSettings, bootstrap: str, topics: dict[str, str]) -> None:
    """Run until a SIGTERM or SIGINT."""
    stop = asyncio.Event()
    stop_on_signals(stop)
    async with kafka.producer(bootstrap) as producer:
        consumer = kafka.consumer(bootstrap, [topics["noderesources"]], None, from_beginning=True)
        await consumer.start()
        try:
            log.info("YARN bridge: ResourceManager %s, %d NodeManagers mapped", settings.rm_url, len(settings.node_map))
            await YarnBridge(settings, producer, consumer, topics).run(stop)
        finally:
            await consumer.stop()
    log.info("YARN bridge stopped")
