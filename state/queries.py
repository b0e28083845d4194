"""Read the read model back as plain dicts: Kubernetes-shaped objects for `koord get`, and the
progress checks behind `koord apply --wait`.

Objects come back as the user applied them, with only what koordstream decided merged in:

- a pod whose latest decision (highest decisions-topic offset; decisions are keyed by pod, so
  one partition orders them) placed it on a node gets `spec.nodeName`, the condition
  PodScheduled=True and the annotations the decision's PreBind plugins wrote (resource-status,
  device-allocated, reservation-allocated, ...: ``decisions.written_on_bind``), as the API server
  holds them on a pod the bridge bound; an Unschedulable one gets PodScheduled=False with the
  decision's message and phase Pending. koordstream runs no kubelet, so a placed pod keeps the phase it was applied
  with, Pending by default, as a bound pod not yet started has in Kubernetes. Decisions about a
  previous pod with the same name (another uid, or at or before the scheduler's release of the
  deleted pod) are ignored. A decision is stored once by its id (``state.projection``), so a
  re-sent old decision changes nothing.
- a placement on a node the read model does not hold as a live node is not shown as one: the pod
  gets PodScheduled=False with reason NodeNotFound naming the decision and the node. The decision
  itself is kept (`koord get decisions`, `koord explain`): decisions and nodes are on different
  topics, so the projection may see a decision before its node, and a decision's shape cannot tell
  a forged one from a genuine one (the ACLs that let only the worker write decisions can); showing
  a pod on a node that does not exist is what must not happen.
- a node's `status.capacity` / `status.allocatable` are overlaid with its latest NodeResource,
  formatted as Kubernetes quantity strings, and the annotations koordstream sets (e.g. the CPU
  normalization ratio) are merged into `metadata.annotations`; its NUMA-level batch resources, when
  it has any, go in the `koordstream.io/numa-zone-resources` annotation (JSON, one entry per zone).
- a NodeResourceTopology's zones carry the NUMA-level batch resources of its node's latest
  NodeResource as Koordinator writes them into the NRT: resource entries `kubernetes.io/batch-cpu`
  and `kubernetes.io/batch-memory` with capacity = allocatable = available = the value, each zone's
  resources sorted by name.
- an ElasticQuota carries its latest computed state as Koordinator shows it: the
  `quota.scheduling.koordinator.sh/runtime` and `.../request` annotations (JSON resource lists)
  and `status.used`.

One stored row never breaks a view: a row whose manifest is not a JSON object with metadata (any
producer may write one) comes back as a minimal object of its kind and name carrying the reason in
the `koordstream.io/broken` annotation (`broken_reason`), and every other row is shown as usual.
"""

import base64
import json
from typing import Any

from sqlalchemy import Engine, and_, case, func, or_, select
from sqlalchemy.orm import Session

from state.models import Ack, DeadLetter, Decision, Eviction, LatestObject, Node, NodeResource, Pod, QuotaStatus
from state.projection import LEFT_OUT
from state.projection import STAGE as PROJECTION_STAGE
from streams import routing
from streams.decisions import written_on_bind
from streams.descheduler.migration.jobs import CONDITION_ARBITRATION
from streams.koordinator.annotations import ANNOTATION_EVICT_REASON, ANNOTATION_QUOTA_REQUEST, ANNOTATION_QUOTA_RUNTIME
from streams.koordinator.resources import BATCH_RESOURCES, EXTENDED_RESOURCES
from streams.objects.quantity import format_quantity, resource_list
from state.topics import LATEST_STATE_TOPICS

POD_SCHEDULED = "PodScheduled"
ZONE_RESOURCES_ANNOTATION = "koordstream.io/numa-zone-resources"
"""Node annotation with the NUMA-level batch resources: ``[{"name": zone, "resources": {name: quantity}}]``."""
ZONE_RESOURCE_NAMES = BATCH_RESOURCES
BROKEN_ANNOTATION = "koordstream.io/broken"
"""Annotation of an object whose stored row cannot be shown: why."""
NODE_NOT_FOUND = "NodeNotFound"


