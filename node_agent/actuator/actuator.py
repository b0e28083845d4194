"""The actuator: verify an Actuation, apply it with its mechanism's backend, acknowledge what the kernel holds.

:meth:`Actuator.apply` is the whole job for one record and needs no Kafka
(so the agent's local protection loops can call it)::

    verify (verify.py) -> plan (backend: read, clamp, decide; may reject) -> write (restore on failure)
      -> remember the sequence -> read back -> ActuationAck

A rejection writes nothing and is acknowledged ``applied=false`` with its
reason; a failed write is acknowledged ``applied=false`` with the error and
the values in force (the previous ones); settings this host lacks are named
in ``error`` as ``unsupported <setting>: <why>`` while the others are applied
and read back: ``applied=true`` when at least one setting is supported and
all supported ones are in force (the contract's acknowledgement semantics,
``streams/actuation.py``).

:func:`run_actuator` is the Kafka shell: it reads the one partition of the
actuations topic that carries this node's key (the topic is keyed by
``nodeName``; the partition is found with the producers' own partitioner),
skips other nodes' records, applies ours in order and submits the
acknowledgements to the publisher. The next offset to read is kept in the
state directory beside the sequences, so a restart resumes where it stopped
(an acknowledgement still in the publisher's buffer at a crash is lost; the
actuation itself stays applied and is not applied twice).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from aiokafka.partitioner import DefaultPartitioner
from aiokafka.structs import TopicPartition

from node_agent import metrics
from node_agent.actuator.backend import Backend
from node_agent.actuator.cgroupv1 import CgroupV1Backend
from node_agent.actuator.cgroupv2 import CgroupV2Backend
from node_agent.actuator.sequences import SequenceStore
from node_agent.actuator.verify import MALFORMED, Rejected, Verifier
from node_agent.collectors.cgroups import CgroupLayout
from node_agent.publisher import RETRY_S, wait_or_stop
from node_agent.settings import AgentSettings
from streams import actuation as contract
from streams import kafka
from streams.deadletter import dead_letter
from streams.schemas import codec

log = logging.getLogger(__name__)

ACKS_TOPIC = "actuation-acks"
ACTUATIONS_TOPIC = "actuations"
OFFSETS_FILE = "actuation-offsets.json"
STAGE = "node-agent-actuator"


def build_backends(settings: AgentSettings, layout: CgroupLayout) -> dict[str, Backend]:
    """One backend per mechanism this host can serve; a mechanism missing here is acknowledged unsupported."""
    from node_agent.actuator.resctrl import ResctrlBackend
    from node_agent.actuator.tc import TcBackend

    backends: dict[str, Backend] = {
        contract.MECHANISM_CGROUP: CgroupV1Backend(layout) if layout.v1 else CgroupV2Backend(layout),
        contract.MECHANISM_RESCTRL: ResctrlBackend(settings.resctrl_root, layout, settings.proc_root),
    }
    if settings.tc_interface:
        backends[contract.MECHANISM_TC] = TcBackend(settings.tc_interface)
    return backends


class Actuator:
    def __init__(self, node_name: str, backends: Mapping[str, Backend], verifier: Verifier, *,
                 dry_run: bool = False, clock: Callable[[], float] = time.time,
                 out: Callable[[str], None] = lambda line: print(line, file=sys.stdout, flush=True)) -> None:
        self.node_name = node_name
        self.backends = dict(backends)
        self.verifier = verifier
        self.dry_run = dry_run
        self._clock, self._out = clock, out

    @classmethod
    def from_settings(cls, settings: AgentSettings, node_name: str, layout: CgroupLayout,
                      key: bytes | None = None, **kwargs) -> "Actuator":
        sequences = SequenceStore(settings.state_dir, persist=not settings.actuation_dry_run)
        verifier = Verifier(node_name, key, sequences)
        return cls(node_name, build_backends(settings, layout), verifier, dry_run=settings.actuation_dry_run,
                   **kwargs)

    def apply(self, record: dict) -> dict:
        """The ActuationAck for ``record`` after applying it (or refusing it); never raises for a bad record."""
        mechanism = record.get("mechanism") if isinstance(record, dict) else None
        label = mechanism if mechanism in contract.MECHANISMS else "unknown"
        try:
            target = self.verifier.check(record)
            backend = self.backends.get(target.mechanism)
            if backend is None:
                metrics.ACTUATIONS.labels(label, "unsupported").inc()
                return self._ack(record, False, {}, f"unsupported: no {target.mechanism} backend on this node "
                                                    "(not configured or not available)")
            plan = backend.plan(target, record["values"])
        except Rejected as rejection:
            metrics.ACTUATIONS_REJECTED.labels(rejection.reason).inc()
            metrics.ACTUATIONS.labels(label, "rejected").inc()
            log.warning("actuation %s rejected: %s", record.get("decisionId") if isinstance(record, dict) else None,
                        rejection)
            return self._ack(record, False, {}, f"rejected ({rejection.reason}): {rejection.detail}")
        if self.dry_run:
            metrics.ACTUATIONS.labels(label, "dry-run").inc()
            self._out(json.dumps({"decisionId": record["decisionId"], "sequence": record["sequence"],
                                  "target": f"{target.kind}/{target.id}", "mechanism": target.mechanism,
                                  "would": plan.actions or ["nothing (values already in force)"],
                                  "unsupported": plan.unsupported}, sort_keys=True))
            return self._ack(record, False, backend.read_back(plan), "dry-run: nothing written")
        try:
            outcome_error = backend.execute(plan).error
        except Exception as err:  # a backend bug must not stop the consumer
            log.exception("actuation %s failed", record["decisionId"])
            outcome_error = f"internal error: {err}"
        if outcome_error is None:
            metrics.ACTUATION_LATENCY.labels(label).observe(max(0.0, self._clock() - record["timestamp"] / 1000))
        self.verifier.accepted(target, record["sequence"])
        values = backend.read_back(plan)
        problems = [outcome_error] if outcome_error else []
        problems += [f"unsupported {name}: {why}" for name, why in plan.unsupported.items()]
        applied = outcome_error is None and bool(plan.requested)
        result = "failed" if outcome_error else "applied" if applied and not plan.unsupported else \
            "partial" if applied else "unsupported"
        metrics.ACTUATIONS.labels(label, result).inc()
        return self._ack(record, applied, values, "; ".join(problems) or None)

    def _ack(self, record: object, applied: bool, values: dict[str, str], error: str | None) -> dict:
        record = record if isinstance(record, dict) else {}
        sequence = record.get("sequence")
        return {"actuationId": str(record.get("decisionId", "")), "nodeName": self.node_name,
                "sequence": sequence if isinstance(sequence, int) and not isinstance(sequence, bool) else -1,
                "applied": applied, "values": values, "error": error, "timestamp": int(self._clock() * 1000)}


class OffsetStore:
    """The next offset to read per (topic, partition), persisted like the sequences; memory only without a dir."""

    def __init__(self, state_dir: Path | None) -> None:
        self.path = None if state_dir is None else state_dir / OFFSETS_FILE
        self._offsets: dict[str, int] = {}
        if self.path is not None and self.path.exists():
            self._offsets = {str(k): int(v) for k, v in json.loads(self.path.read_text()).items()}

    def get(self, topic: str, partition: int) -> int | None:
        return self._offsets.get(f"{topic}/{partition}")

    def put(self, topic: str, partition: int, offset: int) -> None:
        self._offsets[f"{topic}/{partition}"] = offset
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps(self._offsets))
        os.replace(temporary, self.path)


def partition_for(node_name: str, partitions: list[int]) -> int:
    """The partition the producers put ``node_name``'s records in (aiokafka's murmur2 partitioner, as Faust)."""
    ordered = sorted(partitions)
    return DefaultPartitioner()(node_name.encode(), ordered, ordered)


async def handle_record(actuator: Actuator, record, publisher, protection=None) -> dict | None:
    """Apply one consumed record addressed to this node and submit its ack (or its dead letter); the ack.

    The host writes run in a worker thread; the publisher is only touched from the event loop's thread."""
    try:
        schema, value = codec.decode(record.value)
        if schema != "Actuation":
            raise codec.CodecError(f"expected an Actuation, got {schema}")
    except codec.CodecError as err:
        metrics.ACTUATIONS_REJECTED.labels(MALFORMED).inc()
        if publisher is not None:
            publisher.submit_record("deadletters", record.key.decode(errors="replace") if record.key else "",
                                    "DeadLetter", dead_letter(STAGE, record.topic, record.partition, record.offset,
                                                              record.key, record.value, str(err),
                                                              int(time.time() * 1000)))
        return None
    ack = await asyncio.to_thread(actuator.apply, value)
    if protection is not None:
        protection.on_stream_ack(value, ack)
    if publisher is not None and not actuator.dry_run:
        publisher.submit_record(ACKS_TOPIC, ack["nodeName"], "ActuationAck", ack,
                                identity=f"{ack['actuationId']}/{ack['sequence']}")
    return ack


