"""tc backend: egress bandwidth classes L0/L1/L2 (terway-qos priorities) as HTB on one interface.

Tree (``tc`` subprocess, idempotent with ``replace``)::

    qdisc htb 1: root default 0x10          unclassified traffic goes to L0 (system and LS)
      class 1:1   rate = ceil = total_bps
        class 1:10  L0  prio 0  rate = L0.request_bps  ceil = L0.limit_bps
        class 1:11  L1  prio 1  rate = L1.request_bps  ceil = L1.limit_bps
        class 1:12  L2  prio 2  rate = L2.request_bps  ceil = L2.limit_bps

The actuator owns the qdisc and the classes only. Which packets go to L1 and
L2 (net_cls class ids of the BE pods' cgroups, or filters) is not in the
actuation contract yet; whoever classifies adds filters under ``1:``.

A value not in the actuation keeps the one in force (a first setup needs
``total_bps``; missing requests default to the 1 Mbit/s floor and limits to
the total). Ranges (``limits.py``), checked on the values that would be in
force (asked for, or kept): total within [1 Mbit/s, 400 Gbit/s]; each
request at least 1 Mbit/s and the requests together within the total; each
limit between its request and the total. A value outside them is refused
(``bad-value``), never clamped. HTB keeps rates in bytes per second, so
values are rounded down to a multiple of 8 bit/s. Replacing a
non-HTB root qdisc (e.g. ``mq`` on a multi-queue NIC) serialises egress
through one queue: that is the cost of shaping.

Each step is checked; on a failure the classes changed so far get their
previous rates back (or are deleted if new), and a root qdisc created by
this actuation is deleted, restoring the interface's default. Read back:
``tc class show`` (iproute2's ``-j`` output does not cover HTB classes),
parsed from its text.

Pod targets (``priority``, ``ingress.limit_bps``, ``egress.limit_bps``) are
reported unsupported: putting one pod's packets in a class needs a
classifier (net_cls classids, or terway-qos' eBPF programs keyed by the
pod's address), and ingress shaping an IFB device; neither is set up here
(this host has no net_cls hierarchy either).
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
from collections.abc import Callable, Sequence

from node_agent.actuator import limits
from node_agent.actuator.backend import Outcome, Plan
from node_agent.actuator.verify import BAD_VALUE, Rejected, Target
from streams import actuation as contract
from streams.actuation import (LIMIT_BPS_SUFFIX, NET_CLASSES, POD_TC_SETTINGS, REQUEST_BPS_SUFFIX, TARGET_POD,
                               TC_SETTINGS, TOTAL_BPS)

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
POD_UNSUPPORTED = ("pod-level tc needs a classifier for the pod's packets (net_cls classid or terway-qos eBPF) "
                   "and an IFB device for ingress; this agent shapes node classes only")

Runner = Callable[[Sequence[str]], subprocess.CompletedProcess]


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


def quantum(rate_bps: int) -> int:
    """HTB's rate / r2q (10) in bytes, within the range HTB does not warn about."""
    return limits.clamp(rate_bps // 8 // 10, MIN_QUANTUM, MAX_QUANTUM)


def _bytes_exact(bps: int) -> int:
    return bps // 8 * 8


class TcBackend:
    mechanism = contract.MECHANISM_TC

    def __init__(self, interface: str, command: Sequence[str] = ("tc",), runner: Runner | None = None) -> None:
        self.interface = interface
        self.command = tuple(command)
        self.runner = runner or (lambda args: subprocess.run(args, capture_output=True, text=True,
                                                             timeout=TIMEOUT_S, check=False))

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
            return Plan(target, (), unsupported={name: POD_UNSUPPORTED for name in POD_TC_SETTINGS if name in values})
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
