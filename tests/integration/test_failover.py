"""Broker failover: SIGKILL a Kafka node under a streaming pipeline, restart it, and lose or double nothing.

A 3-node KRaft cluster (each node broker and controller) carries the topology of the ``compose``
environment: replication factor 3 and ``min.insync.replicas`` 2, so with one node dead every partition
still takes ``acks=all`` writes and the controller quorum keeps 2 of 3 voters. One worker and the
projection run on it. 240 pods of 200m are streamed to 12 nodes of 4 cpus, exactly the fleet's
capacity, in two scheduling domains (``crash_support``), by an idempotent ``acks=all`` producer. Once a quarter of them are decided the scenario's
victim is SIGKILLed while the stream goes on; it is restarted once another node has taken its role and
:data:`DOWN_S` have passed, and the last quarter of the pods is streamed once it is back:

- ``inbox-leader``: the node leading the scheduling-inbox partition of the default domain;
- ``controller``: the active KRaft controller (the metadata quorum's leader; see
  ``KafkaCluster.active_controller`` for why Metadata's controller id will not do).

When one node holds both roles, the inbox's leadership is moved to another node first, so that each
scenario takes down one of them. Either victim also leads about a third of the other partitions.

Each scenario checks that every pod is placed, no node is overbooked, each pod is scheduled by one
decision, the read model holds each decision once, and ``koord replay scheduling --domain`` reproduces
each domain's part of the run. It prints how long the pipeline stalled (run with ``-s``): over the pods streamed across the kill, the
longest gap between decisions appearing in the read model, the longest between the worker's sends of
them, and the longest wait of the pod producer for an acknowledgement. Times are reported, never asserted.
"""

from __future__ import annotations

import asyncio
import collections
import json
import threading
import time

import pytest
from aiokafka import AIOKafkaProducer
from sqlalchemy import func, select
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from state import queries
from state.db import open_database
from state.models import Decision
from streams import kafka
from streams.agents.projection import GROUP_ID as PROJECTION_GROUP
from streams.broker.kraft import NO_LEADER
from streams.objects import load_and_validate
from streams.partitioning import partition_for
from streams.replay.reader import read_topic
from streams.routing import DEFAULT_DOMAIN
from streams.schemas import codec
from streams.topology import load_topology
from tests.brokers import require_kafka
from tests.integration.crash_support import CrashCluster, in_its_domain, node_pool, pod_quota, profile_yaml, tree_id

pytestmark = pytest.mark.integration

SCENARIOS = {"inbox-leader": "inbox leader", "controller": "active controller"}
"""Each scenario and the role of the node it kills."""
NAMESPACE = "failover"
NODES, NODE_CPU_M = 12, 4000
PODS, POD_CPU_M = 240, 200
CHUNK, CHUNK_INTERVAL_S = 4, 0.15
"""About 25 pods/s, so that the stream outlasts the kill by seconds."""
KILL_AFTER_DECISIONS = PODS // 4
AFTER_RESTART = PODS // 4
"""Pods streamed only once the victim is back."""
STREAMED_THROUGH = {f"failover-pod-{i:03d}" for i in range(PODS - AFTER_RESTART)}
"""The pods streamed across the kill: the stall is measured on their decisions."""
DOWN_S = 5.0
"""How long the victim stays dead at least."""
TAKEOVER_TIMEOUT_S = 30
DECIDED_TIMEOUT_S = 90
WATCH_INTERVAL_S = 0.1


def manifests(tree: str) -> tuple[str, list[tuple[str, str, bytes]]]:
    """The nodes as YAML for ``koord apply`` (the even ones in ``tree``'s pool); the pods as (topic, key, value)
    to produce (the even ones of the tree's quota)."""
    nodes = "---\n".join(f"""apiVersion: v1
kind: Node
metadata: {{name: failover-node-{i:02d}, labels: {{pool: {node_pool(i, tree)}}}}}
status:
  capacity: {{cpu: "{NODE_CPU_M}m", memory: 8Gi, pods: "110"}}
  allocatable: {{cpu: "{NODE_CPU_M}m", memory: 8Gi, pods: "110"}}
""" for i in range(NODES))
    pods = "---\n".join(f"""apiVersion: v1
kind: Pod
metadata:
  name: failover-pod-{i:03d}
  namespace: {NAMESPACE}
  labels: {{quota.scheduling.koordinator.sh/name: {pod_quota(i)}}}
spec:
  containers:
  - name: main
    image: app
    resources: {{requests: {{cpu: {POD_CPU_M}m, memory: 64Mi}}}}
""" for i in range(PODS))
    topic = load_topology().name("pods")
    return nodes, [(topic, r.key, codec.encode(r.schema, r.record)) for r in load_and_validate("-", stdin_text=pods)]


