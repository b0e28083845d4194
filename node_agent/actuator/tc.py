"""tc backend: bandwidth classes L0/L1/L2 (terway-qos priorities) as HTB on one interface, pods sorted into
them by address, and per-pod egress and ingress limits.

Tree (``tc`` subprocess, idempotent with ``replace``)::

    qdisc htb 1: root default 0x10          unclassified traffic goes to L0 (system and host)
      class 1:1   rate = ceil = total_bps
        class 1:10  L0  prio 0  rate = L0.request_bps  ceil = L0.limit_bps
        class 1:11  L1  prio 1  rate = L1.request_bps  ceil = L1.limit_bps
        class 1:12  L2  prio 2  rate = L2.request_bps  ceil = L2.limit_bps
        class 1:<0x1000+s>  pod s (egress.limit_bps > 0)  prio = priority  rate 1 Mbit/s  ceil = egress.limit_bps
      filter pref 0x100+s u32 match ip src <address>  -> 1:1<priority>, or the pod's own class
    qdisc ingress ffff:                     (only while a pod has an ingress limit)
      filter pref 0x100+s u32 match ip dst <address>  action mirred egress redirect dev <ifb>
    <ifb>: qdisc htb 1: root (default 0: unclassified packets pass unshaped)
      class 1:<0x1000+s>  rate = ceil = ingress.limit_bps (a root class: nothing to borrow from)
      filter pref 0x100+s u32 match ip dst <address> -> 1:<0x1000+s>

Node targets own the qdisc and the L classes. A value not in the actuation
keeps the one in force (a first setup needs ``total_bps``; missing requests
default to the 1 Mbit/s floor and limits to the total). Ranges
(``limits.py``), checked on the values that would be in force (asked for, or
kept): total within [1 Mbit/s, 400 Gbit/s]; each request at least 1 Mbit/s
and the requests together within the total; each limit between its request
and the total. A value outside them is refused (``bad-value``), never
clamped. HTB keeps rates in bytes per second, so values are rounded down to a
multiple of 8 bit/s. Replacing a non-HTB root qdisc (e.g. ``mq`` on a
multi-queue NIC) serialises egress through one queue: that is the cost of
shaping. Each step is checked; on a failure the classes changed so far get
their previous rates back (or are deleted if new), and a root qdisc created
by this actuation is deleted, restoring the interface's default.

Pod targets classify by the pod's address (``status.podIP``), as
terway-qos keys pods by address (its eBPF maps; this host has no net_cls
hierarchy, so no classid per cgroup): the actuation's ``address`` when it
carries one, else ``address_of(pod uid)``, the agent's pod directory
(``node_agent/pods.py``, fed by the pods topic). A pod the directory has no
address for yet is refused ``target-not-found``: its actuation waits and is
applied again once the pods topic brings the address (``waiting.py``; the
stream does not send an unchanged plan again, and a pod is often planned
before kubelet has reported its IP). Without a directory the pod's settings
are unsupported. A pod owns slot ``s``: the filter
preference ``0x100+s`` on every device and the class minor ``0x1000+s``; its
slot is found again by the address its egress filter matches, a new pod takes
the lowest free one. Every pod gets an egress filter to its priority's class
(SYSTEM L0, LS L1, BE L2, as koordlet's terwayqos hook maps them); with an
egress limit the filter leads to the pod's own class instead, which borrows
from the total as a sibling of the L classes (its packets are held to the
pod's limit, not to its L class's limit as well). An ingress limit redirects
the pod's incoming packets to an IFB device (``ifb`` module) shaped by HTB;
without an ifb device (creating one fails) ``ingress.limit_bps`` is reported
unsupported with the reason and the rest is applied. A limit of 0 removes the
pod's class and filters of that direction. Pods need the node's root qdisc
(a node actuation first). A failure removes the pod's filters (its packets
fall back to L0). Classification by source address needs pod addresses on
the wire: behind SNAT (masquerade) egress packets carry the node's address
and stay in L0. Filters of a pod that is gone stay until its address or slot
is reused (the contract has no pod removal).

Read back: ``tc class show`` and ``tc filter show`` text (iproute2's ``-j``
output covers neither HTB classes nor u32 IPv6 keys), parsed here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import ipaddress
import re
import subprocess
from collections.abc import Callable, Sequence

from node_agent.actuator import limits
from node_agent.actuator.backend import Outcome, Plan
from node_agent.actuator.verify import BAD_VALUE, TARGET_NOT_FOUND, Rejected, Target
from streams import actuation as contract
from streams.actuation import (LIMIT_BPS_SUFFIX, NET_ADDRESS, NET_CLASSES, NET_EGRESS_LIMIT, NET_INGRESS_LIMIT,
                               NET_PRIORITY, POD_TC_SETTINGS, REQUEST_BPS_SUFFIX, TARGET_POD, TC_SETTINGS, TOTAL_BPS)

HANDLE = "1:"
PARENT = "1:1"
CLASS_IDS = {"L0": "1:10", "L1": "1:11", "L2": "1:12"}
PRIORITIES = {"L0": 0, "L1": 1, "L2": 2}
DEFAULT_MINOR = "0x10"
UNITS = {"bit": 1, "kbit": 10 ** 3, "mbit": 10 ** 6, "gbit": 10 ** 9, "tbit": 10 ** 12,
         "kibit": 2 ** 10, "mibit": 2 ** 20, "gibit": 2 ** 30, "tibit": 2 ** 40}
_CLASS = re.compile(r"^class htb (\S+) (?:root|parent (\S+))(?: leaf \S+)?(?: prio (\d+))? "
                    r"(?:quantum \d+ )?rate (\S+) ceil (\S+)")
MIN_QUANTUM, MAX_QUANTUM = 1514, 200_000
TIMEOUT_S = 10.0
INGRESS = "ffff:"
POD_PREF_BASE = 0x100
POD_MINOR_BASE = 0x1000
MAX_POD_SLOT = 0xFFFF - POD_MINOR_BASE
IFB_PREFIX = "kifb"
REASON_NO_ADDRESS = (f"no pod {NET_ADDRESS} (status.podIP) in the actuation or the pods topic: pods are "
                     "classified by address")
_FILTER = re.compile(r"^filter (?:parent \S+ )?protocol (\S+) pref (\d+) u32 .*\bfh (\S+)")
_MATCH = re.compile(r"^match ([0-9a-f]{8})/([0-9a-f]{8}) at (\d+)")
_FLOWID = re.compile(r"\*?flowid ([0-9a-f]+:[0-9a-f]*)")
_REDIRECT = re.compile(r"Redirect to device (\S+)\)")
SOURCE_OFFSETS = {"ip": (12,), "ipv6": (8, 12, 16, 20)}
DESTINATION_OFFSETS = {"ip": (16,), "ipv6": (24, 28, 32, 36)}

Runner = Callable[[Sequence[str]], subprocess.CompletedProcess]
AddressOf = Callable[[str], "str | None"]
"""Pod UID -> its address on this node, None when unknown (``PodDirectory.address_of``)."""


@dataclasses.dataclass(frozen=True)
class HtbClass:
    rate_bps: int
    ceil_bps: int
    prio: int | None
    parent: str | None


def parse_rate(text: str) -> int:
    match = re.fullmatch(r"([0-9.]+)([A-Za-z]*)", text)
    if not match or match.group(2).lower() not in UNITS:
        raise ValueError(f"rate {text!r}")
    return round(float(match.group(1)) * UNITS[match.group(2).lower()])


def parse_classes(text: str) -> dict[str, HtbClass]:
    classes = {}
    for line in text.splitlines():
        match = _CLASS.match(line.strip())
        if match:
            handle, parent, prio, rate, ceil = match.groups()
            classes[handle] = HtbClass(parse_rate(rate), parse_rate(ceil), None if prio is None else int(prio), parent)
    return classes


@dataclasses.dataclass(frozen=True)
class U32Filter:
    pref: int
    protocol: str
    matches: tuple[tuple[int, str], ...]
    """(offset, 32-bit key in hex) of the full-mask matches."""
    flowid: str | None
    redirect: str | None
    """The device a mirred action redirects to."""

    def address(self, offsets: dict[str, tuple[int, ...]]) -> str | None:
        """The address the filter matches at ``offsets`` (source or destination), None when it matches none."""
        keys = dict(self.matches)
        wanted = offsets.get(self.protocol, ())
        if not wanted or len(keys) != len(wanted) or any(offset not in keys for offset in wanted):
            return None
        return str(ipaddress.ip_address(bytes.fromhex("".join(keys[offset] for offset in wanted))))


def parse_filters(text: str) -> list[U32Filter]:
    """The u32 filters of ``tc filter show`` text that carry keys (not the hash-table lines)."""
    found: list[dict] = []
    for raw in text.splitlines():
        line = raw.strip()
        header = _FILTER.match(line)
        if header:
            protocol, pref, handle = header.groups()
            flowid = _FLOWID.search(line)
            found.append(dict(pref=int(pref), protocol=protocol, matches=[], flowid=flowid.group(1) if flowid else None,
                              redirect=None, node=handle.count(":") == 2 and not handle.endswith("::")))
            continue
        if not found:
            continue
        match = _MATCH.match(line)
        if match and match.group(2) == "ffffffff":
            found[-1]["matches"].append((int(match.group(3)), match.group(1)))
        redirect = _REDIRECT.search(line)
        if redirect:
            found[-1]["redirect"] = redirect.group(1)
    return [U32Filter(entry["pref"], entry["protocol"], tuple(entry["matches"]), entry["flowid"], entry["redirect"])
            for entry in found if entry["node"] and entry["matches"]]


def parse_address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    try:
        address = ipaddress.ip_address(text.strip())
    except ValueError:
        raise limits.ValueProblem(f"{NET_ADDRESS}={text!r} is not an IP address") from None
    if address.is_unspecified or address.is_multicast or address.is_loopback:
        raise limits.ValueProblem(f"{NET_ADDRESS}={text!r} is not a pod address")
    return address


def pod_limit(name: str, text: str) -> int:
    """A pod's limit in bits/s: 0 (none) or within the rate range, rounded down to whole bytes."""
    value = limits.parse_int(name, text)
    return 0 if value == 0 else _bytes_exact(limits.check_rate(name, value))


