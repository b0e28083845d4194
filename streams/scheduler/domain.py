"""The scheduling-domain aggregate: state and the pure transition.

``SchedulingDomain.handle(event)`` applies one inbox event and returns what it causes, as
(Avro schema name, record) pairs: ``SchedulingDecision`` (v2), ``ElasticQuotaStatus`` (a
quota whose runtime, used or request changed) and ``DeadLetter`` (stage "scheduling": a
KubeSchedulerConfiguration that cannot be applied, or an ElasticQuota/Profile the quota
rules refuse; the previous state stays). It reads no clock: time is the largest event
timestamp seen (Tick events let it pass), so the same inbox gives the same outputs.

Inbox kinds: Node, NodeResource (batch/mid allocatable overlaid on the node's), Pod,
NodeUsage (what the node aggregate sends of a node's NodeMetric, keyed by node name), ElasticQuota, ElasticQuotaProfile,
KubeSchedulerConfiguration (record {"metadata", "manifest"}), Tick (record {"timestamp"}), and
the kinds plugins watch (``framework.WatchesObjects``: PodGroup, Reservation, ...), kept in
``Cluster.objects`` for them, and the descheduling stage's DeschedulerConfiguration and
PodMigrationJob (``descheduling``): after each event it may run a LowNodeLoad round and steps the
migration jobs, which yields ``PodMigrationJob`` records (their status, written back to their topic)
and ``Eviction`` decisions.

Every Pod event yields exactly one decision about that pod, stating where it stands after
the event: ``Scheduled``, ``Unschedulable``, ``Waiting`` (reserved on a node, held by a Permit
plugin: a gang member waiting for its gang), ``Bound`` (it arrived with spec.nodeName) or
``Released`` (it ended or was deleted) — ``koord apply --wait`` relies on it. A waiting pod's
``Scheduled`` or ``Unschedulable`` comes with the event that allows or rejects it (another
member's arrival, a rejection, or its timeout passing in event time). Pending pods
are retried by the queue (``queue``) when an event concerns what rejected them and their
backoff has passed; a retry is emitted only when its outcome changed. A pod preempted by
ElasticQuota gets a ``Preempted`` decision (its node in ``nodeName``) and an ``Eviction``
decision (carried out like every eviction: the simulator ends the pod, the bridge calls the
Eviction API), releases its resources and goes back to the queue until its pod ends. A source event at or below the
last offset applied for its source partition is a duplicate and is ignored.

State is persisted as flat JSON-able entries (``entries()`` / ``restore()`` /
``take_changes()``): the objects (nodes in row order, pods with their queue state,
metrics, quotas, profiles, the configuration), source offsets, the last quota statuses
sent and the clock. Plugins rebuild their derived state from the objects, so a restored
domain makes the same decisions as the live one.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

from streams import decisions
from streams.deadletter import dead_letter_record
from streams.events import InboxEvent, decision_id, deletion
from streams.koordinator.annotations import ANNOTATION_EVICT_REASON, ANNOTATION_EVICT_TRIGGER
from streams.koordinator.classes import PRIORITY_NONE_NAME
from streams.objects.duration import format_duration
from streams.scheduler import config as scheduler_config
from streams.objects import podinfo
from streams.scheduler import registry
from streams.objects.args import ArgsError
from streams.descheduler.config import DeschedulerConfigError
from streams.descheduler.lownodeload import NAME as LOW_NODE_LOAD
from streams.descheduler.migration.jobs import CONDITION_ARBITRATION, Evict, Job, ReservationView
from streams.scheduler.cycle import CycleResult, Framework, run_cycle, unreserve
from streams.scheduler.descheduling import Descheduling, reservation_for
from streams.scheduler.framework import (
    CONFIG_EVENT, METRIC_EVENT, NODE_EVENT, POD_DELETE, QUOTA_EVENT, CycleState, ObjectPods, PodMutation,
    QueueGroup, StatusReporter, sentence)
from streams.scheduler.plugins.deviceshare.devices import KIND as DEVICE_KIND, device_sync
from streams.objects.podinfo import PodInfo
from streams.scheduler.queue import QueuedPod, SchedulingQueue
from streams.scheduler.state import (
    USAGE_FIELDS, Cluster, MetricChanged, NodeChanged, NodeObject, ObjectChanged, PodAssigned, PodChanged,
    PodUnassigned, QuotaObjectsChanged, WaitingPod)
from streams.schemas import codec

SCHEDULED, UNSCHEDULABLE, BOUND, RELEASED, PREEMPTED = "Scheduled", "Unschedulable", "Bound", "Released", "Preempted"
WAITING = "Waiting"
ENDED_PHASES = ("Succeeded", "Failed")
STAGE = "scheduling"
STATUS_SYNC_INTERVAL_MS = 1000
"""ElasticQuotaStatus is synced at most this often (event time), as Koordinator's quota status
controller syncs every second; a change to the quota objects themselves is synced at once. The interval
counts from the last sync that published a status: the sync time is in the table and the plugin's status
version is not, so a domain restored from its table publishes at the events where one that never stopped
does."""


@dataclasses.dataclass
class PodState:
    seq: int
    node: str | None = None
    assigned_at: int | None = None
    last_result: str = ""
    last_message: str = ""


class SchedulingDomain:
    def __init__(self, domain: str) -> None:
        self.domain = domain
        self.cluster = Cluster()
        self.pods: dict[str, PodState] = {}
        self.node_records: dict[str, dict] = {}
        self.node_resources: dict[str, dict] = {}
        self.config_record: dict | None = None
        self.config = scheduler_config.default_config()
        self.frameworks: dict[str, Framework] = {}
        self.queue = SchedulingQueue(registry.plugins_by_event(registry.REGISTRY))
        self.admissions = registry.object_admissions(registry.REGISTRY)
        """Object kind -> the plugins whose webhook admits its changes (whatever the profiles enable)."""
        self.watched = registry.watched_kinds(registry.REGISTRY)
        """Object kinds plugins watch, kept in ``Cluster.objects``."""
        self.object_pod_kinds = frozenset(kind for factory in registry.REGISTRY.values()
                                          if isinstance(factory, ObjectPods) for kind in factory.pod_kinds)
        """Kinds whose objects are scheduled as pods (reserve pods), keyed "<kind>/<name>"."""
        self.descheduling = Descheduling()
        self._descheduler_keys: set[str] = set()
        self.source_offsets: dict[str, int] = {}
        self.statuses: dict[str, dict] = {}
        self.seq = 0
        self._dirty: set[str] = set()
        self._status_version: tuple | None = None
        self.status_synced_at: int | None = None
        self._build_frameworks(self.config)

    # -- configuration -------------------------------------------------------------

    def _build_frameworks(self, config: scheduler_config.SchedulerConfig) -> None:
        frameworks = {}
        try:
            for profile in config.profiles:
                frameworks[profile.scheduler_name] = Framework(profile, self.cluster)
        except Exception:
            for framework in frameworks.values():
                framework.close()
            raise
        for framework in self.frameworks.values():
            framework.close()
        self.frameworks = frameworks
        self.config = config
        self._enabled_cache: dict[type, list] = {}
        self.queue.initial_backoff_ms = config.initial_backoff_ms
        self.queue.max_backoff_ms = config.max_backoff_ms

    def _framework(self, pod: PodInfo) -> Framework:
        return self.frameworks[self.config.profile_for(pod.scheduler_name).scheduler_name]

    def _enabled(self, protocol: type) -> list:
        """The enabled plugins implementing ``protocol``, each name once: the instance of the first profile
        that enables it (webhooks and statuses are cluster-wide, not per profile). Cached per configuration:
        checking a runtime protocol is slow."""
        cached = self._enabled_cache.get(protocol)
        if cached is not None:
            return cached
        found: dict[str, object] = {}
        for profile in self.config.profiles:
            for name, plugin in self.frameworks[profile.scheduler_name].plugins.items():
                if name not in found and isinstance(plugin, protocol):
                    found[name] = plugin
        self._enabled_cache[protocol] = list(found.values())
        return self._enabled_cache[protocol]

    def _refused(self, event: InboxEvent, name: str, out: "_Outputs") -> bool:
        """Run the object webhooks of ``event.kind``; a refusal becomes a DeadLetter (the state stays)."""
        record = None if event.deleted else dict(event.record)
        for admission in self.admissions.get(event.kind, ()):
            reason = admission.admit(event.kind, name, record, self.cluster)
            if reason is not None:
                out.dead_letter(reason)
                return True
        return False

    def _observe(self, change: object) -> None:
        for framework in self.frameworks.values():
            framework.observe(change)

    # -- persistence -------------------------------------------------------------

    def entries(self) -> dict[str, dict]:
        """The whole state as flat entries (key -> JSON-able value)."""
        keys = {"meta", "config"}
        keys.update(f"node/{n}" for n in self.node_records)
        keys.update(f"noderesource/{n}" for n in self.node_resources)
        keys.update(f"pod/{k}" for k in self.pods)
        keys.update(f"metric/{n}" for n in self.cluster.metrics)
        keys.update(f"quota/{n}" for n in self.cluster.quotas)
        keys.update(f"profile/{k}" for k in self.cluster.profiles)
        keys.update(f"source/{s}" for s in self.source_offsets)
        keys.update(f"status/{s}" for s in self.statuses)
        keys.update(f"object/{kind}/{name}" for kind, objects in self.cluster.objects.items() for name in objects)
        keys.update(f"descheduler/{key}" for key in self.descheduling.entries())
        out = {}
        for key in keys:
            value = self._entry(key)
            if value is not None:
                out[key] = value
        return out

    def _entry(self, key: str) -> dict | None:
        kind, _, name = key.partition("/")
        if kind == "meta":
            return {"seq": self.seq, "now": self.cluster.now_ms, "status_synced_at": self.status_synced_at}
        if kind == "config":
            return {"record": self.config_record} if self.config_record is not None else None
        if kind == "node":
            record = self.node_records.get(name)
            row = self.cluster.columns.row.get(name)
            return None if record is None else {"record": record, "row": row}
        if kind == "noderesource":
            return self.node_resources.get(name)
        if kind == "pod":
            state = self.pods.get(name)
            if state is None:
                return None
            queued = self.queue.pods.get(name)
            waiting = self.cluster.waiting.pods.get(name)
            return {"record": self.cluster.pods[name].record, **dataclasses.asdict(state),
                    "queue": queued.to_entry() if queued else None,
                    "waiting": dataclasses.asdict(waiting) if waiting else None,
                    "annotations": self.cluster.bind_annotations.get(name)}
        if kind == "metric":
            return self.cluster.metrics.get(name)
        if kind == "quota":
            return self.cluster.quotas.get(name)
        if kind == "profile":
            return self.cluster.profiles.get(name)
        if kind == "source":
            offset = self.source_offsets.get(name)
            return None if offset is None else {"offset": offset}
        if kind == "status":
            return self.statuses.get(name)
        if kind == "object":
            kind, _, name = name.partition("/")
            return self.cluster.objects.get(kind, {}).get(name)
        if kind == "descheduler":
            return self.descheduling.entries().get(name)
        return None

    @classmethod
    def restore(cls, domain: str, entries: Mapping[str, dict]) -> "SchedulingDomain":
        state = cls(domain)
        cluster = state.cluster
        groups: dict[str, dict[str, dict]] = {}
        for key, value in entries.items():
            kind, _, name = key.partition("/")
            groups.setdefault(kind, {})[name] = value
        meta = groups.get("meta", {}).get("", {})
        state.seq = meta.get("seq", 0)
        cluster.now_ms = meta.get("now", 0)
        state.status_synced_at = meta.get("status_synced_at")
        state.source_offsets = {k: v["offset"] for k, v in groups.get("source", {}).items()}
        state.statuses = dict(groups.get("status", {}))
        state.node_resources = dict(groups.get("noderesource", {}))
        nodes = groups.get("node", {})
        for name in sorted(nodes, key=lambda n: (nodes[n].get("row") is None, nodes[n].get("row") or 0, n)):
            state.node_records[name] = nodes[name]["record"]
            state._put_node(name)
        cluster.metrics = dict(groups.get("metric", {}))
        cluster.quotas = dict(groups.get("quota", {}))
        cluster.profiles = dict(groups.get("profile", {}))
        for key, value in sorted(groups.get("object", {}).items()):
            kind, _, name = key.partition("/")
            cluster.objects.setdefault(kind, {})[name] = value
        for key in sorted(groups.get("pod", {})):
            value = groups["pod"][key]
            info = podinfo.from_record(key, value["record"])
            cluster.pods[key] = info
            state.pods[key] = PodState(value["seq"], value["node"], value["assigned_at"], value["last_result"],
                                       value["last_message"])
            if value["node"] is not None:
                state._account(key, info, value["node"], value["assigned_at"] or 0)
            if value.get("waiting"):
                waiting = value["waiting"]
                cluster.waiting.pods[key] = WaitingPod(waiting["node"], waiting["deadline_ms"], waiting["timeout_ms"],
                                                       tuple(waiting["pending"]))
            if value.get("annotations"):
                cluster.bind_annotations[key] = dict(value["annotations"])
            if value.get("queue"):
                queued = value["queue"]
                state.queue.pods[key] = QueuedPod(**{**queued, "rejected_by": tuple(queued["rejected_by"])})
        if groups.get("descheduler"):
            state.descheduling.restore(groups["descheduler"])
            state._descheduler_keys = {f"descheduler/{key}" for key in groups["descheduler"]}
        record = groups.get("config", {}).get("", {}).get("record")
        config = scheduler_config.default_config()
        if record is not None:
            config = scheduler_config.parse_manifest(record["manifest"])
            state.config_record = record
        state._build_frameworks(config)
        return state

    def take_changes(self) -> dict[str, dict | None]:
        """Entries changed since the last call (None = removed)."""
        changed = {key: self._entry(key) for key in sorted(self._dirty)}
        self._dirty = set()
        return changed

    # -- the transition ------------------------------------------------------------

    def handle(self, event: InboxEvent) -> list[tuple[str, dict]]:
        """Apply one event; return the (schema name, record) outputs it causes."""
        cause = event.causation
        source = f"{cause.source_topic}/{cause.source_partition}"
        if self.source_offsets.get(source, -1) >= cause.source_offset:
            return []
        self.source_offsets[source] = cause.source_offset
        self._dirty.add(f"source/{source}")
        self._dirty.add("meta")
        now = event.timestamp_ms
        if event.kind == "Tick" and event.record is not None:
            now = max(now, int(event.record.get("timestamp") or 0))
        self.cluster.now_ms = max(self.cluster.now_ms, now)
        out = _Outputs(self, event)
        handler = {
            "Node": self._on_node, "NodeResource": self._on_node_resource, "Pod": self._on_pod,
            "NodeUsage": self._on_usage, "ElasticQuota": self._on_quota, "ElasticQuotaProfile": self._on_profile,
            "KubeSchedulerConfiguration": self._on_config, "DeschedulerConfiguration": self._on_descheduler_config,
            "PodMigrationJob": self._on_migration_job,
        }.get(event.kind)
        if handler is None and event.kind in self.watched:
            handler = self._on_object
        if handler is not None:
            handler(event, out)
        self._expire_waiting(out)
        self._refresh_object_pods(out)
        self._retry(out)
        out.flush_waiting()
        self._deschedule(out)
        self._emit_statuses(out)
        self._refresh_object_pods(out)
        for source in self._enabled(ObjectPods):
            out.items.extend(source.object_outputs())
        return out.items

    def _refresh_object_pods(self, out: "_Outputs") -> None:
        for source in self._enabled(ObjectPods):
            for key, record in source.refresh():
                self._object_pod(key, record, out)

    # -- nodes ---------------------------------------------------------------------

    def _node_object(self, name: str) -> NodeObject:
        record = self.node_records[name]
        meta = record.get("metadata") or {}
        allocatable = dict(record.get("allocatable") or {})
        overlay = self.node_resources.get(name)
        if overlay:
            allocatable.update(overlay.get("allocatable") or {})
        labels = dict(meta.get("labels") or {})
        device = self.cluster.objects.get(DEVICE_KIND, {}).get(name)
        if device is not None:
            synced = device_sync(device)
            allocatable.update(synced.allocatable)
            labels.update(synced.labels)
        return NodeObject(name, labels, dict(meta.get("annotations") or {}),
                          tuple(record.get("taints") or ()), bool(record.get("unschedulable")), allocatable)

    def _put_node(self, name: str) -> tuple[NodeObject | None, NodeObject]:
        cluster = self.cluster
        old = cluster.nodes.get(name)
        new = self._node_object(name)
        is_new = old is None
        cluster.nodes[name] = new
        cluster.columns.upsert(name, new.allocatable, new.unschedulable)
        if is_new or old.labels != new.labels:
            cluster.labels_version += 1
        if is_new or old.taints != new.taints:
            cluster.taints_version += 1
        if is_new:
            for key in sorted(cluster.pods_on_node.get(name, ())):
                pod = cluster.pods[key]
                cluster.columns.add_pod(name, pod.requests, pod.nonzero_requests())
        return old, new

    def _on_node(self, event: InboxEvent, out: "_Outputs") -> None:
        name = event.key
        cluster = self.cluster
        self._dirty.add(f"node/{name}")
        if event.deleted:
            if name not in self.node_records:
                return
            del self.node_records[name]
            old = cluster.nodes.pop(name)
            _, moved = cluster.columns.remove(name)
            cluster.labels_version += 1
            cluster.taints_version += 1
            if moved:
                self._dirty.add(f"node/{moved}")
            self._observe(NodeChanged(name, old, None, moved))
            return
        self.node_records[name] = dict(event.record)
        old, new = self._put_node(name)
        self._observe(NodeChanged(name, old, new))
        self._queue_event(NODE_EVENT)

    def _on_node_resource(self, event: InboxEvent, out: "_Outputs") -> None:
        name = event.record.get("nodeName") if event.record else event.key
        name = name or event.key
        self._dirty.add(f"noderesource/{name}")
        if event.deleted:
            self.node_resources.pop(name, None)
        else:
            self.node_resources[name] = {"allocatable": dict(event.record.get("allocatable") or {})}
        if name in self.node_records:
            old, new = self._put_node(name)
            self._observe(NodeChanged(name, old, new))
            self._queue_event(NODE_EVENT)

    def _on_usage(self, event: InboxEvent, out: "_Outputs") -> None:
        """A node's NodeUsage (what the node aggregate sends of its NodeMetric), kept as its usage fields."""
        name = event.key
        self._dirty.add(f"metric/{name}")
        if event.deleted or event.record["deleted"]:
            self.cluster.metrics.pop(name, None)
        else:
            self.cluster.metrics[name] = {field: event.record[field] for field in USAGE_FIELDS}
        self._observe(MetricChanged(name, self.cluster.metrics.get(name)))
        self._queue_event(METRIC_EVENT)

    # -- quotas --------------------------------------------------------------------

    def _on_quota(self, event: InboxEvent, out: "_Outputs") -> None:
        cluster = self.cluster
        if event.deleted:
            name = event.key.partition("/")[2] or event.key
            if name not in cluster.quotas:
                if event.key in cluster.profiles:
                    self._on_profile(event, out)
                return
        else:
            name = event.record["metadata"]["name"]
        if self._refused(event, name, out):
            return
        if event.deleted:
            del cluster.quotas[name]
        else:
            cluster.quotas[name] = dict(event.record)
        self._dirty.add(f"quota/{name}")
        self._observe(QuotaObjectsChanged())
        self._queue_event(QUOTA_EVENT)

    def _on_profile(self, event: InboxEvent, out: "_Outputs") -> None:
        cluster = self.cluster
        key = event.key
        self._dirty.add(f"profile/{key}")
        if event.deleted:
            if cluster.profiles.pop(key, None) is None:
                return
        else:
            if self._refused(event, key, out):
                return
            cluster.profiles[key] = dict(event.record)
        self._observe(QuotaObjectsChanged())
        self._queue_event(QUOTA_EVENT)

    # -- watched objects -----------------------------------------------------------

    def _on_object(self, event: InboxEvent, out: "_Outputs") -> None:
        """An object a plugin watches: admitted by its kind's webhooks, kept, observed, and an event of its kind."""
        kind, name = event.kind, event.key
        objects = self.cluster.objects.setdefault(kind, {})
        old = objects.get(name)
        if event.deleted and old is None:
            return
        if self._refused(event, name, out):
            return
        if event.deleted:
            del objects[name]
        else:
            objects[name] = dict(event.record)
        self._dirty.add(f"object/{kind}/{name}")
        self._observe(ObjectChanged(kind, name, old, objects.get(name)))
        self._queue_event(kind)
        if kind == DEVICE_KIND and name in self.node_records:
            old_node, new_node = self._put_node(name)
            self._observe(NodeChanged(name, old_node, new_node))
            self._queue_event(NODE_EVENT)
        for source in self._enabled(ObjectPods):
            if kind in source.pod_kinds:
                self._object_pod(f"{kind}/{name}", source.object_pod(kind, name, objects.get(name)), out)

    def _object_pod(self, key: str, record: dict | None, out: "_Outputs") -> None:
        """The pod standing for an object (``ObjectPods``) appeared, changed or went: handled as a pod event
        unless it is the same pod (a status written back to the object's topic changes nothing)."""
        held = self.cluster.pods.get(key)
        if record is None and held is None:
            return
        if record is not None and held is not None and held.record == record:
            return
        self._pod_event(key, record, record is None, out)

    def is_object_pod(self, key: str) -> bool:
        return key.partition("/")[0] in self.object_pod_kinds

    # -- configuration -------------------------------------------------------------

    def _on_config(self, event: InboxEvent, out: "_Outputs") -> None:
        descheduler = self.descheduling.record
        if event.deleted and descheduler is not None and descheduler["metadata"]["name"] == event.key:
            self._on_descheduler_config(event, out)
            return
        try:
            config = (scheduler_config.default_config() if event.deleted
                      else scheduler_config.parse_manifest(event.record["manifest"]))
            self._build_frameworks(config)
        except (scheduler_config.ConfigError, ArgsError) as err:
            out.dead_letter(f"KubeSchedulerConfiguration {event.key} rejected: {err}")
            return
        self.config_record = None if event.deleted else dict(event.record)
        self._dirty.add("config")
        self._queue_event(CONFIG_EVENT)

    # -- descheduling --------------------------------------------------------------

    def _on_descheduler_config(self, event: InboxEvent, out: "_Outputs") -> None:
        try:
            self.descheduling.apply(None if event.deleted else dict(event.record))
        except (DeschedulerConfigError, ValueError) as err:
            out.dead_letter(f"DeschedulerConfiguration {event.key} rejected: {err}")
            return
        self._descheduler_changed()

    def _on_migration_job(self, event: InboxEvent, out: "_Outputs") -> None:
        if self.descheduling.submit(event.key, None if event.deleted else dict(event.record), self.cluster.now_ms):
            self._descheduler_changed()

    def _descheduler_changed(self) -> None:
        keys = {f"descheduler/{key}" for key in self.descheduling.entries()}
        self._dirty.update(keys | self._descheduler_keys)
        self._descheduler_keys = keys

    def _deschedule(self, out: "_Outputs") -> None:
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
        """What migration jobs read of the reservations they created (from the Reservation plugin)."""
        wanted = {job.reservation for job in self.descheduling.migrations.jobs.values() if job.reservation}
        plugin = next((p for p in self._enabled(ObjectPods) if "Reservation" in p.pod_kinds), None)
        if not wanted or plugin is None:
            return {}
        views = {}
        for name in sorted(wanted):
            if plugin.info(name) is None:
                continue
            phase, _ = plugin.phase(name)
            state = self.pods.get(f"Reservation/{name}")
            message = state.last_message if state is not None and state.last_result == UNSCHEDULABLE else ""
            views[name] = ReservationView(phase, plugin.node_of(name), tuple(plugin.owners(name)), message)
        return views

    # -- pods ----------------------------------------------------------------------

    def _account(self, key: str, pod: PodInfo, node: str, at_ms: int, sign: int = 1) -> None:
        cluster = self.cluster
        cluster.columns.add_pod(node, pod.requests, pod.nonzero_requests(), sign)
        if sign > 0:
            cluster.assignment[key] = node
            cluster.assigned_at[key] = at_ms
            cluster.pods_on_node.setdefault(node, set()).add(key)
        else:
            cluster.assignment.pop(key, None)
            cluster.assigned_at.pop(key, None)
            on_node = cluster.pods_on_node.get(node)
            if on_node is not None:
                on_node.discard(key)
                if not on_node:
                    del cluster.pods_on_node[node]

    def _assign(self, key: str, node: str) -> None:
        state = self.pods[key]
        pod = self.cluster.pods[key]
        state.node = node
        state.assigned_at = self.cluster.now_ms
        self._account(key, pod, node, state.assigned_at)
        self.queue.remove(key)
        self._observe(PodAssigned(key, pod, node, state.assigned_at))
        self._dirty.add(f"pod/{key}")

    def _unassign(self, key: str) -> None:
        state = self.pods[key]
        pod = self.cluster.pods[key]
        node = state.node
        self._account(key, pod, node, 0, sign=-1)
        state.node = None
        state.assigned_at = None
        self._observe(PodUnassigned(key, pod, node))
        self.cluster.bind_annotations.pop(key, None)
        self._dirty.add(f"pod/{key}")

    def _on_pod(self, event: InboxEvent, out: "_Outputs") -> None:
        self._pod_event(event.key, event.record, event.deleted, out)

    def _pod_event(self, key: str, record: dict | None, deleted: bool, out: "_Outputs") -> None:
        cluster = self.cluster
        state = self.pods.get(key)
        if deleted or record.get("phase") in ENDED_PHASES:
            pod = cluster.pods.get(key) or podinfo.placeholder(key)
            released = state is not None and state.node is not None
            if state is not None:
                node = state.node
                if key in cluster.waiting:
                    del cluster.waiting.pods[key]
                    unreserve(self._framework(cluster.pods[key]), CycleState(), cluster.pods[key], node)
                    node = None
                if released:
                    self._unassign(key)
                del self.pods[key]
                old = cluster.pods.pop(key)
                self.queue.remove(key)
                self._observe(PodChanged(key, old, None))
                self._dirty.add(f"pod/{key}")
            else:
                node = None
            reason = "Deleted" if deleted else f"Pod{record['phase']}"
            out.decision(pod, RELEASED, node, reason, "", None)
            if released:
                self._queue_event(POD_DELETE)
            return
        info = podinfo.from_record(key, record)
        old = cluster.pods.get(key)
        if state is None:
            self.seq += 1
            state = self.pods[key] = PodState(self.seq)
        if not info.node_name:
            for mutation in self._enabled(PodMutation):
                info = mutation.mutate_pod(info)
        self._dirty.add(f"pod/{key}")
        if state.node is not None and old is not None and old.requests != info.requests:
            node = state.node
            self._account(key, old, node, state.assigned_at or 0, sign=-1)
            cluster.pods[key] = info
            self._account(key, info, node, state.assigned_at or 0)
            self._observe(PodChanged(key, old, info))
            self._observe(PodAssigned(key, info, node, state.assigned_at or 0))
        else:
            cluster.pods[key] = info
            self._observe(PodChanged(key, old, info))
        bound_to = info.node_name
        if bound_to and state.node is not None and state.node != bound_to:
            self._bound_elsewhere(key, info, bound_to, out)
        if bound_to and state.node is None:
            self._assign(key, bound_to)
        if state.node is not None:
            result = BOUND if bound_to else SCHEDULED
            state.last_result, state.last_message = result, ""
            out.decision(info, result, state.node, None, _assigned_message(info, state.node), None)
            return
        self.queue.add(key, info.sort_priority, state.seq)
        self._report(key, self._attempt(key, out), out)

    def _bound_elsewhere(self, key: str, pod: PodInfo, bound_to: str, out: "_Outputs") -> None:
        """The cluster bound the pod to another node than the one chosen here (in observe mode its own
        scheduler did; in active mode another client won the race): the cluster's binding is the fact. The pod
        leaves the chosen node, with a Released decision so that node's aggregate drops it too, and the
        caller assigns it where it is bound; the only pod event that yields two decisions about its pod."""
        chosen = self.pods[key].node
        self._unassign(key)
        out.decision(pod, RELEASED, chosen, "BoundElsewhere", f"the cluster bound it to {bound_to}", None)
        self._queue_event(POD_DELETE)

    def _attempt(self, key: str, out: "_Outputs", with_siblings: bool = True) -> CycleResult:
        """One scheduling attempt of pending pod ``key``; assigns it when a node is found (holding it there
        when a Permit plugin says Wait, and then trying its ``QueueGroup`` siblings at once)."""
        pod = self.cluster.pods[key]
        framework = self._framework(pod)
        status = framework.pre_enqueue(pod)
        if not status.ok:
            outcome = CycleResult(None, sentence(status.message), rejected_by=frozenset({status.plugin}))
        else:
            outcome = run_cycle(framework, pod)
            if outcome.victims:
                for victim in outcome.victims:
                    self._preempt(victim.pod_key, pod, outcome.nominated, out)
                self._queue_event(POD_DELETE)
                outcome = run_cycle(framework, pod, allow_preemption=False)
        state = self.pods[key]
        cluster = self.cluster
        if outcome.node is not None:
            if outcome.annotations:
                cluster.bind_annotations[key] = dict(outcome.annotations)
            self._assign(key, outcome.node)
            if outcome.waiting_on:
                cluster.waiting.pods[key] = WaitingPod(outcome.node, cluster.now_ms + outcome.wait_timeout_ms,
                                                       outcome.wait_timeout_ms, outcome.waiting_on)
                state.last_result, state.last_message = WAITING, _waiting_message(outcome, outcome.node)
            else:
                state.last_result, state.last_message = SCHEDULED, ""
        else:
            self.queue.failed(key, cluster.now_ms, outcome.rejected_by)
            state.last_result, state.last_message = UNSCHEDULABLE, outcome.message
        self._dirty.add(f"pod/{key}")
        self._carry_out_verdicts(out)
        if with_siblings and key in cluster.waiting:
            for group in framework.plugins.values():
                if not isinstance(group, QueueGroup):
                    continue
                for sibling in group.siblings(pod):
                    if key not in cluster.waiting:
                        break
                    if sibling in self.queue.pods and self.pods[sibling].node is None:
                        self._report(sibling, self._attempt(sibling, out, with_siblings=False), out)
        return outcome

    def _report(self, key: str, outcome: CycleResult, out: "_Outputs", before: tuple[str, str] | None = None) -> None:
        """The decision about ``key`` after an attempt, unless a Permit verdict already gave it this event, the pod
        waits (its Waiting decision comes at the end of the event, if nothing allows or rejects it first), or a
        retry changed nothing (``before``: its last result and message before the retry)."""
        if key in out.decided_by_verdict:
            return
        if key in self.cluster.waiting:
            out.defer_waiting(key)
            return
        state = self.pods[key]
        if before is not None and outcome.node is None and (state.last_result, state.last_message) == before:
            return
        out.decision(self.cluster.pods[key], *self._fields(key, outcome))

    def _carry_out_verdicts(self, out: "_Outputs") -> None:
        """Carry out the Permit verdicts plugins gave (an Unreserve may give more): a pod allowed by every plugin
        it waited on is Scheduled; a rejected one is unreserved, released and queued again as Unschedulable."""
        cluster = self.cluster
        waiting = cluster.waiting
        while verdicts := waiting.take_verdicts():
            for key, verdict, plugin, message in verdicts:
                held = waiting.pods.get(key)
                if held is None:
                    continue
                pod = cluster.pods[key]
                state = self.pods[key]
                if verdict == "allow":
                    held.pending = tuple(name for name in held.pending if name != plugin)
                    self._dirty.add(f"pod/{key}")
                    if held.pending:
                        continue
                    del waiting.pods[key]
                    state.last_result, state.last_message = SCHEDULED, ""
                    out.decision(pod, SCHEDULED, held.node, None, _assigned_message(pod, held.node), None)
                else:
                    del waiting.pods[key]
                    unreserve(self._framework(pod), CycleState(), pod, held.node)
                    self._unassign(key)
                    self._queue_event(POD_DELETE)
                    self.queue.add(key, pod.sort_priority, state.seq)
                    self.queue.failed(key, cluster.now_ms, frozenset({plugin}))
                    state.last_result, state.last_message = UNSCHEDULABLE, sentence(message)
                    out.decision(pod, UNSCHEDULABLE, None, "Unschedulable", state.last_message, None)
                out.decided_by_verdict.add(key)

    def _expire_waiting(self, out: "_Outputs") -> None:
        """Reject the waiting pods whose Permit timeout has passed in event time, earliest first
        (kube-scheduler's message, as a sentence: "rejected due to timeout after waiting <d> at plugin <p>.")."""
        waiting = self.cluster.waiting
        now = self.cluster.now_ms
        expired = sorted((held.deadline_ms, self.pods[key].seq, key) for key, held in waiting.pods.items()
                         if held.deadline_ms <= now)
        for _, _, key in expired:
            held = waiting.pods.get(key)
            if held is None:
                continue
            plugin = held.pending[0]
            waiting.reject(key, plugin, f"rejected due to timeout after waiting {format_duration(held.timeout_ms)} "
                                        f"at plugin {plugin}")
            self._carry_out_verdicts(out)

    def _preempt(self, key: str, preemptor: PodInfo, node: str, out: "_Outputs") -> None:
        state = self.pods[key]
        victim = self.cluster.pods[key]
        self._unassign(key)
        message = f"Preempted by {preemptor.namespace}/{preemptor.name} on node {node}"
        state.last_result, state.last_message = PREEMPTED, message
        out.decision(victim, PREEMPTED, node, PREEMPTED, message, None)
        out.eviction(Evict("", key, node, PREEMPTED, message))
        self.queue.add(key, victim.sort_priority, state.seq)
        self.queue.failed(key, self.cluster.now_ms, frozenset())
        self._dirty.add(f"pod/{key}")

    def _fields(self, key: str, outcome: CycleResult) -> tuple:
        pod = self.cluster.pods[key]
        if outcome.node is not None:
            return SCHEDULED, outcome.node, None, _assigned_message(pod, outcome.node), outcome
        return UNSCHEDULABLE, None, "Unschedulable", outcome.message, outcome

    def _queue_event(self, kind: str) -> None:
        """Tell the queue an event of ``kind`` happened; the pods it moves are persisted with their new
        flag, or a domain restored from its table would retry different pods than one that never stopped."""
        for key in self.queue.on_event(kind):
            self._dirty.add(f"pod/{key}")

    def _retry(self, out: "_Outputs") -> None:
        for key in self.queue.due(self.cluster.now_ms):
            state = self.pods.get(key)
            if state is None or state.node is not None or key not in self.queue.pods:
                continue
            before = (state.last_result, state.last_message)
            self._report(key, self._attempt(key, out), out, before)

    # -- quota statuses ------------------------------------------------------------

    def _emit_statuses(self, out: "_Outputs") -> None:
        reporters = self._enabled(StatusReporter)
        if not reporters:
            return
        plugin = reporters[0]
        now = self.cluster.now_ms
        forced = out.event.kind in ("ElasticQuota", "ElasticQuotaProfile", "KubeSchedulerConfiguration")
        if not forced and self.status_synced_at is not None and now - self.status_synced_at < STATUS_SYNC_INTERVAL_MS:
            return
        version = plugin.status_version()
        if version == self._status_version:
            return
        self._status_version = version
        seen, changed = set(), False
        for status in plugin.statuses():
            tree = status.pop("domain_tree")
            key = f"{tree}/{status['name']}"
            seen.add(key)
            if self.statuses.get(key) == status:
                continue
            self.statuses[key] = status
            self._dirty.add(f"status/{key}")
            out.quota_status(tree, status)
            changed = True
        for key in [k for k in self.statuses if k not in seen]:
            del self.statuses[key]
            self._dirty.add(f"status/{key}")
            changed = True
        if changed:
            self.status_synced_at = now
            self._dirty.add("meta")