class PodStream(threading.Thread):
    """Produces the pods chunk by chunk with one idempotent ``acks=all`` producer in its own event loop.

    The client retries a send the broker does not acknowledge (leader gone, new leader elected) without
    writing it twice; a chunk is sent only once the previous one is acknowledged. ``longest_wait_s`` is the
    longest a chunk waited for its acknowledgement."""

    def __init__(self, bootstrap: str, records: list[tuple[str, str, bytes]]):
        super().__init__(name="pod-stream")
        self.bootstrap, self.records = bootstrap, records
        self.longest_wait_s, self.error = 0.0, None

    def run(self) -> None:
        try:
            asyncio.run(self._produce())
        except Exception as error:
            self.error = error

    async def _produce(self) -> None:
        producer = AIOKafkaProducer(**kafka.client_settings(self.bootstrap), acks="all", enable_idempotence=True,
                                    request_timeout_ms=60_000)
        await producer.start()
        try:
            for start in range(0, len(self.records), CHUNK):
                sent = time.monotonic()
                futures = [await producer.send(topic, key=key.encode(), value=value)
                           for topic, key, value in self.records[start:start + CHUNK]]
                await asyncio.gather(*futures)
                self.longest_wait_s = max(self.longest_wait_s, time.monotonic() - sent)
                await asyncio.sleep(CHUNK_INTERVAL_S)
        finally:
            await producer.stop()


class DecisionWatch(threading.Thread):
    """Polls the read model and notes when each decision of the streamed-through pods first appears in it."""

    def __init__(self, engine):
        super().__init__(name="decision-watch", daemon=True)
        self.engine, self.seen, self.stopped = engine, {}, threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(WATCH_INTERVAL_S):
            try:
                with Session(self.engine) as session:
                    rows = session.execute(select(Decision.decision_id, Decision.pod_key)
                                           .where(Decision.pod_key.like(f"{NAMESPACE}/%"))).all()
                    now = time.time()
                    for decision_id, pod_key in rows:
                        if pod_key.split("/")[1] in STREAMED_THROUGH:
                            self.seen.setdefault(decision_id, now)
            except OperationalError:
                continue

    def stop(self) -> None:
        self.stopped.set()
        self.join()


def longest_gap(times: list[float], after: float) -> tuple[float, float]:
    """The longest gap between consecutive ``times`` that ends after ``after``, and when it began relative to it."""
    ordered = sorted(times)
    gaps = [(b - a, a - after) for a, b in zip(ordered, ordered[1:]) if b > after]
    return max(gaps, default=(0.0, 0.0))


def inbox_partition() -> int:
    """The scheduling-inbox partition of the default domain: where the producer's default partitioner puts its key."""
    partitions = load_topology().spec("inbox-scheduling").partitions
    return partition_for(partitions, DEFAULT_DOMAIN)


def roles(cluster: CrashCluster, inbox: int) -> dict[str, int]:
    """Which node holds each role the pipeline depends on: the scheduling inbox's leader, the active
    controller, and the group coordinators of the worker and the projection."""
    kafka_cluster = cluster.broker.kafka
    topology = load_topology()
    return {
        "inbox leader": kafka_cluster.leader_of(topology.name("inbox-scheduling"), inbox),
        "active controller": kafka_cluster.active_controller(),
        "worker's group coordinator": kafka_cluster.group_coordinator(topology.app_id),
        "projection's group coordinator": kafka_cluster.group_coordinator(PROJECTION_GROUP),
    }


def separate_inbox_leader_from_controller(cluster: CrashCluster, inbox: int) -> tuple[dict[str, int], bool]:
    """The roles, after moving the inbox's leadership off the active controller if one node held both
    (so that each scenario kills one of the two), and whether it was moved."""
    held = roles(cluster, inbox)
    if held["inbox leader"] != held["active controller"]:
        return held, False
    other = min({node.node_id for node in cluster.broker.kafka.nodes} - {held["active controller"]})
    cluster.broker.kafka.move_leader(load_topology().name("inbox-scheduling"), inbox, other)
    return roles(cluster, inbox), True


