"""Pod events and scheduling attempts of a scheduling domain: the queue/cycle orchestration.

Every Pod event yields exactly one decision about that pod, stating where it stands after the event:
``Scheduled``, ``Unschedulable``, ``Waiting`` (reserved on a node, held by a Permit plugin: a gang member
waiting for its gang), ``Bound`` (it arrived with spec.nodeName) or ``Released`` (it ended or was deleted) —
``koord apply --wait`` relies on it. A waiting pod's ``Scheduled`` or ``Unschedulable`` comes with the event
that allows or rejects it (another member's arrival, a rejection, or its timeout passing in event time).
Pending pods are retried by the queue (``queue``) when an event concerns what rejected them and their backoff
has passed; a retry is emitted only when its outcome changed. A pod preempted by ElasticQuota gets a
``Preempted`` decision (its node in ``nodeName``) and an ``Eviction`` decision (carried out like every
eviction: the simulator ends the pod, the bridge calls the Eviction API), releases its resources and goes back
to the queue until its pod ends.

An object pod's nodeName (a Reservation's ``template.spec.nodeName``) is not a binding: it pins the pod to
that node through the NodeName Filter, and the pod passes every other Filter there like any pod, as
Koordinator's reserve pod goes through the scheduling cycle; one that does not fit, or names an unknown
node, stays pending.
"""

from __future__ import annotations

import dataclasses

from streams.descheduler.migration.jobs import Evict
from streams.events import InboxEvent
from streams.objects import podinfo
from streams.objects.duration import format_duration
from streams.objects.podinfo import PodInfo
from streams.scheduler.cycle import CycleResult, run_cycle, unreserve
from streams.scheduler.framework import (
    ADD, ASSIGNED_POD, ASSIGNED_POD_DELETE, DELETE, UPDATE, ClusterEvent, CycleState, PodMutation, QueueGroup, sentence)
from streams.scheduler.outputs import (
    BOUND, PREEMPTED, RELEASED, SCHEDULED, UNSCHEDULABLE, WAITING, Outputs, assigned_message, waiting_message)
from streams.scheduler.state import PodAssigned, PodChanged, PodUnassigned, WaitingPod

ENDED_PHASES = ("Succeeded", "Failed")


@dataclasses.dataclass
class PodState:
    seq: int
    node: str | None = None
    assigned_at: int | None = None
    last_result: str = ""
    last_message: str = ""


