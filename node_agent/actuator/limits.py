"""Safe ranges of every value the actuator writes, and the unit conversions between cgroup versions.

Floors and ranges come from Koordinator where it has one (pinned in
``tests/node_agent/actuator/test_limits.py``):

- CFS quota: ``-1`` (unlimited) or at least ``max(1000 us, ceil(period x 0.02))``.
  1000 us is the kernel's minimum quota (and koordlet's MilliCPUToQuota
  floor); 0.02 cores is cpusuppress' ``beMinQuota`` (2000 us per 100 ms
  period), so a suppressed BE tier always keeps 2 % of a CPU. Capped at
  4096 CPUs' worth of the period.
- CFS period: the kernel's range, 1000 us .. 1 s; default 100000 us.
- ``cpu.shares`` 2 .. 262144 (kernel MIN/MAX_SHARES); ``cpu.weight`` 1 .. 10000,
  converted as koordlet's ``ConvertCPUSharesToWeight``::

      weight = 1 + (shares - 2) * 9999 // 262142        shares = 2 + (weight - 1) * 262142 // 9999

- CFS burst: 0 .. 100 x 10 x 100000 us (koordlet's validator), and never above
  the quota in force (the kernel refuses burst > quota).
- ``cpu.bvt_warp_ns`` -1 .. 2 (group identity); ``cpu.idle`` 0 or 1.
- ``cpuset.cpus``: at least ``min(2, cpus available)`` CPUs (cpusuppress'
  ``beMinCPUSetCores``), never outside the parent's set.
- Memory limit: ``-1`` or at least 64 MiB. Koordinator has no floor here; 64 MiB
  is koordstream's, below it a container runtime's own shim and the pause
  process are at risk.
- Percents (resctrl) 0 .. 100; MBA at least the host's ``min_bandwidth``.
- Network rates: at least 1 Mbit/s per class (HTB cannot shape reliably below
  that on a busy link); requests fit in the total, limits between request and total.

Numbers out of range are clamped (the acknowledgement reports the value in
force); text that is not a number is rejected.
"""

from __future__ import annotations

import math

DEFAULT_CFS_PERIOD_US = 100_000
MIN_CFS_PERIOD_US, MAX_CFS_PERIOD_US = 1_000, 1_000_000
KERNEL_MIN_QUOTA_US = 1_000
BE_MIN_QUOTA_CORES = 0.02
"""cpusuppress' beMinQuota (2000 us) over the default 100000 us period."""
MAX_QUOTA_CPUS = 4096
UNLIMITED = -1

MIN_SHARES, MAX_SHARES = 2, 262_144
MIN_WEIGHT, MAX_WEIGHT = 1, 10_000
MAX_BURST_US = 100 * 10 * 100_000
MIN_BVT, MAX_BVT = -1, 2
BE_MIN_CPUSET_CPUS = 2
MIN_MEMORY_LIMIT_BYTES = 64 << 20
MAX_MEMORY_LIMIT_BYTES = 1 << 62
"""Above this a v1 limit reads back as "unlimited" (PAGE_COUNTER_MAX x page size)."""
PAGE_SIZE = 4096

MIN_RATE_BPS = 1_000_000
MAX_RATE_BPS = 400_000_000_000


class ValueProblem(ValueError):
    """A value that cannot be clamped into shape (not a number, an empty cpuset, ...)."""


def parse_int(name: str, text: str) -> int:
    try:
        return int(str(text).strip())
    except ValueError:
        raise ValueProblem(f"{name}={text!r} is not an integer") from None


def clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))


def quota_floor_us(period_us: int) -> int:
    return max(KERNEL_MIN_QUOTA_US, math.ceil(period_us * BE_MIN_QUOTA_CORES))


def clamp_period(period_us: int) -> int:
    return clamp(period_us, MIN_CFS_PERIOD_US, MAX_CFS_PERIOD_US)


def clamp_quota(quota_us: int, period_us: int) -> int:
    """``-1`` for any negative quota (unlimited), else within [floor, 4096 CPUs]."""
    if quota_us < 0:
        return UNLIMITED
    return clamp(quota_us, quota_floor_us(period_us), period_us * MAX_QUOTA_CPUS)


def clamp_burst(burst_us: int, quota_us: int) -> int:
    high = MAX_BURST_US if quota_us < 0 else min(MAX_BURST_US, quota_us)
    return clamp(burst_us, 0, high)


def clamp_shares(shares: int) -> int:
    return clamp(shares, MIN_SHARES, MAX_SHARES)


def shares_to_weight(shares: int) -> int:
    """koordlet's ConvertCPUSharesToWeight on the clamped shares."""
    return MIN_WEIGHT + (clamp_shares(shares) - MIN_SHARES) * 9999 // 262142


def weight_to_shares(weight: int) -> int:
    return MIN_SHARES + (clamp(weight, MIN_WEIGHT, MAX_WEIGHT) - MIN_WEIGHT) * 262142 // 9999


def clamp_memory(limit_bytes: int) -> int:
    """``-1`` for any negative or huge limit; else at least the floor, rounded down to a page as the kernel does."""
    if limit_bytes < 0 or limit_bytes >= MAX_MEMORY_LIMIT_BYTES:
        return UNLIMITED
    return max(limit_bytes, MIN_MEMORY_LIMIT_BYTES) // PAGE_SIZE * PAGE_SIZE


def memory_from_kernel(value: int) -> int:
    return UNLIMITED if value < 0 or value >= MAX_MEMORY_LIMIT_BYTES else value


def clamp_percent(percent: int) -> int:
    return clamp(percent, 0, 100)


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


def clamp_cpuset(wanted: frozenset[int], allowed: frozenset[int] | None) -> frozenset[int]:
    """``wanted`` within ``allowed`` (the parent's set); at least min(2, |allowed|) CPUs or ValueProblem."""
    cpus = wanted & allowed if allowed is not None else wanted
    floor = BE_MIN_CPUSET_CPUS if allowed is None else min(BE_MIN_CPUSET_CPUS, len(allowed))
    if len(cpus) < max(floor, 1):
        raise ValueProblem(f"cpuset {format_cpulist(wanted)!r} leaves {len(cpus)} CPUs of the allowed "
                           f"{format_cpulist(allowed) if allowed is not None else 'set'}; the floor is {floor}")
    return cpus