def wait_for_takeover(cluster: CrashCluster, inbox: int, role: str, victim: int) -> dict[str, int]:
    """The roles once another node holds ``role`` (or after :data:`TAKEOVER_TIMEOUT_S`, for the test to fail on).

    A partition leader moves only once the active controller fences the dead node, a broker session
    after the node's last heartbeat; a dead active controller must first be replaced (the followers notice
    after the quorum fetch timeout, then elect one) and the new one grants every broker a fresh session."""
    deadline = time.monotonic() + TAKEOVER_TIMEOUT_S
    while True:
        try:
            now = roles(cluster, inbox)
        except RuntimeError:
            now = {}
        if now.get(role, victim) not in (victim, NO_LEADER) or time.monotonic() > deadline:
            return now or roles(cluster, inbox)
        time.sleep(0.2)


def scheduling_outputs(cluster: CrashCluster) -> float:
    return cluster.metric("worker", "koord_outputs_total", aggregate="scheduling", schema="SchedulingDecision")


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise TimeoutError(f"{what} within {timeout}s")


@pytest.fixture(scope="module", params=SCENARIOS)
def failover_run(request, tmp_path_factory):
    """One scenario on a cluster of its own; returns what the tests check."""
    require_kafka()
    scenario = request.param
    cluster = CrashCluster.start(tmp_path_factory.mktemp(f"failover-{scenario}"), "kafka", nodes=3,
                                 environment="compose")
    kafka_cluster = cluster.broker.kafka
    watch = None
    try:
        cluster.start_worker("worker")
        tree = tree_id("failover")
        nodes, pods = manifests(tree)
        for objects in (profile_yaml(NAMESPACE, tree), nodes):
            applied = cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=objects)
            assert applied.returncode == 0, applied.stderr
        inbox = inbox_partition()
        before, moved = separate_inbox_leader_from_controller(cluster, inbox)
        victim = before[SCENARIOS[scenario]]
        engine = open_database(cluster.env["KOORD_DATABASE_URL"])
        watch = DecisionWatch(engine)
        watch.start()
        baseline = scheduling_outputs(cluster)
        stream = PodStream(cluster.bootstrap, pods[:-AFTER_RESTART])
        stream.start()
        wait_for(lambda: scheduling_outputs(cluster) >= baseline + KILL_AFTER_DECISIONS, 60,
                 f"{KILL_AFTER_DECISIONS} decisions")
        streaming_at_kill = stream.is_alive()
        kafka_cluster.kill(victim)
        killed_at = time.time()
        during = wait_for_takeover(cluster, inbox, SCENARIOS[scenario], victim)
        taken_over_s = time.time() - killed_at
        time.sleep(max(0.0, DOWN_S - taken_over_s))
        kafka_cluster.restart(victim)
        restarted_s = time.time() - killed_at
        stream.join()
        after_restart = PodStream(cluster.bootstrap, pods[-AFTER_RESTART:])
        after_restart.run()
        assert stream.error is None and after_restart.error is None, (stream.error, after_restart.error)

        def undecided() -> set[str]:
            placed = {f"{NAMESPACE}/{p['metadata']['name']}" for p in queries.get_pods(engine, namespace=NAMESPACE)
                      if p["spec"].get("nodeName")}
            return {f"{NAMESPACE}/failover-pod-{i:03d}" for i in range(PODS)} - placed

        try:
            wait_for(lambda: not undecided(), DECIDED_TIMEOUT_S, "every pod placed")
        except TimeoutError as error:
            raise TimeoutError(f"{error}\n{cluster.diagnose(undecided())}") from None
        watch.stop()
        topic = load_topology().name("decisions")
        records = [(r.timestamp / 1000, *codec.decode(r.value))
                   for r in asyncio.run(read_topic(cluster.bootstrap, topic))]
        decisions = [(sent, d) for sent, schema, d in records if schema == "SchedulingDecision"]
        recorded = [d for _, d in decisions]
        sent_times = [sent for sent, d in decisions
                      if d["pod"]["namespace"] == NAMESPACE and d["pod"]["name"] in STREAMED_THROUGH]
        with Session(engine) as session:
            rows = session.scalars(select(Decision).where(Decision.pod_key.like(f"{NAMESPACE}/%"))).all()
            row_count = session.scalar(select(func.count()).select_from(Decision))
        replayed = {domain: cluster.koord("replay", "scheduling", "--domain", domain, "-o", "json")
                    for domain in (DEFAULT_DOMAIN, tree)}
        ids = collections.Counter(d["decisionId"] for d in recorded)
        visible_gap, visible_began = longest_gap(list(watch.seen.values()), killed_at)
        sent_gap, sent_began = longest_gap(sent_times, killed_at)
        held = ", ".join(role for role, node in before.items() if node == victim)
        taken = ", ".join(f"{role} node {node}" for role, node in during.items() if before[role] == victim)
        print(f"\nfailover {scenario}: {'inbox leadership moved off the controller; ' if moved else ''}"
              f"killed node {victim} ({held}); {taken_over_s:.1f}s later: {taken}; "
              f"restarted {restarted_s:.1f}s after the kill; decisions stalled {visible_gap:.1f}s in the read model "
              f"(longest gap, from kill{visible_began:+.1f}s) and {sent_gap:.1f}s at the worker "
              f"(from kill{sent_began:+.1f}s); pod acks waited at most {stream.longest_wait_s:.1f}s; "
              f"{len(recorded)} decisions recorded, {sum(n - 1 for n in ids.values())} redelivered copies")
        yield {
            "scenario": scenario, "victim": victim, "before": before, "during": during,
            "streaming_at_kill": streaming_at_kill, "recorded": recorded, "rows": rows, "row_count": row_count,
            "pods": queries.get_pods(engine, namespace=NAMESPACE), "replay": replayed,
            "processes": {name: w.process.poll() for name, w in cluster.workers.items()}
            | {"projection": cluster.projection.poll()},
            "nodes_alive": [node.node_id for node in kafka_cluster.nodes if node.alive()],
        }
    finally:
        if watch is not None and watch.is_alive():
            watch.stop()
        cluster.stop()


