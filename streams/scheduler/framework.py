"""Scheduling framework: the extension points and the Status they return.

Shaped after kube-scheduler's framework (``pkg/scheduler/framework``). A
plugin implements any of the protocols below; ``cycle.run_cycle`` calls them
in stage order::

    PreEnqueue -> PreFilter -> Filter -> [PostFilter] -> Score -> Reserve -> Permit -> PreBind

Filters and scores see every node at once: a plugin receives the pod, the
per-cycle ``CycleState`` and the boolean mask of candidate nodes, and returns
one verdict per node as numpy vectors over the domain's ``NodeColumns``.

Plugins keep the cluster-derived state they need (load-aware's node loads,
ElasticQuota's trees) by observing ``ClusterChange``s (kube-scheduler plugins
do the same through informers), so assignment bookkeeping happens once for
every profile; Reserve and Permit may still veto a placement. No plugin logic
lives here.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np

from streams.objects.podinfo import PodInfo

MAX_NODE_SCORE = 100

ADD, UPDATE, DELETE = "Add", "Update", "Delete"
"""kube-scheduler's ``ActionType``s: what happened to the object."""


@dataclasses.dataclass(frozen=True)
class ClusterEvent:
    """kube-scheduler's ``ClusterEvent``: a resource and what happened to it. ``name`` says which object (a
    node's name, a pod's key) for queueing hints; it is not part of what the event is, so a registration
    matches the event whatever its object."""

    resource: str
    action: str
    name: str = dataclasses.field(default="", compare=False)


NODE, ASSIGNED_POD, NODE_USAGE, QUOTA, CONFIGURATION = (
    "Node", "AssignedPod", "NodeUsage", "ElasticQuota", "KubeSchedulerConfiguration")
"""The resources of the events the domain raises. A change to an object a plugin watches (``WatchesObjects``)
raises an event whose resource is its kind ("Reservation", "PodGroup", ...)."""
NODE_ADD, NODE_UPDATE = ClusterEvent(NODE, ADD), ClusterEvent(NODE, UPDATE)
"""A node was added or changed (its object, its batch/mid allocatable, or an object overlaid on it)."""
ASSIGNED_POD_DELETE = ClusterEvent(ASSIGNED_POD, DELETE)
"""An assigned pod released its node (deleted, ended or preempted)."""
CONFIGURATION_UPDATE = ClusterEvent(CONFIGURATION, UPDATE)
"""A KubeSchedulerConfiguration was applied: no plugin registers it, so every pending pod is retried."""


def action_of(existed: bool, deleted: bool) -> str:
    """The action of a change to an object: Delete, else Add when it did not exist, else Update."""
    return DELETE if deleted else UPDATE if existed else ADD


def every_action(resource: str) -> tuple[ClusterEvent, ...]:
    """The Add, Update and Delete events of ``resource`` (an ElasticQuota, a NodeUsage, a watched kind)."""
    return tuple(ClusterEvent(resource, action) for action in (ADD, UPDATE, DELETE))


@dataclasses.dataclass(frozen=True)
class ClusterEventWithHint:
    """kube-scheduler's ``ClusterEventWithHint``: an event a plugin registers, with its queueing hint.

    ``hint`` is a function of the plugin's class, called on the plugin instance of the pod's profile after the
    event is applied, as ``hint(plugin, event, pod)``: True (Queue) when the event may make the pod, which this
    plugin rejected, schedulable; False (QueueSkip) only when it surely cannot. None: always Queue."""

    event: ClusterEvent
    hint: Callable[..., bool] | None = None


def register(*events: ClusterEvent, hint: Callable[..., bool] | None = None) -> tuple[ClusterEventWithHint, ...]:
    """``events``, each with ``hint``: what a plugin's ``events_to_register`` lists."""
    return tuple(ClusterEventWithHint(event, hint) for event in events)


class Code(enum.IntEnum):
    """kube-scheduler's status codes (``framework.Code``)."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    @property
    def label(self) -> str:
        """kube-scheduler's name of the code ("UnschedulableAndUnresolvable")."""
        return _LABELS[self]


_LABELS = {code: "".join(part.title() for part in code.name.split("_")) for code in Code}
"""``Code.label`` of every code, made once: the cycle labels each plugin call it counts."""


