"""Protection without Kafka: CPU suppress and memory eviction keep running on the node when the stream is gone.

Protection must not wait on Kafka. The agent keeps the last ``slo-controller-config`` it
consumed from the configs topic (``ConfigStore``, persisted in the state directory, so a restart during an
outage still has it). ``Protection`` watches the stream: every actuation or config consumed counts as
contact (``contact``); a failed fetch marks the broker unreachable (``unreachable``), a successful one
reachable again (``reachable``). When the broker is unreachable, or nothing was received for ``stale_after_s``, the agent
is **in protection**: on every ``tick`` it runs the pure planner's ``CPUSuppress`` and ``MemoryEvict``
(``streams.nodeqos``, the same code the node aggregate runs) on its own latest collected Node and
NodeMetric with the stored config, and applies the planned actuations with ``Actuator.apply``.

Sequences: local actuations go through a second ``Actuator`` that shares the backends but has its own
``Verifier`` and ``SequenceStore`` (``protection-sequences.json``) and decision ids ``local-<n>``. Their
sequence is a local counter, persisted, that never enters the stream's store: the stream's last applied
sequences are neither consumed nor raised by local writes, so the first stream actuation after the outage
is judged only against stream sequences and applies. Local acks are logged and counted, not published
(they answer no stream actuation).

Hand-back: when contact returns, the targets protection wrote get back the values the stream last applied
to them (remembered from the stream's acks, ``stream_applied``), or the recovery values (quota -1, the full
cpuset) for settings the stream never set: the node aggregate only emits on change, so without this a
locally tightened quota would outlive the outage. Then the stream is in control again.

Evictions are **reported and counted, never carried out**: the agent has no API server to evict through
and killing processes behind the kubelet's back is not safe; each planned eviction is logged with its
reason and counted in ``koord_node_agent_protection_evictions_total``, once per pod per protection period.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from node_agent import metrics
from node_agent.actuator.actuator import Actuator
from node_agent.actuator.sequences import SequenceStore
from node_agent.actuator.verify import Verifier
from node_agent.publisher import RETRY_S, wait_or_stop
from streams import kafka, records
from streams.events import Causation
from streams.koordinator.classes import qos_class_by_name
from streams.nodeqos import planner
from streams.nodeqos.framework import Snapshot
from streams.nodeqos.planner import QoSMemory
from streams.nodeqos.plugins.cpusuppress import CPUSuppress
from streams.nodeqos.plugins.memoryevict import MemoryEvict, MemoryEvictArgs
from streams.noderesource.views import MetricView, NodeView, PodView, metric_view, node_view
from streams.sloconfig.configmap import DEFAULT_CONFIG, parse_slo_config
from streams.sloconfig.document import ConfigError

log = logging.getLogger(__name__)

CONFIG_FILE = "slo-controller-config.json"
SEQUENCES_DIR = "protection"
CONFIG_NAME = "slo-controller-config"
DEFAULT_STALE_AFTER_S = 60.0
"""The default of ``AgentSettings.protection_after_s``."""
LOCAL_TOPIC = "local-protection"


class ConfigStore:
    """The last slo-controller-config ConfigMap record consumed, persisted atomically in the state dir."""

    def __init__(self, state_dir: Path | None) -> None:
        self.path = None if state_dir is None else state_dir / CONFIG_FILE
        self.record: dict | None = None
        if self.path is not None and self.path.exists():
            try:
                self.record = json.loads(self.path.read_text())
            except ValueError:
                log.warning("ignoring the unreadable stored config %s", self.path)

    def config(self):
        """The parsed SloConfig (Koordinator's defaults without a stored one)."""
        if self.record is None:
            return DEFAULT_CONFIG
        return parse_slo_config(self.record, DEFAULT_CONFIG)

    def put(self, record: dict) -> bool:
        """Keep ``record`` if it is the slo-controller-config and parses; False when it was not kept."""
        if (record.get("metadata") or {}).get("name") != CONFIG_NAME:
            return False
        try:
            parse_slo_config(record, DEFAULT_CONFIG)
        except ConfigError as err:
            log.warning("not keeping an invalid slo-controller-config: %s", err)
            return False
        self.record = record
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            temporary = self.path.with_suffix(".tmp")
            temporary.write_text(json.dumps(record, sort_keys=True))
            os.replace(temporary, self.path)
        return True


class _LocalCounter:
    """The local sequence space: a counter persisted beside the local SequenceStore."""

    def __init__(self, state_dir: Path | None) -> None:
        self.path = None if state_dir is None else state_dir / "sequence"
        self.value = int(self.path.read_text()) if self.path is not None and self.path.exists() else 0

    def next(self) -> int:
        self.value += 1
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self.path.write_text(str(self.value))
        return self.value


@dataclasses.dataclass(frozen=True)
class LocalView:
    """What the agent itself knows of its node: the Node, its pods (from the NodeMetric's pod reports), usage."""

    node: NodeView
    pods: Mapping[str, PodView]
    metric: MetricView


def local_view(node_record: dict, metric_record: dict) -> LocalView:
    """Views of the agent's own Node and NodeMetric records (as ``streams.objects.to_record`` decodes them)."""
    pods = {}
    for report in metric_record.get("podsMetric") or ():
        key = f"{report['namespace']}/{report['name']}"
        pods[key] = PodView(0, 0, report.get("priority") or "", qos_class_by_name(report.get("qos")), 0, (),
                            report.get("uid"))
    return LocalView(node_view(node_record), pods, metric_view(metric_record))


class Protection:
    def __init__(self, stream_actuator: Actuator, state_dir: Path | None, *,
                 stale_after_s: float = DEFAULT_STALE_AFTER_S, clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time) -> None:
        local_dir = None if state_dir is None else state_dir / SEQUENCES_DIR
        self.node_name = stream_actuator.node_name
        self.actuator = Actuator(self.node_name, stream_actuator.backends,
                                 Verifier(self.node_name, None, SequenceStore(local_dir)),
                                 dry_run=stream_actuator.dry_run, clock=wall_clock)
        self.configs = ConfigStore(state_dir)
        self.stale_after_s = stale_after_s
        self._clock, self._wall_clock = clock, wall_clock
        self._counter = _LocalCounter(local_dir)
        self._last_contact = clock()
        self._reachable = True
        self.memory = QoSMemory()
        """The local planner's memory during one protection period (what it applied)."""
        self.stream_applied: dict[tuple[str, str, str], dict[str, str]] = {}
        """Values the stream's actuations put in force, per target (from their acks)."""
        self.evictions: list[dict] = []
        self.active = False
        self.strategies = (CPUSuppress(), MemoryEvict(MemoryEvictArgs()))

    # Stream signals.

    def contact(self) -> None:
        self._last_contact, self._reachable = self._clock(), True

    def unreachable(self) -> None:
        self._reachable = False

    def reachable(self) -> None:
        self._reachable = True

    def on_config(self, record: dict) -> None:
        self.configs.put(record)
        self.contact()

    def on_stream_ack(self, record: dict, ack: dict) -> None:
        """Remember what a stream actuation put in force; counts as contact."""
        self.contact()
        if ack.get("values") and isinstance(record, dict):
            target = (record.get("targetKind"), record.get("targetId"), record.get("mechanism"))
            self.stream_applied[target] = {**self.stream_applied.get(target, {}), **ack["values"]}

    def should_protect(self) -> bool:
        return not self._reachable or self._clock() - self._last_contact > self.stale_after_s

    # Work.

    def tick(self, view: LocalView | None) -> list[dict]:
        """One protection round (or the hand-back when the stream is back); the local acks."""
        if not self.should_protect():
            return self._hand_back(view) if self.active else []
        if not self.active:
            log.warning("actuation stream %s: protecting %s locally (CPU suppress, memory eviction reports)",
                        "unreachable" if not self._reachable else f"silent for {self.stale_after_s:.0f}s",
                        self.node_name)
            self.active, self.memory = True, QoSMemory()
            metrics.PROTECTION_ACTIVE.set(1)
        if view is None:
            return []
        strategy = self.configs.config().qos.for_node(view.node.labels)
        now_ms = int(self._wall_clock() * 1000)
        self.memory, outputs = planner.plan_node(self.strategies, view.node, view.pods, view.metric, strategy,
                                                 now_ms, self.memory, self._cause())
        acks = []
        for schema, record in outputs:
            if schema == "Actuation":
                acks.append(self._apply(record))
            else:
                self.evictions.append(record)
                metrics.PROTECTION_EVICTIONS.labels(record["reason"]).inc()
                log.warning("protection: would evict %s/%s (%s): %s; not evicted (reported only)",
                            record["pod"]["namespace"], record["pod"]["name"], record["reason"], record["message"])
        return acks

    def _hand_back(self, view: LocalView | None) -> list[dict]:
        """Give the targets protection wrote back the stream's values (or recovery values) and step aside."""
        recovered: dict = {}
        if view is not None:
            snapshot = Snapshot(view.node, view.pods, view.metric, DEFAULT_CONFIG.qos.for_node({}), 0,
                                self.memory.last)
            disabled = CPUSuppress(enabled=False).plan(snapshot)
            recovered = {s.key: dict(s.values) for s in disabled.settings}
        acks = []
        for target, values in self.memory.last.items():
            restore = {name: self.stream_applied.get(target, {}).get(name, recovered.get(target, {}).get(name))
                       for name in values}
            restore = {name: value for name, value in restore.items() if value is not None}
            if restore:
                acks.append(self._apply({"targetKind": target[0], "targetId": target[1], "mechanism": target[2],
                                         "values": restore, "timestamp": int(self._wall_clock() * 1000)}))
        log.warning("actuation stream back: %s handed back to the stream (%d targets restored)", self.node_name,
                    len(acks))
        self.active, self.memory = False, QoSMemory()
        metrics.PROTECTION_ACTIVE.set(0)
        return acks

    def _apply(self, record: dict) -> dict:
        sequence = self._counter.next()
        local = {**record, "decisionId": f"local-{sequence}", "nodeName": self.node_name, "sequence": sequence,
                 "signature": None}
        ack = self.actuator.apply(local)
        metrics.PROTECTION_ACTUATIONS.labels("applied" if ack["applied"] else "failed").inc()
        log.info("protection applied %s/%s %s: %s", record["targetKind"], record["targetId"], record["values"], ack)
        return ack

    def _cause(self) -> Causation:
        return Causation(LOCAL_TOPIC, 0, self._counter.value, LOCAL_TOPIC, 0, self._counter.value)


async def follow_configs(protection: Protection, bootstrap: str, topic_names: Mapping[str, str],
                         stop: asyncio.Event) -> None:
    """Keep the last slo-controller-config of the configs topic in ``protection`` (re-read from the start after
    errors; the stored one stays meanwhile)."""
    while not stop.is_set():
        consumer = kafka.consumer(bootstrap, [topic_names["configs"]], group_id=None, from_beginning=True)
        try:
            await consumer.start()
            while not stop.is_set():
                batches = await consumer.getmany(timeout_ms=1000)
                await records.dispatch(records.in_order(batches), lambda item: _on_config(protection, item))
        except Exception as err:
            log.warning("reading configs failed (%s); retrying", err)
            await wait_or_stop(stop, RETRY_S)
        finally:
            await consumer.stop()


def _on_config(protection: Protection, item: records.Decoded) -> None:
    if item.schema == "ConfigMap":
        protection.on_config(item.value)


async def run_protection(protection: Protection, agent, stop: asyncio.Event) -> None:
    """Every collect interval: a protection round on the agent's own latest Node and NodeMetric."""
    from streams.objects import Document, to_record

    interval = agent.settings.collect_interval_s
    while not await wait_or_stop(stop, interval):
        view = None
        if protection.should_protect() or protection.active:
            try:
                node, metric = [to_record(Document("<node-agent>", 0, 1, manifest)).record
                                for manifest in (agent.node(), agent.node_metric())]
                view = local_view(node, metric)
            except Exception as err:  # no usable sample yet: the round still switches modes
                log.warning("protection: no local view of the node (%s)", err)
        await asyncio.to_thread(protection.tick, view)
