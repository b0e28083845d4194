"""A pod's ``cpuset.cpus`` (CPUSet strategy) on fake v1 and v2 trees: one pinned CPU is enough, and on v1
the pod's containers follow in an order the kernel accepts (a writer that enforces v1's nesting rules)."""

import errno
import os
from pathlib import Path

import pytest

from node_agent.actuator import limits
from node_agent.actuator.files import write_value
from node_agent.actuator.verify import BAD_VALUE, Rejected, Target
from tests.node_agent.actuator.conftest import CONTAINER_ID, POD_UID

POD = Target("pod", POD_UID, "cgroup", pod_uid=POD_UID)
BE = Target("qos", "BE", "cgroup", qos="BE")


def apply(backend, target, values):
    plan = backend.plan(target, values)
    outcome = backend.execute(plan)
    return plan, outcome, backend.read_back(plan)


def v1_kernel(top: Path):
    """A writer refusing what cgroup v1 refuses: a cpuset outside the parent's (EACCES), or one dropping CPUs a
    child cgroup still has (EBUSY). ``top`` is the hierarchy root, whose set is not checked."""
    def cpus(path: Path) -> frozenset[int]:
        return limits.parse_cpulist(path.read_text().strip())

    def writer(path: Path, value: str) -> None:
        wanted, directory = limits.parse_cpulist(value), path.parent
        if directory.parent != top and not wanted <= cpus(directory.parent / path.name):
            raise OSError(errno.EACCES, "outside the parent's cpuset", str(path))
        for child in directory.iterdir():
            if child.is_dir() and not cpus(child / path.name) <= wanted:
                raise OSError(errno.EBUSY, "a child uses CPUs outside the new set", str(path))
        write_value(path, value)
    return writer


def test_a_single_pinned_cpu_is_enough_for_a_pod_but_not_for_the_be_tier(any_tree):
    pod = any_tree.pod(POD_UID, "Guaranteed")
    plan, outcome, back = apply(any_tree.backend(), POD, {"cpuset.cpus": "3", "cpu.cfs_quota_us": "-1"})
    assert outcome.error is None and not plan.unsupported
    assert any_tree.read("cpuset", pod, "cpuset.cpus") == "3"
    assert back == {"cpuset.cpus": "3", "cpu.cfs_quota_us": "-1"}
    with pytest.raises(Rejected, match="floor is 2"):
        any_tree.backend().plan(BE, {"cpuset.cpus": "3"})


@pytest.mark.parametrize("cpuset", ["4-5", "", "1-0"], ids=["outside-parent", "empty", "not-a-list"])
def test_a_pod_cpuset_outside_its_parent_or_empty_is_refused(any_tree, cpuset):
    any_tree.pod(POD_UID, "Guaranteed")
    with pytest.raises(Rejected) as rejected:
        any_tree.backend().plan(POD, {"cpuset.cpus": cpuset})
    assert rejected.value.reason == BAD_VALUE


@pytest.mark.parametrize("steps", [("1", "0-3"), ("0-1", "2-3", "1")], ids=["narrow-then-widen", "disjoint"])
def test_v1_pod_and_its_containers_follow_the_set_in_a_kernel_order(v1_tree, steps):
    pod = v1_tree.pod(POD_UID, "Guaranteed")
    container = v1_tree.container(pod)
    sandbox = v1_tree.container(pod, "f" * 64)
    v1_tree.mkdir(f"{container}/nested")
    backend = v1_tree.backend(writer=v1_kernel(v1_tree.root / "cpuset"))
    for cpuset in steps:
        plan, outcome, back = apply(backend, POD, {"cpuset.cpus": cpuset})
        assert outcome.error is None, outcome.error
        assert back == {"cpuset.cpus": cpuset}
        for rel in (pod, container, sandbox, f"{container}/nested"):
            assert v1_tree.read("cpuset", rel, "cpuset.cpus") == cpuset, rel


def test_v1_failure_inside_the_subtree_restores_every_cgroup(v1_tree):
    pod = v1_tree.pod(POD_UID, "Guaranteed")
    container = v1_tree.container(pod, CONTAINER_ID)
    kernel = v1_kernel(v1_tree.root / "cpuset")

    def failing(path: Path, value: str) -> None:
        if path.parent.name == CONTAINER_ID and value == "2":
            raise OSError(errno.ENOSPC, "no space", str(path))
        kernel(path, value)

    _, outcome, _ = apply(v1_tree.backend(writer=failing), POD, {"cpuset.cpus": "2"})
    assert outcome.error is not None and "ENOSPC" in outcome.error
    assert [v1_tree.read("cpuset", rel, "cpuset.cpus") for rel in (pod, container)] == ["0-3", "0-3"]


def test_v1_subtree_walk_does_not_follow_a_symlink(v1_tree, tmp_path):
    pod = v1_tree.pod(POD_UID, "Guaranteed")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "cpuset.cpus").write_text("0-3\n")
    os.symlink(outside, v1_tree.root / "cpuset" / pod / "escape")
    apply(v1_tree.backend(), POD, {"cpuset.cpus": "1"})
    assert (outside / "cpuset.cpus").read_text() == "0-3\n"
    assert v1_tree.read("cpuset", pod, "cpuset.cpus") == "1"
