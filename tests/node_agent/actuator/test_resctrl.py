"""The resctrl backend on a fake /sys/fs/resctrl: Koordinator's masks and MBA values, group tasks."""

import pytest

from node_agent.actuator.resctrl import MaskProblem, ResctrlInfo, l3_mask, mask_percents
from node_agent.actuator.verify import BAD_VALUE, Rejected, Target
from tests.node_agent.actuator.conftest import POD_UID, ResctrlTree, intel_proc

BE = Target("qos", "BE", "resctrl", qos="BE")


@pytest.mark.parametrize("cbm, start, end, mask", [(0xff, 0, 100, 0xff), (0x3ff, 10, 80, 0xfe), (0x7ff, 10, 50, 0x3c),
                                                   (0x3ff, 0, 30, 0x7), (0x3ff, 10, 85, 0x1fe)])
def test_cat_masks_are_koordinators(cbm, start, end, mask):  # TV-3-27
    assert l3_mask(cbm, start, end) == mask


@pytest.mark.parametrize("cbm, start, end", [(0x101, 0, 100), (4, 0, 100), (0xff, -10, 50), (0xff, 30, 30)])
def test_bad_masks(cbm, start, end):
    with pytest.raises(MaskProblem):
        l3_mask(cbm, start, end)


@pytest.mark.parametrize("amd, percent, value", [(False, 85, 90), (False, 80, 80), (True, 80, 128), (True, 30, 48),
                                                 (True, 100, 2048)])
def test_mba_values_are_koordinators(amd, percent, value):  # TV-3-29
    assert ResctrlInfo(0x7ff, (0,), (0,), 10, 10, amd).mb_value(percent) == value


def test_mask_percents_give_back_the_same_mask():
    for start, end in ((0, 30), (10, 50), (10, 85), (0, 100)):
        assert l3_mask(0x7ff, *mask_percents(l3_mask(0x7ff, start, end), 11)) == l3_mask(0x7ff, start, end)


@pytest.fixture
def host(tmp_path, v1_tree):
    resctrl, proc = ResctrlTree(tmp_path / "resctrl"), intel_proc(tmp_path)
    return resctrl, resctrl.backend(v1_tree, proc)


def apply(backend, values, target=BE):
    plan = backend.plan(target, values)
    outcome = backend.execute(plan)
    return plan, outcome, backend.read_back(plan)


def test_group_is_created_with_its_schemata(host):  # TV-3-28 shape, cbm 7ff, two caches
    resctrl, backend = host
    plan, outcome, back = apply(backend, {"l3.start_percent": "10", "l3.end_percent": "50", "mb.percent": "85"})
    assert outcome.error is None
    assert (resctrl.root / "BE/schemata").read_text() == "L3:0=3c;1=3c\nMB:0=90;1=90\n"
    assert back == {"l3.start_percent": "10", "l3.end_percent": "50", "mb.percent": "90"}
    assert apply(backend, {"l3.start_percent": "10", "l3.end_percent": "50"})[0].actions == []


@pytest.mark.parametrize("values", [{"l3.start_percent": "-20", "l3.end_percent": "50"},
                                    {"l3.start_percent": "0", "l3.end_percent": "300"}, {"mb.percent": "0"},
                                    {"mb.percent": "5"}, {"mb.percent": "101"},
                                    {"l3.start_percent": "60", "l3.end_percent": "30"}])
def test_percents_out_of_range_and_a_reversed_range_are_rejected(host, values):
    """Never clamped: -20 % is not 0 %, 5 % MBA is not the host's 10 % minimum."""
    resctrl, backend = host
    with pytest.raises(Rejected) as rejected:
        backend.plan(BE, values)
    assert rejected.value.reason == BAD_VALUE
    assert not (resctrl.root / "BE").exists()


def test_pod_threads_join_the_group(host, v1_tree):
    resctrl, backend = host
    pod = v1_tree.pod(POD_UID)
    container = v1_tree.container(pod)
    (v1_tree.root / "cpu" / pod / "tasks").write_text("100\n")
    (v1_tree.root / "cpu" / container / "tasks").write_text("101\n102\n")
    plan, outcome, back = apply(backend, {"tasks.pods": POD_UID})
    assert outcome.error is None
    assert (resctrl.root / "BE/tasks").read_text().split() == ["100", "101", "102"]
    assert back == {"tasks.pods": POD_UID}
    assert apply(backend, {"tasks.pods": POD_UID})[0].actions == []


