"""Builders for scheduling-core tests: inbox events without a broker.

Records are the ones ``koord apply`` produces (``streams.objects``), so tests can be written
as YAML manifests (``applied``) or with the short builders (``node``, ``pod``, ``metric``, ...).
"""

from __future__ import annotations

import itertools
import json
import textwrap

from streams.events import Causation, InboxEvent
from streams.events import DELETES
from streams.nodeaggregate.usage import summary as usage_summary
from streams.objects import load_documents, to_record
from streams.scheduler.domain import SchedulingDomain
from streams.schemas import codec

_offsets = itertools.count()

GI = 1 << 30
MI = 1 << 20
T0 = 1_700_000_000_000
"""A base event time (ms) for tests that care about time."""

TOPICS = {"Pod": "koord.pods", "Node": "koord.nodes", "NodeMetric": "koord.nodemetrics",
          "ElasticQuota": "koord.quotas", "ElasticQuotaProfile": "koord.quotas",
          "KubeSchedulerConfiguration": "koord.configs", "Tick": "koord.ticks", "NodeResource": "koord.noderesources",
          "NodeUsage": "koord.nodeusages",
          "PodGroup": "koord.podgroups", "Reservation": "koord.reservations", "Device": "koord.devices",
          "NodeResourceTopology": "koord.noderesourcetopologies",
          "DeschedulerConfiguration": "koord.configs", "PodMigrationJob": "koord.podmigrationjobs",
          "PodDisruptionBudget": "koord.poddisruptionbudgets", "PersistentVolume": "koord.persistentvolumes",
          "PersistentVolumeClaim": "koord.persistentvolumeclaims", "StorageClass": "koord.storageclasses",
          "CSINode": "koord.csinodes"}


def event(kind: str, key: str, record: dict | None, source_offset: int | None = None, ts: int = 1000) -> InboxEvent:
    offset = next(_offsets) if source_offset is None else source_offset
    cause = Causation("koord.inbox.scheduling", 0, offset, TOPICS[kind], 0, offset)
    return InboxEvent(cause, ts, key, kind, record)


def applied(text: str, ts: int = 1000) -> InboxEvent:
    """The inbox event of the single object in the YAML ``text``, as ``koord apply`` records it."""
    (doc,) = load_documents("-", stdin_text=textwrap.dedent(text))
    obj = to_record(doc)
    return event(obj.kind, obj.key, obj.record, ts=ts)


def node(name: str, cpu: int = 4000, memory: int = 8 << 30, pods: int = 110, unschedulable: bool = False,
         labels: dict | None = None, annotations: dict | None = None, taints: list | None = None,
         extra: dict | None = None, ts: int = 1000) -> InboxEvent:
    alloc = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    return event("Node", name, {"metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
                                 "manifest": "{}", "capacity": alloc, "allocatable": alloc,
                                 "unschedulable": unschedulable, "taints": taints or []}, ts=ts)


def pod(name: str, cpu: int | None = 1000, memory: int | None = 1 << 30, node_name: str | None = None,
        phase: str | None = None, priority: int | None = None, namespace: str = "default",
        labels: dict | None = None, limits: dict | None = None, extra: dict | None = None,
        manifest: dict | None = None, node_selector: dict | None = None, tolerations: list | None = None,
        scheduler_name: str = "default-scheduler", ts: int = 1000, annotations: dict | None = None) -> InboxEvent:
    requests = {k: v for k, v in {"cpu": cpu, "memory": memory, **(extra or {})}.items() if v is not None}
    return event("Pod", f"{namespace}/{name}", {
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "labels": labels or {},
                     "annotations": annotations or {}},
        "manifest": json.dumps(manifest or {}), "requests": requests, "limits": limits or {},
        "nodeName": node_name, "phase": phase, "priority": priority, "schedulerName": scheduler_name,
        "priorityClassName": None, "nodeSelector": node_selector or {}, "tolerations": tolerations or [],
    }, ts=ts)


def usage_of(metric_event: InboxEvent) -> InboxEvent:
    """The NodeUsage event the node aggregate sends the scheduling domain for a NodeMetric event."""
    record = usage_summary(metric_event.key, metric_event.record, metric_event.causation, metric_event.timestamp_ms)
    return event("NodeUsage", metric_event.key, record, ts=metric_event.timestamp_ms)