def broken_reason(obj: dict[str, Any]) -> str | None:
    """Why `obj` stands for a row that cannot be shown, None for a sound object."""
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    return annotations.get(BROKEN_ANNOTATION) if isinstance(annotations, dict) else None


def _manifest(text: str | None) -> dict[str, Any]:
    """The stored manifest as an object; ValueError when it is not a JSON object with metadata."""
    if text is None:
        raise ValueError("no manifest is stored")
    try:
        obj = json.loads(text)
    except ValueError as error:
        raise ValueError(f"stored manifest is not JSON ({error})") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
        raise ValueError("stored manifest is not a JSON object with metadata")
    for field in ("spec", "status"):
        if obj.get(field) is not None and not isinstance(obj[field], dict):
            raise ValueError(f"stored manifest's {field} is not an object")
    return obj


def _shown(kind: str, namespace: str | None, name: str, build) -> dict[str, Any]:
    """`build()`, or when the stored row cannot be shown, a minimal `kind` object marked broken."""
    try:
        return build()
    except (ValueError, TypeError, KeyError, AttributeError, IndexError) as error:
        reason = str(error) if isinstance(error, ValueError) else f"stored row cannot be shown: {error!r}"
        metadata = {"name": name, **({"namespace": namespace} if namespace else {}),
                    "annotations": {BROKEN_ANNOTATION: reason}}
        return {"kind": kind, "metadata": metadata, "spec": {}, "status": {"phase": "Unknown"}}



def get_pods(engine: Engine, namespace: str | None = None, name: str | None = None) -> list[dict[str, Any]]:
    """Live pods as Kubernetes Pod objects with scheduling results merged in, sorted by
    namespace and name."""
    filters = [Pod.deleted.is_(False)]
    if namespace is not None:
        filters.append(Pod.namespace == namespace)
    if name is not None:
        filters.append(Pod.name == name)
    with Session(engine) as session:
        decisions = _latest_decisions(session, filters)
        nodes = _live_node_names(session)
        pods = session.scalars(select(Pod).where(*filters).order_by(Pod.namespace, Pod.name)).all()
        return [_shown("Pod", pod.namespace, pod.name, lambda pod=pod: _pod_object(pod, decisions.get(pod.key), nodes))
                for pod in pods]


def _live_node_names(session: Session) -> set[str]:
    return set(session.scalars(select(Node.name).where(Node.deleted.is_(False))))


def _latest_decisions(session: Session, pod_filters: list) -> dict[str, Decision]:
    """The latest decision (highest decisions-topic offset) of each live pod matching ``pod_filters``."""
    rank = func.row_number().over(
        partition_by=Decision.pod_key, order_by=(Decision.topic_offset.desc(), Decision.timestamp_ms.desc())
    )
    same_pod = or_(Decision.pod_uid.is_(None), Pod.uid.is_(None), Decision.pod_uid == Pod.uid)
    ranked = (
        select(Decision.decision_id, rank.label("rank"))
        .join(Pod, and_(Pod.key == Decision.pod_key, same_pod))
        .where(*pod_filters)
        .subquery()
    )
    latest = select(Decision).join(ranked, ranked.c.decision_id == Decision.decision_id).where(ranked.c.rank == 1)
    return {decision.pod_key: decision for decision in session.scalars(latest) if not _ended_its_pod(decision)}


def _ended_its_pod(decision: Decision) -> bool:
    """Whether ``decision`` is the scheduler's release of a deleted pod (``streams.scheduler.orchestration``):
    it and every decision before it are about that pod, so a pod applied again under the same name (and
    no uid) has no decision of its own yet, and is shown without the old one's node."""
    return (decision.result, decision.reason) == RELEASED_DELETED