def test_missing_pod_is_reported(host):
    _, backend = host
    _, outcome, back = apply(backend, {"tasks.pods": "bbbbbbbb-0000-0000-0000-000000000001"})
    assert "without a cgroup" in outcome.error and back == {"tasks.pods": ""}


def test_failed_schemata_write_removes_the_new_group(host):
    resctrl, backend = host

    def failing(path, value):
        raise OSError(22, "Invalid argument")
    backend.writer = failing
    _, outcome, _ = apply(backend, {"l3.end_percent": "30"})
    assert "EINVAL" in outcome.error and not (resctrl.root / "BE").exists()


def test_unmounted_resctrl_is_unsupported(tmp_path, v1_tree):
    from node_agent.actuator.resctrl import ResctrlBackend
    plan = ResctrlBackend(tmp_path / "none", v1_tree.layout).plan(BE, {"l3.end_percent": "30"})
    assert set(plan.unsupported) == {"l3.end_percent"} and plan.requested == ()


def test_a_pod_gets_its_own_group_named_from_its_uid(host, v1_tree):
    resctrl, backend = host
    pod = v1_tree.pod(POD_UID)
    (v1_tree.root / "cpu" / pod / "tasks").write_text("200\n")
    target = Target("pod", POD_UID, "resctrl", pod_uid=POD_UID)
    _, outcome, back = apply(backend, {"l3.start_percent": "0", "l3.end_percent": "30", "mb.percent": "100",
                                       "tasks.pods": POD_UID}, target)
    assert outcome.error is None
    group = resctrl.root / f"koordlet-{POD_UID}"
    assert (group / "schemata").read_text() == "L3:0=f;1=f\nMB:0=100;1=100\n"
    assert (group / "tasks").read_text().split() == ["200"]
    assert back == {"l3.start_percent": "0", "l3.end_percent": "30", "mb.percent": "100", "tasks.pods": POD_UID}


def test_a_pods_group_takes_only_that_pods_tasks(host):
    _, backend = host
    with pytest.raises(Rejected) as rejected:
        backend.plan(Target("pod", POD_UID, "resctrl", pod_uid=POD_UID),
                     {"tasks.pods": "bbbbbbbb-0000-0000-0000-000000000001"})
    assert rejected.value.reason == BAD_VALUE


POD = Target("pod", POD_UID, "resctrl", pod_uid=POD_UID)


def test_a_pods_group_is_removed_with_group_remove(host, v1_tree):
    resctrl, backend = host
    (v1_tree.root / "cpu" / v1_tree.pod(POD_UID) / "tasks").write_text("200\n")
    apply(backend, {"l3.start_percent": "0", "l3.end_percent": "30", "tasks.pods": POD_UID}, POD)
    plan, outcome, back = apply(backend, {"group.remove": "1"}, POD)
    assert plan.actions == [f"rmdir {resctrl.root / f'koordlet-{POD_UID}'}"] and outcome.error is None
    assert back == {"group.remove": "1"} and not (resctrl.root / f"koordlet-{POD_UID}").exists()
    assert apply(backend, {"group.remove": "1"}, POD)[0].actions == []


@pytest.mark.parametrize("values", [{"group.remove": "0"}, {"group.remove": "1", "mb.percent": "50"}])
def test_group_remove_is_one_and_alone(host, values):
    _, backend = host
    with pytest.raises(Rejected) as rejected:
        backend.plan(POD, values)
    assert rejected.value.reason == BAD_VALUE


def test_a_failed_removal_is_reported(host):
    _, backend = host
    apply(backend, {"mb.percent": "50"}, POD)

    def busy(path):
        raise OSError(16, "Device or resource busy")
    backend.rmdir = busy
    _, outcome, back = apply(backend, {"group.remove": "1"}, POD)
    assert "EBUSY" in outcome.error and back == {"group.remove": "0"}
