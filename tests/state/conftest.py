"""Shared fixtures of the read-model tests: every database test runs on SQLite and PostgreSQL.

PostgreSQL cases are marked `postgres` and skipped when the server (KOORD_TEST_POSTGRES_URL,
default the local trust-auth server) is unreachable. Each case gets a fresh schema, selected
through the connection's search_path, and drops it afterwards.
"""

import json
import os
import uuid
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from state.db import create_all, open_database, sqlite_url
from state.projection import ProjectedRecord, Projector

POSTGRES_URL = os.environ.get("KOORD_TEST_POSTGRES_URL", "postgresql+psycopg2://postgres@127.0.0.1:55432/test")


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
    ]
)
def database_url(request, tmp_path):
    """URL of an empty database on each backend."""
    if request.param == "sqlite":
        yield sqlite_url(tmp_path / "read-model" / "koord.db")
        return
    schema = f"koord_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(POSTGRES_URL, connect_args={"connect_timeout": 3})
    try:
        with admin.begin() as connection:
            connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    except OperationalError as error:
        admin.dispose()
        reason = f"PostgreSQL not reachable at {POSTGRES_URL} (set KOORD_TEST_POSTGRES_URL): {error.orig}"
        if os.environ.get("KOORD_REQUIRE_POSTGRES"):
            pytest.fail(reason + "; KOORD_REQUIRE_POSTGRES is set, so this is a failure, not a skip")
        pytest.skip(reason)
    try:
        yield make_url(POSTGRES_URL).update_query_dict({"options": f"-csearch_path={schema}"})
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def engine(database_url):
    """An opened, still empty database."""
    engine = open_database(database_url)
    yield engine
    engine.dispose()


@pytest.fixture
def read_model(engine):
    """A database with the read-model tables created."""
    create_all(engine)
    return engine


@pytest.fixture
def projector(read_model):
    return Projector(read_model)


def _metadata(name: str, namespace: str | None = None, uid: str | None = None) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "uid": uid, "labels": {}, "annotations": {}, "generation": 0}


def _causation(source: tuple[str, int, int]) -> dict[str, Any]:
    topic, partition, offset = source
    return {
        "inboxTopic": "koord.inbox.scheduling",
        "inboxPartition": 0,
        "inboxOffset": offset,
        "sourceTopic": topic,
        "sourcePartition": partition,
        "sourceOffset": offset,
    }