async def run_actuator(actuator: Actuator, publisher, bootstrap: str, topic_names: Mapping[str, str],
                       stop: asyncio.Event, offsets: OffsetStore, protection=None) -> None:
    """Apply this node's actuations until ``stop``; reconnects after errors. ``protection``
    (``protection.Protection``) hears of every applied actuation and of the broker's reachability."""
    topic = topic_names[ACTUATIONS_TOPIC]
    key = actuator.node_name.encode()
    while not stop.is_set():
        consumer = kafka.consumer(bootstrap, [], group_id=None, from_beginning=True)
        try:
            await consumer.start()
            try:
                partitions = await kafka.partitions_for(consumer, topic)
            except KeyError:
                raise RuntimeError(f"topic {topic} has no partitions (not created yet?)") from None
            tp = TopicPartition(topic, partition_for(actuator.node_name, partitions))
            consumer.assign([tp])
            start = offsets.get(topic, tp.partition)
            if start is None:
                await consumer.seek_to_beginning(tp)
            else:
                consumer.seek(tp, start)
            log.info("applying actuations for %s from %s partition %d", actuator.node_name, topic, tp.partition)
            while not stop.is_set():
                batches = await consumer.getmany(tp, timeout_ms=1000)
                if protection is not None:
                    protection.reachable()
                for records in batches.values():
                    for record in records:
                        if record.key == key and record.value is not None:
                            await handle_record(actuator, record, publisher, protection)
                        if not actuator.dry_run:
                            offsets.put(topic, tp.partition, record.offset + 1)
        except Exception as err:
            if protection is not None:
                protection.unreachable()
            log.warning("reading actuations failed (%s); retrying", err)
            await wait_or_stop(stop, RETRY_S)
        finally:
            await consumer.stop()
