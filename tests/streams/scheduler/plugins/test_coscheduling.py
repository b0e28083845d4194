"""Coscheduling: Koordinator's gang vectors (``TestGangCache_OnPodAdd`` GS-1..3, ``TestPlugin_PreEnqueue``
GS-4..8, ``TestPermit`` GS-10..17) on the plugin, and All-or-Nothing end to end through the domain."""

import pytest

from streams.scheduler.domain import SchedulingDomain
from streams.scheduler.plugins.coscheduling import NAME
from tests.streams.scheduler.support import decisions, node, plugin_of, pod, pod_group, pod_info, run, tick

G = "gang.scheduling.koordinator.sh/"
PG = "pod-group.scheduling.sigs.k8s.io"


def gang_pod(name, gang="ganga", namespace="default", node_name=None, cpu=1000, ts=1000, **annotations):
    values = {G + "name": gang, **{G + key.replace("_", "-"): value for key, value in annotations.items()}}
    return pod(name, cpu=cpu, namespace=namespace, node_name=node_name, annotations=values, ts=ts)


def group_pod(name, group, namespace, cpu=1000, ts=1000):
    return pod(name, cpu=cpu, namespace=namespace, labels={PG: group}, ts=ts)


def plugin(*events):
    domain, _ = run(*events)
    return domain, plugin_of(domain, NAME)


def test_gs1_the_first_valid_pod_initialises_the_gang_and_a_bound_pod_satisfies_it():
    _, cosched = plugin(
        gang_pod("pod1", min_available="2", waiting_time="30s", mode="NonStrict",
                 groups='["default/ganga","default/gangb"]', node_name="nba"),
        gang_pod("pod2", min_available="7", waiting_time="3000s", groups='["default/gangc","default/gangd"]'))
    gang = cosched.gang("default/ganga")
    assert (gang.min, gang.total, gang.wait_ms, gang.mode, gang.groups, gang.match_policy) == (
        2, 2, 30_000, "NonStrict", ("default/ganga", "default/gangb"), "once-satisfied")
    assert gang.group_id == "default/ganga,default/gangb"
    assert cosched._children("default/ganga") == ["default/pod1", "default/pod2"]
    assert cosched._satisfied(gang) is True


def test_gs2_invalid_values_fall_back_to_koordinators_defaults():
    _, cosched = plugin(gang_pod("pod3", gang="gangb", min_available="xxx"),
                        gang_pod("pod4", gang="gangb", min_available="2", total_number="1", mode="WenShiqi222",
                                 waiting_time="WenShiqi222", groups="ganga,gangx"))
    gang = cosched.gang("default/gangb")
    assert (gang.min, gang.total, gang.mode, gang.wait_ms, gang.groups) == (
        2, 2, "Strict", 600_000, ("default/gangb",))


@pytest.mark.parametrize("name, gang_name, annotations", [
    pytest.param("pod5", "gangc", {"min_available": "0", "waiting_time": "0", "groups": "[a,b]"}, id="GS-3-zero"),
    pytest.param("pod6", "gangd", {"min_available": "0", "waiting_time": "-20s"}, id="GS-3-negative-wait"),
])
def test_gs3_zero_minimum_and_bad_wait(name, gang_name, annotations):
    _, cosched = plugin(gang_pod(name, gang=gang_name, **annotations))
    gang = cosched.gang(f"default/{gang_name}")
    assert (gang.min, gang.total, gang.mode, gang.wait_ms, gang.groups) == (
        0, 0, "Strict", 600_000, (f"default/{gang_name}",))


def test_gs4_a_pod_of_no_gang_passes():
    domain, cosched = plugin(node("n1"))
    assert cosched.pre_enqueue(pod_info(pod("plain"))).ok


def test_gs5_a_pod_group_that_does_not_exist_has_not_initialised():
    _, cosched = plugin(group_pod("pod2", "wenshiqi222", "gangA-ns"))
    status = cosched.pre_enqueue(pod_info(group_pod("pod2", "wenshiqi222", "gangA-ns")))
    assert status.message == "gang has not init, gangName: gangA-ns/wenshiqi222, podName: gangA-ns/pod2"


def test_gs6_too_few_children_fail_the_basic_check():
    _, cosched = plugin(pod_group("ganga", 4, namespace="ganga-ns", timeout_s=10),
                        group_pod("pod1", "ganga", "ganga-ns"), group_pod("pod2", "ganga", "ganga-ns"),
                        group_pod("pod3", "ganga", "ganga-ns"))
    assert cosched.pre_enqueue(pod_info(group_pod("pod3", "ganga", "ganga-ns"))).message == (
        "gangGroup [ganga-ns/ganga] basic check: memberGangs [ganga-ns/ganga] child pod not collect enough, "
        "current gang: ganga-ns/ganga, podName: ganga-ns/pod3")