def _pod_object(pod: Pod, decision: Decision | None, nodes: set[str]) -> dict[str, Any]:
    obj = _manifest(pod.manifest)
    obj["metadata"]["namespace"] = pod.namespace
    status = obj["status"] = obj.get("status") or {}
    status["phase"] = status.get("phase") or "Pending"
    if decision is None:
        return obj
    if decision.result == "Unschedulable":
        condition = {
            "type": POD_SCHEDULED,
            "status": "False",
            "reason": "Unschedulable",
            "message": decision.message,
        }
        status["phase"] = "Pending"
    elif decision.node_name is not None and decision.node_name not in nodes:
        condition = {
            "type": POD_SCHEDULED,
            "status": "False",
            "reason": NODE_NOT_FOUND,
            "message": f"decision {decision.decision_id} placed the pod on node {decision.node_name!r}, "
                       f"which the read model does not hold as a live node",
        }
    elif decision.node_name is not None:
        obj["spec"] = {**(obj.get("spec") or {}), "nodeName": decision.node_name}
        if written := written_on_bind(decision.annotations):
            metadata = obj["metadata"]
            metadata["annotations"] = {**(metadata.get("annotations") or {}), **written}
        condition = {"type": POD_SCHEDULED, "status": "True"}
    else:
        return obj
    others = [c for c in status.get("conditions") or [] if c.get("type") != POD_SCHEDULED]
    status["conditions"] = [*others, condition]
    return obj


def get_nodes(engine: Engine, name: str | None = None) -> list[dict[str, Any]]:
    """Live nodes as Kubernetes Node objects with the latest NodeResource's capacity and
    allocatable overlaid (other resources and fields unchanged), sorted by name."""
    filters = [Node.deleted.is_(False)]
    if name is not None:
        filters.append(Node.name == name)
    with Session(engine) as session:
        resources = _latest_node_resources(session, filters)
        nodes = session.scalars(select(Node).where(*filters).order_by(Node.name)).all()
        return [_shown("Node", None, node.name, lambda node=node: _node_object(node, resources.get(node.name)))
                for node in nodes]


def _latest_node_resources(session: Session, node_filters: list) -> dict[str, NodeResource]:
    """The latest NodeResource (highest offset; keyed by node, so one partition orders them) of each node
    matching ``node_filters``."""
    rank = func.row_number().over(
        partition_by=NodeResource.node_name,
        order_by=(NodeResource.topic_offset.desc(), NodeResource.timestamp_ms.desc()),
    )
    ranked = (
        select(NodeResource.decision_id, rank.label("rank"))
        .join(Node, Node.name == NodeResource.node_name)
        .where(*node_filters)
        .subquery()
    )
    latest = (
        select(NodeResource)
        .join(ranked, ranked.c.decision_id == NodeResource.decision_id)
        .where(ranked.c.rank == 1)
    )
    return {resource.node_name: resource for resource in session.scalars(latest)}


def _node_object(node: Node, resource: NodeResource | None) -> dict[str, Any]:
    obj = _manifest(node.manifest)
    if resource is None:
        return obj
    annotations = dict(resource.annotations)
    if resource.zones:
        annotations[ZONE_RESOURCES_ANNOTATION] = json.dumps(
            [{"name": zone["name"], "resources": _quantities(zone["resources"])} for zone in resource.zones],
            separators=(",", ":"))
    if annotations:
        metadata = obj["metadata"]
        metadata["annotations"] = {**(metadata.get("annotations") or {}), **annotations}
    status = obj["status"] = obj.get("status") or {}
    for field, quantities in (("capacity", resource.capacity), ("allocatable", resource.allocatable)):
        if quantities:
            overlaid = status[field] = status.get(field) or {}
            for resource_name, value in quantities.items():
                overlaid[resource_name] = format_quantity(resource_name, value)
    return obj


