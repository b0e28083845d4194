"""The tc backend with a fake ``tc`` that keeps HTB state: commands, range checks, idempotence, restore."""

import subprocess

import pytest

from node_agent.actuator.tc import (DESTINATION_OFFSETS, SOURCE_OFFSETS, TcBackend, parse_classes, parse_filters,
                                    parse_rate)
from node_agent.actuator.verify import BAD_VALUE, TARGET_NOT_FOUND, Rejected, Target

NODE = Target("node", "fake-node", "tc")
SHOWN = """class htb 1:1 root rate 100Mbit ceil 100Mbit burst 1600b cburst 1600b 
class htb 1:12 parent 1:1 prio 2 rate 20Mbit ceil 30Mbit burst 1600b cburst 1593b 
class htb 1:10 parent 1:1 leaf 10: prio 0 rate 1234567Kbit ceil 2Gbit burst 1600b cburst 1600b 
"""


def test_parse_tc_class_text():
    classes = parse_classes(SHOWN)
    assert (classes["1:1"].rate_bps, classes["1:1"].parent) == (100_000_000, None)
    assert (classes["1:12"].rate_bps, classes["1:12"].ceil_bps, classes["1:12"].prio) == (20_000_000, 30_000_000, 2)
    assert classes["1:10"].rate_bps == 1_234_567_000


@pytest.mark.parametrize("text, bps", [("8bit", 8), ("20Mbit", 20_000_000), ("1Gbit", 10 ** 9), ("1Kibit", 1024)])
def test_parse_rate(text, bps):
    assert parse_rate(text) == bps


class FakeTc:
    """Enough of ``tc`` for the backend: an HTB root qdisc and classes, shown as iproute2 prints them."""

    def __init__(self, fail_on: str | None = None):
        self.qdisc = "qdisc noqueue 0: root refcnt 2"
        self.classes: dict[str, tuple[str, int, int, int | None]] = {}
        self.commands: list[list[str]] = []
        self.fail_on = fail_on

    def __call__(self, args):
        args = list(args)[1:]
        self.commands.append(args)
        done = subprocess.CompletedProcess(args, 0, "", "")
        if self.fail_on and self.fail_on in args and args[1] == "replace":
            return subprocess.CompletedProcess(args, 2, "", "RTNETLINK answers: Invalid argument")
        if args[:2] == ["qdisc", "show"]:
            return subprocess.CompletedProcess(args, 0, self.qdisc + "\n", "")
        if args[:2] == ["qdisc", "replace"]:
            self.qdisc = "qdisc htb 1: root refcnt 2 r2q 10 default 0x10 direct_packets_stat 0"
        elif args[:2] == ["qdisc", "del"]:
            self.qdisc, self.classes = "qdisc noqueue 0: root refcnt 2", {}
        elif args[:2] == ["class", "show"]:
            lines = []
            for handle, (parent, rate, ceil, prio) in self.classes.items():
                where = "root" if parent == "1:" else f"parent {parent}"
                prio_text = f" prio {prio}" if prio is not None else ""
                lines.append(f"class htb {handle} {where}{prio_text} rate {rate}bit ceil {ceil}bit burst 1600b")
            return subprocess.CompletedProcess(args, 0, "\n".join(lines) + "\n", "")
        elif args[:2] == ["class", "replace"]:
            opts = {key: args[i + 1] for i, key in enumerate(args[:-1])
                    if key in ("parent", "classid", "rate", "ceil", "prio")}
            self.classes[opts["classid"]] = (opts["parent"], int(opts["rate"][:-3]), int(opts["ceil"][:-3]),
                                             int(opts["prio"]) if "prio" in opts else None)
        elif args[:2] == ["class", "del"]:
            self.classes.pop(args[args.index("classid") + 1], None)
        return done


def apply(backend, values):
    plan = backend.plan(NODE, values)
    outcome = backend.execute(plan)
    return plan, outcome, backend.read_back(plan)


