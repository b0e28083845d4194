"""Crash safety: SIGKILL the worker that schedules most, mid-stream, restart it, and lose or double nothing.

Two workers share the partitions of a broker of this module's own. 240 pods of 200m are streamed to 12
nodes of 4 cpus, exactly the fleet's capacity, in two scheduling domains on two inbox partitions: an
ElasticQuotaProfile's tree (half the nodes, the pods of its quota) and the default domain (the other
half, the other pods). A restored scheduling state that forgot an assignment would overbook a node, one
that counted a pod twice would leave a pod Unschedulable, and a pod routed to the wrong domain would find
no room. The worker that emitted more scheduling decisions is killed once a quarter of the pods are
decided, while pods keep coming; the survivor takes over after the session timeout (from the changelog):
both domains decide pods produced after the kill. Then the killed worker is restarted, the survivor
stopped, and the last quarter of the pods is streamed: the restarted worker decides them from the state
it recovered from the changelog both workers wrote.

The run is made for each processing guarantee a broker offers: at-least-once on Tansu and on Kafka,
exactly-once on Kafka only (Tansu has no transactions). Afterwards every output topic is read back as a
``read_committed`` consumer does (on Tansu, without transactions, every reader does) and the copies of
a record counted: at-least-once may make some (the read model deduplicates them), exactly-once none.
"""

from __future__ import annotations

import asyncio
import collections
import json
import threading
import time

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from state import queries
from state.db import open_database
from state.models import Decision
from streams.kafka import produce
from streams.objects import load_and_validate
from streams.replay.reader import read_topic
from streams.routing import DEFAULT_DOMAIN
from streams.schemas import codec
from streams.topology import load_topology
from tests.integration.conftest import require_kafka
from tests.integration.crash_support import CrashCluster, in_its_domain, node_pool, pod_quota, profile_yaml, tree_id

pytestmark = pytest.mark.integration

NAMESPACE = "crash"
NODES, NODE_CPU_M = 12, 4000
PODS, POD_CPU_M = 240, 200
CHUNK, CHUNK_INTERVAL_S = 10, 0.1
KILL_AFTER_DECISIONS = PODS // 4
AFTER_KILL = PODS // 2
"""Pods streamed only once the victim is killed (the first ones may still be streaming when it is)."""
AFTER_RESTART = PODS // 4
"""Pods streamed only once the killed worker is back and the survivor stopped."""
FAILOVER_TIMEOUT_S = 45
DECIDED_TIMEOUT_S = 60

RUNS = [pytest.param(("tansu", "at_least_once"), id="tansu-at_least_once"),
        pytest.param(("kafka", "at_least_once"), id="kafka-at_least_once"),
        pytest.param(("kafka", "exactly_once"), id="kafka-exactly_once")]
"""(broker kind, processing guarantee): every guarantee each broker offers."""
OUTPUT_TOPICS = ("inbox-routing", "inbox-scheduling", "inbox-node", "decisions", "noderesources", "nodeusages", "quotastatus", "acks",
                 "actuations", "deadletters")
"""What the router and the aggregates write, the topics whose copies are counted."""