def get_noderesourcetopologies(engine: Engine, name: str | None = None) -> list[dict[str, Any]]:
    """Live NodeResourceTopology objects as applied, with the NUMA-level batch resources of their node's latest
    NodeResource written into the zones as Koordinator writes them; sorted by name."""
    filters = [LatestObject.topic == "noderesourcetopologies", LatestObject.deleted.is_(False)]
    if name is not None:
        filters.append(LatestObject.name == name)
    with Session(engine) as session:
        objects = session.scalars(select(LatestObject).where(*filters).order_by(LatestObject.name)).all()
        names = [row.name for row in objects]
        resources = _latest_node_resources(session, [Node.name.in_(names)]) if names else {}
        return [_shown("NodeResourceTopology", None, row.name,
                       lambda row=row: _topology_object(row, resources.get(row.name))) for row in objects]


def _topology_object(row: LatestObject, resource: NodeResource | None) -> dict[str, Any]:
    obj = _manifest(row.manifest)
    batch = {zone["name"]: zone["resources"] for zone in (resource.zones if resource is not None else [])}
    for zone in obj.get("zones") or []:
        values = batch.get(zone.get("name"))
        if not values:
            continue
        kept = [entry for entry in zone.get("resources") or [] if entry.get("name") not in ZONE_RESOURCE_NAMES]
        added = [{"name": resource_name, **dict.fromkeys(("capacity", "allocatable", "available"),
                                                         format_quantity(resource_name, value))}
                 for resource_name, value in values.items()]
        zone["resources"] = sorted(kept + added, key=lambda entry: str(entry.get("name")))
    return obj


def get_objects(engine: Engine, topic: str, kind: str, name: str | None = None,
                namespace: str | None = None) -> list[dict[str, Any]]:
    """Live objects of one object topic as last written (PodMigrationJobs with the status the descheduling
    stage wrote back, PodGroups, Reservations, Devices), sorted by namespace and name."""
    filters = [LatestObject.topic == topic, LatestObject.deleted.is_(False)]
    if name is not None:
        filters.append(LatestObject.name == name)
    if namespace is not None:
        filters.append(LatestObject.namespace == namespace)
    with Session(engine) as session:
        rows = session.scalars(select(LatestObject).where(*filters)
                               .order_by(LatestObject.namespace, LatestObject.name)).all()
        return [_shown(kind, row.namespace, row.name, lambda row=row: _manifest(row.manifest)) for row in rows]