VALUES = {"total_bps": "100000000", "L0.request_bps": "50000000", "L0.limit_bps": "100000000",
          "L1.request_bps": "30000000", "L1.limit_bps": "80000000", "L2.request_bps": "10000000",
          "L2.limit_bps": "20000000"}


def test_first_setup_builds_the_tree_and_reads_it_back():
    tc = FakeTc()
    plan, outcome, back = apply(TcBackend("eth0", runner=tc), VALUES)
    assert outcome.error is None and back == VALUES
    assert tc.commands[1] == ["qdisc", "replace", "dev", "eth0", "root", "handle", "1:", "htb", "default", "0x10"]
    assert tc.classes["1:12"] == ("1:1", 10_000_000, 20_000_000, 2)
    assert "tc class replace dev eth0 parent 1:1 classid 1:11 htb rate 30000000bit ceil 80000000bit prio 1" \
        in " ".join(plan.actions)


def test_second_apply_changes_nothing():
    tc = FakeTc()
    backend = TcBackend("eth0", runner=tc)
    apply(backend, VALUES)
    assert backend.plan(NODE, VALUES).actions == []
    plan, _, back = apply(backend, {"L2.limit_bps": "40000000"})
    assert len(plan.actions) == 1 and back["L2.limit_bps"] == "40000000" and back["L1.request_bps"] == "30000000"


@pytest.mark.parametrize("values", [
    {"total_bps": "100000000", "L0.request_bps": "80000000", "L1.request_bps": "50000000"},
    {"total_bps": "100000000", "L2.limit_bps": "999999999999"},
    {"total_bps": "100000000", "L1.request_bps": "20000000", "L1.limit_bps": "1"},
    {"total_bps": "999999"}, {"total_bps": "100000000", "L2.request_bps": "1"},
], ids=["requests-above-total", "limit-above-total", "limit-below-request", "total-below-floor", "request-below-floor"])
def test_rates_out_of_range_are_refused_not_clamped(values):
    tc = FakeTc()
    with pytest.raises(Rejected) as rejected:
        TcBackend("eth0", runner=tc).plan(NODE, values)
    assert rejected.value.reason == BAD_VALUE


def test_a_smaller_total_is_refused_while_the_classes_in_force_need_more():
    tc = FakeTc()
    backend = TcBackend("eth0", runner=tc)
    apply(backend, {"total_bps": "100000000", "L0.request_bps": "60000000"})
    with pytest.raises(Rejected) as rejected:
        backend.plan(NODE, {"total_bps": "50000000"})
    assert rejected.value.reason == BAD_VALUE


def test_first_setup_needs_a_total():
    with pytest.raises(Rejected) as rejected:
        TcBackend("eth0", runner=FakeTc()).plan(NODE, {"L2.limit_bps": "1000000"})
    assert rejected.value.reason == BAD_VALUE


def test_failure_restores_previous_classes():
    tc = FakeTc()
    backend = TcBackend("eth0", runner=tc)
    apply(backend, VALUES)
    before = dict(tc.classes)
    tc.fail_on = "1:12"
    _, outcome, back = apply(backend, {**VALUES, "L1.limit_bps": "90000000", "L2.limit_bps": "30000000"})
    assert "Invalid argument" in outcome.error and tc.classes == before and back == VALUES


def test_failure_on_a_fresh_interface_removes_the_new_qdisc():
    tc = FakeTc(fail_on="1:11")
    _, outcome, back = apply(TcBackend("eth0", runner=tc), VALUES)
    assert outcome.error and tc.qdisc.startswith("qdisc noqueue") and back == {}


