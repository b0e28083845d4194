"""The node agent's cadence: collect every interval, report every report interval, learn pod names.

``run_agent`` is the loop ``koord node-agent`` runs: a collection each
``collect_interval_s`` (on a fixed schedule, so a slow round does not drift
the next), then at each report the slow refresh, a NodeMetric, and the Node,
NodeResourceTopology and Device objects when they differ from the last ones
sent; with a ``KubeReporter`` (``--kube-api``), the Device and NodeMetric go to
the API server too. ``follow_pods``
reads the pods and decisions topics so pods are reported with their
namespace and name; a record it cannot take is a dead letter, never a restart.
A failed round is logged and the loop goes on.
"""

from __future__ import annotations

import asyncio
import logging
import time

from node_agent.agent import NodeAgent
from node_agent.kubereport import KubeReporter
from node_agent.metrics import DECISIONS_IGNORED
from node_agent.publisher import RETRY_S, Publisher, wait_or_stop
from streams import deadletter, kafka, records
from streams.routing import KIND_BY_SOURCE
from streams.signing import signer

log = logging.getLogger(__name__)

STAGE = "node-agent-pods"
"""The dead letters' stage: the follower of the pods and decisions topics."""


async def run_agent(agent: NodeAgent, publisher: Publisher, stop: asyncio.Event,
                    reporter: KubeReporter | None = None) -> None:
    interval = agent.settings.collect_interval_s
    report_every = agent.settings.report_interval_s
    next_collect = time.monotonic()
    next_report = next_collect + report_every
    sent: dict[str, dict | None] = {"Node": None, "NodeResourceTopology": None, "Device": None}
    first = True
    while not stop.is_set():
        try:
            agent.collect()
            if first or time.monotonic() >= next_report:
                agent.refresh()
                _publish_changed(agent, publisher, sent)
                if reporter is not None:
                    reporter.offer_device(agent.device())
                if not first:
                    metric = agent.node_metric()
                    publisher.submit_manifest(metric)
                    if reporter is not None:
                        reporter.offer_node_metric(metric)
                while next_report <= time.monotonic():
                    next_report += report_every
                first = False
        except Exception:
            log.exception("collection round failed; continuing")
        next_collect += interval
        if next_collect < time.monotonic():
            next_collect = time.monotonic() + interval
        await wait_or_stop(stop, max(next_collect - time.monotonic(), 0))


def _publish_changed(agent: NodeAgent, publisher: Publisher, sent: dict[str, dict | None]) -> None:
    node = agent.node()
    if node != sent["Node"]:
        publisher.submit_manifest(node)
        sent["Node"] = node
    topology = agent.node_resource_topology()
    if topology is not None and topology != sent["NodeResourceTopology"]:
        publisher.submit_manifest(topology)
        sent["NodeResourceTopology"] = topology
    device = agent.device()
    if device is None and sent["Device"] is not None:
        device = {**sent["Device"], "spec": {"devices": []}}
    if device is not None and device != sent["Device"]:
        publisher.submit_manifest(device)
        sent["Device"] = device


async def follow_pods(agent: NodeAgent, bootstrap: str, topic_names: dict[str, str], stop: asyncio.Event,
                      publisher: Publisher | None = None) -> None:
    """Feed the pods and decisions topics into the agent's pod directory until ``stop``; retries on errors.

    Each record is guarded: one the directory cannot take (it does not decode, its schema is not one its
    topic carries, its key is not UTF-8, applying it raises) is a dead letter with the reason, sent through
    ``publisher`` (logged without one), and reading goes on past it, so no record can hold the follower
    in a restart loop. With the deployment's record key (``KOORD_RECORD_KEY`` or the home's,
    ``streams.signing``; the node agent never makes one), a decision the worker did not sign is one too."""
    source_of = {topic_names["pods"]: "pods", topic_names["decisions"]: "decisions"}
    sign = signer(create=False)

    def bad(message, reason: str) -> None:
        log.warning("%s/%s/%s skipped: %s", message.topic, message.partition, message.offset, reason)
        if publisher is None:
            return
        letter = records.dead_letter_of(STAGE, message, reason)
        try:
            publisher.submit_record("deadletters", deadletter.reference_key(letter), "DeadLetter", letter)
        except Exception:
            log.exception("could not queue the dead letter of %s", deadletter.reference_key(letter))

    def handle(item: records.Decoded) -> None:
        source, message = source_of[item.message.topic], item.message
        try:
            reason = sign.problem(source, message.key, message.value, message.headers) if (
                sign is not None and item.schema == "SchedulingDecision") else None
            reason = reason or _apply(agent, source, item)
        except Exception as err:
            reason = f"{type(err).__name__}: {err}"
        if reason is not None:
            bad(item.message, reason)

    while not stop.is_set():
        consumer = kafka.consumer(bootstrap, list(source_of), group_id=None, from_beginning=True)
        try:
            await consumer.start()
            while not stop.is_set():
                batches = await consumer.getmany(timeout_ms=1000)
                await records.dispatch(records.in_order(batches), handle, bad, tombstones=True)
        except Exception as err:
            log.warning("reading pods failed (%s); retrying", err)
            await wait_or_stop(stop, RETRY_S)
        finally:
            await consumer.stop()


def _apply(agent: NodeAgent, source: str, item: records.Decoded) -> str | None:
    """A pod (or its tombstone) into the pod directory, a decision's binding onto its pod (a replay is counted,
    ``PodDirectory.apply_decision``); why not, for a record its topic does not carry. Evictions share the
    decisions topic and change nothing here."""
    if item.schema is not None and item.schema not in KIND_BY_SOURCE[source]:
        return f"expected {' or '.join(KIND_BY_SOURCE[source])} on {item.message.topic}, got {item.schema}"
    if source == "pods":
        key = item.message.key
        agent.pods.update(key.decode() if key else "", item.value)
    elif item.schema == "SchedulingDecision":
        ignored = agent.pods.apply_decision(item.value)
        if ignored is not None:
            DECISIONS_IGNORED.labels(ignored).inc()
    return None
