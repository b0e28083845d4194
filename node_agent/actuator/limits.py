"""Safe ranges of every value the actuator writes, and the unit conversions between cgroup versions.

Floors and ranges come from Koordinator where it has one (pinned in
``tests/node_agent/actuator/test_limits.py``):

- CFS quota: ``-1`` (unlimited) or at least 1000 us, the kernel's minimum
  quota (and koordlet's MilliCPUToQuota floor: a 10m limit is 1000 us).
  Capped at 4096 CPUs' worth of the period. How much a suppressed BE tier
  keeps (cpusuppress' ``beMinQuota``) is the planner's policy, not a bound here.
- CFS period: the kernel's range, 1000 us .. 1 s; default 100000 us.
- ``cpu.shares`` 2 .. 262144 (kernel MIN/MAX_SHARES); ``cpu.weight`` 1 .. 10000,
  converted as koordlet's ``ConvertCPUSharesToWeight``::

      weight = 1 + (shares - 2) * 9999 // 262142        shares = 2 + (weight - 1) * 262142 // 9999

- CFS burst: 0 .. 100 x 10 x 100000 us (koordlet's validator), and never above
  the quota in force (the kernel refuses burst > quota).
- ``cpu.bvt_warp_ns`` -1 .. 2 (group identity); ``cpu.idle`` 0 or 1.
- ``cpuset.cpus``: at least ``min(2, cpus available)`` CPUs (cpusuppress'
  ``beMinCPUSetCores``) on class and host-application targets, at least one on a
  pod (the scheduler pins an LSE/LSR pod to as few as one CPU); never outside
  the parent's set.
- Memory limit: ``-1`` or 64 MiB .. 2^62 bytes. Koordinator has no floor here; 64 MiB
  is koordstream's, below it a container runtime's own shim and the pause
  process are at risk.
- Percents (resctrl) 0 .. 100; MBA at least the host's ``min_bandwidth``.
- Network rates: at least 1 Mbit/s per class (HTB cannot shape reliably below
  that on a busy link); requests fit in the total, limits between request and total.

A requested value outside its range is refused (``bad-value``), never clamped
or widened: the agent runs as root, and a value the planner did not mean
(memory ``-5``, quota ``10``) must not become another one (unlimited, the
floor). ``-1`` is the only negative that means unlimited. Two roundings stay
because the kernel makes them anyway on write: a memory limit is rounded
down to a page (tighter, never looser), an Intel MBA percent up to the
host's ``bandwidth_gran`` (resctrl rounds it up the same way); the
acknowledgement reports the value in force. Text that is not a number is
refused too.
"""

from __future__ import annotations


DEFAULT_CFS_PERIOD_US = 100_000
MIN_CFS_PERIOD_US, MAX_CFS_PERIOD_US = 1_000, 1_000_000
KERNEL_MIN_QUOTA_US = 1_000
MAX_QUOTA_CPUS = 4096
UNLIMITED = -1

MIN_SHARES, MAX_SHARES = 2, 262_144
MIN_WEIGHT, MAX_WEIGHT = 1, 10_000
MAX_BURST_US = 100 * 10 * 100_000
MIN_BVT, MAX_BVT = -1, 2
BE_MIN_CPUSET_CPUS = 2
POD_MIN_CPUSET_CPUS = 1
MIN_MEMORY_LIMIT_BYTES = 64 << 20
MAX_MEMORY_LIMIT_BYTES = 1 << 62
"""Above this a v1 limit reads back as "unlimited" (PAGE_COUNTER_MAX x page size)."""
PAGE_SIZE = 4096

MIN_RATE_BPS = 1_000_000
MAX_RATE_BPS = 400_000_000_000


class ValueProblem(ValueError):
    """A value that is not a value of its setting, or lies outside its safe range (refused, never clamped)."""


def parse_int(name: str, text: str) -> int:
    try:
        return int(str(text).strip())
    except ValueError:
        raise ValueProblem(f"{name}={text!r} is not an integer") from None


def clamp(value: int, low: int, high: int) -> int:
    """For values the agent derives itself (an HTB quantum), never for a requested one."""
    return max(low, min(high, value))


def within(name: str, value: int, low: int, high: int) -> int:
    """``value`` when ``low <= value <= high``; ValueProblem naming the range otherwise."""
    if not low <= value <= high:
        raise ValueProblem(f"{name}={value} is outside {low}..{high}")
    return value