POD = Target("pod", "aaaaaaaa-0000-0000-0000-000000000001", "tc", pod_uid="aaaaaaaa-0000-0000-0000-000000000001")
POD_VALUES = {"priority": "2", "ingress.limit_bps": "6000000", "egress.limit_bps": "5000000", "address": "10.9.0.4"}
FILTERS = """filter protocol ip pref 257 u32 chain 0 
filter protocol ip pref 257 u32 chain 0 fh 800: ht divisor 1 
filter protocol ip pref 257 u32 chain 0 fh 800::800 order 2048 key ht 800 bkt 0 *flowid 1:12 not_in_hw 
  match 0a090003/ffffffff at 12
filter protocol ipv6 pref 258 u32 chain 0 fh 801::800 order 2048 key ht 801 bkt 0 *flowid 1:1002 not_in_hw 
  match fd000000/ffffffff at 8
  match 00000000/ffffffff at 12
  match 00000000/ffffffff at 16
  match 00000005/ffffffff at 20
filter protocol ip pref 259 u32 chain 0 fh 802::800 order 2048 key ht 802 bkt 0 terminal flowid not_in_hw 
  match 0a090004/ffffffff at 16
\taction order 1: mirred (Egress Redirect to device kifb1) stolen
"""


def test_parse_u32_filters():
    v4, v6, redirect = parse_filters(FILTERS)
    assert (v4.pref, v4.flowid, v4.address(SOURCE_OFFSETS)) == (257, "1:12", "10.9.0.3")
    assert (v6.protocol, v6.flowid, v6.address(SOURCE_OFFSETS)) == ("ipv6", "1:1002", "fd00::5")
    assert (redirect.flowid, redirect.redirect, redirect.address(DESTINATION_OFFSETS)) == (None, "kifb1", "10.9.0.4")
    assert redirect.address(SOURCE_OFFSETS) is None


class CannedHost:
    """``tc`` and ``ip`` answering show commands from fixed text: a node tree in force, no pod filters, no IFB
    (``ifb_fails``: creating one fails as on a kernel without the module)."""

    def __init__(self, root: bool = True, ifb_fails: bool = False):
        self.root, self.ifb_fails, self.commands = root, ifb_fails, []

    def __call__(self, args):
        args = list(args)
        self.commands.append(args)
        out = ""
        if args[:3] == ["tc", "qdisc", "show"]:
            out = "qdisc htb 1: root refcnt 2 r2q 10 default 0x10\n" if self.root else "qdisc noqueue 0: root\n"
        elif args[:3] == ["tc", "class", "show"]:
            out = SHOWN
        elif args[:3] == ["ip", "link", "show"]:
            return subprocess.CompletedProcess(args, 1, "", "Device does not exist.")
        elif args[:3] == ["ip", "link", "add"] and self.ifb_fails:
            return subprocess.CompletedProcess(args, 2, "", "Error: Unknown device type.")
        return subprocess.CompletedProcess(args, 0, out, "")


def test_a_new_pod_gets_its_filters_classes_and_ifb():
    host = CannedHost()
    plan = TcBackend("eth0", runner=host, ifb="kifb1").plan(POD, POD_VALUES)
    assert plan.requested == ("priority", "ingress.limit_bps", "egress.limit_bps", "address")
    assert plan.actions == [
        "tc class replace dev eth0 parent 1:1 classid 1:1001 htb rate 1000000bit ceil 5000000bit prio 2 quantum 12500",
        "tc filter add dev eth0 parent 1: protocol ip prio 257 u32 match ip src 10.9.0.4/32 flowid 1:1001",
        "ip link add kifb1 type ifb", "ip link set dev kifb1 up", "tc qdisc replace dev kifb1 root handle 1: htb",
        "tc qdisc add dev eth0 handle ffff: ingress",
        "tc class replace dev kifb1 parent 1: classid 1:1001 htb rate 6000000bit ceil 6000000bit quantum 75000",
        "tc filter add dev kifb1 parent 1: protocol ip prio 257 u32 match ip dst 10.9.0.4/32 flowid 1:1001",
        "tc filter add dev eth0 parent ffff: protocol ip prio 257 u32 match ip dst 10.9.0.4/32 action mirred egress "
        "redirect dev kifb1"]


def test_an_unlimited_pod_is_only_sorted_into_its_class():
    plan = TcBackend("eth0", runner=CannedHost()).plan(POD, {**POD_VALUES, "ingress.limit_bps": "0",
                                                            "egress.limit_bps": "0", "address": "fd00::7"})
    assert plan.actions == ["tc filter add dev eth0 parent 1: protocol ipv6 prio 257 u32 match ip6 src fd00::7/128 "
                            "flowid 1:12"]