def get_decisions(engine: Engine, pod_key: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    """SchedulingDecisions in the Avro record layout plus their topic position, oldest first;
    `limit` keeps the newest `limit` of them (like `tail`)."""
    statement = select(Decision).order_by(
        Decision.timestamp_ms.desc(), Decision.topic_partition.desc(), Decision.topic_offset.desc()
    )
    if pod_key is not None:
        statement = statement.where(Decision.pod_key == pod_key)
    if limit is not None:
        statement = statement.limit(limit)
    with Session(engine) as session:
        return [_decision_record(decision) for decision in reversed(session.scalars(statement).all())]


def _decision_record(decision: Decision) -> dict[str, Any]:
    namespace, _, name = decision.pod_key.partition("/")
    return {
        "decisionId": decision.decision_id,
        "domain": decision.domain,
        "pod": {"namespace": namespace, "name": name, "uid": decision.pod_uid},
        "result": decision.result,
        "nodeName": decision.node_name,
        "reason": decision.reason,
        "message": decision.message,
        "filterResults": decision.filter_results,
        "scores": decision.scores,
        "labels": decision.labels or {},
        "annotations": decision.annotations or {},
        "causation": {
            "inboxTopic": decision.inbox_topic,
            "inboxPartition": decision.inbox_partition,
            "inboxOffset": decision.inbox_offset,
            "sourceTopic": decision.source_topic,
            "sourcePartition": decision.source_partition,
            "sourceOffset": decision.source_offset,
        },
        "timestamp": decision.timestamp_ms,
        "topicPartition": decision.topic_partition,
        "topicOffset": decision.topic_offset,
    }


def get_deadletters(engine: Engine) -> list[dict[str, Any]]:
    """DeadLetters in the Avro record layout, oldest first; those of one source record by stage, the
    projection's (the last reader) last. `key` is shown as UTF-8 text (Kafka
    keys are names; invalid bytes are backslash-escaped) and `payload` as base64, the usual
    text form of binary data in Kubernetes-style output (like a Secret's data)."""
    statement = select(DeadLetter).order_by(
        DeadLetter.timestamp_ms, DeadLetter.source_topic, DeadLetter.source_partition, DeadLetter.source_offset,
        case((DeadLetter.stage == PROJECTION_STAGE, 1), else_=0), DeadLetter.stage,
    )
    with Session(engine) as session:
        return [
            {
                "sourceTopic": letter.source_topic,
                "sourcePartition": letter.source_partition,
                "sourceOffset": letter.source_offset,
                "key": None if letter.key is None else letter.key.decode("utf-8", "backslashreplace"),
                "payload": None if letter.payload is None else base64.b64encode(letter.payload).decode("ascii"),
                "reason": letter.reason,
                "stage": letter.stage,
                "timestamp": letter.timestamp_ms,
                **{field: (letter.left_out or {}).get(field) for field in LEFT_OUT},
            }
            for letter in session.scalars(statement)
        ]


def object_progress(engine: Engine, topic_logical_name: str, key: str) -> tuple[int, int, bool] | None:
    """(source partition, source offset, deleted) of the record the read model holds for `key`
    on a latest-state topic, or None if none was projected yet."""
    if topic_logical_name not in LATEST_STATE_TOPICS:
        raise ValueError(f"{topic_logical_name!r} is not a latest-state topic; known: {sorted(LATEST_STATE_TOPICS)}")
    with Session(engine) as session:
        if topic_logical_name == "pods":
            row = session.get(Pod, key)
        elif topic_logical_name == "nodes":
            row = session.get(Node, key)
        else:
            row = session.get(LatestObject, (topic_logical_name, key))
        return None if row is None else (row.source_partition, row.source_offset, row.deleted)


RUNTIME_ANNOTATION = ANNOTATION_QUOTA_RUNTIME
REQUEST_ANNOTATION = ANNOTATION_QUOTA_REQUEST


def get_elasticquotas(engine: Engine, namespace: str | None = None, name: str | None = None) -> list[dict[str, Any]]:
    """ElasticQuotas with their latest computed status, sorted by namespace and name. Quotas the
    scheduler keeps without an applied object (root, system, default) come back as minimal
    ElasticQuota objects."""
    filters = []
    if namespace is not None:
        filters.append(QuotaStatus.namespace == namespace)
    if name is not None:
        filters.append(QuotaStatus.name == name)
    rank = func.row_number().over(
        partition_by=(QuotaStatus.domain, QuotaStatus.namespace, QuotaStatus.name),
        order_by=(QuotaStatus.timestamp_ms.desc(), QuotaStatus.topic_offset.desc()),
    )
    ranked = select(QuotaStatus.decision_id, rank.label("rank")).where(*filters).subquery()
    latest = select(QuotaStatus).join(ranked, ranked.c.decision_id == QuotaStatus.decision_id).where(ranked.c.rank == 1)
    with Session(engine) as session:
        statuses = session.scalars(latest).all()
        objects = {
            row.key: row
            for row in session.scalars(select(LatestObject).where(
                LatestObject.topic == "quotas", LatestObject.kind == "ElasticQuota", LatestObject.deleted.is_(False)))
        }
        out = [_shown("ElasticQuota", status.namespace, status.name,
                      lambda status=status: _quota_object(status, objects.get(f"{status.namespace}/{status.name}")))
               for status in statuses]
    return sorted(out, key=lambda q: (q["metadata"].get("namespace") or "", q["metadata"]["name"]))


def _quota_object(status: QuotaStatus, applied: LatestObject | None) -> dict[str, Any]:
    if applied is not None:
        obj = _manifest(applied.manifest)
    else:
        obj = {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota",
               "metadata": {"name": status.name},
               "spec": {"min": _quantities(status.min), "max": _quantities(status.max)}}
    metadata = obj["metadata"]
    if status.namespace is not None:
        metadata["namespace"] = status.namespace
    metadata["annotations"] = {
        **(metadata.get("annotations") or {}),
        RUNTIME_ANNOTATION: json.dumps(_quantities(status.runtime), sort_keys=True),
        REQUEST_ANNOTATION: json.dumps(_quantities(status.request), sort_keys=True),
    }
    obj["status"] = {**(obj.get("status") or {}), "used": _quantities(status.used)}
    return obj


def _quantities(values: dict[str, int]) -> dict[str, str]:
    return {resource: format_quantity(resource, value) for resource, value in sorted(values.items())}


PLACED = ("Scheduled", "Bound")
RELEASED_DELETED = ("Released", "Deleted")
"""The result and reason of the decision the scheduler writes when a pod is deleted."""


def top_nodes(engine: Engine) -> list[dict[str, Any]]:
    """Per live node: usage (its latest NodeMetric), requested (its placed pods' requests) and
    allocatable (the latest NodeResource, batch and mid included), all in canonical units."""
    with Session(engine) as session:
        requested = _requested_by_node(session)
        metrics = _latest_node_metrics(session)
    rows = []
    for node in get_nodes(engine):
        name = node["metadata"]["name"]
        broken = broken_reason(node)
        try:
            allocatable = resource_list((node.get("status") or {}).get("allocatable") or {})
        except (ValueError, TypeError, AttributeError) as error:
            allocatable, broken = {}, broken or f"stored allocatable cannot be read: {error}"
        rows.append({"name": name, "usage": metrics.get(name, {}).get("nodeUsage", {}),
                     "requested": requested.get(name, {}), "allocatable": allocatable, "broken": broken})
    return rows


def _requested_by_node(session: Session) -> dict[str, dict[str, int]]:
    """Per node, the sum of its live placed pods' requests (batch and mid included), canonical units."""
    requested: dict[str, dict[str, int]] = {}
    for decision in _latest_decisions(session, [Pod.deleted.is_(False)]).values():
        if decision.result not in PLACED or not decision.node_name:
            continue
        total = requested.setdefault(decision.node_name, {})
        for resource, value in (decision.requests or {}).items():
            total[resource] = total.get(resource, 0) + value
    return requested


def top_pods(engine: Engine, namespace: str | None = None) -> list[dict[str, Any]]:
    """Per live pod: its node, requests and usage (from its node's latest NodeMetric)."""
    filters = [Pod.deleted.is_(False)] + ([Pod.namespace == namespace] if namespace is not None else [])
    with Session(engine) as session:
        decisions = _latest_decisions(session, filters)
        nodes = _live_node_names(session)
        pods = session.scalars(select(Pod).where(*filters).order_by(Pod.namespace, Pod.name)).all()
        metrics = _latest_node_metrics(session)
    usage = {(p["namespace"], p["name"]): p.get("usage", {})
             for metric in metrics.values() for p in metric.get("podsMetric", [])}
    rows = []
    for pod in pods:
        decision = decisions.get(pod.key)
        rows.append({"namespace": pod.namespace, "name": pod.name,
                     "node": decision.node_name if decision is not None and decision.result in PLACED
                     and decision.node_name in nodes else None,
                     "requests": (decision.requests if decision is not None else None) or {},
                     "usage": usage.get((pod.namespace, pod.name), {})})
    return rows


def _latest_node_metrics(session: Session) -> dict[str, dict[str, Any]]:
    rows = session.scalars(select(LatestObject).where(
        LatestObject.topic == "nodemetrics", LatestObject.deleted.is_(False)))
    return {row.key: row.record or {} for row in rows}


def acknowledged(engine: Engine, source_topic: str, source_partition: int, source_offset: int,
                 expected: dict[str, int]) -> bool:
    """Whether each aggregate in ``expected`` (inbox id -> number of its partitions the record was
    routed to; ``routing.ACKED_AS`` says whose Acks count for it) acknowledged the source record, and every output those acks list is in the read model or,
    for an output only another aggregate reads (a NodeUsage), acknowledged by it (its Ack's ``event_id``)."""
    with Session(engine) as session:
        acks = session.scalars(select(Ack).where(
            Ack.source_topic == source_topic, Ack.source_partition == source_partition,
            Ack.source_offset == source_offset)).all()
        counts: dict[str, int] = {}
        for row in acks:
            counts[row.aggregate] = counts.get(row.aggregate, 0) + 1
        if any(sum(counts.get(by, 0) for by in routing.ACKED_AS.get(inbox, (inbox,))) < n
               for inbox, n in expected.items()):
            return False
        wanted = {output for row in acks for output in row.output_ids}
        if not wanted:
            return True
        found = set()
        for model in (Decision, NodeResource, QuotaStatus):
            found.update(session.scalars(select(model.decision_id).where(model.decision_id.in_(wanted))))
        found.update(session.scalars(select(Ack.event_id).where(Ack.event_id.in_(wanted))))
        return wanted <= found


# -- explain ----------------------------------------------------------------------------------------------

TOP_SCORES_SHOWN = 5


def filter_summary(filter_results: list[dict[str, Any]]) -> str:
    """The per-plugin filter results as kube-scheduler aggregates them: "<count> <reason>" strings, sorted,
    joined by ", " (the form of its FitError, e.g. "3 Insufficient cpu, 2 node(s) had untolerated taint")."""
    counts: dict[str, int] = {}
    for result in filter_results or []:
        counts[result["reason"]] = counts.get(result["reason"], 0) + result["count"]
    return ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items()))