def test_gs7_a_once_satisfied_gang_passes_with_one_pod():
    _, cosched = plugin(node("n1"), pod_group("gangq", 4, namespace="q-ns"),
                        pod("bound", namespace="q-ns", labels={PG: "gangq"}, node_name="n1"),
                        group_pod("pod1", "gangq", "q-ns"))
    assert cosched.pre_enqueue(pod_info(group_pod("pod1", "gangq", "q-ns"))).ok


def test_gs8_enough_children_pass():
    events = [pod_group("gangb", 4, namespace="b-ns", annotations={G + "mode": "NonStrict"})]
    events += [group_pod(f"pod{i}", "gangb", "b-ns") for i in range(4)]
    _, cosched = plugin(*events)
    assert cosched.pre_enqueue(pod_info(group_pod("pod3", "gangb", "b-ns"))).ok


def permit(cosched, domain, name, group, namespace):
    status, timeout = cosched.permit({}, pod_info(group_pod(name, group, namespace)), "n1")
    return status.code.label, timeout


def waiting(domain, *keys):
    from streams.scheduler.state import WaitingPod
    for key in keys:
        domain.cluster.waiting.pods[key] = WaitingPod("n1", 10**12, 10_000, (NAME,))


def test_gs10_a_pod_of_no_gang_is_permitted():
    domain, cosched = plugin(node("n1"))
    assert cosched.permit({}, pod_info(pod("plain")), "n1")[0].code.label == "Success"


def test_gs11_an_uninitialised_gang_waits():
    domain, cosched = plugin(group_pod("p", "nogroup", "x-ns"))
    assert permit(cosched, domain, "p", "nogroup", "x-ns") == ("Wait", 0)


@pytest.mark.parametrize("policy, bound, waiting_count, expected", [
    pytest.param(None, 0, 1, ("Wait", 10_000), id="GS-12-two-of-three-wait"),
    pytest.param("once-satisfied", 1, 1, ("Success", 0), id="GS-13-once-satisfied"),
    pytest.param("only-waiting", 1, 1, ("Wait", 10_000), id="GS-14-only-waiting-ignores-bound"),
    pytest.param("waiting-and-running", 1, 1, ("Success", 0), id="GS-14-waiting-and-running"),
    pytest.param(None, 0, 2, ("Success", 0), id="GS-15-third-waiting-pod-completes-the-gang"),
])
def test_permit_by_match_policy(policy, bound, waiting_count, expected):
    annotations = {G + "match-policy": policy} if policy else {}
    events = [node("n1", cpu=64_000), pod_group("gangA", 3, namespace="a-ns", timeout_s=10, annotations=annotations)]
    events += [pod(f"bound{i}", namespace="a-ns", labels={PG: "gangA"}, node_name="n1") for i in range(bound)]
    events += [group_pod(f"w{i}", "gangA", "a-ns") for i in range(waiting_count)] + [group_pod("me", "gangA", "a-ns")]
    domain, cosched = plugin(*events)
    for key in [f"a-ns/w{i}" for i in range(waiting_count)]:
        domain.cluster.assignment[key] = "n1"
    waiting(domain, *[f"a-ns/w{i}" for i in range(waiting_count)])
    assert permit(cosched, domain, "me", "gangA", "a-ns") == expected


@pytest.mark.parametrize("waiting_pods, expected", [
    pytest.param({"gangC": 1, "gangD": 0}, "Wait", id="GS-16-one-gang-short"),
    pytest.param({"gangE": 1, "gangF": 3}, "Success", id="GS-17-both-gangs-full"),
])
def test_a_gang_group_is_permitted_only_when_every_gang_is(waiting_pods, expected):
    first, second = waiting_pods
    groups = f'["{first}-ns/{first}","{second}-ns/{second}"]'
    mins = {"gangC": 2, "gangD": 2, "gangE": 2, "gangF": 3}
    events = [node("n1", cpu=64_000)]
    for gang in (first, second):
        events.append(pod_group(gang, mins[gang], namespace=f"{gang}-ns", timeout_s=10,
                                annotations={G + "groups": groups}))
    keys = []
    for gang, count in waiting_pods.items():
        for i in range(count):
            events.append(group_pod(f"w{i}", gang, f"{gang}-ns"))
            keys.append(f"{gang}-ns/w{i}")
    events.append(group_pod("me", first, f"{first}-ns"))
    domain, cosched = plugin(*events)
    for key in keys:
        domain.cluster.assignment[key] = "n1"
    waiting(domain, *keys)
    assert permit(cosched, domain, "me", first, f"{first}-ns")[0] == expected


