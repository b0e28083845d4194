"""Crash safety by role: SIGKILL one role's worker mid-stream while the other roles' workers run on.

The scenario of ``test_crash`` (240 pods of 200m streamed to the 12 nodes of 4 cpus they fill exactly, in two
scheduling domains), on Kafka under exactly-once, with one worker per role (``koord worker --role
router|domains|scheduling|node``, each its own consumer group, changelogs and transactional ids,
``streams.roles``) instead of two workers running everything. Each victim is the only worker of its role, so
while it is down the records for it pile up while the other roles go on; restarted, it recovers its tables from
its own changelogs and takes up its input from its group's committed offsets, and no other role's partitions
move (a rebalance of its group is its own):

1. once a quarter of the pods are decided, the scheduling domain's worker (the decision-maker) is killed; the
   next half of the pods is streamed and it stays down :data:`DOWN_S` more, then it is restarted;
2. then the domain router's worker (the stage every pod passes: it reads them from their topic and sends each
   to its domain) is killed, the last quarter streamed while it is down, and it is restarted.

The run checks that every pod is placed in its domain without overbooking a node, that each pod is scheduled by
one decision, that the read model holds each decision once, that ``koord replay`` reproduces each domain's
decisions and the domain router's routes across the kills and that no output is repeated (exactly-once).
"""

from __future__ import annotations

import asyncio
import collections
import json
import time

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from state import queries
from state.db import open_database
from state.models import Decision
from streams import roles
from streams.replay.reader import read_topic
from streams.routing import DEFAULT_DOMAIN
from streams.schemas import codec
from streams.topology import load_topology
from tests.integration.conftest import require_kafka
from tests.integration.crash_support import CrashCluster
from tests.integration.test_crash import (
    AFTER_KILL, AFTER_RESTART, DECIDED_TIMEOUT_S, KILL_AFTER_DECISIONS, NAMESPACE, OUTPUT_TOPICS, PODS,
    check_placements, copies, scheduling_outputs, start_scenario, stream_pods, wait_for)

pytestmark = pytest.mark.integration

DOWN_S = 5
"""How long the victim stays down while pods keep coming."""


@pytest.fixture(scope="module")
def role_crash(tmp_path_factory):
    require_kafka()
    cluster = CrashCluster.start(tmp_path_factory.mktemp("role-crash"), "kafka",
                                 extra_env={"KOORD_PROCESSING_GUARANTEE": "exactly_once"})
    try:
        for role in roles.AGENTS:
            applied = cluster.koord("topics", "apply", "--role", role)
            assert applied.returncode == 0, applied.stderr
            cluster.start_worker(role, role)
        tree, pods, producer = start_scenario(cluster, "rolecrash")
        wait_for(lambda: scheduling_outputs(cluster, "scheduling") >= KILL_AFTER_DECISIONS, 60,
                 f"{KILL_AFTER_DECISIONS} decisions")
        decided_before = scheduling_outputs(cluster, "scheduling")
        cluster.kill("scheduling")
        producer.join()
        stream_pods(cluster.bootstrap, pods[AFTER_KILL:-AFTER_RESTART])
        time.sleep(DOWN_S)
        cluster.start_worker("scheduling", "scheduling")
        cluster.kill("domains")
        stream_pods(cluster.bootstrap, pods[-AFTER_RESTART:])
        time.sleep(DOWN_S)
        cluster.start_worker("domains", "domains")
        engine = open_database(cluster.env["KOORD_DATABASE_URL"])

        def undecided() -> set[str]:
            placed = {f"{NAMESPACE}/{p['metadata']['name']}" for p in queries.get_pods(engine, namespace=NAMESPACE)
                      if p["spec"].get("nodeName")}
            return {f"{NAMESPACE}/crash-pod-{i:03d}" for i in range(PODS)} - placed

        wait_for(lambda: not undecided(), DECIDED_TIMEOUT_S, "every pod placed")
        recorded = [codec.decode(r.value)[1] for r in asyncio.run(
            read_topic(cluster.bootstrap, load_topology().name("decisions"), isolation_level="read_committed"))]
        with Session(engine) as session:
            rows = session.scalars(select(Decision).where(Decision.pod_key.like(f"{NAMESPACE}/%"))).all()
        yield {"decided_before": decided_before, "recorded": recorded,
               "rows": rows, "pods": queries.get_pods(engine, namespace=NAMESPACE),
               "replay": {domain: cluster.koord("replay", "scheduling", "--domain", domain, "-o", "json")
                          for domain in (DEFAULT_DOMAIN, tree)},
               "routes": cluster.koord("replay", "routing", "-o", "json"),
               "copies": copies(cluster.bootstrap, "read_committed")}
    finally:
        cluster.stop()


def test_every_pod_is_placed_in_its_domain_and_no_node_is_overbooked(role_crash):
    check_placements(role_crash["pods"])


def test_each_pod_is_scheduled_by_one_decision_and_the_read_model_holds_each_once(role_crash):
    assert role_crash["decided_before"] >= KILL_AFTER_DECISIONS
    scheduled = collections.defaultdict(set)
    for decision in role_crash["recorded"]:
        if decision["pod"]["namespace"] == NAMESPACE and decision["result"] == "Scheduled":
            scheduled[decision["pod"]["name"]].add(decision["decisionId"])
    assert len(scheduled) == PODS
    assert [name for name, ids in scheduled.items() if len(ids) != 1] == []
    ours = {d["decisionId"] for d in role_crash["recorded"] if d["pod"]["namespace"] == NAMESPACE}
    assert sorted(r.decision_id for r in role_crash["rows"]) == sorted(ours)


def test_replay_reproduces_each_domain_across_the_kills(role_crash):
    for domain, result in role_crash["replay"].items():
        assert result.returncode == 0, domain + result.stdout[-3000:] + result.stderr[-3000:]
        report = json.loads(result.stdout)
        assert report["outputs"]["SchedulingDecision"]["reproduced"] >= PODS // 2, domain
        assert report["outputs"]["SchedulingDecision"]["diverged"] == 0, domain


def test_replay_reproduces_every_route_of_the_domain_router_across_its_kill(role_crash):
    """Every pod the domain router read from its topic, before and after its kill, is routed again to the domain
    it went to, at the point of its table its forward names."""
    result = role_crash["routes"]
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    reports = json.loads(result.stdout)["domains"]
    assert sum(report["reproduced"] for report in reports.values()) >= PODS, reports


def test_exactly_once_leaves_no_copies_on_the_output_topics(role_crash):
    assert role_crash["copies"] == {topic_id: 0 for topic_id in OUTPUT_TOPICS}
