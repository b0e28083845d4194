"""Arbitration and limits: Koordinator's ``util_test.go`` (GU-*), ``sort_test.go`` (SO-*) and
``filter_test.go`` (FL-*) vectors."""

import pytest

from streams.descheduler.migration.arbitration import (
    FAILED, PASSED, WAITING, JobView, WorkloadView, arbitrate, forbidden_message, held_by, sort_jobs)
from streams.descheduler.migration.args import MigrationArgs
from streams.descheduler.migration.limits import max_migrating, new_bucket
from streams.descheduler.snapshot import PodView


@pytest.mark.parametrize("replicas, value, expected", [
    pytest.param(6, "80%", 4, id="GU-1"), pytest.param(6, "150%", 6, id="GU-2"), pytest.param(6, 5, 5, id="GU-3"),
    pytest.param(6, 7, 6, id="GU-4"), pytest.param(6, None, 2, id="GU-5"), pytest.param(50, "0%", 1, id="GU-6"),
    pytest.param(6, 0, 1, id="GU-7")])
def test_max_migrating(replicas, value, expected):
    assert max_migrating(replicas, value) == expected


def job(index, created=0, batch_job=None, phase="", passed=False, node=None, pod=None, workload=None):
    return JobView(f"job-{index}", pod or f"default/pod-{index}", phase, created, node, passed, batch_job, workload)


def test_so1_newest_first():
    created = {1: 222222, 2: 222222222, 3: 111111111, 4: 11111, 5: 11111}
    jobs = [job(i, created[i]) for i in (1, 2, 3, 4, 5)]
    assert [j.name for j in sort_jobs(jobs, {}, jobs)] == ["job-2", "job-3", "job-1", "job-4", "job-5"]


@pytest.mark.parametrize("owners, expected", [
    pytest.param({3: "J0", 8: "J0", 1: "J1", 9: "J1"}, [0, 1, 9, 2, 3, 8, 4, 5, 6, 7], id="SO-3-two-jobs"),
    pytest.param({4: "J0", 8: "J0"}, [0, 1, 2, 3, 4, 8, 5, 6, 7, 9], id="SO-3-one-job"),
])
def test_so3_pods_of_one_batch_job_are_moved_together(owners, expected):
    jobs = [job(i, batch_job=owners.get(i)) for i in range(10)]
    assert [int(j.name[4:]) for j in sort_jobs(jobs, {}, jobs)] == expected


def test_so4_jobs_whose_batch_job_migrates_most_go_first():
    owners = {4: "J0", 8: "J0", 7: "J1"}
    jobs = [job(i, batch_job=owners.get(i)) for i in range(10)]
    running = [job(100, batch_job="J0", phase="Running"), job(101, batch_job="J1", phase="Running"),
               job(102, batch_job="J1", phase="Running")]
    assert [int(j.name[4:]) for j in sort_jobs(jobs, {}, jobs + running)] == [7, 4, 8, 0, 1, 2, 3, 5, 6, 9]


def pod(name, namespace="default", owner=("ReplicaSet",), **extra):
    return PodView(f"{namespace}/{name}", namespace, name, 0, "koord-batch", "BE", "BestEffort",
                   owner_kinds=owner, **extra)


@pytest.mark.parametrize("limit, others, held", [
    pytest.param(0, [job(2, phase="Running", node="n1")], False, id="FL-1-off"),
    pytest.param(1, [], False, id="FL-1-no-jobs"),
    pytest.param(1, [job(9, phase="Running", node="n1", pod="default/pod-1")], False, id="FL-1-own-job"),
    pytest.param(1, [job(2, phase="Running", node="n1")], True, id="FL-1-other-pod-same-node"),
    pytest.param(1, [job(2, phase="Running", node="n2")], False, id="FL-1-other-node"),
    pytest.param(2, [job(2, phase="Running", node="n1"), job(3, phase="Running", node="n1")], True,
                 id="FL-1-two-others"),
])
def test_fl1_max_migrating_per_node(limit, others, held):
    args = MigrationArgs(max_migrating_per_node=limit)
    assert (held_by(job(1, node="n1"), args, others, {}) is not None) is held


@pytest.mark.parametrize("max_unavailable, unavailable, migrating_workload, held", [
    pytest.param(1, 0, None, False, id="FL-3-max1-none"),
    pytest.param(1, 1, None, True, id="FL-3-max1-unavailable"),
    pytest.param(1, 0, "w", True, id="FL-3-max1-migrating"),
    pytest.param(2, 1, None, False, id="FL-3-max2-unavailable"),
    pytest.param(2, 0, "w", False, id="FL-3-max2-migrating"),
    pytest.param(2, 1, "w", True, id="FL-3-max2-both"),
    pytest.param(2, 1, "other", False, id="FL-3-max2-other-workload"),
])
def test_fl3_max_unavailable_per_workload(max_unavailable, unavailable, migrating_workload, held):
    args = MigrationArgs(max_migrating_per_node=None, max_migrating_per_workload=9,
                         max_unavailable_per_workload=max_unavailable)
    workloads = {"w": WorkloadView(10, frozenset({"default/down"} if unavailable else ())),
                 "other": WorkloadView(10, frozenset())}
    others = [job(2, phase="Running", workload=migrating_workload)] if migrating_workload else []
    assert (held_by(job(1, workload="w"), args, others, workloads) is not None) is held


@pytest.mark.parametrize("replicas, args, failed", [
    pytest.param(1, MigrationArgs(max_migrating_per_workload=1), True, id="FL-4-one-replica"),
    pytest.param(100, MigrationArgs(max_unavailable_per_workload=100), True, id="FL-4-all-unavailable"),
    pytest.param(100, MigrationArgs(max_unavailable_per_workload=10), False, id="FL-4-ten-of-100"),
])
def test_fl4_expected_replicas(replicas, args, failed):
    workloads = {"w": WorkloadView(replicas, frozenset())}
    [(_, verdict, message)] = arbitrate([job(1, workload="w")], [], {"default/pod-1": pod("pod-1")}, workloads, args)
    assert (verdict == FAILED) is failed
    if failed:
        assert message == forbidden_message("default/pod-1")


def test_a_job_that_passes_counts_for_the_jobs_after_it():
    jobs = [job(1, node="n1"), job(2, node="n1"), job(3, node="n1")]
    pods = {j.pod: pod(j.pod.partition("/")[2]) for j in jobs}
    verdicts = arbitrate(jobs, jobs, pods, {}, MigrationArgs(max_migrating_per_node=2))
    assert [v for _, v, _ in verdicts] == [PASSED, PASSED, WAITING]
    assert verdicts[2][2] == 'maxMigratingPerNode: 2 pods migrating on node "n1"'


def test_daemonset_pods_are_forbidden():
    verdicts = arbitrate([job(1)], [], {"default/pod-1": pod("pod-1", owner=("DaemonSet",))}, {}, MigrationArgs())
    assert verdicts[0][1] == FAILED


@pytest.mark.parametrize("wait_ms, tokens_left", [pytest.param(100, True, id="OL-1"), pytest.param(10, False,
                                                                                                   id="OL-2")])
def test_object_limiter_bucket_refills_in_event_time(wait_ms, tokens_left):
    bucket = new_bucket(10, 1000, 1, 0)
    bucket.take(0)
    assert (bucket.available(wait_ms) - 1 >= 0) is tokens_left