@dataclasses.dataclass(frozen=True)
class Status:
    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def ok(self) -> bool:
        return self.code in (Code.SUCCESS, Code.SKIP)

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    @classmethod
    def unschedulable(cls, reason: str, plugin: str = "", resolvable: bool = True) -> "Status":
        code = Code.UNSCHEDULABLE if resolvable else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        return cls(code, (reason,), plugin)


SUCCESS = Status()
SKIP = Status(Code.SKIP)


class CycleState(dict):
    """Per-cycle scratch data, keyed by plugin (kube-scheduler's CycleState)."""


REMOVED_PODS = "removedPods"
"""CycleState key: the assigned pods a PostFilter's dry run has taken away while it runs the filters again (the
victims it tries); filters that count pods leave them out (kube-scheduler's ``RemovePod`` extension)."""

RESTORED = "restored"
"""CycleState key: resources held on nodes for this pod (its reservations' unallocated part), as
{node row: {resource: amount}}; NodeResourcesFit counts them free (Koordinator's ``RestoreReservation``)."""


SCORED_ROWS = "scoredRows"
"""CycleState key: the run of rows (a slice) that holds every node being scored. A cycle that scores a sample
(``cycle.nodes_to_find``) takes it from one run of rows, so a score plugin may compute on that view of its
columns and leave the other entries 0 (``scored_rows``)."""


def scored_rows(state: CycleState, candidates: np.ndarray) -> slice:
    """The rows a score plugin computes on: ``SCORED_ROWS``, or every node's when the cycle did not set it."""
    return state.get(SCORED_ROWS) or slice(0, len(candidates))


VOLUME_BINDINGS = "volumeBindings"
"""CycleState key: the claims a PreBind plugin binds for the pod on its node, as ((claim key, volume name or None
for a volume to provision), ...) (kube-scheduler's VolumeBinding PreBind, which writes them to the API): they go
in the pod's decision, and the bridge writes them on the claims."""


@dataclasses.dataclass(frozen=True)
class FilterResult:
    """Outcome of one filter over the candidates.

    ``passed`` is the mask of nodes that pass. ``reasons`` lists
    (reason, mask of nodes failing for it); a node failing a filter may carry
    several reasons (NodeResourcesFit reports every short resource). ``code``
    is the status code of the failures (Unschedulable, or
    UnschedulableAndUnresolvable when removing pods cannot help);
    ``unresolvable`` marks the failing nodes that are UnschedulableAndUnresolvable
    when a plugin's failures differ by node (InterPodAffinity's affinity against
    its anti-affinity).
    """

    passed: np.ndarray
    reasons: tuple[tuple[str, np.ndarray], ...] = ()
    code: Code = Code.UNSCHEDULABLE
    unresolvable: np.ndarray | None = None


@dataclasses.dataclass(frozen=True)
class Diagnosis:
    """What PostFilter learns of a failed cycle (kube-scheduler's Diagnosis)."""

    prefilter: Status | None
    """The PreFilter status that failed, if any; then every node is "Unschedulable" for it."""
    resolvable: np.ndarray
    """Nodes that failed only with Unschedulable (removing pods may help)."""
    run_filters: Callable[[], np.ndarray] | None = None
    """Runs the profile's filters again on the current columns (for preemption's dry runs)."""
    message: str = ""
    """The cycle's failure so far ("0/3 nodes are available: 3 Insufficient cpu.")."""


REASON_NO_VICTIMS = "No preemption victims found for incoming pod"
REASON_NOT_HELPFUL = "Preemption is not helpful for scheduling"
REASON_NOT_ELIGIBLE = "not eligible due to preemptionPolicy=Never."
"""kube-scheduler's preemption messages (``framework/preemption``), shared by every preemption plugin."""


def sentence(message: str) -> str:
    """``message`` ending with exactly one period, as kube-scheduler's FitError ends ("...: 3 Insufficient cpu.");
    every Unschedulable decision's message is one. Empty stays empty."""
    text = clause(message)
    return f"{text}." if text else ""


def clause(message: str) -> str:
    """``message`` without trailing periods or blanks, to be joined into a sentence."""
    return message.rstrip(". ")