def manifests(tree: str) -> tuple[str, list[tuple[str, str, bytes]]]:
    """The nodes as YAML for ``koord apply`` (the even ones in ``tree``'s pool); the pods as (topic, key,
    value) to produce (the even ones of the tree's quota)."""
    nodes = "---\n".join(f"""apiVersion: v1
kind: Node
metadata: {{name: crash-node-{i:02d}, labels: {{pool: {node_pool(i, tree)}}}}}
status:
  capacity: {{cpu: "{NODE_CPU_M}m", memory: 8Gi, pods: "110"}}
  allocatable: {{cpu: "{NODE_CPU_M}m", memory: 8Gi, pods: "110"}}
""" for i in range(NODES))
    pods = "---\n".join(f"""apiVersion: v1
kind: Pod
metadata:
  name: crash-pod-{i:03d}
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


def stream_pods(bootstrap: str, records: list[tuple[str, str, bytes]]) -> None:
    for start in range(0, len(records), CHUNK):
        asyncio.run(produce(bootstrap, records[start:start + CHUNK]))
        time.sleep(CHUNK_INTERVAL_S)


def start_scenario(cluster: CrashCluster, name: str) -> tuple[str, list[tuple[str, str, bytes]], threading.Thread]:
    """Apply a new tree's profile and the nodes, then stream the pods before the kill from a thread:
    (the tree, every pod record, the running producer)."""
    tree = tree_id(name)
    nodes, pods = manifests(tree)
    for objects in (profile_yaml(NAMESPACE, tree), nodes):
        applied = cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=objects)
        assert applied.returncode == 0, applied.stderr
    producer = threading.Thread(target=stream_pods, args=(cluster.bootstrap, pods[:AFTER_KILL]))
    producer.start()
    return tree, pods, producer


def scheduling_outputs(cluster: CrashCluster, name: str) -> float:
    return cluster.metric(name, "koord_outputs_total", aggregate="scheduling", schema="SchedulingDecision")


def domains_deciding_from(engine, first: int) -> set[str]:
    """The scheduling domains that decided a pod numbered ``first`` or above. Pods produced after the kill can
    only be decided by the survivor."""
    with Session(engine) as session:
        rows = session.execute(select(Decision.domain, Decision.pod_key).where(
            Decision.pod_key.like(f"{NAMESPACE}/crash-pod-%"))).all()
    return {domain for domain, key in rows if int(key[-3:]) >= first}


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise TimeoutError(f"{what} within {timeout}s")


def copies(bootstrap: str, isolation_level: str) -> dict[str, int]:
    """Per output topic, how many records repeat an earlier one (same partition, key and bytes)."""
    topology = load_topology()
    counted = {}
    for topic_id in OUTPUT_TOPICS:
        records = asyncio.run(read_topic(bootstrap, topology.name(topic_id), isolation_level=isolation_level))
        counted[topic_id] = len(records) - len({(r.partition, r.key, r.value) for r in records})
    return counted


@pytest.fixture(scope="module", params=RUNS)
def crash_run(request, tmp_path_factory):
    """The scenario; returns what the tests check: decisions on the topic, in the read model, the pods."""
    broker_kind, guarantee = request.param
    if broker_kind == "kafka":
        require_kafka()
    isolation_level = "read_committed" if broker_kind == "kafka" else "read_uncommitted"
    cluster = CrashCluster.start(tmp_path_factory.mktemp(f"crash-home-{broker_kind}-{guarantee}"), broker_kind,
                                 extra_env={"KOORD_PROCESSING_GUARANTEE": guarantee})
    started = time.monotonic()
    try:
        cluster.start_worker("worker-a")
        cluster.start_worker("worker-b")
        tree, pods, producer = start_scenario(cluster, "crash")
        decided = {}

        def enough_decided() -> bool:
            decided.update({name: scheduling_outputs(cluster, name) for name in cluster.workers})
            return sum(decided.values()) >= KILL_AFTER_DECISIONS

        wait_for(enough_decided, 60, f"{KILL_AFTER_DECISIONS} decisions")
        victim = max(decided, key=decided.get)
        [survivor] = [name for name in cluster.workers if name != victim]
        engine = open_database(cluster.env["KOORD_DATABASE_URL"])
        cluster.kill(victim)
        killed_at = time.monotonic()
        producer.join()
        stream_pods(cluster.bootstrap, pods[AFTER_KILL:-AFTER_RESTART])
        wait_for(lambda: len(domains_deciding_from(engine, AFTER_KILL)) == 2, FAILOVER_TIMEOUT_S,
                 f"{survivor} deciding the pods produced after the kill in both domains")
        failed_over = time.monotonic()
        cluster.start_worker(victim)
        skipped = {survivor: cluster.metric(survivor, "koord_inbox_skipped_total")}
        cluster.stop_worker(survivor)
        stream_pods(cluster.bootstrap, pods[-AFTER_RESTART:])

        def undecided() -> set[str]:
            placed = {f"{NAMESPACE}/{p['metadata']['name']}" for p in queries.get_pods(engine, namespace=NAMESPACE)
                      if p["spec"].get("nodeName")}
            return {f"{NAMESPACE}/crash-pod-{i:03d}" for i in range(PODS)} - placed

        try:
            wait_for(lambda: not undecided(), DECIDED_TIMEOUT_S, "every pod placed")
        except TimeoutError as error:
            raise TimeoutError(f"{error}\n{cluster.diagnose(undecided())}") from None
        skipped[victim] = cluster.metric(victim, "koord_inbox_skipped_total")
        all_decided = time.monotonic()
        topic = load_topology().name("decisions")
        recorded = [codec.decode(r.value)[1]
                    for r in asyncio.run(read_topic(cluster.bootstrap, topic, isolation_level=isolation_level))]
        repeated = copies(cluster.bootstrap, isolation_level)
        with Session(engine) as session:
            rows = session.scalars(select(Decision).where(Decision.pod_key.like(f"{NAMESPACE}/%"))).all()
            row_count = session.scalar(select(func.count()).select_from(Decision))
        replayed = {domain: cluster.koord("replay", "scheduling", "--domain", domain, "-o", "json")
                    for domain in (DEFAULT_DOMAIN, tree)}
        routes = cluster.koord("replay", "routing", "-o", "json")
        ids = collections.Counter(d["decisionId"] for d in recorded)
        restarted_outputs = scheduling_outputs(cluster, victim)
        print(f"\ncrash run ({broker_kind}, {guarantee}): killed {victim} after {decided}; {survivor} took over "
              f"{failed_over - killed_at:.1f}s later; the restarted {victim} emitted {restarted_outputs:.0f}; "
              f"{len(recorded)} decisions recorded, {sum(n - 1 for n in ids.values())} redelivered copies; "
              f"copies seen by a {isolation_level} reader: {repeated}; all placed {all_decided - started:.1f}s "
              f"after the start")
        yield {
            "victim": victim, "decided_before_kill": decided, "recorded": recorded, "rows": rows,
            "row_count": row_count, "pods": queries.get_pods(engine, namespace=NAMESPACE),
            "replay": replayed, "routes": routes, "restarted_outputs": restarted_outputs, "skipped": skipped,
            "guarantee": guarantee, "copies": repeated,
        }
    finally:
        cluster.stop()


def check_placements(pods: list[dict]) -> None:
    """Every pod placed, on every node, none overbooked, each in its domain's pool."""
    assert len(pods) == PODS
    per_node = collections.Counter(p["spec"]["nodeName"] for p in pods)
    assert sorted(per_node) == [f"crash-node-{i:02d}" for i in range(NODES)]
    assert max(per_node.values()) * POD_CPU_M <= NODE_CPU_M
    assert [p["metadata"]["name"] for p in pods if not in_its_domain(p)] == []


def test_every_pod_is_placed_in_its_domain_and_no_node_is_overbooked(crash_run):
    check_placements(crash_run["pods"])


def test_no_decision_is_lost_and_each_pod_is_scheduled_once(crash_run):
    ours = [d for d in crash_run["recorded"] if d["pod"]["namespace"] == NAMESPACE]
    scheduled = collections.defaultdict(set)
    for decision in ours:
        if decision["result"] == "Scheduled":
            scheduled[decision["pod"]["name"]].add((decision["decisionId"], decision["nodeName"]))
    assert len(scheduled) == PODS
    assert {name: len(placements) for name, placements in scheduled.items()} == {name: 1 for name in scheduled}


def test_copies_of_a_decision_are_identical(crash_run):
    copies = collections.defaultdict(list)
    for decision in crash_run["recorded"]:
        copies[decision["decisionId"]].append(decision)
    conflicting = [i for i, same in copies.items() if any(c != same[0] for c in same)]
    assert conflicting == []


def test_read_model_holds_each_decision_once(crash_run):
    recorded_ids = {d["decisionId"] for d in crash_run["recorded"]}
    ours = {d["decisionId"] for d in crash_run["recorded"] if d["pod"]["namespace"] == NAMESPACE}
    assert sorted(r.decision_id for r in crash_run["rows"]) == sorted(ours)
    assert crash_run["row_count"] == len(recorded_ids)


def test_replay_reproduces_each_domain_across_the_crash(crash_run):
    for domain, result in crash_run["replay"].items():
        assert result.returncode == 0, domain + result.stdout[-3000:] + result.stderr[-3000:]
        report = json.loads(result.stdout)
        assert report["outputs"]["SchedulingDecision"]["reproduced"] >= PODS // 2, domain


def test_replay_reproduces_the_domain_routers_routes_across_the_crash(crash_run):
    result = crash_run["routes"]
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    domains = json.loads(result.stdout)["domains"]
    assert sum(report["reproduced"] for report in domains.values()) >= PODS + NODES


def test_the_killed_worker_had_decided_and_decides_again_after_its_restart(crash_run):
    assert crash_run["decided_before_kill"][crash_run["victim"]] >= KILL_AFTER_DECISIONS / 2
    assert crash_run["restarted_outputs"] >= AFTER_RESTART


def test_each_inbox_is_processed_in_order(crash_run):
    assert crash_run["skipped"] == {name: 0 for name in crash_run["skipped"]}


def test_exactly_once_leaves_no_copies_on_the_output_topics(crash_run):
    """At-least-once may repeat records (reported in the run's summary line, deduplicated by the read
    model); exactly-once must not."""
    if crash_run["guarantee"] == "exactly_once":
        assert crash_run["copies"] == {topic_id: 0 for topic_id in OUTPUT_TOPICS}