def check_period(period_us: int) -> int:
    return within("cpu.cfs_period_us", period_us, MIN_CFS_PERIOD_US, MAX_CFS_PERIOD_US)


def check_quota(quota_us: int, period_us: int) -> int:
    """``-1`` (unlimited) or within [floor, 4096 CPUs] of ``period_us``; any other negative is refused."""
    if quota_us == UNLIMITED:
        return UNLIMITED
    return within(f"cpu.cfs_quota_us (period {period_us})", quota_us, KERNEL_MIN_QUOTA_US,
                  period_us * MAX_QUOTA_CPUS)


def check_burst(burst_us: int, quota_us: int) -> int:
    """0 .. the validator's maximum, and not above ``quota_us`` when the quota is limited."""
    high = MAX_BURST_US if quota_us < 0 else min(MAX_BURST_US, quota_us)
    return within(f"cpu.cfs_burst_us (quota {quota_us})", burst_us, 0, high)


def check_shares(shares: int) -> int:
    return within("cpu.shares", shares, MIN_SHARES, MAX_SHARES)


def check_bvt(warp: int) -> int:
    return within("cpu.bvt_warp_ns", warp, MIN_BVT, MAX_BVT)


def shares_to_weight(shares: int) -> int:
    """koordlet's ConvertCPUSharesToWeight; ``shares`` must be in range (``check_shares``)."""
    return MIN_WEIGHT + (check_shares(shares) - MIN_SHARES) * 9999 // 262142


def weight_to_shares(weight: int) -> int:
    """The shares a weight the kernel holds stands for (reading back, never a write)."""
    return MIN_SHARES + (clamp(weight, MIN_WEIGHT, MAX_WEIGHT) - MIN_WEIGHT) * 262142 // 9999


def check_memory(limit_bytes: int) -> int:
    """``-1`` (unlimited) or within [64 MiB, 2^62) rounded down to a page as the kernel does; else refused."""
    if limit_bytes == UNLIMITED:
        return UNLIMITED
    within("memory limit", limit_bytes, MIN_MEMORY_LIMIT_BYTES, MAX_MEMORY_LIMIT_BYTES - 1)
    return limit_bytes // PAGE_SIZE * PAGE_SIZE


def memory_from_kernel(value: int) -> int:
    return UNLIMITED if value < 0 or value >= MAX_MEMORY_LIMIT_BYTES else value


def check_percent(name: str, percent: int, low: int = 0) -> int:
    return within(name, percent, low, 100)


def check_rate(name: str, rate_bps: int, low: int = MIN_RATE_BPS, high: int = MAX_RATE_BPS) -> int:
    return within(name, rate_bps, low, high)


def parse_cpulist(text: str) -> frozenset[int]:
    """A kernel CPU list (``0-3,8,10-11``); ValueProblem for anything else."""
    cpus: set[int] = set()
    text = str(text).strip()
    if not text:
        return frozenset()
    for part in text.split(","):
        first, sep, last = part.strip().partition("-")
        if not first.isdigit() or (sep and not last.isdigit()):
            raise ValueProblem(f"{text!r} is not a CPU list")
        low, high = int(first), int(last) if sep else int(first)
        if high < low or high >= 8192:
            raise ValueProblem(f"{text!r} is not a CPU list")
        cpus.update(range(low, high + 1))
    return frozenset(cpus)


def format_cpulist(cpus: frozenset[int] | set[int]) -> str:
    """Ranges in ascending order, as the kernel prints them."""
    ordered, parts = sorted(cpus), []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def check_cpuset(wanted: frozenset[int], allowed: frozenset[int] | None,
                 minimum: int = BE_MIN_CPUSET_CPUS) -> frozenset[int]:
    """``wanted`` when it lies within ``allowed`` (the parent's set) and has at least min(``minimum``, |allowed|)
    CPUs, and at least one; ValueProblem otherwise (a CPU outside the parent's set is refused, not dropped)."""
    outside = wanted - allowed if allowed is not None else frozenset()
    if outside:
        raise ValueProblem(f"cpuset {format_cpulist(wanted)!r} names CPUs {format_cpulist(outside)} outside the "
                           f"parent's {format_cpulist(allowed)}")
    floor = minimum if allowed is None else min(minimum, len(allowed))
    if len(wanted) < max(floor, 1):
        raise ValueProblem(f"cpuset {format_cpulist(wanted)!r} has {len(wanted)} CPUs; the floor is {max(floor, 1)}")
    return wanted