def explain_pod(engine: Engine, namespace: str, name: str, history: int = 3) -> dict[str, Any] | None:
    """Why a pod is where it is: its latest ``history`` decisions (newest first; about this pod object, by
    uid) with the aggregated filter results, the top scores, the chosen node and the input event each came
    from, and the evictions decided about it (why it was moved: the descheduler's hot node and job, a
    node-side eviction, or its preemptor). None when the read model knows neither the pod nor a decision."""
    key = f"{namespace}/{name}"
    with Session(engine) as session:
        pod = session.get(Pod, key)
        statement = select(Decision).where(Decision.pod_key == key)
        if pod is not None and pod.uid is not None:
            statement = statement.where(or_(Decision.pod_uid.is_(None), Decision.pod_uid == pod.uid))
        decisions = session.scalars(statement.order_by(
            Decision.topic_offset.desc(), Decision.timestamp_ms.desc()).limit(history)).all()
        evictions = session.scalars(select(Eviction).where(Eviction.pod_key == key).order_by(
            Eviction.topic_offset.desc()).limit(history)).all()
        jobs = _migration_jobs(session, namespace, name)
        if pod is None and not decisions and not evictions and not jobs:
            return None
        return {
            "pod": {"namespace": namespace, "name": name, "uid": pod.uid if pod else None,
                    "phase": pod.phase if pod else None, "deleted": pod.deleted if pod else None},
            "decisions": [_explained_decision(decision) for decision in decisions],
            "evictions": [{"decisionId": e.decision_id, "nodeName": e.node_name, "reason": e.reason,
                           "message": e.message, "timestamp": e.timestamp_ms} for e in evictions],
            "migrationJobs": jobs,
        }