def metric(node_name: str, update_ms: int | None, usage: dict | None = None, pods: list | None = None,
           aggregated: list | None = None, ts: int = 1000, report_interval: int = 60) -> InboxEvent:
    """The NodeUsage of a NodeMetric record with these fields (``usage`` None: no status.nodeMetric)."""
    manifest = {"spec": {"metricCollectPolicy": {"reportIntervalSeconds": report_interval}},
                "status": {"nodeMetric": {}} if usage is not None else {}}
    return usage_of(event("NodeMetric", node_name, {
        "metadata": {"name": node_name}, "manifest": json.dumps(manifest), "nodeUsage": usage or {},
        "podsMetric": pods or [], "updateTime": update_ms, "systemUsage": {},
        "aggregatedNodeUsages": aggregated or [], "hostApplicationMetric": [], "prodReclaimable": {}}, ts=ts))


def quota(name: str, max_: dict, min_: dict | None = None, namespace: str = "default", parent: str | None = None,
          is_parent: bool = False, allow_lent: bool = True, labels: dict | None = None,
          annotations: dict | None = None, ts: int = 1000) -> InboxEvent:
    all_labels = {"quota.scheduling.koordinator.sh/is-parent": "true" if is_parent else "false",
                  "quota.scheduling.koordinator.sh/allow-lent-resource": "true" if allow_lent else "false",
                  **({"quota.scheduling.koordinator.sh/parent": parent} if parent else {}), **(labels or {})}
    return event("ElasticQuota", f"{namespace}/{name}", {
        "metadata": {"name": name, "namespace": namespace, "labels": all_labels, "annotations": annotations or {}},
        "manifest": "{}", "min": min_ or {}, "max": max_}, ts=ts)


def pod_group(name: str, min_member: int, namespace: str = "default", timeout_s: int | None = None,
              annotations: dict | None = None, ts: int = 1000) -> InboxEvent:
    return event("PodGroup", f"{namespace}/{name}", {
        "metadata": {"name": name, "namespace": namespace, "uid": None, "labels": {},
                     "annotations": annotations or {}, "generation": 0},
        "manifest": "{}", "minMember": min_member, "scheduleTimeoutSeconds": timeout_s, "minResources": {}}, ts=ts)


def reservation(name: str, cpu: int, owners: list | None = None, node_name: str | None = None, ttl: str | None = None,
                labels: dict | None = None, ts: int = 1000, **spec) -> InboxEvent:
    """A Reservation record as ``koord apply`` converts it (requests from the template's one container)."""
    requests = {"cpu": cpu, **spec.pop("extra_requests", {})}
    template_spec = {"containers": [{"name": "main", "resources": {"requests": {
        k: (f"{v}m" if k == "cpu" else str(v)) for k, v in requests.items()}}}]}
    if node_name:
        template_spec["nodeName"] = node_name
    manifest = {"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Reservation",
                "metadata": {"name": name, "labels": labels or {}},
                "spec": {"template": {"spec": template_spec}, "owners": owners if owners is not None else [{}],
                         **({"ttl": ttl} if ttl else {}), **spec}}
    return event("Reservation", name, {
        "metadata": {"name": name, "namespace": None, "uid": f"uid-{name}", "labels": labels or {},
                     "annotations": {}, "generation": 0},
        "manifest": json.dumps(manifest), "requests": requests, "nodeName": node_name}, ts=ts)


def tick(ts: int) -> InboxEvent:
    return event("Tick", "tick", {"timestamp": ts}, ts=ts)


def scheduler_config(document: dict, ts: int = 1000) -> InboxEvent:
    return event("KubeSchedulerConfiguration", "koord-scheduler",
                 {"metadata": {"name": "koord-scheduler"}, "manifest": json.dumps(document)}, ts=ts)


def descheduler_config(document: dict, ts: int = 1000) -> InboxEvent:
    return event("DeschedulerConfiguration", "koord-descheduler",
                 {"metadata": {"name": "koord-descheduler"}, "manifest": json.dumps(document)}, ts=ts)


def deleted(kind: str, key: str, ts: int = 1000) -> InboxEvent:
    return event(kind, key, None, ts=ts)


def run(*events, domain: SchedulingDomain | None = None) -> tuple[SchedulingDomain, list[tuple[str, dict]]]:
    """Feed ``events`` to a domain; every output but a deletion must encode with its Avro schema."""
    domain = domain or SchedulingDomain("default")
    out = []
    for ev in events:
        for name, record in domain.handle(ev):
            if DELETES not in record:
                codec.encode(name, record)
            out.append((name, record))
    return domain, out


