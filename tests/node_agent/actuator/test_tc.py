"""The tc backend with a fake ``tc`` that keeps HTB state: commands, range checks, idempotence, restore."""

import subprocess

import pytest

from node_agent.actuator.tc import TcBackend, parse_classes, parse_rate
from node_agent.actuator.verify import BAD_VALUE, Rejected, Target

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


def test_pod_settings_are_unsupported_and_touch_nothing():
    fake = FakeTc()
    backend = TcBackend("eth0", runner=fake)
    pod = Target("pod", "aaaaaaaa-0000-0000-0000-000000000001", "tc", pod_uid="aaaaaaaa-0000-0000-0000-000000000001")
    plan = backend.plan(pod, {"priority": "2", "ingress.limit_bps": "5000000", "egress.limit_bps": "6000000"})
    assert set(plan.unsupported) == {"priority", "ingress.limit_bps", "egress.limit_bps"}
    assert "classifier" in plan.unsupported["priority"] and plan.requested == ()
    assert backend.execute(plan).error is None and backend.read_back(plan) == {} and fake.commands == []