def preemption_failure(count: int, helpful: int) -> str:
    """kube-scheduler's message when no node can be freed: "preemption: 0/N nodes are available: <h> No
    preemption victims found for incoming pod, <N-h> Preemption is not helpful for scheduling." (sorted)."""
    parts = ([f"{helpful} {REASON_NO_VICTIMS}"] if helpful else []) + \
            ([f"{count - helpful} {REASON_NOT_HELPFUL}"] if count - helpful else [])
    return f"preemption: 0/{count} nodes are available: {', '.join(sorted(parts))}."


@dataclasses.dataclass(frozen=True)
class Victim:
    pod_key: str
    node: str


@dataclasses.dataclass(frozen=True)
class PostFilterResult:
    status: Status
    nominated_node: str | None = None
    victims: tuple[Victim, ...] = ()


class Plugin(Protocol):
    name: str


@runtime_checkable
class EnqueueExtensions(Protocol):
    """kube-scheduler's ``EnqueueExtensions``: the cluster events that may make a pod this plugin rejected
    schedulable, each with an optional queueing hint (``ClusterEventWithHint``). The queue retries such a pod
    only on those events, when the hint says Queue (``queue``); a plugin that rejects pods and registers
    nothing leaves them to the periodic flush."""

    events_to_register: tuple[ClusterEventWithHint, ...]


@runtime_checkable
class PodMutation(Protocol):
    """A mutating webhook run on every pending pod before it is queued (Koordinator's pod webhooks).
    Webhooks are cluster-wide: the domain runs the instance of the first profile that enables the plugin."""

    name: str

    def mutate_pod(self, pod: PodInfo) -> PodInfo: ...


@runtime_checkable
class ObjectAdmission(Protocol):
    """A validating webhook for the objects a plugin owns (Koordinator's ElasticQuota webhook).

    ``admit`` is a static check run on every event of one of ``admitted_kinds``, whether or not a profile
    enables the plugin (the webhook runs apart from the scheduler): the reason to refuse the change, or None.
    ``record`` is None for a deletion; ``name`` is the object's key in ``Cluster`` (quota name, profile key).
    """

    admitted_kinds: frozenset[str]

    @staticmethod
    def admit(kind: str, name: str, record: dict | None, cluster: object) -> str | None: ...


@runtime_checkable
class StatusReporter(Protocol):
    """A plugin whose objects have a status the domain publishes (ElasticQuotaStatus): ``statuses()``,
    read when ``status_version()`` changed. The domain asks the first profile's plugin that has one."""

    def status_version(self) -> tuple: ...

    def statuses(self) -> list[dict]: ...


@runtime_checkable
class PreEnqueuePlugin(Protocol):
    name: str

    def pre_enqueue(self, pod: PodInfo) -> Status: ...


@runtime_checkable
class PreFilterPlugin(Protocol):
    name: str

    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        """Skip means: this plugin's Filter has nothing to check for this pod."""
        ...


