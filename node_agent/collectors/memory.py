"""Node and cgroup memory usage under koordlet's page-cache policies.

Node (``/proc/meminfo``, kB x 1024; ``pkg/koordlet/util/meminfo.go``, ``cold_page.go``)::

    usageWithoutPageCache = MemTotal - MemAvailable                   (default)
    usageWithPageCache    = MemTotal - MemFree
    usageWithHotPageCache = MemTotal - MemFree - cold page bytes     (kidled)

Cgroup (``memory.stat``; v1 keys carry a ``total_`` prefix, v2 keys do not;
``pkg/koordlet/util/system/cgroup.go`` ``MemoryStatRaw``)::

    usageWithoutPageCache = inactive_anon + active_anon + unevictable
    usageWithPageCache    = usageWithoutPageCache + active_file + inactive_file
    usageWithHotPageCache = usageWithPageCache - cold page bytes

Without cold-page data the hot policy degrades to usageWithoutPageCache, as
koordlet's reporter does when kidled is not running. A kernel without
MemAvailable (before 3.14) is estimated as MemFree + Buffers + Cached.
"""

from __future__ import annotations

import dataclasses

from node_agent.hostfs import parse_int
from streams.koordinator.resources import (USAGE_WITH_HOT_PAGE_CACHE as WITH_HOT_PAGE_CACHE,
                                           USAGE_WITH_PAGE_CACHE as WITH_PAGE_CACHE,
                                           USAGE_WITHOUT_PAGE_CACHE as WITHOUT_PAGE_CACHE)


@dataclasses.dataclass(frozen=True, slots=True)
class MemInfo:
    total: int
    free: int
    available: int
    """Bytes."""


def parse_meminfo(text: str | None) -> MemInfo | None:
    """``/proc/meminfo`` (or a NUMA node's meminfo); None without MemTotal and MemFree."""
    if not text:
        return None
    kib: dict[str, int] = {}
    for line in text.splitlines():
        fields = line.replace(":", " ").split()
        # NUMA meminfo lines read "Node 0 MemTotal: ..."; keep the last name/value pair.
        if len(fields) >= 2 and fields[0] == "Node" and len(fields) >= 4:
            fields = fields[2:]
        if len(fields) >= 2 and (value := parse_int(fields[1])) is not None and value >= 0:
            kib[fields[0]] = value
    if "MemTotal" not in kib or "MemFree" not in kib:
        return None
    available = kib.get("MemAvailable")
    if available is None:
        available = kib["MemFree"] + kib.get("Buffers", 0) + kib.get("Cached", 0)
    total = kib["MemTotal"] * 1024
    return MemInfo(total=total, free=min(kib["MemFree"] * 1024, total), available=min(available * 1024, total))


def node_usage(info: MemInfo, policy: str, cold_bytes: int | None = None) -> int:
    if policy == WITH_PAGE_CACHE:
        return info.total - info.free
    if policy == WITH_HOT_PAGE_CACHE and cold_bytes is not None:
        return max(info.total - info.free - cold_bytes, 0)
    return info.total - info.available


@dataclasses.dataclass(frozen=True, slots=True)
class MemoryStat:
    anon: int
    """inactive_anon + active_anon + unevictable, bytes."""
    file: int
    """active_file + inactive_file, bytes."""


_ANON_KEYS = ("inactive_anon", "active_anon", "unevictable")
_FILE_KEYS = ("active_file", "inactive_file")


def parse_memory_stat(values: dict[str, int], v1: bool) -> MemoryStat | None:
    """The parts of ``memory.stat`` the policies need; None when any is missing."""
    prefix = "total_" if v1 else ""
    try:
        anon = sum(values[prefix + key] for key in _ANON_KEYS)
        file = sum(values[prefix + key] for key in _FILE_KEYS)
    except KeyError:
        return None
    if anon < 0 or file < 0:
        return None
    return MemoryStat(anon=anon, file=file)


def cgroup_usage(stat: MemoryStat, policy: str, cold_bytes: int | None = None) -> int:
    if policy == WITH_PAGE_CACHE:
        return stat.anon + stat.file
    if policy == WITH_HOT_PAGE_CACHE and cold_bytes is not None:
        return max(stat.anon + stat.file - cold_bytes, 0)
    return stat.anon