def pod_class_id(slot: int) -> str:
    return f"1:{POD_MINOR_BASE + slot:x}"


def default_ifb(interface: str) -> str:
    """The IFB device of ``interface``: a stable name within the 15 characters of an interface name."""
    return IFB_PREFIX + hashlib.sha256(interface.encode()).hexdigest()[:8]


def quantum(rate_bps: int) -> int:
    """HTB's rate / r2q (10) in bytes, within the range HTB does not warn about."""
    return limits.clamp(rate_bps // 8 // 10, MIN_QUANTUM, MAX_QUANTUM)


def _bytes_exact(bps: int) -> int:
    return bps // 8 * 8


class TcBackend:
    mechanism = contract.MECHANISM_TC

    def __init__(self, interface: str, command: Sequence[str] = ("tc",), runner: Runner | None = None,
                 ip_command: Sequence[str] = ("ip",), ifb: str | None = None,
                 address_of: AddressOf | None = None) -> None:
        self.interface = interface
        self.address_of = address_of
        self.command = tuple(command)
        self.ip_command = tuple(ip_command)
        self.ifb = ifb or default_ifb(interface)
        self.runner = runner or (lambda args: subprocess.run(args, capture_output=True, text=True,
                                                             timeout=TIMEOUT_S, check=False))

    def addressed(self, pod_uid: str) -> bool:
        """Whether the pod directory knows the pod's address (a refused pod actuation waits for it)."""
        return self.address_of is not None and self.address_of(pod_uid) is not None

    def _tc(self, *args: str) -> subprocess.CompletedProcess:
        return self.runner([*self.command, *args])

    def _state(self) -> tuple[bool, dict[str, HtbClass]]:
        qdisc = self._tc("qdisc", "show", "dev", self.interface)
        if qdisc.returncode != 0:
            raise OSError(f"tc qdisc show dev {self.interface}: {qdisc.stderr.strip()}")
        ours = any(line.startswith(f"qdisc htb {HANDLE} root") and f"default {DEFAULT_MINOR}" in line
                   for line in qdisc.stdout.splitlines())
        if not ours:
            return False, {}
        shown = self._tc("class", "show", "dev", self.interface)
        return True, parse_classes(shown.stdout) if shown.returncode == 0 else {}

    def plan(self, target: Target, values: dict[str, str]) -> Plan:
        if target.kind == TARGET_POD:
            return self._plan_pod(target, values)
        try:
            asked = {name: limits.parse_int(name, text) for name, text in values.items() if name in TC_SETTINGS}
        except limits.ValueProblem as err:
            raise Rejected(BAD_VALUE, str(err)) from None
        try:
            ours, current = self._state()
        except (OSError, subprocess.SubprocessError) as err:
            return Plan(target, (), unsupported={name: f"tc unavailable on {self.interface}: {err}" for name in asked})
        total = asked.get(TOTAL_BPS, current[PARENT].rate_bps if PARENT in current else None)
        if total is None:
            raise Rejected(BAD_VALUE, f"{TOTAL_BPS} is needed to set up {self.interface} the first time")
        try:
            wanted = self._wanted(asked, current, total)
        except limits.ValueProblem as err:
            raise Rejected(BAD_VALUE, str(err)) from None
        steps = []
        if not ours:
            steps.append(("qdisc", "replace", "dev", self.interface, "root", "handle", HANDLE, "htb", "default",
                          DEFAULT_MINOR))
        for handle, cls in wanted.items():
            had = current.get(handle)
            if had is not None and (had.rate_bps, had.ceil_bps, had.prio) == (cls.rate_bps, cls.ceil_bps, cls.prio):
                continue
            steps.append(self._class_command("replace", handle, cls))
        actions = [" ".join([*self.command, *step]) for step in steps]
        return Plan(target, tuple(TC_SETTINGS), actions, payload=dict(steps=steps, ours=ours, current=current))

    @staticmethod
    def _wanted(asked: dict[str, int], current: dict[str, HtbClass], total: int) -> dict[str, HtbClass]:
        """The classes after this actuation; ValueProblem when a value in force would be out of range."""
        total = _bytes_exact(limits.check_rate(TOTAL_BPS, total))
        wanted: dict[str, HtbClass] = {PARENT: HtbClass(total, total, None, None)}
        requested = 0
        for name in NET_CLASSES:
            had = current.get(CLASS_IDS[name])
            request = asked.get(f"{name}{REQUEST_BPS_SUFFIX}", had.rate_bps if had else limits.MIN_RATE_BPS)
            limit = asked.get(f"{name}{LIMIT_BPS_SUFFIX}", had.ceil_bps if had else total)
            request = _bytes_exact(limits.check_rate(f"{name}{REQUEST_BPS_SUFFIX}", request, high=total))
            limit = _bytes_exact(limits.check_rate(f"{name}{LIMIT_BPS_SUFFIX}", limit, low=request, high=total))
            requested += request
            wanted[CLASS_IDS[name]] = HtbClass(request, limit, PRIORITIES[name], PARENT)
        if requested > total:
            raise limits.ValueProblem(f"the requests ({requested} bit/s together) exceed {TOTAL_BPS}={total}")
        return wanted

    def _class_command(self, verb: str, handle: str, cls: HtbClass) -> tuple[str, ...]:
        parent = ("parent", HANDLE) if handle == PARENT else ("parent", PARENT)
        prio = ("prio", str(cls.prio)) if cls.prio is not None else ()
        return ("class", verb, "dev", self.interface, *parent, "classid", handle, "htb", "rate",
                f"{cls.rate_bps}bit", "ceil", f"{cls.ceil_bps}bit", *prio, "quantum", str(quantum(cls.rate_bps)))

    def execute(self, plan: Plan) -> Outcome:
        if plan.payload is None:
            return Outcome()
        if plan.target.kind == TARGET_POD:
            return self._execute_pod(plan)
        done: list[tuple[str, ...]] = []
        for step in plan.payload["steps"]:
            try:
                result = self.runner([*self.command, *step])
                failed = result.returncode != 0
                why = result.stderr.strip()
            except (OSError, subprocess.SubprocessError) as err:
                failed, why = True, str(err)
            if failed:
                return Outcome(f"{' '.join(step)}: {why or 'failed'}" + self._restore(plan, done))
            done.append(step)
        return Outcome()

    def _restore(self, plan: Plan, done: list[tuple[str, ...]]) -> str:
        if not plan.payload["ours"] and done:
            result = self._tc("qdisc", "del", "dev", self.interface, "root")
            return "" if result.returncode == 0 else f"; removing the new root qdisc failed: {result.stderr.strip()}"
        problems = []
        for step in reversed(done):
            handle = step[step.index("classid") + 1]
            had = plan.payload["current"].get(handle)
            command = self._class_command("replace", handle, had) if had is not None else \
                ("class", "del", "dev", self.interface, "classid", handle)
            result = self.runner([*self.command, *command])
            if result.returncode != 0:
                problems.append(f"restoring {handle} failed: {result.stderr.strip()}")
        return "".join(f"; {p}" for p in problems)

    def read_back(self, plan: Plan) -> dict[str, str]:
        if not plan.requested:
            return {}
        if plan.target.kind == TARGET_POD:
            return self._read_back_pod(plan)
        try:
            ours, classes = self._state()
        except (OSError, subprocess.SubprocessError):
            return {}
        if not ours:
            return {}
        result = {}
        if PARENT in classes:
            result[TOTAL_BPS] = str(classes[PARENT].rate_bps)
        for name in NET_CLASSES:
            cls = classes.get(CLASS_IDS[name])
            if cls is not None:
                result[f"{name}{REQUEST_BPS_SUFFIX}"] = str(cls.rate_bps)
                result[f"{name}{LIMIT_BPS_SUFFIX}"] = str(cls.ceil_bps)
        return result

    def _run(self, argv: Sequence[str]) -> tuple[bool, str]:
        try:
            result = self.runner(list(argv))
        except (OSError, subprocess.SubprocessError) as err:
            return False, str(err)
        return result.returncode == 0, result.stderr.strip()

    def _show(self, *args: str) -> str | None:
        """stdout of ``tc <args>``; None when it fails (no such device or qdisc)."""
        result = self._tc(*args)
        return result.stdout if result.returncode == 0 else None

    def _pod_state(self) -> dict:
        egress = self._show("filter", "show", "dev", self.interface, "parent", HANDLE) or ""
        qdiscs = self._show("qdisc", "show", "dev", self.interface) or ""
        ingress_qdisc = any(line.startswith(f"qdisc ingress {INGRESS}") for line in qdiscs.splitlines())
        ingress = self._show("filter", "show", "dev", self.interface, "parent", INGRESS) if ingress_qdisc else None
        ifb_link = self.runner([*self.ip_command, "link", "show", "dev", self.ifb]).returncode == 0
        ifb_qdisc = self._show("qdisc", "show", "dev", self.ifb) if ifb_link else None
        ifb_ours = any(line.startswith(f"qdisc htb {HANDLE} root") for line in (ifb_qdisc or "").splitlines())
        return dict(egress=parse_filters(egress), ingress=parse_filters(ingress or ""), ingress_qdisc=ingress_qdisc,
                    ifb_link=ifb_link, ifb_ours=ifb_ours,
                    ifb_classes=parse_classes(self._show("class", "show", "dev", self.ifb) or "") if ifb_ours else {},
                    ifb_filters=parse_filters(self._show("filter", "show", "dev", self.ifb, "parent", HANDLE) or "")
                    if ifb_ours else [])

    def _slot(self, address: str, state: dict, classes: dict[str, HtbClass]) -> int | None:
        """The pod's slot: the one whose egress filter matches ``address``, else the lowest free one."""
        for found in state["egress"]:
            if POD_PREF_BASE < found.pref <= POD_PREF_BASE + MAX_POD_SLOT and found.address(SOURCE_OFFSETS) == address:
                return found.pref - POD_PREF_BASE
        used = {f.pref for f in (*state["egress"], *state["ingress"], *state["ifb_filters"])}
        minors = {handle for handle in (*classes, *state["ifb_classes"])}
        return next((slot for slot in range(1, MAX_POD_SLOT + 1)
                     if POD_PREF_BASE + slot not in used and pod_class_id(slot) not in minors), None)

    def _plan_pod(self, target: Target, values: dict[str, str]) -> Plan:
        asked = [name for name in POD_TC_SETTINGS if name in values]
        if NET_ADDRESS in values:
            try:
                address = parse_address(values[NET_ADDRESS])
            except limits.ValueProblem as err:
                raise Rejected(BAD_VALUE, str(err)) from None
        else:
            if self.address_of is None:
                return Plan(target, (), unsupported={name: REASON_NO_ADDRESS for name in asked})
            known = self.address_of(target.id)
            if known is None:
                raise Rejected(TARGET_NOT_FOUND, f"pod {target.id} has no address yet ({REASON_NO_ADDRESS})")
            try:
                address = parse_address(known)
            except limits.ValueProblem as err:
                why = f"status.podIP from the pods topic: {err}"
                return Plan(target, (), unsupported={name: why for name in asked})
        try:
            priority = limits.within(NET_PRIORITY, limits.parse_int(NET_PRIORITY, values[NET_PRIORITY]), 0, 2) \
                if NET_PRIORITY in values else None
            egress_limit, ingress_limit = (pod_limit(name, values[name]) if name in values else None
                                           for name in (NET_EGRESS_LIMIT, NET_INGRESS_LIMIT))
        except limits.ValueProblem as err:
            raise Rejected(BAD_VALUE, str(err)) from None
        try:
            ours, classes = self._state()
            state = self._pod_state() if ours else {}
        except (OSError, subprocess.SubprocessError) as err:
            return Plan(target, (), unsupported={name: f"tc unavailable on {self.interface}: {err}" for name in asked})
        if not ours:
            why = f"no HTB root of the node classes on {self.interface} yet (a node tc actuation sets it up)"
            return Plan(target, (), unsupported={name: why for name in asked})
        slot = self._slot(str(address), state, classes)
        if slot is None:
            return Plan(target, (), unsupported={name: "no free pod slot on this interface" for name in asked})
        current = self._pod_values(slot, str(address), state, classes)
        priority = current.get(NET_PRIORITY, 0) if priority is None else priority
        egress_limit = current.get(NET_EGRESS_LIMIT, 0) if egress_limit is None else egress_limit
        ingress_limit = current.get(NET_INGRESS_LIMIT, 0) if ingress_limit is None else ingress_limit
        protocol, match = ("ip", "ip") if address.version == 4 else ("ipv6", "ip6")
        host = f"{address}/{address.max_prefixlen}"
        pref, pod_class = str(POD_PREF_BASE + slot), pod_class_id(slot)
        tc, dev, ifb = self.command, self.interface, self.ifb

        def filter_steps(device: str, parent: str, present: U32Filter | None, want_same: bool, *rule: str):
            if want_same:
                return []
            removal = [(*tc, "filter", "del", "dev", device, "parent", parent, "prio", pref)] if present else []
            return removal + [(*tc, "filter", "add", "dev", device, "parent", parent, "protocol", protocol, "prio",
                               pref, "u32", *rule)]

        def at_pref(filters: list[U32Filter]) -> U32Filter | None:
            return next((f for f in filters if f.pref == POD_PREF_BASE + slot), None)

        egress: list[tuple[str, ...]] = []
        flow = pod_class if egress_limit else CLASS_IDS[NET_CLASSES[priority]]
        if egress_limit:
            want = HtbClass(limits.MIN_RATE_BPS, egress_limit, priority, PARENT)
            if classes.get(pod_class) != want:
                egress.append((*tc, *self._class_command("replace", pod_class, want)))
        mine = at_pref(state["egress"])
        egress += filter_steps(dev, HANDLE, mine, mine is not None and mine.flowid == flow and
                               mine.address(SOURCE_OFFSETS) == str(address),
                               "match", match, "src", host, "flowid", flow)
        if not egress_limit and pod_class in classes:
            egress.append((*tc, "class", "del", "dev", dev, "classid", pod_class))
        ifb_setup: list[tuple[str, ...]] = []
        ingress: list[tuple[str, ...]] = []
        redirect, shaped = at_pref(state["ingress"]), at_pref(state["ifb_filters"])
        if ingress_limit:
            if not state["ifb_link"]:
                ifb_setup += [(*self.ip_command, "link", "add", ifb, "type", "ifb"),
                              (*self.ip_command, "link", "set", "dev", ifb, "up")]
            if not state["ifb_ours"]:
                ifb_setup.append((*tc, "qdisc", "replace", "dev", ifb, "root", "handle", HANDLE, "htb"))
            if not state["ingress_qdisc"]:
                ingress.append((*tc, "qdisc", "add", "dev", dev, "handle", INGRESS, "ingress"))
            want = HtbClass(ingress_limit, ingress_limit, 0, None)
            if state["ifb_classes"].get(pod_class) != want:
                ingress.append((*tc, "class", "replace", "dev", ifb, "parent", HANDLE, "classid", pod_class, "htb",
                                "rate", f"{want.rate_bps}bit", "ceil", f"{want.ceil_bps}bit", "quantum",
                                str(quantum(want.rate_bps))))
            ingress += filter_steps(ifb, HANDLE, shaped, shaped is not None and shaped.flowid == pod_class and
                                    shaped.address(DESTINATION_OFFSETS) == str(address),
                                    "match", match, "dst", host, "flowid", pod_class)
            ingress += filter_steps(dev, INGRESS, redirect, redirect is not None and redirect.redirect == ifb and
                                    redirect.address(DESTINATION_OFFSETS) == str(address),
                                    "match", match, "dst", host, "action", "mirred", "egress", "redirect", "dev", ifb)
        else:
            if redirect is not None:
                ingress.append((*tc, "filter", "del", "dev", dev, "parent", INGRESS, "prio", pref))
            if shaped is not None:
                ingress.append((*tc, "filter", "del", "dev", ifb, "parent", HANDLE, "prio", pref))
            if pod_class in state["ifb_classes"]:
                ingress.append((*tc, "class", "del", "dev", ifb, "classid", pod_class))
        steps = egress + ifb_setup + ingress
        return Plan(target, tuple(asked), [" ".join(step) for step in steps],
                    payload=dict(egress=egress, ifb=ifb_setup, ingress=ingress, slot=slot, address=str(address)))

    def _pod_values(self, slot: int, address: str, state: dict, classes: dict[str, HtbClass]) -> dict[str, int]:
        """The pod's settings in force: priority and limits (0: none), from its filters and classes."""
        pref, pod_class = POD_PREF_BASE + slot, pod_class_id(slot)
        egress = next((f for f in state["egress"] if f.pref == pref and f.address(SOURCE_OFFSETS) == address), None)
        if egress is None:
            return {}
        values = {NET_EGRESS_LIMIT: 0, NET_INGRESS_LIMIT: 0}
        by_class = {handle: index for index, handle in enumerate(CLASS_IDS.values())}
        if egress.flowid in by_class:
            values[NET_PRIORITY] = by_class[egress.flowid]
        elif egress.flowid == pod_class and pod_class in classes:
            values[NET_PRIORITY] = classes[pod_class].prio or 0
            values[NET_EGRESS_LIMIT] = classes[pod_class].ceil_bps
        redirect = any(f.pref == pref and f.redirect == self.ifb and f.address(DESTINATION_OFFSETS) == address
                       for f in state["ingress"])
        shaped = any(f.pref == pref and f.flowid == pod_class and f.address(DESTINATION_OFFSETS) == address
                     for f in state["ifb_filters"])
        if redirect and shaped and pod_class in state["ifb_classes"]:
            values[NET_INGRESS_LIMIT] = state["ifb_classes"][pod_class].ceil_bps
        return values

    def _execute_pod(self, plan: Plan) -> Outcome:
        payload = plan.payload
        for step in payload["egress"]:
            done, why = self._run(step)
            if not done:
                return Outcome(f"{' '.join(step)}: {why or 'failed'}" + self._drop_pod(payload["slot"]))
        for step in payload["ifb"]:
            done, why = self._run(step)
            if not done:
                plan.unsupported[NET_INGRESS_LIMIT] = f"no ifb device for ingress shaping ({' '.join(step)}: {why})"
                plan.requested = tuple(name for name in plan.requested if name != NET_INGRESS_LIMIT)
                return Outcome()
        for step in payload["ingress"]:
            done, why = self._run(step)
            if not done:
                return Outcome(f"{' '.join(step)}: {why or 'failed'}" + self._drop_pod(payload["slot"]))
        return Outcome()

    def _drop_pod(self, slot: int) -> str:
        """Remove the pod's filters and classes after a failed step (deletions of absent ones fail harmlessly):
        its packets go to the default class."""
        pref = str(POD_PREF_BASE + slot)
        for device, parent in ((self.interface, HANDLE), (self.interface, INGRESS), (self.ifb, HANDLE)):
            self._run((*self.command, "filter", "del", "dev", device, "parent", parent, "prio", pref))
        for device in (self.interface, self.ifb):
            self._run((*self.command, "class", "del", "dev", device, "classid", pod_class_id(slot)))
        return "; the pod's filters and classes were removed (its packets go to L0)"

    def _read_back_pod(self, plan: Plan) -> dict[str, str]:
        try:
            ours, classes = self._state()
            state = self._pod_state() if ours else {}
        except (OSError, subprocess.SubprocessError):
            return {}
        address = plan.payload["address"] if plan.payload else None
        current = self._pod_values(plan.payload["slot"], address, state, classes) if ours and address else {}
        if not current:
            return {}
        read = {**{name: str(value) for name, value in current.items()}, NET_ADDRESS: address}
        return {name: read[name] for name in plan.requested if name in read}
