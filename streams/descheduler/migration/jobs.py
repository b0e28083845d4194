"""PodMigrationJobs and their controller (``migration/controller.go``), in event time.

A job comes from LowNodeLoad (one per pod it evicts) or is applied by a user. Each step, in job-name
order: a paused or finished job is left alone; a job older than its TTL fails ("Abort job caused by
timeout"); a job of a pod that is gone fails (MissingPod); a Pending job waits for arbitration
(``arbitration.arbitrate``: passed, forbidden, or held by a limit); a passed job waits while its workload's
object-limiter bucket is empty, then runs. EvictDirectly evicts the pod: the job is Succeeded,
"Pod \"<ns/name>\" has been evicted", and an Eviction decision goes to whoever carries evictions out
(the simulator, or the Kubernetes bridge through the Eviction API). ReservationFirst (the default) first
creates a Reservation for the pod (its template, owned by the pod's controller or else by the pod, kept
off its current node) and waits, Running: when the reservation is Available on another node the pod is
evicted ("WaitForPodBindReservation"); when a pod binds it the job is Succeeded, "Bind Pod \"<ns/name>\"
in Reservation \"<name>\""; a reservation the scheduler cannot place fails the job (Unschedulable), one
placed on the pod's own node too (ForbiddenMigratePod), and an expired one (ReservationExpired).

A job waiting for a limit records which one holds it (``held_by``, e.g. ``maxMigratingPerNode: 2 pods
migrating on node "n1"``), kept after it passes so ``koord explain pod`` can say what delayed the move.
A user aborts a job by applying it with ``status.phase: Aborted`` (Koordinator's "the user forcefully
aborted"): it is left alone from then on. The scavenger (``scavenger`` in ``controller.go``) deletes every
job created more than 30 minutes ago (its TTL + 5 minutes when it has one) and the reservation it created.

Each job evicts at most once: its eviction is recorded in the job, so a duplicated or replayed event
never produces a second Eviction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from streams.descheduler.migration.arbitration import FAILED, FORBIDDEN, PASSED, JobView, WorkloadView, arbitrate
from streams.descheduler.migration.args import MODE_RESERVATION_FIRST, MigrationArgs
from streams.descheduler.migration.limits import TokenBucket, max_migrating, new_bucket
from streams.descheduler.snapshot import PodView

PENDING, RUNNING, SUCCEEDED, FAILED_PHASE, ABORTED = "Pending", "Running", "Succeeded", "Failed", "Aborted"
FINISHED = (SUCCEEDED, FAILED_PHASE, ABORTED)
REASON_TIMEOUT, REASON_MISSING_POD = "Timeout", "MissingPod"
REASON_UNSCHEDULABLE, REASON_FORBIDDEN, REASON_EXPIRED = "Unschedulable", "ForbiddenMigratePod", "ReservationExpired"
REASON_WAIT_BIND = "WaitForPodBindReservation"
CONDITION_ARBITRATION = "Arbitration"
"""koordstream's PodMigrationJob condition type: the arbitration limit that held the job (status False while it
holds, True once the job passed)."""
SCAVENGE_AFTER_MS = 30 * 60_000
"""``defaultGCDuration``: a job without a TTL is deleted this long after its creation."""
SCAVENGE_TTL_MARGIN_MS = 5 * 60_000
"""A job with a TTL is deleted this long after the TTL."""


@dataclasses.dataclass(frozen=True)
class ReservationView:
    """What a job reads of its reservation: (phase, node, owners, last unschedulable message)."""

    phase: str
    node: str | None
    owners: tuple[str, ...] = ()
    message: str = ""


@dataclasses.dataclass
class Job:
    name: str
    pod: str
    """"namespace/name" of the pod to move."""
    created_ms: int
    mode: str | None = None
    ttl_ms: int | None = None
    paused: bool = False
    phase: str = PENDING
    reason: str = ""
    message: str = ""
    passed: bool = False
    trigger: str = ""
    """Why the job exists ("node is overutilized, ..." for LowNodeLoad; empty for a user's job)."""
    evicted: bool = False
    node: str | None = None
    reservation: str | None = None
    """The Reservation a ReservationFirst job created."""
    held_by: str = ""
    """The arbitration limit that last held the job back (empty: none did)."""

    def to_entry(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Evict:
    job: str
    pod: str
    node: str | None
    reason: str
    message: str


@dataclasses.dataclass(frozen=True)
class Step:
    """What one step of the jobs asks the domain to write."""

    changed: list[Job]
    """Jobs whose status changed."""
    evictions: list[Evict]
    reserves: list["Reserve"]
    """Reservations to create."""
    deleted: list[Job]
    """Jobs the scavenger removed: the job and its reservation are deleted."""


@dataclasses.dataclass(frozen=True)
class Reserve:
    """Create Reservation ``name`` for ``pod`` (a ReservationFirst job's first step)."""

    job: str
    name: str
    pod: str
    avoid_node: str | None


class Migrations:
    """Every job the domain knows, and the object limiter's buckets."""

    def __init__(self) -> None:
        self.jobs: dict[str, Job] = {}
        self.buckets: dict[str, TokenBucket] = {}

    def active_for(self, pod: str) -> bool:
        return any(job.pod == pod and job.phase not in FINISHED for job in self.jobs.values())

    def step(self, now_ms: int, pods: Mapping[str, PodView], nodes_of: Mapping[str, str],
             workload_of: Mapping[str, str], workloads: Mapping[str, WorkloadView],
             args: MigrationArgs, reservations: Mapping[str, ReservationView] | None = None) -> Step:
        deleted = self._scavenge(now_ms)
        changed: dict[str, Job] = {}
        evictions: list[Evict] = []
        reserves: list[Reserve] = []
        reservations = reservations or {}

        def update(job: Job, **fields) -> None:
            for key, value in fields.items():
                setattr(job, key, value)
            changed[job.name] = job

        for name in sorted(self.jobs):
            job = self.jobs[name]
            if job.paused or job.phase in FINISHED:
                continue
            ttl = job.ttl_ms if job.ttl_ms else args.default_job_ttl_ms
            if ttl > 0 and now_ms - job.created_ms >= ttl:
                update(job, phase=FAILED_PHASE, reason=REASON_TIMEOUT, message="Abort job caused by timeout")
            elif job.phase == RUNNING:
                self._follow(job, reservations.get(job.reservation or ""), nodes_of, update, evictions)
            elif job.pod not in pods:
                update(job, phase=FAILED_PHASE, reason=REASON_MISSING_POD,
                       message=f'Abort job caused by missing Pod "{job.pod}"')
        views = [self._view(job, nodes_of, workload_of) for job in self.jobs.values()]
        waiting = [view for view in views if self.jobs[view.name].phase == PENDING and not view.passed]
        for view, verdict, message in arbitrate(waiting, views, pods, workloads, args):
            job = self.jobs[view.name]
            if verdict == PASSED:
                update(job, passed=True)
            elif verdict == FAILED:
                update(job, phase=FAILED_PHASE, reason=FORBIDDEN, message=message)
            elif job.held_by != message:
                update(job, held_by=message)
        for name in sorted(self.jobs):
            job = self.jobs[name]
            if job.paused or job.phase != PENDING or not job.passed:
                continue
            workload = workload_of.get(job.pod)
            if not self._tokens(workload, now_ms):
                continue
            mode = job.mode or args.default_job_mode
            node = nodes_of.get(job.pod)
            if mode == MODE_RESERVATION_FIRST:
                name = job.reservation or job.name
                update(job, phase=RUNNING, reason="", reservation=name, node=node,
                       message=f'Creating Reservation "{name}" for Pod "{job.pod}"')
                reserves.append(Reserve(job.name, name, job.pod, node))
                self._track(workload, workloads, args, now_ms)
                continue
            update(job, phase=SUCCEEDED, reason="", evicted=True, node=node,
                   message=f'Pod "{job.pod}" has been evicted')
            evictions.append(Evict(job.name, job.pod, node, "Descheduled",
                                   job.trigger or f"PodMigrationJob {job.name}"))
            self._track(workload, workloads, args, now_ms)
        return Step(list(changed.values()), evictions, reserves, deleted)

    def _scavenge(self, now_ms: int) -> list[Job]:
        deleted = []
        for name in sorted(self.jobs):
            job = self.jobs[name]
            after = job.ttl_ms + SCAVENGE_TTL_MARGIN_MS if job.ttl_ms else SCAVENGE_AFTER_MS
            if now_ms - job.created_ms > after:
                deleted.append(self.jobs.pop(name))
        return deleted

    def abort(self, name: str) -> bool:
        """The user aborted job ``name``; True when that changed it."""
        job = self.jobs.get(name)
        if job is None or job.phase in FINISHED:
            return False
        job.phase, job.reason, job.message = ABORTED, "", "Aborted by the user"
        return True

    @staticmethod
    def _follow(job: Job, reservation: ReservationView | None, nodes_of: Mapping[str, str], update,
                evictions: list[Evict]) -> None:
        """A Running ReservationFirst job: evict once its reservation is placed elsewhere, succeed once bound."""
        if reservation is None:
            return
        if reservation.owners:
            update(job, phase=SUCCEEDED, reason="",
                   message=f'Bind Pod "{reservation.owners[0]}" in Reservation "{job.reservation}"')
        elif reservation.phase == "Failed":
            update(job, phase=FAILED_PHASE, reason=REASON_EXPIRED, message="Reservation expired")
        elif reservation.phase == "Pending" and reservation.message:
            update(job, phase=FAILED_PHASE, reason=REASON_UNSCHEDULABLE, message=reservation.message)
        elif reservation.phase == "Available" and not job.evicted:
            if reservation.node == job.node:
                update(job, phase=FAILED_PHASE, reason=REASON_FORBIDDEN,
                       message=f'Scheduler assignes the Reservation "{job.reservation}" on the same node as the Pod')
                return
            update(job, evicted=True, reason=REASON_WAIT_BIND, message="Waiting for Pod bind Reservation")
            evictions.append(Evict(job.name, job.pod, job.node, "Descheduled",
                                   job.trigger or f"PodMigrationJob {job.name}"))

    def _view(self, job: Job, nodes_of: Mapping[str, str], workload_of: Mapping[str, str]) -> JobView:
        return JobView(job.name, job.pod, job.phase, job.created_ms // 1000, nodes_of.get(job.pod), job.passed,
                       None, workload_of.get(job.pod))

    def _tokens(self, workload: str | None, now_ms: int) -> bool:
        bucket = self.buckets.get(workload) if workload else None
        return bucket is None or bucket.available(now_ms) - 1 >= 0

    def _track(self, workload: str | None, workloads: Mapping[str, WorkloadView], args: MigrationArgs,
               now_ms: int) -> None:
        limit = args.object_limits.get("workload")
        if workload is None or limit is None or limit.duration_ms <= 0 or workload not in workloads:
            return
        replicas = max_migrating(workloads[workload].replicas,
                                 limit.max_migrating if limit.max_migrating is not None
                                 else args.max_migrating_per_workload)
        if replicas <= 0:
            return
        bucket = self.buckets.get(workload)
        if bucket is None:
            bucket = self.buckets[workload] = new_bucket(replicas, limit.duration_ms, limit.burst, now_ms)
        bucket.take(now_ms)

    def entries(self) -> dict[str, dict]:
        out = {f"job/{name}": job.to_entry() for name, job in self.jobs.items()}
        out.update({f"bucket/{key}": dataclasses.asdict(bucket) for key, bucket in self.buckets.items()})
        return out

    def restore(self, entries: Mapping[str, Mapping]) -> None:
        for key, value in entries.items():
            kind, _, name = key.partition("/")
            if kind == "job":
                self.jobs[name] = Job(**value)
            elif kind == "bucket":
                self.buckets[name] = TokenBucket(**value)