def test_the_victim_dies_mid_stream_another_node_takes_its_role_and_it_comes_back(failover_run):
    role = SCENARIOS[failover_run["scenario"]]
    assert failover_run["streaming_at_kill"]
    assert failover_run["before"]["inbox leader"] != failover_run["before"]["active controller"]
    assert failover_run["before"][role] == failover_run["victim"]
    assert failover_run["during"][role] not in (failover_run["victim"], NO_LEADER)
    assert failover_run["nodes_alive"] == [1, 2, 3]


def test_the_pipeline_rides_out_the_failover(failover_run):
    assert failover_run["processes"] == {"worker": None, "projection": None}


def test_every_pod_is_placed_in_its_domain_and_no_node_is_overbooked(failover_run):
    pods = failover_run["pods"]
    assert len(pods) == PODS
    per_node = collections.Counter(p["spec"]["nodeName"] for p in pods)
    assert sorted(per_node) == [f"failover-node-{i:02d}" for i in range(NODES)]
    assert max(per_node.values()) * POD_CPU_M <= NODE_CPU_M
    assert [p["metadata"]["name"] for p in pods if not in_its_domain(p)] == []


def test_each_pod_is_scheduled_by_one_decision(failover_run):
    scheduled = collections.defaultdict(set)
    for decision in failover_run["recorded"]:
        if decision["pod"]["namespace"] == NAMESPACE and decision["result"] == "Scheduled":
            scheduled[decision["pod"]["name"]].add((decision["decisionId"], decision["nodeName"]))
    assert len(scheduled) == PODS
    assert {name: len(placements) for name, placements in scheduled.items()} == {name: 1 for name in scheduled}


def test_read_model_holds_each_decision_once(failover_run):
    recorded_ids = {d["decisionId"] for d in failover_run["recorded"]}
    ours = {d["decisionId"] for d in failover_run["recorded"] if d["pod"]["namespace"] == NAMESPACE}
    assert sorted(r.decision_id for r in failover_run["rows"]) == sorted(ours)
    assert failover_run["row_count"] == len(recorded_ids)


def test_replay_reproduces_every_decision_domain_by_domain(failover_run):
    reproduced = 0
    for domain, result in failover_run["replay"].items():
        assert result.returncode == 0, domain + result.stdout[-3000:] + result.stderr[-3000:]
        reproduced += json.loads(result.stdout)["outputs"]["SchedulingDecision"]["reproduced"]
    assert reproduced == len({d["decisionId"] for d in failover_run["recorded"]})