def _migration_jobs(session: Session, namespace: str, name: str) -> list[dict[str, Any]]:
    """The live PodMigrationJobs of a pod, by name: phase, reason and message, why the job exists (the
    descheduler's evict-reason: which node was hot and by how much) and the arbitration limit that held it."""
    jobs = []
    for row in session.scalars(select(LatestObject).where(
            LatestObject.topic == "podmigrationjobs", LatestObject.deleted.is_(False)).order_by(LatestObject.key)):
        ref = (row.record or {}).get("podRef") or {}
        if ref.get("name") != name or (ref.get("namespace") or "default") != namespace:
            continue
        manifest = _manifest(row.manifest)
        status = manifest.get("status") or {}
        held = next((c for c in status.get("conditions") or [] if c.get("type") == CONDITION_ARBITRATION), None)
        jobs.append({"name": row.name, "phase": status.get("phase") or (row.record or {}).get("phase"),
                     "reason": status.get("reason") or "", "message": status.get("message") or "",
                     "trigger": (manifest.get("metadata", {}).get("annotations") or {}).get(ANNOTATION_EVICT_REASON,
                                                                                              ""),
                     "heldBy": held.get("message", "") if held else ""})
    return jobs


def _explained_decision(decision: Decision) -> dict[str, Any]:
    record = _decision_record(decision)
    rejected = sum(result["count"] for result in decision.filter_results or [])
    scores = sorted(decision.scores or [], key=lambda s: (-s["score"], s["node"]))
    return {**record, "requests": decision.requests, "rejectedNodes": rejected,
            "filterSummary": filter_summary(decision.filter_results), "topScores": scores[:TOP_SCORES_SHOWN],
            "allocated": written_on_bind(decision.annotations) if decision.node_name else {}}