@runtime_checkable
class FilterPlugin(Protocol):
    name: str

    def filter(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> FilterResult: ...


@runtime_checkable
class PostFilterPlugin(Protocol):
    name: str

    def post_filter(self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis) -> PostFilterResult: ...


@runtime_checkable
class ScorePlugin(Protocol):
    name: str

    def score(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> np.ndarray | int:
        """Normalized scores 0..100 (int64) for every node; only ``candidates`` are read. An ``int`` is the
        same score on every node: a pod that uses none of the plugin's features (0) costs the cycle nothing."""
        ...


@runtime_checkable
class ReservePlugin(Protocol):
    name: str

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status: ...

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None: ...


@runtime_checkable
class PermitPlugin(Protocol):
    name: str

    def permit(self, state: CycleState, pod: PodInfo, node: str) -> tuple[Status, int]:
        """(status, timeout in ms). Success allows the binding; Unschedulable rejects it; Wait holds the pod
        on its node (it keeps its resources, no binding decision is sent) until every plugin that said Wait
        allows it through ``Cluster.waiting.allow``, one rejects it (``Cluster.waiting.reject``), or the
        timeout passes in event time (kube-scheduler's waiting pods, ``framework.WaitingPod``)."""
        ...


@runtime_checkable
class PreBindPlugin(Protocol):
    """What a plugin writes on the pod when it is bound (kube-scheduler's PreBind patches the pod): the
    annotations returned are added to the pod's binding decision and kept with the assignment."""

    name: str

    def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> dict[str, str]: ...


@runtime_checkable
class WatchesObjects(Protocol):
    """A plugin that reads objects of other kinds than the domain's own (PodGroup, Reservation, Device,
    PodDisruptionBudget, ...). The domain keeps every object of ``watched_kinds`` in ``Cluster.objects``,
    runs the kind's ``ObjectAdmission`` webhooks, tells observers ``ObjectChanged`` and raises the cluster
    event named after the kind. The plugin derives its state from ``Cluster.objects`` when built, so a
    restored domain decides as the live one did."""

    watched_kinds: frozenset[str]


@runtime_checkable
class ObjectStatuses(Protocol):
    """A plugin that writes back the status of objects it watches (a Reservation, a PodGroup): ``object_outputs``
    gives the (schema, record) outputs of the objects whose status changed since the last call, each the object's
    record with the status in its manifest, sent to the object's own topic. The domain asks every enabled one
    at the end of each event."""

    def object_outputs(self) -> list[tuple[str, dict]]: ...


@runtime_checkable
class ObjectPods(Protocol):
    """Objects scheduled like pods (Koordinator's reserve pods): the domain keeps, for every object of
    ``pod_kinds``, the Pod record ``object_pod`` returns (None: no pod) under the key "<kind>/<name>", schedules
    it through the same cycle and queue, and sends no SchedulingDecision about it; ``object_outputs`` gives the
    (schema, record) outputs of objects whose status changed since the last call (their status written back)."""

    pod_kinds: frozenset[str]

    def object_pod(self, kind: str, name: str, record: dict) -> dict | None: ...

    def refresh(self) -> list[tuple[str, dict | None]]:
        """(key, Pod record or None) of the object pods that time or the cluster changed (an expired or used-up
        reservation gives its node back); the domain applies them before the queue's retries and at the end."""
        ...

    def object_outputs(self) -> list[tuple[str, dict]]: ...

    def unschedulable(self, name: str, message: str) -> None:
        """Why the object pod of ``name`` failed its last attempt (the cycle's message), for its status."""
        ...


@runtime_checkable
class NodeOverlay(Protocol):
    """Objects keyed by node name that add to the node the scheduler reads (koord-manager syncing a node's
    Device into its allocatable and labels). The domain keeps them as watched objects and, whatever the profiles
    enable, applies ``overlay_node`` of the object of each of ``overlay_kinds`` where it reads a node; a change
    to such an object reads its node again and raises a node event."""

    overlay_kinds: frozenset[str]

    @staticmethod
    def overlay_node(kind: str, record: dict) -> tuple[dict[str, int], dict[str, str]]:
        """(allocatable, labels) the object adds to its node."""
        ...


@runtime_checkable
class ReservationHolder(Protocol):
    """A plugin that holds reservations (Koordinator's Reservation): what the descheduling stage's migration
    jobs read of the reservations they created."""

    def reservation(self, name: str) -> tuple[str, str | None, tuple[str, ...], str] | None:
        """(phase, node it is available on, owner pod keys, key of its reserve pod), or None when the plugin
        holds no reservation ``name``."""
        ...


@runtime_checkable
class QueueGroup(Protocol):
    """Pods that are scheduled together (Koordinator's gang: the scheduler pulls the rest of the group
    right after one member, ``NextPod``). After a pod ends its cycle waiting on Permit, the domain tries
    ``siblings(pod)`` at once, in the order given, whatever their backoff."""

    def siblings(self, pod: PodInfo) -> list[str]: ...


@runtime_checkable
class ClusterObserver(Protocol):
    def observe(self, change: object) -> None:
        """Keep derived state in step with the cluster (see ``state`` for the changes)."""
        ...


EXTENSION_POINTS: dict[str, type] = {
    "preEnqueue": PreEnqueuePlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
}
"""The extension points a KubeSchedulerConfiguration profile configures, by their config names."""