class Records:
    """Builders of decoded records in the spec's Avro layouts, as the consumer hands them over."""

    @staticmethod
    def record(topic, key, schema, value, offset, partition=0) -> ProjectedRecord:
        return ProjectedRecord(topic, partition, offset, 1_700_000_000_000 + offset, key, schema, value, b"encoded")

    @staticmethod
    def tombstone(topic, key, offset, partition=0) -> ProjectedRecord:
        return ProjectedRecord(topic, partition, offset, 1_700_000_000_000 + offset, key, None, None, None)

    @classmethod
    def pod(cls, name, offset, *, namespace="default", uid=None, node_name=None, phase=None, partition=0):
        manifest = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, **({"uid": uid} if uid else {})},
            "spec": {
                "containers": [{"name": "main", "image": "nginx", "resources": {"requests": {"cpu": "500m"}}}],
                **({"nodeName": node_name} if node_name else {}),
            },
            **({"status": {"phase": phase}} if phase else {}),
        }
        value = {
            "metadata": _metadata(name, namespace, uid),
            "manifest": json.dumps(manifest, sort_keys=True, separators=(",", ":")),
            "nodeName": node_name,
            "schedulerName": "default-scheduler",
            "priority": None,
            "priorityClassName": None,
            "requests": {"cpu": 500},
            "limits": {},
            "nodeSelector": {},
            "tolerations": [],
            "phase": phase,
        }
        return cls.record("koord.pods", f"{namespace}/{name}", "Pod", value, offset, partition)

    @classmethod
    def node(cls, name, offset, *, status=None, partition=0):
        manifest = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {"podCIDR": "10.0.0.0/24"},
            **({"status": status} if status is not None else {}),
        }
        value = {
            "metadata": _metadata(name),
            "manifest": json.dumps(manifest, sort_keys=True, separators=(",", ":")),
            "unschedulable": False,
            "taints": [],
            "capacity": {"cpu": 4000, "memory": 8 * 2**30},
            "allocatable": {"cpu": 4000, "memory": 8 * 2**30},
        }
        return cls.record("koord.nodes", name, "Node", value, offset, partition)

    @classmethod
    def quota(cls, name, offset, *, namespace="default", schema="ElasticQuota", max_cpu=8000):
        manifest = {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": schema, "metadata": {"name": name}}
        value = {
            "metadata": _metadata(name, namespace),
            "manifest": json.dumps(manifest, sort_keys=True, separators=(",", ":")),
        }
        if schema == "ElasticQuota":
            value.update({"min": {"cpu": 1000}, "max": {"cpu": max_cpu}})
        else:
            value.update({"quotaTreeId": None, "nodeSelector": {}})
        return cls.record("koord.quotas", f"{namespace}/{name}", schema, value, offset)

    @classmethod
    def config(cls, name, offset, *, data=None, namespace="koordinator-system"):
        manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data or {}}
        value = {
            "metadata": _metadata(name, namespace),
            "manifest": json.dumps(manifest, sort_keys=True, separators=(",", ":")),
            "data": data or {},
        }
        return cls.record("koord.configs", f"{namespace}/{name}", "ConfigMap", value, offset)

    @classmethod
    def decision(cls, decision_id, pod, result, offset, *, node_name=None, message="", uid=None, source=None,
                 requests=None, reason=None):
        namespace, name = pod.split("/")
        value = {
            "decisionId": decision_id,
            "domain": "default",
            "pod": {"namespace": namespace, "name": name, "uid": uid},
            "result": result,
            "nodeName": node_name,
            "reason": reason or ("Unschedulable" if result == "Unschedulable" else None),
            "message": message,
            "filterResults": [{"plugin": "NodeResourcesFit", "reason": "Insufficient cpu", "count": 3}]
            if result == "Unschedulable"
            else [],
            "scores": [{"node": node_name, "score": 87}] if node_name else [],
            "requests": requests or {},
            "causation": _causation(source or ("koord.pods", 0, offset)),
            "timestamp": 1_700_000_000_000 + offset,
        }
        return cls.record("koord.decisions", pod, "SchedulingDecision", value, offset)

    @classmethod
    def eviction(cls, decision_id, pod, node, offset, *, uid=None, reason="EvictPodByNodeMemoryUsage"):
        namespace, name = pod.split("/")
        value = {
            "decisionId": decision_id,
            "nodeName": node,
            "pod": {"namespace": namespace, "name": name, "uid": uid},
            "reason": reason,
            "message": "node memory usage 95% >= threshold 80%",
            "causation": _causation(("koord.nodemetrics", 0, offset)),
            "timestamp": 1_700_000_000_000 + offset,
        }
        return cls.record("koord.decisions", pod, "Eviction", value, offset)

    @classmethod
    def node_resource(cls, decision_id, node, offset, *, capacity=None, allocatable=None, source=None,
                      annotations=None, zones=None):
        value = {
            "decisionId": decision_id,
            "nodeName": node,
            "capacity": capacity or {},
            "allocatable": allocatable or {},
            "annotations": annotations or {},
            "message": "",
            "causation": _causation(source or ("koord.nodes", 0, offset)),
            "timestamp": 1_700_000_000_000 + offset,
            "zones": [{"name": name, "resources": resources} for name, resources in (zones or {}).items()],
        }
        return cls.record("koord.noderesources", node, "NodeResource", value, offset)

    @classmethod
    def topology(cls, node, offset, *, zones):
        """A NodeResourceTopology; ``zones``: name -> (cpu milli-cores, memory bytes)."""
        manifest = {"apiVersion": "topology.node.k8s.io/v1alpha1", "kind": "NodeResourceTopology",
                    "metadata": {"name": node}, "topologyPolicies": ["None"],
                    "zones": [{"name": name, "type": "Node", "resources": [
                        {"name": "memory", "capacity": str(memory), "allocatable": str(memory),
                         "available": str(memory)},
                        {"name": "cpu", "capacity": f"{cpu}m", "allocatable": f"{cpu}m", "available": f"{cpu}m"}]}
                        for name, (cpu, memory) in zones.items()]}
        value = {
            "metadata": _metadata(node),
            "manifest": json.dumps(manifest, sort_keys=True, separators=(",", ":")),
            "zones": [{"name": name, "type": "Node", "resources": [
                {"name": "memory", "capacity": memory, "allocatable": memory, "available": memory},
                {"name": "cpu", "capacity": cpu, "allocatable": cpu, "available": cpu}]}
                for name, (cpu, memory) in zones.items()],
        }
        return cls.record("koord.noderesourcetopologies", node, "NodeResourceTopology", value, offset)

    @classmethod
    def node_metric(cls, node, offset, *, usage, pods=()):
        manifest = {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "metadata": {"name": node}}
        value = {
            "metadata": _metadata(node),
            "manifest": json.dumps(manifest, sort_keys=True, separators=(",", ":")),
            "nodeUsage": usage,
            "podsMetric": [{"namespace": ns, "name": name, "uid": None, "usage": pod_usage}
                           for ns, name, pod_usage in pods],
            "updateTime": 1_700_000_000_000,
        }
        return cls.record("koord.nodemetrics", node, "NodeMetric", value, offset)

    @classmethod
    def inbox_ack(cls, aggregate, source, offset, *, inbox_partition=0, output_ids=(), event_id=None):
        value = {
            "aggregate": aggregate,
            "causation": {**_causation(source), "inboxPartition": inbox_partition, "inboxOffset": offset},
            "outputIds": list(output_ids),
            "timestamp": 1_700_000_000_000 + offset,
            "eventId": event_id,
        }
        return cls.record("koord.acks", f"{source[0]}/{source[1]}", "Ack", value, offset)

    @classmethod
    def quota_status(cls, decision_id, name, offset, *, runtime=None, used=None, request=None, namespace="team"):
        value = {
            "decisionId": decision_id,
            "domain": "default",
            "namespace": namespace,
            "name": name,
            "parent": None,
            "min": {"cpu": 1000},
            "max": {"cpu": 8000},
            "runtime": runtime or {},
            "used": used or {},
            "request": request or {},
            "causation": _causation(("koord.pods", 0, offset)),
            "timestamp": 1_700_000_000_000 + offset,
        }
        return cls.record("koord.quotastatus", name, "ElasticQuotaStatus", value, offset)

    @classmethod
    def actuation(cls, decision_id, node, offset):
        value = {
            "decisionId": decision_id,
            "nodeName": node,
            "sequence": offset,
            "targetKind": "PodCgroup",
            "targetId": "pod-uid-1",
            "mechanism": "cpu.cfs_quota_us",
            "values": {"cpu.cfs_quota_us": "50000"},
            "signature": b"\x01\x02",
            "causation": _causation(("koord.nodemetrics", 0, offset)),
            "timestamp": 1_700_000_000_000 + offset,
        }
        return cls.record("koord.actuations", node, "Actuation", value, offset)

    @classmethod
    def ack(cls, actuation_id, node, offset, *, applied=True):
        value = {
            "actuationId": actuation_id,
            "nodeName": node,
            "sequence": offset,
            "applied": applied,
            "values": {"cpu.cfs_quota_us": "50000"},
            "error": None if applied else "write failed",
            "timestamp": 1_700_000_000_000 + offset,
        }
        return cls.record("koord.actuation-acks", node, "ActuationAck", value, offset)

    @classmethod
    def dead_letter(cls, offset, *, payload=b"\xc3\x01garbage", key=b"default/web", stage="router"):
        value = {
            "sourceTopic": "koord.pods",
            "sourcePartition": 0,
            "sourceOffset": offset,
            "key": key,
            "payload": payload,
            "reason": "CodecError: unknown fingerprint",
            "stage": stage,
            "timestamp": 1_700_000_000_000 + offset,
        }
        return cls.record("koord.deadletters", None, "DeadLetter", value, offset)


@pytest.fixture
def records() -> type[Records]:
    return Records