def explain_node(engine: Engine, name: str, history: int = 5) -> dict[str, Any] | None:
    """A node's latest NodeResource (allocatable with batch/mid values, Koordinator's calculation message,
    causation), the latest NodeMetric the read model holds for it, the batch/mid its live placed pods request,
    and batch/mid over its last ``history`` NodeResources (newest first). None when the read model knows neither the node nor a NodeResource."""
    with Session(engine) as session:
        node = session.get(Node, name)
        resources = session.scalars(select(NodeResource).where(NodeResource.node_name == name).order_by(
            NodeResource.topic_offset.desc(), NodeResource.timestamp_ms.desc()).limit(history)).all()
        metric = session.get(LatestObject, ("nodemetrics", name))
        if node is None and not resources:
            return None
        requested = _requested_by_node(session).get(name, {})
        latest = resources[0] if resources else None
        return {
            "node": {"name": name, "deleted": node.deleted if node else None},
            "latest": None if latest is None else {
                "decisionId": latest.decision_id, "timestamp": latest.timestamp_ms,
                "capacity": latest.capacity, "allocatable": latest.allocatable,
                "extended": {r: latest.allocatable.get(r) for r in EXTENDED_RESOURCES},
                "annotations": latest.annotations, "message": latest.message,
                "causation": _causation(latest), "topicPartition": latest.topic_partition,
                "topicOffset": latest.topic_offset,
            },
            "latestNodeMetric": None if metric is None or metric.deleted else {
                "sourcePartition": metric.source_partition, "sourceOffset": metric.source_offset,
                "updateTime": (metric.record or {}).get("updateTime"), "nodeUsage": (metric.record or {}).get("nodeUsage"),
            },
            "requested": {r: requested.get(r) for r in EXTENDED_RESOURCES},
            "history": [{"decisionId": r.decision_id, "timestamp": r.timestamp_ms,
                         **{res: r.allocatable.get(res) for res in EXTENDED_RESOURCES},
                         "causation": _causation(r)} for r in resources],
        }


def _causation(row: Decision | NodeResource) -> dict[str, Any]:
    return {"inboxTopic": row.inbox_topic, "inboxPartition": row.inbox_partition, "inboxOffset": row.inbox_offset,
            "sourceTopic": row.source_topic, "sourcePartition": row.source_partition,
            "sourceOffset": row.source_offset}
