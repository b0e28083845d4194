"""The actuator: verify an Actuation, apply it with its mechanism's backend, acknowledge what the kernel holds.

:meth:`Actuator.apply` is the whole job for one record and needs no Kafka
(so the agent's local protection loops can call it)::

    verify (verify.py) -> plan (backend: read, check ranges, decide; may reject) -> write (restore on failure)
      -> remember the sequence -> read back -> ActuationAck

A rejection writes nothing and is acknowledged ``applied=false`` with its
reason; a failed write is acknowledged ``applied=false`` with the error and
the values in force (the previous ones); settings this host lacks are named
in ``error`` as ``unsupported <setting>: <why>`` while the others are applied
and read back: ``applied=true`` when at least one setting is supported and
all supported ones are in force (the contract's acknowledgement semantics,
``streams/actuation.py``). ``status`` says which of these it was
(``applied``, ``partial``, ``unsupported``, ``failed``, ``rejected``,
``duplicate``, ``dry-run``).

Nothing one record holds can stop the agent: ``apply`` never raises. A path
that resolves outside its root (a planted symlink) is ``bad-target``; any
other exception before a write (an OSError reading the host, a bug) is
``internal-error``; an exception while writing is a failed write. A write
the kernel refuses, even a transient EBUSY, is not retried here: the ack
says ``failed`` with the error, the previous values are restored, and the
next record is read at once. The planner's next reconcile sends its values
again; a retry inside the agent would hold every later actuation of the node
behind one record.

:func:`run_actuator` is the Kafka shell: it reads the one partition of the
actuations topic that carries this node's key (the topic is keyed by
``nodeName``; the partition is found with the producers' own partitioner),
skips other nodes' records, applies ours in order and submits the
acknowledgements to the publisher, one per record read (a refused replay
never takes the place of the applied original's ack, in the publisher's
buffer or for readers: its status is ``duplicate``). A record under our key
that is not an Actuation (undecodable, another schema, no value) gets its
own dead letter. The next offset to read is kept in the state directory
beside the sequences, so a restart resumes where it stopped (an
acknowledgement still in the publisher's buffer at a crash is lost; the
actuation itself stays applied and is not applied twice).

Offsets and sequences belong to one incarnation of the actuations topic
(``streams.broker.incarnation``: cluster id and topic id). The saved offset
file carries its token; when the broker's differs (a new embedded broker, the
topic re-created), both are discarded with one log line and reading starts
at the topic's beginning: the old offsets and sequences would otherwise
make the agent wait for, or refuse as stale, every new actuation.
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

from aiokafka.structs import TopicPartition

from node_agent import metrics
from node_agent.actuator.backend import Backend
from node_agent.actuator.cgroupv1 import CgroupV1Backend
from node_agent.actuator.cgroupv2 import CgroupV2Backend
from node_agent.actuator.paths import PathProblem
from node_agent.actuator.sequences import SequenceStore
from node_agent.actuator.waiting import Waiting
from node_agent.actuator.verify import BAD_TARGET, DUPLICATE, INTERNAL_ERROR, MALFORMED, Rejected, Verifier
from node_agent.collectors.cgroups import CgroupLayout
from node_agent.publisher import RETRY_S, wait_or_stop
from node_agent.settings import AgentSettings
from streams import actuation as contract
from streams import kafka
from streams.broker.incarnation import incarnation
from streams.deadletter import dead_letter
from streams.partitioning import partition_for
from streams.schemas import codec

log = logging.getLogger(__name__)

ACKS_TOPIC = "actuation-acks"
ACTUATIONS_TOPIC = "actuations"
OFFSETS_FILE = "actuation-offsets.json"
STAGE = "node-agent-actuator"
INCARNATION_CHECK_S = 30.0
"""How often a running agent asks whether the actuations topic is still the incarnation its offset is from."""


def build_backends(settings: AgentSettings, layout: CgroupLayout,
                   address_of: Callable[[str], str | None] | None = None) -> dict[str, Backend]:
    """One backend per mechanism this host can serve; a mechanism missing here is acknowledged unsupported.
    ``address_of`` (pod UID -> address, the agent's ``PodDirectory.address_of``) lets the tc backend classify
    pods whose actuation carries no address."""
    from node_agent.actuator.resctrl import ResctrlBackend
    from node_agent.actuator.tc import TcBackend

    backends: dict[str, Backend] = {
        contract.MECHANISM_CGROUP: CgroupV1Backend(layout) if layout.v1 else CgroupV2Backend(layout),
        contract.MECHANISM_RESCTRL: ResctrlBackend(settings.resctrl_root, layout, settings.proc_root),
    }
    if settings.tc_interface:
        backends[contract.MECHANISM_TC] = TcBackend(settings.tc_interface, address_of=address_of)
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
        self.waiting = Waiting()
        """Refused actuations of pods whose cgroup kubelet has not made yet (``waiting.py``)."""

    @classmethod
    def from_settings(cls, settings: AgentSettings, node_name: str, layout: CgroupLayout,
                      key: bytes | None = None, address_of: Callable[[str], str | None] | None = None,
                      **kwargs) -> "Actuator":
        sequences = SequenceStore(settings.state_dir, persist=not settings.actuation_dry_run)
        verifier = Verifier(node_name, key, sequences)
        return cls(node_name, build_backends(settings, layout, address_of), verifier,
                   dry_run=settings.actuation_dry_run, **kwargs)

    def apply(self, record: dict) -> dict:
        """The ActuationAck for ``record`` after applying it (or refusing it); never raises."""
        mechanism = record.get("mechanism") if isinstance(record, dict) else None
        label = mechanism if mechanism in contract.MECHANISMS else "unknown"
        try:
            ack = self._apply(record, label)
        except Exception as err:  # a bug past the guarded steps must still end in an ack, not a stuck consumer
            log.exception("actuation %s failed", _decision(record))
            metrics.ACTUATIONS.labels(label, "failed").inc()
            return self._ack(record, False, {}, f"internal error: {type(err).__name__}: {err}", "failed")
        if not self.dry_run:
            self.waiting.note(record, ack)
        return ack

    def target_exists(self, record: dict) -> bool:
        """Whether a pod or container actuation's target exists now: its cgroup, or for tc the pod's address."""
        uid, _, cid = str(record.get("targetId", "")).partition("/")
        if record.get("mechanism") == contract.MECHANISM_TC:
            tc = self.backends.get(contract.MECHANISM_TC)
            return tc is not None and tc.addressed(uid)
        backend = self.backends.get(contract.MECHANISM_CGROUP)
        if backend is None:
            return False
        try:
            found = backend.paths.container_dir(uid, cid) if cid else backend.paths.pod_dir(uid)
        except PathProblem:
            return False
        return found is not None

    def _apply(self, record: object, label: str) -> dict:
        try:
            target, backend, plan = self._plan(record)
        except Rejected as rejection:
            metrics.ACTUATIONS_REJECTED.labels(rejection.reason).inc()
            metrics.ACTUATIONS.labels(label, "rejected").inc()
            log.warning("actuation %s rejected: %s", _decision(record), rejection)
            status = "duplicate" if rejection.reason == DUPLICATE else "rejected"
            return self._ack(record, False, {}, f"rejected ({rejection.reason}): {rejection.detail}", status)
        if plan is None:
            metrics.ACTUATIONS.labels(label, "unsupported").inc()
            return self._ack(record, False, {}, f"unsupported: no {target.mechanism} backend on this node "
                                                "(not configured or not available)", "unsupported")
        if self.dry_run:
            metrics.ACTUATIONS.labels(label, "dry-run").inc()
            self._out(json.dumps({"decisionId": record["decisionId"], "sequence": record["sequence"],
                                  "target": f"{target.kind}/{target.id}", "mechanism": target.mechanism,
                                  "would": plan.actions or ["nothing (values already in force)"],
                                  "unsupported": plan.unsupported}, sort_keys=True))
            values, _ = self._read_back(backend, plan)
            return self._ack(record, False, values, "dry-run: nothing written", "dry-run")
        try:
            outcome_error = backend.execute(plan).error
        except Exception as err:  # a backend bug must not stop the consumer
            log.exception("actuation %s failed", record["decisionId"])
            outcome_error = f"internal error: {type(err).__name__}: {err}"
        if outcome_error is None:
            metrics.ACTUATION_LATENCY.labels(label).observe(max(0.0, self._clock() - record["timestamp"] / 1000))
        problems = [outcome_error] if outcome_error else []
        try:
            self.verifier.accepted(target, record["sequence"])
        except OSError as err:
            log.error("actuation %s: saving its sequence failed: %s", record["decisionId"], err)
            problems.append(f"sequence not saved: {err}")
        values, read_error = self._read_back(backend, plan)
        problems += [read_error] if read_error else []
        problems += [f"unsupported {name}: {why}" for name, why in plan.unsupported.items()]
        applied = outcome_error is None and bool(plan.requested)
        result = "failed" if outcome_error else "applied" if applied and not (plan.unsupported or read_error) else \
            "partial" if applied else "unsupported"
        metrics.ACTUATIONS.labels(label, result).inc()
        return self._ack(record, applied, values, "; ".join(problems) or None, result)

    def _plan(self, record: object):
        """(target, backend, plan); plan None when no backend serves the mechanism. Rejected for every
        refusal, including a path outside its root (``bad-target``) and any other error (``internal-error``)."""
        try:
            target = self.verifier.check(record)
            backend = self.backends.get(target.mechanism)
            if backend is None:
                return target, None, None
            return target, backend, backend.plan(target, record["values"])
        except Rejected:
            raise
        except PathProblem as err:
            raise Rejected(BAD_TARGET, str(err)) from None
        except Exception as err:
            log.exception("actuation %s: planning failed", _decision(record))
            raise Rejected(INTERNAL_ERROR, f"{type(err).__name__}: {err}") from None

    @staticmethod
    def _read_back(backend: Backend, plan) -> tuple[dict[str, str], str | None]:
        try:
            return backend.read_back(plan), None
        except Exception as err:
            log.exception("reading back %s/%s failed", plan.target.kind, plan.target.id)
            return {}, f"reading back failed: {type(err).__name__}: {err}"

    def _ack(self, record: object, applied: bool, values: dict[str, str], error: str | None, status: str) -> dict:
        record = record if isinstance(record, dict) else {}
        sequence = record.get("sequence")
        return {"actuationId": str(record.get("decisionId", "")), "nodeName": self.node_name,
                "sequence": sequence if isinstance(sequence, int) and not isinstance(sequence, bool) else -1,
                "applied": applied, "values": values, "error": error, "timestamp": int(self._clock() * 1000),
                "status": status}


def _decision(record: object) -> object:
    return record.get("decisionId") if isinstance(record, dict) else None


class OffsetStore:
    """The next offset to read per (topic, partition) and the incarnation token they belong to, persisted
    like the sequences (atomic replace); memory only without a dir. A file from before tokens (a plain
    topic/partition map) has no token: the first broker seen is adopted."""

    def __init__(self, state_dir: Path | None) -> None:
        self.path = None if state_dir is None else state_dir / OFFSETS_FILE
        self._offsets: dict[str, int] = {}
        self.token: str | None = None
        if self.path is not None and self.path.exists():
            doc = json.loads(self.path.read_text())
            if isinstance(doc.get("offsets"), dict):
                self.token = doc.get("incarnation") if isinstance(doc.get("incarnation"), str) else None
                doc = doc["offsets"]
            self._offsets = {str(k): int(v) for k, v in doc.items()}

    def get(self, topic: str, partition: int) -> int | None:
        return self._offsets.get(f"{topic}/{partition}")

    def put(self, topic: str, partition: int, offset: int) -> None:
        self._offsets[f"{topic}/{partition}"] = offset
        self._save()

    def adopt(self, token: str, *, save: bool = True) -> None:
        """Tie the offsets held to incarnation ``token``."""
        self.token = token
        if save:
            self._save()

    def reset(self, token: str, *, save: bool = True) -> None:
        """Forget every offset: they belong to another incarnation than ``token``."""
        self._offsets = {}
        self.adopt(token, save=save)

    def _save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = self.path.with_suffix(".tmp")
        with open(temporary, "w") as file:
            json.dump({"incarnation": self.token, "offsets": self._offsets}, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, self.path)


def follow_incarnation(actuator: Actuator, offsets: OffsetStore, topic: str, token: str) -> bool:
    """Tie the saved offsets and sequences to ``token``, the actuations topic's incarnation now; True when
    they were from another one and are discarded (sequences first, so a crash in between discards again)."""
    save = not actuator.dry_run
    if offsets.token is None:
        offsets.adopt(token, save=save)
        return False
    if offsets.token == token:
        return False
    log.warning("actuations topic %s is a new incarnation (%s, the saved state was from %s): the saved read "
                "offset and sequences are discarded; reading it from its beginning", topic, token, offsets.token)
    actuator.verifier.sequences.reset()
    offsets.reset(token, save=save)
    return True


async def topic_token(admin, topic: str) -> str:
    """The incarnation token of ``topic`` on the cluster ``admin`` talks to."""
    return (await incarnation(admin, [topic])).token([topic])


async def handle_record(actuator: Actuator, record, publisher, protection=None) -> dict | None:
    """Apply one consumed record addressed to this node and submit its ack (or its dead letter); the ack.

    Never raises: a record that is not an Actuation gets a dead letter of its own (keyed in the publisher's
    buffer by its topic, partition and offset), anything else an ack, one per record read. The host writes
    run in a worker thread; the publisher is only touched from the event loop's thread."""
    position = f"{record.topic}/{record.partition}/{record.offset}"
    try:
        if record.value is None:
            raise codec.CodecError("no value (a tombstone)")
        schema, value = codec.decode(record.value)
        if schema != "Actuation":
            raise codec.CodecError(f"expected an Actuation, got {schema}")
    except Exception as err:  # CodecError, or whatever a damaged body makes the Avro reader raise
        metrics.ACTUATIONS_REJECTED.labels(MALFORMED).inc()
        log.warning("actuation record %s is not an Actuation: %s", position, err)
        if publisher is not None:
            _submit(publisher, "deadletters", record.key.decode(errors="replace") if record.key else "",
                    "DeadLetter", dead_letter(STAGE, record.topic, record.partition, record.offset, record.key,
                                              record.value, f"undecodable actuation: {err}",
                                              int(time.time() * 1000)), position)
        return None
    ack = await asyncio.to_thread(actuator.apply, value)
    if protection is not None:
        try:
            protection.on_stream_ack(value, ack)
        except Exception:
            log.exception("protection could not take the ack of %s", position)
    if publisher is not None and not actuator.dry_run:
        _submit(publisher, ACKS_TOPIC, ack["nodeName"], "ActuationAck", ack, position)
    return ack


def submit_ack(publisher, ack: dict, identity: str) -> None:
    """Queue one ActuationAck (``identity`` keys it in the publisher's buffer)."""
    _submit(publisher, ACKS_TOPIC, ack["nodeName"], "ActuationAck", ack, identity)


def _submit(publisher, topic_id: str, key: str, schema: str, record: dict, identity: str) -> None:
    """Queue one record; a failure to queue it is logged, never raised into the consumer loop."""
    try:
        publisher.submit_record(topic_id, key, schema, record, identity=identity)
    except Exception:
        log.exception("could not queue the %s for %s", schema, identity)


async def run_actuator(actuator: Actuator, publisher, bootstrap: str, topic_names: Mapping[str, str],
                       stop: asyncio.Event, offsets: OffsetStore, protection=None,
                       incarnation_check_s: float = INCARNATION_CHECK_S) -> None:
    """Apply this node's actuations until ``stop``; reconnects after errors. ``protection``
    (``protection.Protection``) hears of every applied actuation and of the broker's reachability.
    Every ``incarnation_check_s`` the topic's incarnation is asked again; a new one reconnects, which
    discards the saved offset and sequences (``follow_incarnation``)."""
    topic = topic_names[ACTUATIONS_TOPIC]
    key = actuator.node_name.encode()
    while not stop.is_set():
        consumer = kafka.consumer(bootstrap, [], group_id=None, from_beginning=True)
        try:
            async with kafka.admin_client(bootstrap) as admin:
                await consumer.start()
                try:
                    partitions = await kafka.partitions_for(consumer, topic)
                except KeyError:
                    raise RuntimeError(f"topic {topic} has no partitions (not created yet?)") from None
                token = await topic_token(admin, topic)
                follow_incarnation(actuator, offsets, topic, token)
                tp = TopicPartition(topic, partition_for(partitions, actuator.node_name))
                consumer.assign([tp])
                start = offsets.get(topic, tp.partition)
                if start is None:
                    await consumer.seek_to_beginning(tp)
                else:
                    consumer.seek(tp, start)
                log.info("applying actuations for %s from %s partition %d", actuator.node_name, topic,
                         tp.partition)
                next_check = time.monotonic() + incarnation_check_s
                while not stop.is_set():
                    batches = await consumer.getmany(tp, timeout_ms=1000)
                    if protection is not None:
                        protection.reachable()
                    for records in batches.values():
                        for record in records:
                            if record.key == key:
                                await handle_record(actuator, record, publisher, protection)
                            if not actuator.dry_run:
                                offsets.put(topic, tp.partition, record.offset + 1)
                    if time.monotonic() >= next_check:
                        next_check = time.monotonic() + incarnation_check_s
                        if await topic_token(admin, topic) != token:
                            log.info("actuations topic %s changed incarnation while reading; reconnecting", topic)
                            break
        except Exception as err:
            if protection is not None:
                protection.unreachable()
            log.warning("reading actuations failed (%s); retrying", err)
            await wait_or_stop(stop, RETRY_S)
        finally:
            await consumer.stop()