def test_without_ifb_ingress_is_unsupported_and_the_rest_applied():
    backend = TcBackend("eth0", runner=CannedHost(ifb_fails=True), ifb="kifb1")
    plan = backend.plan(POD, POD_VALUES)
    assert backend.execute(plan).error is None
    assert "no ifb device" in plan.unsupported["ingress.limit_bps"] and "Unknown device type" in \
        plan.unsupported["ingress.limit_bps"]
    assert "ingress.limit_bps" not in plan.requested and "egress.limit_bps" in plan.requested


@pytest.mark.parametrize("values, root, why", [
    ({"priority": "2", "egress.limit_bps": "0"}, True, "status.podIP"),
    (POD_VALUES, False, "no HTB root"),
], ids=["no-address", "no-node-root"])
def test_pods_that_cannot_be_classified_are_unsupported_and_touch_nothing(values, root, why):
    host = CannedHost(root=root)
    plan = TcBackend("eth0", runner=host).plan(POD, values)
    assert plan.requested == () and set(plan.unsupported) == set(values)
    assert all(why in reason for reason in plan.unsupported.values())
    assert not any(verb in command for command in host.commands for verb in ("add", "replace", "del"))


def test_without_a_planned_address_the_pod_directory_gives_it():
    planned = {name: value for name, value in POD_VALUES.items() if name != "address"}
    from_directory = TcBackend("eth0", runner=CannedHost(), ifb="kifb1",
                               address_of={POD.id: "10.9.0.4"}.get).plan(POD, planned)
    from_actuation = TcBackend("eth0", runner=CannedHost(), ifb="kifb1").plan(POD, POD_VALUES)
    assert from_directory.actions == from_actuation.actions
    assert from_directory.requested == ("priority", "ingress.limit_bps", "egress.limit_bps")


def test_a_planned_address_wins_over_the_pod_directory():
    plan = TcBackend("eth0", runner=CannedHost(), address_of=lambda uid: "10.9.0.99").plan(
        POD, {"priority": "2", "address": "10.9.0.4"})
    assert plan.actions == ["tc filter add dev eth0 parent 1: protocol ip prio 257 u32 match ip src 10.9.0.4/32 "
                            "flowid 1:12"]


def test_a_pod_the_directory_has_no_address_for_yet_is_not_found():
    """Refused ``target-not-found`` (not unsupported): its actuation waits for the address (``waiting.py``)."""
    host = CannedHost()
    backend = TcBackend("eth0", runner=host, address_of=lambda uid: None)
    with pytest.raises(Rejected) as rejected:
        backend.plan(POD, {"priority": "1"})
    assert rejected.value.reason == TARGET_NOT_FOUND and "status.podIP" in rejected.value.detail
    assert not backend.addressed(POD.id) and not host.commands


def test_a_pod_the_directory_gives_garbage_for_is_unsupported():
    host = CannedHost()
    plan = TcBackend("eth0", runner=host, address_of=lambda uid: "not-an-ip").plan(POD, {"priority": "1"})
    assert plan.requested == () and set(plan.unsupported) == {"priority"}
    assert "status.podIP from the pods topic: address='not-an-ip' is not an IP address" in plan.unsupported["priority"]
    assert not any(verb in command for command in host.commands for verb in ("add", "replace", "del"))


@pytest.mark.parametrize("values", [
    {**POD_VALUES, "address": "10.9.0"}, {**POD_VALUES, "address": "0.0.0.0"}, {**POD_VALUES, "priority": "3"},
    {**POD_VALUES, "egress.limit_bps": "999"}, {**POD_VALUES, "ingress.limit_bps": "-1"},
], ids=["not-an-address", "unspecified-address", "priority-3", "limit-below-floor", "negative-limit"])
def test_bad_pod_values_are_refused(values):
    with pytest.raises(Rejected) as rejected:
        TcBackend("eth0", runner=CannedHost()).plan(POD, values)
    assert rejected.value.reason == BAD_VALUE
