"""Core-scheduling groups with a fake kernel: pods of one group share a cookie, ``0`` clears, an old kernel
makes the setting unsupported without losing the pod's other settings."""

import errno

import pytest

from node_agent.actuator.coresched import CoreScheduling
from tests.node_agent.actuator.conftest import POD_UID, actuation, make_actuator

OTHER_UID = "bbbbbbbb-0000-0000-0000-000000000002"


class FakeKernel:
    def __init__(self, pids=(), supported=True):
        self.cookies = {pid: 0 for pid in pids}
        self.supported, self.next = supported, 100

    def unsupported(self):
        return None if self.supported else "this kernel has no core scheduling"

    def cookie(self, pid):
        if pid not in self.cookies:
            raise OSError(errno.ESRCH, "No such process")
        return self.cookies[pid]

    def create(self, tgid):
        self.cookie(tgid)
        self.next += 1
        self.cookies[tgid] = self.next

    def share(self, source, tgid):
        self.cookies[tgid] = 0 if source is None else self.cookie(source)


def test_pods_of_one_group_share_a_cookie_and_zero_clears():
    kernel = FakeKernel([1, 2, 3, 4])
    core = CoreScheduling(kernel)
    assert core.apply("group-a", [1, 2]) is None and core.apply("group-a", [3]) is None
    assert kernel.cookies[1] == kernel.cookies[2] == kernel.cookies[3] != 0
    assert core.apply("group-b", [4]) is None and kernel.cookies[4] not in (0, kernel.cookies[1])
    assert core.read([1, 2, 3], "group-a") == "group-a" and core.read([1, 4], "group-a") is None
    assert core.apply("0", [3]) is None and kernel.cookies[3] == 0 and core.read([3], "0") == "0"


def test_a_gone_carrier_gets_the_group_a_new_cookie_and_exited_tasks_are_skipped():
    kernel = FakeKernel([1, 2, 3])
    core = CoreScheduling(kernel)
    core.apply("g", [1])
    del kernel.cookies[1]
    assert core.apply("g", [5, 2, 3]) is None
    assert kernel.cookies[2] == kernel.cookies[3] != 0 and core.carriers["g"] == 2


@pytest.fixture
def pod_tree(v1_tree):
    rel = v1_tree.pod(POD_UID)
    v1_tree.path("cpu", rel, "cgroup.procs").write_text("11\n12\n")
    v1_tree.path("cpu", v1_tree.container(rel), "cgroup.procs").write_text("13\n")
    return v1_tree


def test_the_pods_tasks_join_the_group_and_the_ack_reads_it_back(pod_tree):
    kernel = FakeKernel([11, 12, 13])
    actuator = make_actuator(pod_tree)
    actuator.backends["cgroup"].core_sched = CoreScheduling(kernel)
    ack = actuator.apply(actuation({"core_sched.group": "group-a-expeller", "cpu.shares": "512"}, kind="pod",
                                   target=POD_UID))
    assert ack["applied"] and ack["error"] is None
    assert ack["values"] == {"cpu.shares": "512", "core_sched.group": "group-a-expeller"}
    assert len({kernel.cookies[pid] for pid in (11, 12, 13)} - {0}) == 1


def test_a_kernel_without_core_scheduling_keeps_the_other_settings(pod_tree):
    actuator = make_actuator(pod_tree)
    actuator.backends["cgroup"].core_sched = CoreScheduling(FakeKernel(supported=False))
    ack = actuator.apply(actuation({"core_sched.group": "g", "cpu.shares": "512"}, kind="pod", target=POD_UID))
    assert ack["applied"] is True and ack["values"] == {"cpu.shares": "512"}
    assert ack["error"] == "unsupported core_sched.group: this kernel has no core scheduling"
    assert pod_tree.read("cpu", pod_tree.layout.pod_dir(POD_UID, "BestEffort"), "cpu.shares") == "512"


def test_a_group_that_is_no_label_value_is_refused(pod_tree):
    ack = make_actuator(pod_tree).apply(actuation({"core_sched.group": "../x"}, kind="pod", target=POD_UID))
    assert ack["applied"] is False and ack["error"].startswith("rejected (bad-value)")


def test_this_kernel_answers_whether_it_has_core_scheduling():
    """The real prctl: either supported, or unsupported with the reason (this machine: EINVAL)."""
    why = CoreScheduling().unsupported()
    assert why is None or "PR_SCHED_CORE" in why