# -- All or nothing through the domain ---------------------------------------------------------------

def results(out):
    return sorted((d["pod"]["name"], d["result"], d["nodeName"]) for d in decisions(out))


def final(out):
    """Each pod's last decision of the events: (name, result)."""
    return sorted({d["pod"]["name"]: d["result"] for d in decisions(out)}.items())


def strict_gang(count=4, mode="Strict", cpu=1000):
    return [gang_pod(f"m{i}", gang="train", min_available=str(count), mode=mode, cpu=cpu, ts=1000 + i)
            for i in range(count)]


def test_a_strict_gang_that_does_not_fit_holds_nothing_and_is_placed_whole_when_a_node_comes():
    domain, out = run(node("n1", cpu=3000), *strict_gang())
    assert all(result == "Unschedulable" for _, result, _ in results(out))
    assert domain.cluster.assignment == {}
    unplaceable = [d for d in decisions(out) if d["pod"]["name"] == "m2"][-1]
    assert 'Gang "default/train" gets rejected due to pod is unschedulable' in unplaceable["message"]
    rejected = [d for d in decisions(out) if d["pod"]["name"] == "m0"][-1]
    assert rejected["message"] == ('GangGroup "default/train" gets rejected due to member Pod "default/m2" is '
                                   'unschedulable with reason "0/1 nodes are available: 1 Insufficient cpu.", '
                                   'alreadyWaitForBound: 3.')
    _, out = run(node("n2", cpu=3000, ts=20_000), domain=domain)
    placed = results(out)
    assert [(n, r) for n, r, _ in placed] == [(f"m{i}", "Scheduled") for i in range(4)]


def test_a_non_strict_gang_places_what_fits_and_waits_for_the_rest():
    domain, out = run(node("n1", cpu=3000), *strict_gang(mode="NonStrict"))
    assert [r for _, r, _ in results(out)].count("Waiting") == 3
    progress = sorted(d["message"].rpartition(": gang ")[2] for d in decisions(out) if d["result"] == "Waiting")
    assert progress == [f'"default/train": {n} of min 4 waiting, 0 bound, 4 known' for n in (1, 2, 3)]
    assert len(domain.cluster.assignment) == 3


def test_members_arriving_one_by_one_wait_for_the_minimum():
    domain, out = run(node("n1", cpu=8000), *strict_gang()[:3])
    assert {r for _, r, _ in results(out)} == {"Unschedulable"}
    assert "child pod not collect enough" in decisions(out)[-1]["message"]
    _, out = run(strict_gang()[3], domain=domain)
    assert [r for _, r, _ in results(out)] == ["Scheduled"] * 4


def test_two_gangs_of_one_group_bind_only_together():
    groups = '["default/ga","default/gb"]'
    a = [gang_pod(f"a{i}", gang="ga", min_available="2", groups=groups, ts=1000 + i) for i in range(2)]
    b = [gang_pod(f"b{i}", gang="gb", min_available="2", groups=groups, ts=2000 + i) for i in range(2)]
    domain, out = run(node("n1", cpu=8000), *a)
    assert domain.cluster.assignment == {}
    _, out = run(*b, domain=domain)
    assert final(out) == [("a0", "Scheduled"), ("a1", "Scheduled"), ("b0", "Scheduled"), ("b1", "Scheduled")]
    assert len(domain.cluster.assignment) == 4


def test_waiting_members_are_rejected_when_the_gang_wait_time_passes_in_event_time():
    gang = [gang_pod(f"w{i}", gang="slow", min_available="2", mode="NonStrict", waiting_time="30s", ts=1000 + i)
            for i in range(2)]
    domain, out = run(node("n1", cpu=1000), *gang)
    assert final(out) == [("w0", "Unschedulable"), ("w1", "Waiting")]
    _, out = run(tick(31_001), domain=domain)
    timed_out = decisions(out)[0]
    assert (timed_out["pod"]["name"], timed_out["result"]) == ("w1", "Unschedulable")
    assert timed_out["message"] == "rejected due to timeout after waiting 30s at plugin Coscheduling."


def test_a_restored_domain_continues_the_gang_as_the_live_one_would():
    domain, _ = run(node("n1", cpu=8000), *strict_gang()[:3])
    restored = SchedulingDomain.restore("default", domain.entries())
    _, out = run(strict_gang()[3], domain=restored)
    assert [r for _, r, _ in results(out)] == ["Scheduled"] * 4