def _assigned_message(pod: PodInfo, node: str) -> str:
    return f"Successfully assigned {pod.namespace}/{pod.name} to {node}"


def _waiting_message(outcome: CycleResult, node: str) -> str:
    waiting = f"Reserved on {node}, waiting for {', '.join(outcome.waiting_on)} to permit the binding"
    return f"{waiting}: {outcome.wait_message}" if outcome.wait_message else waiting


class _Outputs:
    """The outputs of one event, with their stable ids."""

    def __init__(self, domain: SchedulingDomain, event: InboxEvent) -> None:
        self.domain = domain
        self.event = event
        self.items: list[tuple[str, dict]] = []
        self.decided_by_verdict: set[str] = set()
        """Pods a Permit verdict decided this event."""
        self._deferred: dict[str, None] = {}

    def defer_waiting(self, key: str) -> None:
        self._deferred[key] = None

    def flush_waiting(self) -> None:
        """A Waiting decision for each pod that started waiting this event and is still waiting."""
        domain = self.domain
        for key in self._deferred:
            held = domain.cluster.waiting.pods.get(key)
            if held is None or key in self.decided_by_verdict:
                continue
            self.decision(domain.cluster.pods[key], WAITING, None, WAITING, domain.pods[key].last_message, None)
        self._deferred = {}

    def _id(self) -> str:
        return decision_id(self.event.causation, len(self.items))

    def decision(self, pod: PodInfo, result: str, node: str | None, reason: str | None, message: str,
                 outcome: CycleResult | None) -> None:
        if self.domain.is_object_pod(pod.key):
            return
        self.items.append(("SchedulingDecision", {
            "decisionId": self._id(),
            "domain": self.domain.domain,
            "pod": {"namespace": pod.namespace, "name": pod.name, "uid": pod.uid},
            "result": result,
            "nodeName": node,
            "reason": reason,
            "message": message,
            "filterResults": [{"plugin": p, "reason": r, "count": n}
                              for p, r, n in (outcome.filter_results if outcome else ())],
            "scores": [{"node": n, "score": s} for n, s in (outcome.scores if outcome else ())],
            "causation": self.event.causation.to_record(),
            "timestamp": self.event.timestamp_ms,
            "requests": dict(pod.requests),
            "limits": dict(pod.limits),
            "priority": pod.priority,
            "priorityClass": pod.priority_class_raw or PRIORITY_NONE_NAME,
            "qosClass": pod.qos_class or None,
            "labels": decisions.selected(pod.labels, decisions.LABELS),
            "annotations": {**decisions.selected(pod.annotations, decisions.DECISION_ANNOTATIONS),
                            **self.domain.cluster.bind_annotations.get(pod.key, {})},
        }))

    def migration_job(self, job: Job) -> None:
        """A PodMigrationJob with its status, written back to the jobs' topic (as a controller writes status)."""
        namespace, _, name = job.pod.partition("/")
        pod = self.domain.cluster.pods.get(job.pod)
        ref = {"namespace": namespace, "name": name, "uid": pod.uid if pod else None}
        status = {"phase": job.phase, "reason": job.reason, "message": job.message, "nodeName": job.node}
        if job.held_by:
            status["conditions"] = [{"type": CONDITION_ARBITRATION, "status": "True" if job.passed else "False",
                                     "reason": "Passed" if job.passed else "HeldByLimit", "message": job.held_by}]
        manifest = {"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "PodMigrationJob",
                    "metadata": {"name": job.name, "annotations": {ANNOTATION_EVICT_REASON: job.trigger,
                                                                   ANNOTATION_EVICT_TRIGGER: LOW_NODE_LOAD}
                                 if job.trigger else {}},
                    "spec": {"podRef": ref, "mode": job.mode, "paused": job.paused}, "status": status}
        self.items.append(("PodMigrationJob", {
            "metadata": {"name": job.name, "namespace": None, "uid": None, "labels": {},
                         "annotations": manifest["metadata"]["annotations"], "generation": 0},
            "manifest": json.dumps(manifest, sort_keys=True, separators=(",", ":")),
            "podRef": ref, "mode": job.mode, "ttlMs": job.ttl_ms, "paused": job.paused, "reservationName": None,
            "deleteOptions": None, "phase": job.phase,
        }))

    def eviction(self, evict: Evict) -> None:
        namespace, _, name = evict.pod.partition("/")
        pod = self.domain.cluster.pods.get(evict.pod)
        self.items.append(("Eviction", {
            "decisionId": self._id(),
            "nodeName": evict.node or "",
            "pod": {"namespace": namespace, "name": name, "uid": pod.uid if pod else None},
            "reason": evict.reason,
            "message": f"{evict.message} (PodMigrationJob {evict.job})" if evict.job else evict.message,
            "causation": self.event.causation.to_record(),
            "timestamp": self.event.timestamp_ms,
        }))

    def quota_status(self, tree: str, status: dict) -> None:
        self.items.append(("ElasticQuotaStatus", {
            "decisionId": self._id(),
            "domain": tree or self.domain.domain,
            **status,
            "causation": self.event.causation.to_record(),
            "timestamp": self.event.timestamp_ms,
        }))

    def dead_letter(self, reason: str) -> None:
        cause = self.event.causation
        payload = None
        if self.event.record is not None:
            try:
                payload = codec.encode(self.event.kind, self.event.record)
            except codec.CodecError:
                payload = None
        self.items.append(("DeadLetter", dead_letter_record(
            STAGE, cause.source_topic, cause.source_partition, cause.source_offset, self.event.key.encode(), payload,
            reason, self.event.timestamp_ms)))
