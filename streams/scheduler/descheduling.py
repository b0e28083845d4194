"""The descheduling stage of a scheduling domain: LowNodeLoad rounds and PodMigrationJobs.

``Descheduling`` holds the stage's state; ``DeschedulingHook`` is the domain's side of it: the
DeschedulerConfiguration and PodMigrationJob events, and after each event a ``step`` whose changed jobs
(``descheduler.migration.records``), evictions and ReservationFirst reservations become outputs. The jobs read
the reservations they created through the ``ReservationHolder`` plugin.

Why a stage of the scheduling domain and not an aggregate of its own: a round reads exactly what the
domain already holds (nodes with their raw allocatable, the pods assigned to each, the NodeMetrics) and
needs the scheduler's view of where a pod would fit; a separate aggregate would keep a second copy of all
of it, and could disagree with the scheduler about which node is free. The cost is that a round runs in
the domain's serial inbox; it runs at most once per ``deschedulingInterval`` of event time.

Workload replicas (for the per-workload limits): the pods the domain knows with the same controller
(``metadata.ownerReferences`` with ``controller: true``); a workload's unavailable pods are those of them
not assigned to a node. koordstream does not read Deployments or StatefulSets.

Pod fit on a target node (LowNodeLoad's nodeFit, ``nodeutil.NodeFit``): schedulable, nodeSelector and
required node affinity, NoSchedule/NoExecute taints tolerated, requests within allocatable - requested.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

from streams.descheduler import config as descheduler_config
from streams.descheduler.config import DeschedulerConfigError
from streams.descheduler.evictor import refusal
from streams.descheduler.lownodeload import LowNodeLoad
from streams.descheduler.migration.arbitration import WorkloadView
from streams.descheduler.migration.args import MigrationArgs
from streams.descheduler.migration.jobs import ABORTED, FINISHED, Job, Migrations, Reserve, ReservationView, Step
from streams.descheduler.snapshot import NodeView, PodView
from streams.events import InboxEvent, deletion
from streams.koordinator.annotations import (
    ANNOTATION_DESCHEDULER_EVICT, ANNOTATION_EVICTION_COST, ANNOTATION_KUBE_MIRROR, ANNOTATION_POD_DELETION_COST,
    ANNOTATION_RAW_ALLOCATABLE)
from streams.koordinator.classes import kube_qos_class
from streams.objects.fields import FieldReader
from streams.objects.kinds.nodemetric import rfc3339_millis
from streams.objects.nodeselector import matches
from streams.objects.podinfo import PodInfo
from streams.objects.quantity import QuantityError, resource_list
from streams.scheduler.framework import ReservationHolder
from streams.scheduler.outputs import UNSCHEDULABLE, Outputs
from streams.scheduler.state import NO_SCHEDULE_EFFECTS, Cluster
from streams.scheduler.taints import tolerated

SYSTEM_CRITICAL_PRIORITY = 2_000_000_000


class Descheduling:
    def __init__(self) -> None:
        self.config: descheduler_config.DeschedulerConfig | None = None
        self.record: dict | None = None
        self.plugins: dict[str, LowNodeLoad] = {}
        self.migrations = Migrations()
        self.last_round_ms: int | None = None

    def apply(self, record: dict | None) -> None:
        """Apply a DeschedulerConfiguration record (None: deleted); raises DeschedulerConfigError."""
        config = None if record is None else descheduler_config.parse(record["manifest"])
        self.config, self.record = config, record
        self.plugins = {name: LowNodeLoad(args) for name, args in (config.balance if config else ())}

    def submit(self, name: str, record: dict | None, now_ms: int) -> bool:
        """A PodMigrationJob applied, re-read (our own status coming back) or deleted; True when it changed."""
        jobs = self.migrations.jobs
        if record is None:
            return jobs.pop(name, None) is not None
        held = jobs.get(name)
        if held is not None:
            if record.get("phase") == ABORTED:
                return self.migrations.abort(name)
            paused = bool(record.get("paused"))
            if held.paused != paused:
                held.paused = paused
                return True
            return False
        ref = record.get("podRef") or {}
        if not ref.get("name"):
            return False
        phase = record.get("phase") or "Pending"
        jobs[name] = Job(name, f"{ref.get('namespace') or 'default'}/{ref['name']}", now_ms, record.get("mode"),
                         record.get("ttlMs"), bool(record.get("paused")), phase)
        return True

    def step(self, cluster: Cluster, now_ms: int, reservations: Mapping[str, ReservationView] | None = None
             ) -> Step:
        config = self.config
        if config is None and not self.migrations.jobs:
            return Step([], [], [], [])
        due = config is not None and (self.last_round_ms is None or now_ms - self.last_round_ms >= config.interval_ms)
        migration = config.migration if config is not None else MigrationArgs()
        if not due and all(job.phase in FINISHED for job in self.migrations.jobs.values()):
            # Only finished jobs to scavenge: nothing reads the pods, whose views cost O(pods) per event.
            return self.migrations.step(now_ms, {}, {}, {}, {}, migration, reservations)
        pods, nodes_of, workload_of, workloads = _pod_views(cluster)
        created: list[Job] = []
        if due:
            self.last_round_ms = now_ms
            created = self._round(cluster, config, pods, now_ms)
        step = self.migrations.step(now_ms, pods, nodes_of, workload_of, workloads, migration, reservations)
        seen = {job.name for job in step.changed} | {job.name for job in step.deleted}
        return dataclasses.replace(step, changed=[job for job in created if job.name not in seen] + step.changed)

    def _round(self, cluster: Cluster, config, pods: Mapping[str, PodView], now_ms: int) -> list[Job]:
        views = _node_views(cluster, pods, config, now_ms)
        evictor = config.migration.evictor
        created = []
        for name in sorted(self.plugins):
            plugin = self.plugins[name]
            fits = _fits(cluster, pods)
            for eviction in plugin.balance(views, now_ms, fits, lambda pod: refusal(pod, evictor) is None
                                           and not self.migrations.active_for(pod.key), config.limiter()):
                if eviction.dry_run or config.dry_run or self.migrations.active_for(eviction.pod):
                    continue
                namespace, _, pod_name = eviction.pod.partition("/")
                job = Job(f"{namespace}.{pod_name}.{now_ms}", eviction.pod, now_ms, trigger=eviction.reason)
                self.migrations.jobs[job.name] = job
                created.append(job)
        return created

    def entries(self) -> dict[str, dict]:
        out = {}
        if self.record is not None or self.last_round_ms is not None:
            out["meta"] = {"record": self.record, "last_round_ms": self.last_round_ms}
        out.update(self.migrations.entries())
        for name, plugin in self.plugins.items():
            out.update({f"detector/{name}/{key}": value for key, value in plugin.entries().items()})
        return out

    def restore(self, entries: Mapping[str, Mapping]) -> None:
        meta = entries.get("meta") or {}
        if meta.get("record") is not None:
            self.apply(meta["record"])
        self.last_round_ms = meta.get("last_round_ms")
        self.migrations.restore({k: v for k, v in entries.items() if k.startswith(("job/", "bucket/"))})
        for name, plugin in self.plugins.items():
            prefix = f"detector/{name}/"
            plugin.restore({k[len(prefix):]: v for k, v in entries.items() if k.startswith(prefix)})


def reservation_for(reserve: Reserve, pod: PodInfo) -> dict:
    """The Reservation record a ReservationFirst job creates: the pod's template, kept off its node, owned by the
    pod's controller (so its replacement may use it) or else by the pod itself."""
    manifest = _manifest(pod)
    meta = manifest.get("metadata") if isinstance(manifest.get("metadata"), dict) else {}
    spec = dict(manifest.get("spec") if isinstance(manifest.get("spec"), dict) else {})
    spec.pop("nodeName", None)
    if reserve.avoid_node:
        term = {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": [reserve.avoid_node]}]}
        spec["affinity"] = {**(spec.get("affinity") or {}), "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    controller = next((o for o in meta.get("ownerReferences") or [] if isinstance(o, dict) and o.get("controller")),
                      None)
    owner = ({"controller": {k: controller[k] for k in ("apiVersion", "kind", "name", "uid") if controller.get(k)}
              | {"namespace": pod.namespace}} if controller else
             {"object": {"namespace": pod.namespace, "name": pod.name}})
    body = {"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Reservation",
            "metadata": {"name": reserve.name},
            "spec": {"template": {"metadata": {"namespace": pod.namespace, "labels": dict(pod.labels)}, "spec": spec},
                     "owners": [owner], "allocateOnce": True}}
    return {"metadata": {"name": reserve.name, "namespace": None, "uid": None, "labels": {}, "annotations": {},
                         "generation": 0},
            "manifest": json.dumps(body, sort_keys=True, separators=(",", ":")),
            "requests": dict(pod.requests), "nodeName": None}


def _manifest(pod: PodInfo) -> dict:
    try:
        value = json.loads((pod.record or {}).get("manifest") or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _int(text: str | None) -> int:
    try:
        return int(text) if text is not None else 0
    except ValueError:
        return 0


def pod_view(pod: PodInfo) -> tuple[PodView, str | None]:
    """The descheduler's view of a pod, and the uid of its controller."""
    manifest = _manifest(pod)
    meta = manifest.get("metadata") if isinstance(manifest.get("metadata"), dict) else {}
    spec = manifest.get("spec") if isinstance(manifest.get("spec"), dict) else {}
    volumes = [v for v in spec.get("volumes") or [] if isinstance(v, dict)]
    created = rfc3339_millis(FieldReader(), meta.get("creationTimestamp"), "metadata.creationTimestamp") \
        if isinstance(meta.get("creationTimestamp"), str) else None
    controller = next((o.get("uid") or f"{o.get('kind')}/{o.get('name')}" for o in meta.get("ownerReferences") or []
                       if isinstance(o, dict) and o.get("controller")), None)
    kube_qos = kube_qos_class((c.requests, c.limits) for c in pod.containers + pod.init_containers)
    priority = pod.priority or 0
    view = PodView(
        pod.key, pod.namespace, pod.name, priority, pod.priority_class, pod.qos_class, kube_qos,
        _int(pod.annotations.get(ANNOTATION_POD_DELETION_COST)), _int(pod.annotations.get(ANNOTATION_EVICTION_COST)),
        created or 0, dict(pod.labels), pod.owner_kinds, ANNOTATION_DESCHEDULER_EVICT in pod.annotations,
        priority >= SYSTEM_CRITICAL_PRIORITY, ANNOTATION_KUBE_MIRROR in pod.annotations,
        bool(meta.get("deletionTimestamp")), any("emptyDir" in v or "hostPath" in v for v in volumes),
        any("persistentVolumeClaim" in v for v in volumes), pod.phase or "Running")
    return view, controller


def _pod_views(cluster: Cluster):
    pods: dict[str, PodView] = {}
    workload_of: dict[str, str] = {}
    members: dict[str, list[str]] = {}
    for key in sorted(cluster.pods):
        view, controller = pod_view(cluster.pods[key])
        pods[key] = view
        if controller:
            workload_of[key] = controller
            members.setdefault(controller, []).append(key)
    workloads = {uid: WorkloadView(len(keys), frozenset(k for k in keys if k not in cluster.assignment))
                 for uid, keys in members.items()}
    return pods, dict(cluster.assignment), workload_of, workloads


def _raw_allocatable(cluster: Cluster, name: str) -> dict[str, int]:
    node = cluster.nodes[name]
    raw = node.annotations.get(ANNOTATION_RAW_ALLOCATABLE)
    if raw:
        try:
            return resource_list(json.loads(raw))
        except (ValueError, QuantityError, TypeError, AttributeError):
            pass
    return dict(node.allocatable)


def _node_views(cluster: Cluster, pods: Mapping[str, PodView], config, now_ms: int) -> list[NodeView]:
    views = []
    expiry = {name: args.node_metric_expiration_ms for name, args in config.balance}
    expiration_ms = min(expiry.values()) if expiry else 180_000
    for name in sorted(cluster.nodes):
        node = cluster.nodes[name]
        if config.node_selector is not None and not config.node_selector.matches(node.labels):
            continue
        metric = cluster.metrics.get(name)
        fresh = metric is not None and metric.get("updateTime") is not None \
            and not (expiration_ms > 0 and now_ms - metric["updateTime"] >= expiration_ms)
        on_node = tuple(pods[key] for key in cluster.pods_assigned_to(name) if key in pods)
        usage = {f"{p['namespace']}/{p['name']}": dict(p.get("usage") or {})
                 for p in (metric or {}).get("podsMetric") or []}
        views.append(NodeView(name, _raw_allocatable(cluster, name), dict(node.labels), node.unschedulable, on_node,
                              dict(metric.get("systemUsage") or {}) if fresh else None, usage))
    return views


def _fits(cluster: Cluster, pods: Mapping[str, PodView]):
    columns = cluster.columns

    def fits(view: PodView, node_name: str) -> bool:
        node = cluster.nodes.get(node_name)
        pod = cluster.pods.get(view.key)
        if node is None or pod is None or node.unschedulable:
            return False
        if any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
            return False
        if pod.required_terms is not None and not any(
                all(matches(r, node.labels.get(r.key)) for r in term.match_expressions)
                for term in pod.required_terms if term.match_expressions):
            return False
        if any(t.get("effect") in NO_SCHEDULE_EFFECTS and not tolerated(t, pod.tolerations) for t in node.taints):
            return False
        row = columns.row[node_name]
        for resource, amount in pod.requests.items():
            index = columns.index.get(resource)
            free = 0 if index is None else columns.allocatable[index, row] - columns.requested[index, row]
            if amount > free:
                return False
        return True

    return fits


class DeschedulingHook:
    """The descheduling part of ``SchedulingDomain``: DeschedulerConfiguration and PodMigrationJob events,
    and a ``step`` after each event, whose jobs, evictions and reservations become outputs."""

    def _on_descheduler_config(self, event: InboxEvent, out: Outputs) -> None:
        try:
            self.descheduling.apply(None if event.deleted else dict(event.record))
        except (DeschedulerConfigError, ValueError) as err:
            out.dead_letter(f"DeschedulerConfiguration {event.key} rejected: {err}")
            return
        self._descheduler_changed()

    def _on_migration_job(self, event: InboxEvent, out: Outputs) -> None:
        if self.descheduling.submit(event.key, None if event.deleted else dict(event.record), self.cluster.now_ms):
            self._descheduler_changed()

    def _descheduler_changed(self) -> None:
        keys = {f"descheduler/{key}" for key in self.descheduling.entries()}
        self._dirty.update(keys | self._descheduler_keys)
        self._descheduler_keys = keys

    def _deschedule(self, out: Outputs) -> None:
        before = self.descheduling.last_round_ms
        step = self.descheduling.step(self.cluster, self.cluster.now_ms, self._reservation_views())
        for job in step.changed:
            out.migration_job(job)
        for evict in step.evictions:
            out.eviction(evict)
        for reserve in step.reserves:
            pod = self.cluster.pods.get(reserve.pod)
            if pod is not None:
                out.items.append(("Reservation", reservation_for(reserve, pod)))
        for job in step.deleted:
            out.items.append(("PodMigrationJob", deletion(job.name)))
            if job.reservation:
                out.items.append(("Reservation", deletion(job.reservation)))
        if step.changed or step.evictions or step.reserves or step.deleted \
                or before != self.descheduling.last_round_ms:
            self._descheduler_changed()

    def _reservation_views(self) -> dict[str, ReservationView]:
        """What migration jobs read of the reservations they created (from the ``ReservationHolder`` plugin)."""
        wanted = {job.reservation for job in self.descheduling.migrations.jobs.values() if job.reservation}
        plugin = next(iter(self._enabled(ReservationHolder)), None)
        if not wanted or plugin is None:
            return {}
        views = {}
        for name in sorted(wanted):
            held = plugin.reservation(name)
            if held is None:
                continue
            phase, node, owners, pod_key = held
            state = self.pods.get(pod_key)
            message = state.last_message if state is not None and state.last_result == UNSCHEDULABLE else ""
            views[name] = ReservationView(phase, node, owners, message)
        return views
