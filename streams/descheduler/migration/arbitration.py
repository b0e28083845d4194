"""Arbitration of waiting PodMigrationJobs (``migration/arbitrator/{sort,filter}.go``).

**Order.** Four stable sorts, one after another, so the last is the primary key: creation time (newest
first), the pod order of ``sorter.sort_pods`` (jobs whose pod is unknown first), jobs of pods of the same
batch Job moved next to its first one, and the number of that Job's migrating pods (most first).

**Filters**, per job in that order. Non-retryable (the job fails with reason ForbiddenMigratePod, message
``Pod "<ns>/<name>" is forbidden to migrate because it does not meet the requirements``): the evictor
filter, eviction cost MaxInt32, the namespaces, the expected-replicas rule (a workload of 1 replica, or
whose replicas equal its max migrating or max unavailable). Retryable (the job waits for the next round):
max migrating globally, per node, per namespace, per workload, max unavailable per workload (the one
that holds a job is named, so ``koord explain pod`` can say which rule delayed it). A limit
counts the jobs of *other* pods that are Running, or Pending and already passed arbitration; a limit of
None or <= 0 is off. A job that passes counts for the jobs after it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from streams.descheduler.evictor import refusal
from streams.descheduler.migration.args import MigrationArgs
from streams.descheduler.migration.limits import max_migrating
from streams.descheduler.snapshot import PodView
from streams.descheduler.sorter import sort_pods

MAX_EVICTION_COST = 2**31 - 1
FORBIDDEN = "ForbiddenMigratePod"
PASSED, FAILED, WAITING = "passed", "failed", "waiting"


def forbidden_message(pod_key: str) -> str:
    return f'Pod "{pod_key}" is forbidden to migrate because it does not meet the requirements'


@dataclasses.dataclass(frozen=True)
class JobView:
    name: str
    pod: str
    """The pod's "namespace/name"."""
    phase: str
    """Pending, Running, Succeeded, Failed or Aborted."""
    created_s: int
    node: str | None = None
    """The pod's node."""
    passed: bool = False
    """Passed arbitration (counts toward the limits while Pending)."""
    batch_job: str | None = None
    """UID of the batch Job controlling the pod, if any."""
    workload: str | None = None
    """UID of the pod's controller, if any."""


@dataclasses.dataclass(frozen=True)
class WorkloadView:
    replicas: int
    unavailable: frozenset[str]
    """Pods of the workload that are not active or not Ready."""


def sort_jobs(jobs: list[JobView], pods: Mapping[str, PodView], all_jobs: list[JobView]) -> list[JobView]:
    ordered = sorted(jobs, key=lambda job: -job.created_s)
    known = sort_pods([pods[job.pod] for job in ordered if job.pod in pods])
    rank = {pod.key: index for index, pod in enumerate(known)}
    ordered.sort(key=lambda job: rank.get(job.pod, -1))
    first: dict[str, int] = {}
    for index, job in enumerate(ordered):
        if job.batch_job is not None:
            first.setdefault(job.batch_job, index)
    ordered = [job for _, job in sorted(enumerate(ordered), key=lambda item: first.get(item[1].batch_job, item[0])
                                        if item[1].batch_job is not None else item[0])]
    migrating: dict[str, int] = {}
    for job in all_jobs:
        if job.batch_job is not None and (job.phase == "Running" or job.passed):
            migrating[job.batch_job] = migrating.get(job.batch_job, 0) + 1
    ordered.sort(key=lambda job: -migrating.get(job.batch_job, 0) if job.batch_job is not None else 0)
    return ordered


def _counted(job: JobView, arbitrating: bool) -> bool:
    if job.phase == "Running":
        return True
    return job.phase in ("Pending", "") and (job.passed or not arbitrating)


def _limited(limit: int | None, count: int) -> bool:
    return limit is not None and limit > 0 and count >= limit


def non_retryable(job: JobView, pod: PodView, args: MigrationArgs, workloads: Mapping[str, WorkloadView]) -> bool:
    """True when the job can never pass."""
    if refusal(pod, args.evictor) is not None or pod.eviction_cost == MAX_EVICTION_COST:
        return True
    if args.include_namespaces and pod.namespace not in args.include_namespaces:
        return True
    if pod.namespace in args.exclude_namespaces:
        return True
    workload = workloads.get(job.workload) if job.workload else None
    if workload is not None and not args.skip_check_expected_replicas:
        replicas = workload.replicas
        if replicas == 1 or replicas == max_migrating(replicas, args.max_migrating_per_workload) \
                or replicas == max_migrating(replicas, args.max_unavailable_per_workload):
            return True
    return False


def held_by(job: JobView, args: MigrationArgs, others: list[JobView], workloads: Mapping[str, WorkloadView],
            arbitrating: bool = True) -> str | None:
    """The retryable limit that holds the job back for now (its arg name and the count that reached it), or
    None when none does."""
    active = [other for other in others if other.pod != job.pod and _counted(other, arbitrating)]
    if _limited(args.max_migrating_globally, len(active)):
        return f"maxMigratingGlobally: {len(active)} jobs migrating"
    if job.node:
        count = len({o.pod for o in active if o.node == job.node})
        if _limited(args.max_migrating_per_node, count):
            return f'maxMigratingPerNode: {count} pods migrating on node "{job.node}"'
    namespace = job.pod.partition("/")[0]
    count = sum(o.pod.partition("/")[0] == namespace for o in active)
    if _limited(args.max_migrating_per_namespace, count):
        return f'maxMigratingPerNamespace: {count} pods migrating in namespace "{namespace}"'
    workload = workloads.get(job.workload) if job.workload else None
    if workload is not None:
        migrating = {o.pod for o in active if o.workload == job.workload}
        if migrating and len(migrating) >= max_migrating(workload.replicas, args.max_migrating_per_workload):
            return f"maxMigratingPerWorkload: {len(migrating)} of {workload.replicas} replicas migrating"
        unavailable = set(workload.unavailable) | migrating
        if len(unavailable) >= max_migrating(workload.replicas, args.max_unavailable_per_workload):
            return f"maxUnavailablePerWorkload: {len(unavailable)} of {workload.replicas} replicas unavailable"
    return None


def arbitrate(waiting: list[JobView], all_jobs: list[JobView], pods: Mapping[str, PodView],
              workloads: Mapping[str, WorkloadView], args: MigrationArgs) -> list[tuple[JobView, str, str]]:
    """(job, passed | failed | waiting, message) for each waiting job, in arbitration order; a waiting job's
    message names the limit that holds it (``held_by``)."""
    others = list(all_jobs)
    out = []
    for job in sort_jobs(waiting, pods, all_jobs):
        pod = pods.get(job.pod)
        if pod is None:
            verdict, message = PASSED, ""
        elif not pod.evict_annotated and non_retryable(job, pod, args, workloads):
            verdict, message = FAILED, forbidden_message(job.pod)
        elif not pod.evict_annotated and (held := held_by(job, args, others, workloads)) is not None:
            verdict, message = WAITING, held
        else:
            verdict, message = PASSED, ""
        if verdict == PASSED:
            others = [o for o in others if o.name != job.name] + [dataclasses.replace(job, passed=True)]
        out.append((job, verdict, message))
    return out