def decisions(outputs) -> list[dict]:
    return [record for name, record in outputs if name == "SchedulingDecision"]


# -- Kubernetes objects through `koord apply`'s conversion ------------------------------------

def rfc3339(ms: int) -> str:
    import datetime

    moment = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def converted(body: dict, ts: int = 1000) -> InboxEvent:
    """The inbox event of one Kubernetes object given as a dict."""
    (doc,) = load_documents("-", stdin_text=json.dumps(body))
    obj = to_record(doc)
    return event(obj.kind, obj.key, obj.record, ts=ts)


def k8s_pod(name: str, namespace: str = "default", priority: int | None = None, requests: dict | None = None,
            limits: dict | None = None, owner_kind: str | None = None, node_name: str | None = None,
            scheduled_at: int | None = None, labels: dict | None = None, annotations: dict | None = None,
            containers: list | None = None, init_containers: list | None = None, overhead: dict | None = None,
            affinity: dict | None = None, node_selector: dict | None = None, tolerations: list | None = None,
            scheduler_name: str | None = None, ts: int = 1000) -> InboxEvent:
    resources = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    meta = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "labels": labels or {},
            "annotations": annotations or {}}
    if owner_kind:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner_kind, "name": "owner", "uid": "u"}]
    spec: dict = {"containers": containers or [{"name": "main", "resources": resources}]}
    for key, value in (("initContainers", init_containers), ("overhead", overhead), ("affinity", affinity),
                       ("nodeSelector", node_selector), ("tolerations", tolerations), ("nodeName", node_name),
                       ("priority", priority), ("schedulerName", scheduler_name)):
        if value is not None:
            spec[key] = value
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    if scheduled_at is not None:
        body["status"] = {"conditions": [{"type": "PodScheduled", "status": "True",
                                          "lastTransitionTime": rfc3339(scheduled_at)}]}
    return converted(body, ts=ts)


def k8s_node(name: str, allocatable: dict, labels: dict | None = None, annotations: dict | None = None,
             taints: list | None = None, unschedulable: bool = False, ts: int = 1000) -> InboxEvent:
    body = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
            "spec": {"unschedulable": unschedulable, "taints": taints or []},
            "status": {"allocatable": allocatable, "capacity": allocatable}}
    return converted(body, ts=ts)


def k8s_metric(name: str, update_ms: int | None, node_usage: dict | None = None, pods: list | None = None,
               aggregated: list | None = None, report_interval: int = 60, ts: int = 1000) -> InboxEvent:
    """The NodeUsage of a NodeMetric; ``node_usage`` None means no status.nodeMetric. pods: (namespace, name,
    priority, usage)."""
    status: dict = {}
    if update_ms is not None:
        status["updateTime"] = rfc3339(update_ms)
    if node_usage is not None or aggregated:
        status["nodeMetric"] = {"nodeUsage": {"resources": node_usage or {}}}
        if aggregated:
            status["nodeMetric"]["aggregatedNodeUsages"] = [
                {"duration": duration, "usage": {kind: {"resources": usage} for kind, usage in usages.items()}}
                for duration, usages in aggregated]
    if pods:
        status["podsMetric"] = [{"namespace": ns, "name": n, **({"priority": p} if p else {}),
                                 "podUsage": {"resources": usage}} for ns, n, p, usage in pods]
    body = {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "metadata": {"name": name},
            "spec": {"metricCollectPolicy": {"reportIntervalSeconds": report_interval}}, "status": status}
    return usage_of(converted(body, ts=ts))


def profile_with(plugin: str, args: dict | None, ts: int = 1000, **plugins) -> InboxEvent:
    """A configuration whose default profile has ``args`` for ``plugin`` (plus plugin-set overrides)."""
    document = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                "profiles": [{"schedulerName": "default-scheduler", "plugins": plugins,
                              "pluginConfig": [{"name": plugin, "args": args or {}}]}]}
    return scheduler_config(document, ts=ts)


def plugin_of(domain: SchedulingDomain, name: str, scheduler: str = "default-scheduler"):
    return domain.frameworks[scheduler].plugins[name]


def pod_info(ev: InboxEvent):
    from streams.objects import podinfo

    return podinfo.from_record(ev.key, ev.record)


def node_scores(plugin, state, pod, candidates) -> list[int]:
    """A score plugin's scores of every node as a list: an ``int`` it returns is that score on every node."""
    import numpy as np

    return np.broadcast_to(plugin.score(state, pod, candidates), candidates.shape).tolist()
