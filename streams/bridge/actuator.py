"""Active mode: koordstream's decisions and node resources written to the cluster.

Reads ``koord.decisions`` (SchedulingDecision, Eviction), ``koord.noderesources`` (NodeResource),
``koord.quotastatus`` (ElasticQuotaStatus) and the statuses the scheduling domain writes back to
``koord.reservations``, ``koord.podmigrationjobs`` and ``koord.podgroups`` in the consumer group of the config, asks ``writes``
(``statuses`` for the custom resources' status) which write each one needs given the watched view, makes
it, and commits the offsets once every write of the poll ended: a crash re-reads the uncommitted decisions,
and ``writes`` turns every one already written into a skip.

Concurrency, as kube-scheduler's asynchronous binding cycle: the records of one poll are grouped by their
key (a pod, a node: ``streams.outputs.output_key``); one group's records are handled in offset order, the
groups at once, at most ``write_concurrency`` at a time, every request paced by the API client's rate limit
(``kube_api_qps`` / ``kube_api_burst``). A binding needs no GET: the watched view and the decision hold
its preconditions, and the pod's uid goes with the patch and the Binding, so the API server refuses them
(409) for another pod of that name. An Eviction is checked against a fresh GET of the pod instead: it
deletes a pod, evictions are rare (descheduling, node QoS), and the GET sees a pod already being deleted or
replaced that the view may not show yet, so a replayed Eviction is settled rather than sent again.

What PreBind decided is patched onto the pod before its Binding (``writes``); a patch the API server
refuses for good (403, 422, ...) binds nothing: the pod gets a ``FailedScheduling`` Warning Event and
``PodScheduled=False`` with reason ``SchedulerError``, as kube-scheduler reports a failed PreBind, the decision
becomes a dead letter with the reason, and ``koord_bridge_writes{write="Bind",result="prebind-refused"}``
counts it. Any other write the API server refuses for good (403 names the verb and resource, 404, 422) is
logged and counted, not retried; an unreachable server, a 5xx or a 429 (the API server's own throttling) is
retried with backoff without committing. An Eviction refused with 429 (a PodDisruptionBudget) is kept in the
checkpoint and tried again every ``eviction_retry_s`` until it succeeds or no longer applies.

Every record read is checked first: one the worker did not sign (``streams.signing``: only the pipeline
writes decisions and node resources, ``topic_ids`` names their topology ids), that does not decode, is not
a record this topic carries, or that the handling code fails on becomes a dead letter (stage ``bridge``)
with its reason, and the bridge reads on; a decision naming a node the cluster does not have is skipped
(``writes``).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
import logging
import time

from aiokafka import AIOKafkaConsumer
from prometheus_client import Counter

from streams import records
from streams.bridge import claims, statuses, writes
from streams.bridge.api import CONFLICT, NOT_FOUND, TOO_MANY_REQUESTS, ApiError, KubeApi, TransportError
from streams.bridge.checkpoint import Checkpoint
from streams.bridge.config import BridgeConfig, backoff_delay
from streams.bridge.convert import STAGE
from streams.bridge.view import ClusterView
from streams.deadletter import dead_letter, reference_key
from streams.schemas import codec
from streams.signing import Signer

log = logging.getLogger(__name__)

WRITES = Counter("koord_bridge_writes", "Writes the bridge made or skipped", ["write", "result"])
POLL_MS = 500


ACTED_ON = ("SchedulingDecision", "Eviction", "NodeResource", *statuses.SCHEMA_KIND)
SHARED_TOPIC_SCHEMAS = (statuses.RESERVATION, statuses.MIGRATION, statuses.POD_GROUP)
"""Records of topics the pipeline shares with the bridge's own watch and with users: only the pipeline's
(signed) ones are acted on, the others (the objects as applied or watched) are skipped."""
CONFLICT_ATTEMPTS = 5
"""Status writes tried against a fresh read after a 409 before the record is given up as refused."""
SCHEDULER_ERROR = "SchedulerError"
"""``v1.PodReasonSchedulerError``: the PodScheduled reason kube-scheduler writes when a binding cycle fails."""
PREBIND = "KoordstreamPreBind"
"""The name the bridge's PreBind goes by in a failure message (kube-scheduler names the failing plugin)."""
VOLUME_BINDING = "VolumeBinding"