class PodScheduling:
    """The pod part of ``SchedulingDomain``: pod events, attempts, Permit verdicts, preemption, retries."""

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
        self._queue_event(ClusterEvent(ASSIGNED_POD, ADD, key))

    def _unassign(self, key: str) -> None:
        state = self.pods[key]
        pod = self.cluster.pods[key]
        node = state.node
        self._account(key, pod, node, 0, sign=-1)
        state.node = None
        state.assigned_at = None
        self._observe(PodUnassigned(key, pod, node))
        self.cluster.bind_annotations.pop(key, None)
        self.cluster.volume_bindings.pop(key, None)
        self._dirty.add(f"pod/{key}")

    def _on_pod(self, event: InboxEvent, out: Outputs) -> None:
        self._pod_event(event.key, event.record, event.deleted, out)

    def _pod_event(self, key: str, record: dict | None, deleted: bool, out: Outputs) -> None:
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
                self._observe(PodChanged(key, old, None, None if deleted else record["phase"]))
                self._dirty.add(f"pod/{key}")
            else:
                node = None
            reason = "Deleted" if deleted else f"Pod{record['phase']}"
            out.decision(pod, RELEASED, node, reason, "", None)
            if released:
                self._queue_event(ClusterEvent(ASSIGNED_POD, DELETE, key))
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
        if state.node is not None and old is not None and old.labels != info.labels:
            self._queue_event(ClusterEvent(ASSIGNED_POD, UPDATE, key))
        bound_to = None if self.is_object_pod(key) else info.node_name
        if bound_to and state.node is not None and state.node != bound_to:
            self._bound_elsewhere(key, info, bound_to, out)
        if bound_to and state.node is None:
            self._assign(key, bound_to)
        if state.node is not None:
            result = BOUND if bound_to else SCHEDULED
            state.last_result, state.last_message = result, ""
            out.decision(info, result, state.node, None, assigned_message(info, state.node), None)
            return
        self.queue.add(key, info.sort_priority, state.seq)
        self._report(key, self._attempt(key, out), out)

    def _bound_elsewhere(self, key: str, pod: PodInfo, bound_to: str, out: Outputs) -> None:
        """The cluster bound the pod to another node than the one chosen here (in observe mode its own
        scheduler did; in active mode another client won the race): the cluster's binding is the fact. The pod
        leaves the chosen node, with a Released decision so that node's aggregate drops it too, and the
        caller assigns it where it is bound; the only pod event that yields two decisions about its pod."""
        chosen = self.pods[key].node
        self._unassign(key)
        out.decision(pod, RELEASED, chosen, "BoundElsewhere", f"the cluster bound it to {bound_to}", None)
        self._queue_event(ClusterEvent(ASSIGNED_POD, DELETE, key))

    def _attempt(self, key: str, out: Outputs, with_siblings: bool = True) -> CycleResult:
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
                self._queue_event(ASSIGNED_POD_DELETE)
                outcome = run_cycle(framework, pod, allow_preemption=False)
        state = self.pods[key]
        cluster = self.cluster
        if outcome.node is not None:
            if outcome.annotations:
                cluster.bind_annotations[key] = dict(outcome.annotations)
            if outcome.volume_bindings:
                cluster.volume_bindings[key] = outcome.volume_bindings
            self._assign(key, outcome.node)
            if outcome.waiting_on:
                cluster.waiting.pods[key] = WaitingPod(outcome.node, cluster.now_ms + outcome.wait_timeout_ms,
                                                       outcome.wait_timeout_ms, outcome.waiting_on)
                state.last_result, state.last_message = WAITING, waiting_message(outcome, outcome.node)
            else:
                state.last_result, state.last_message = SCHEDULED, ""
        else:
            self.queue.failed(key, cluster.now_ms, outcome.rejected_by)
            state.last_result, state.last_message = UNSCHEDULABLE, outcome.message
            if self.is_object_pod(key):
                self._object_pod_unschedulable(key, outcome.message)
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

    def _report(self, key: str, outcome: CycleResult, out: Outputs, before: tuple[str, str] | None = None) -> None:
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

    def _carry_out_verdicts(self, out: Outputs) -> None:
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
                    out.decision(pod, SCHEDULED, held.node, None, assigned_message(pod, held.node), None)
                else:
                    del waiting.pods[key]
                    unreserve(self._framework(pod), CycleState(), pod, held.node)
                    self._unassign(key)
                    self._queue_event(ClusterEvent(ASSIGNED_POD, DELETE, key))
                    self.queue.add(key, pod.sort_priority, state.seq)
                    self.queue.failed(key, cluster.now_ms, frozenset({plugin}))
                    state.last_result, state.last_message = UNSCHEDULABLE, sentence(message)
                    out.decision(pod, UNSCHEDULABLE, None, "Unschedulable", state.last_message, None)
                out.decided_by_verdict.add(key)

    def _expire_waiting(self, out: Outputs) -> None:
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

    def _preempt(self, key: str, preemptor: PodInfo, node: str, out: Outputs) -> None:
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
            return SCHEDULED, outcome.node, None, assigned_message(pod, outcome.node), outcome
        return UNSCHEDULABLE, None, "Unschedulable", outcome.message, outcome

    def _queue_event(self, event: ClusterEvent) -> None:
        """Tell the queue ``event`` happened (once applied, so queueing hints see its result); the pods it
        moves are persisted with their new flag, or a domain restored from its table would retry different
        pods than one that never stopped."""
        for key in self.queue.on_event(event, self._queueing_hint):
            self._dirty.add(f"pod/{key}")

    def _queueing_hint(self, event: ClusterEvent, key: str, plugin: str) -> bool:
        """Whether ``event`` may make pod ``key``, which ``plugin`` rejected, schedulable: the hint the plugin
        registered for the event, on its instance in the pod's profile (True without one)."""
        pod = self.cluster.pods[key]
        hint = self._framework(pod).queueing_hints.get((plugin, event))
        return hint is None or hint(event, pod)

    def _retry(self, out: Outputs) -> None:
        for key in self.queue.due(self.cluster.now_ms):
            state = self.pods.get(key)
            if state is None or state.node is not None or key not in self.queue.pods:
                continue
            before = (state.last_result, state.last_message)
            self._report(key, self._attempt(key, out), out, before)