class PreBindRefused(Exception):
    """The API server refused for good the patch of what PreBind decided: the pod was not bound."""


class Actuator:
    def __init__(self, api: KubeApi, consumer: AIOKafkaConsumer, checkpoint: Checkpoint, view: ClusterView,
                 config: BridgeConfig, producer=None, dead_letters: str | None = None, sign: Signer | None = None,
                 topic_ids: Mapping[str, str] | None = None) -> None:
        self.api, self.consumer, self.checkpoint, self.view, self.config = api, consumer, checkpoint, view, config
        self.producer, self.dead_letters = producer, dead_letters
        self.sign, self.topic_ids = sign, dict(topic_ids or {})
        self._next_eviction_retry = 0.0

    async def run(self) -> None:
        await self.view.wait_synced()
        while True:
            batches = await self.consumer.getmany(timeout_ms=POLL_MS)
            if batches:
                await self.handle_poll(records.in_order(batches))
                await self.consumer.commit()
            if time.monotonic() >= self._next_eviction_retry:
                self._next_eviction_retry = time.monotonic() + self.config.eviction_retry_s
                for record in self.checkpoint.refused_evictions():
                    await self._retrying(self.handle, "Eviction", record)

    async def handle_poll(self, messages: list) -> None:
        """Every record of one poll: each key's in offset order, different keys at once (``write_concurrency``
        writers take the keys in turn); returns when every write has ended."""
        groups: dict[tuple[str, bytes | None], list] = {}
        for message in messages:
            groups.setdefault((message.topic, message.key), []).append(message)
        turns = iter(groups.values())

        async def writer() -> None:
            for group in turns:
                await records.dispatch(group, self._guarded, self._dead_letter)
        await asyncio.gather(*(writer() for _ in range(min(self.config.write_concurrency, len(groups)))))

    async def _guarded(self, item: records.Decoded) -> None:
        """Handle one decoded record; what cannot be handled becomes its dead letter."""
        try:
            if self.sign is not None:
                message = item.message
                forged = self.sign.problem(self.topic_ids.get(message.topic, message.topic), message.key,
                                           message.value, message.headers)
                if forged and item.schema in SHARED_TOPIC_SCHEMAS:
                    WRITES.labels(item.schema, "not-the-pipeline's").inc()
                    return
                if forged:
                    raise ValueError(forged)
            if item.schema not in ACTED_ON:
                raise ValueError(f"a {item.schema} record is not one the bridge acts on ({', '.join(ACTED_ON)})")
            await self._retrying(self.handle, item.schema, item.value)
        except Exception as error:
            await self._dead_letter(item.message, f"{type(error).__name__}: {error}")

    async def _dead_letter(self, message, reason: str) -> None:
        """Log and count a record the bridge cannot decode or handle; send its dead letter when it has where."""
        log.error("%s[%d]@%d dead-lettered: %s", message.topic, message.partition, message.offset, reason)
        WRITES.labels("record", "dead-lettered").inc()
        if self.producer is not None and self.dead_letters is not None:
            letter = dead_letter(STAGE, message.topic, message.partition, message.offset, message.key,
                                 message.value, reason, message.timestamp)
            await self.producer.send_and_wait(self.dead_letters, codec.encode("DeadLetter", letter),
                                              key=reference_key(letter).encode())

    async def _retrying(self, call, *args) -> None:
        """``call(*args)`` until the API server answers; a refusal for good is logged."""
        attempt = 0
        while True:
            try:
                return await call(*args)
            except TransportError as error:
                attempt += 1
                log.warning("API server unreachable: %s: %s (retry %d)", type(error).__name__, error, attempt)
            except ApiError as error:
                if error.code < 500 and error.code != TOO_MANY_REQUESTS:
                    WRITES.labels(error.resource, f"refused-{error.code}").inc()
                    log.error("%s", error)
                    return
                attempt += 1
                log.warning("%s (retry %d)", error, attempt)
            await asyncio.sleep(backoff_delay(attempt, self.config))

    async def handle(self, schema: str, record: dict) -> None:
        if schema in statuses.SCHEMA_KIND:
            return await self.write_status(schema, record)
        if schema == "SchedulingDecision":
            key = f"{record['pod']['namespace']}/{record['pod']['name']}"
            write = writes.plan_scheduling(record, self.view.pods.get(key), self.config.scheduler_name,
                                           self.view.nodes)
        elif schema == "NodeResource":
            write = writes.plan_node_resources(record, self.view.nodes.get(record["nodeName"]))
        elif schema == "Eviction":
            pod = await self.api.get_pod(record["pod"]["namespace"], record["pod"]["name"])
            write = writes.plan_eviction(record, writes.pod_view(pod) if pod else None)
            if isinstance(write, writes.Skip):
                self.checkpoint.settle_eviction(record["decisionId"])
        else:
            return
        if isinstance(write, writes.Skip):
            WRITES.labels(schema, "skipped").inc()
            log.debug("%s %s: skipped: %s", schema, record["decisionId"], write.reason)
            return
        await self.write(write, record)

    async def write(self, write: writes.Write, record: dict) -> None:
        name = type(write).__name__
        if isinstance(write, writes.Bind):
            await self._bind_volumes(write, record)
            if write.patches and not await self._prebind(write):
                return
            try:
                await self.api.bind(write)
            except ApiError as error:
                if error.code != CONFLICT:
                    raise
                log.info("%s/%s: already bound (%s)", write.namespace, write.name, error.message)
            self._bound(write)
        elif isinstance(write, writes.MarkUnschedulable):
            await self.api.mark_unschedulable(write, self.config.scheduler_name)
        elif isinstance(write, writes.PatchNodeStatus):
            await self.api.patch_node_status(write)
            if (node := self.view.nodes.get(write.node)) is not None:
                self.view.nodes[write.node] = writes.node_patched(node, write)
        elif isinstance(write, writes.Evict):
            try:
                await self.api.evict(write)
            except ApiError as error:
                if error.code == TOO_MANY_REQUESTS:
                    WRITES.labels(name, "refused-429").inc()
                    log.warning("eviction of %s/%s refused, will retry: %s", write.namespace, write.name, error.message)
                    self.checkpoint.refuse_eviction(write.decision_id, record)
                    return
                if error.code != NOT_FOUND:
                    raise
            self.checkpoint.settle_eviction(write.decision_id)
        WRITES.labels(name, "written").inc()
        log.debug("%s %s", name, _describe(write))

    async def write_status(self, schema: str, record: dict) -> None:
        """Write the status ``record`` asks for (``statuses``), planned against the watched object (a fresh GET
        when the view has none yet); a 409 (the object changed since that version) is planned again against a
        fresh GET, at most ``CONFLICT_ATTEMPTS`` times, so no version the bridge did not see is overwritten."""
        where = statuses.target(schema, record)
        if where is None:
            WRITES.labels(schema, "skipped").inc()
            return
        kind, namespace, name = where
        key = (kind, statuses.object_key(namespace, name))
        obj = self.view.objects.get(key) or await self._fresh(kind, namespace, name)
        for attempt in range(1, CONFLICT_ATTEMPTS + 1):
            write = statuses.plan(schema, record, obj)
            if isinstance(write, statuses.Skip):
                WRITES.labels(schema, "skipped").inc()
                log.debug("%s %s: skipped: %s", schema, key[1], write.reason)
                return
            try:
                patched = await self.api.patch_status(write)
            except ApiError as error:
                if error.code != CONFLICT or attempt == CONFLICT_ATTEMPTS:
                    raise
                WRITES.labels(schema, "conflict").inc()
                log.info("%s %s: %s; planning again from a fresh read", kind, key[1], error.message)
                obj = await self._fresh(kind, namespace, name)
                continue
            self.view.objects[key] = statuses.object_view(kind, patched)
            WRITES.labels(schema, "written").inc()
            log.info("%s %s status %s", kind, key[1],
                     {**({"status": dict(write.status)} if write.status is not None else {}),
                      **({"annotations": dict(write.annotations)} if write.annotations else {})})
            return

    async def _fresh(self, kind: str, namespace: str | None, name: str) -> statuses.ObjectView | None:
        obj = await self.api.get_object(kind, namespace, name)
        return statuses.object_view(kind, obj) if obj is not None else None

    async def _bind_volumes(self, write: writes.Bind, record: dict) -> None:
        """VolumeBinding's PreBind (``streams.bridge.claims``): the selected node on each claim to provision and
        the claim reference on each volume chosen, before the pod's Binding. Each patch names the version it was
        planned against; a 409 plans again from fresh reads (at most ``CONFLICT_ATTEMPTS`` times). A claim or
        volume the cluster no longer has refuses the binding as kube-scheduler's PreBind does."""
        for attempt in range(1, CONFLICT_ATTEMPTS + 1):
            seen = {path: await self.api.get_path(resource, path) for resource, path in claims.reads(record)}
            plan = claims.plan_claims(record, seen)
            if plan.missing:
                await self._refuse(write, VOLUME_BINDING, f"binding volumes: {', '.join(plan.missing)} not found")
            try:
                for patch in plan.patches:
                    await self.api.call("patch", patch.resource, "PATCH", patch.path, patch.body,
                                        "application/merge-patch+json")
                    log.info("%s %s: %s", patch.resource, patch.path.rsplit("/", 1)[-1], patch.body)
                return
            except ApiError as error:
                if error.code != CONFLICT or attempt == CONFLICT_ATTEMPTS:
                    raise
                WRITES.labels("VolumeBinding", "conflict").inc()

    async def _refuse(self, write: writes.Bind, plugin: str, reason: str) -> None:
        """Report a PreBind failure on the pod as kube-scheduler does (PodScheduled=False, SchedulerError, a
        FailedScheduling event) and raise :class:`PreBindRefused`: the pod is not bound."""
        WRITES.labels("Bind", "prebind-refused").inc()
        message = f'running PreBind plugin "{plugin}": {reason}'
        refusal = writes.MarkUnschedulable(write.namespace, write.name, write.uid, write.decision_id,
                                           SCHEDULER_ERROR, message)
        try:
            await self.api.mark_unschedulable(refusal, self.config.scheduler_name)
        except (ApiError, TransportError) as failed:
            log.error("%s/%s: no FailedScheduling event: %s", write.namespace, write.name, failed)
        raise PreBindRefused(message)

    async def _prebind(self, write: writes.Bind) -> bool:
        """Patch what PreBind decided onto the pod; False when the pod is not to be bound (it is gone or
        another pod of that name: 404, 409). A refusal for good is reported on the pod and raised as
        :class:`PreBindRefused`; a transient failure is raised as it is, for ``_retrying``."""
        try:
            await self.api.patch_pod_metadata(write)
        except ApiError as error:
            if error.code in (NOT_FOUND, CONFLICT):
                WRITES.labels("Bind", "skipped").inc()
                log.info("%s/%s: not bound: %s", write.namespace, write.name, error)
                return False
            if error.code >= 500 or error.code == TOO_MANY_REQUESTS:
                raise
            await self._refuse(write, PREBIND, str(error))
        key = f"{write.namespace}/{write.name}"
        if (pod := self.view.pods.get(key)) is not None and pod.uid == write.uid:
            self.view.pods[key] = writes.patched(pod, write)
        return True

    def _bound(self, write: writes.Bind) -> None:
        """The view shows the binding at once, so a duplicate decision read before the watch event skips."""
        key = f"{write.namespace}/{write.name}"
        if (pod := self.view.pods.get(key)) is not None and pod.uid == write.uid:
            self.view.pods[key] = dataclasses.replace(pod, node_name=write.node)


def _describe(write: writes.Write) -> str:
    if isinstance(write, writes.PatchNodeStatus):
        return f"node/{write.node} {dict(write.allocatable)} {dict(write.annotations)} {dict(write.labels)}"
    target = f"{write.namespace}/{write.name}"
    return f"{target} -> {write.node}" if isinstance(write, writes.Bind) else target
