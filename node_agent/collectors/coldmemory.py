"""Cold page bytes from kidled's ``memory.idle_page_stats`` (Alibaba Cloud Linux, Anolis).

kidled ages pages by scan periods and reports bytes per age bucket::

    # version: 1.0
    # page_scans: 24 ... # buckets: 1,2,5,15,30,60,120,240
    csei  v0 ... v7      (one line per page kind, 17 kinds, 8 buckets)

Cold bytes = sum over the file-backed kinds cfei, dfei, cfui, dfui of the
buckets with index >= the cold boundary (5: idle for 60 scan periods or more)
(``pkg/koordlet/util/system/kidled_util.go``). kidled is present when
``/sys/kernel/mm/kidled/scan_period_in_seconds`` and ``use_hierarchy`` exist.
"""

from __future__ import annotations

from pathlib import Path

from node_agent.hostfs import exists, parse_int

FILE_NAME = "memory.idle_page_stats"
COLD_BOUNDARY = 5
COLD_KINDS = ("cfei", "dfei", "cfui", "dfui")
KINDS = ("csei", "dsei", "cfei", "dfei", "csui", "dsui", "cfui", "dfui",
         "csea", "dsea", "cfea", "dfea", "csua", "dsua", "cfua", "dfua", "slab")
BUCKETS = 8


def kidled_present(sys_root: Path) -> bool:
    kidled = sys_root / "kernel" / "mm" / "kidled"
    return exists(kidled / "scan_period_in_seconds") and exists(kidled / "use_hierarchy")


def parse_idle_page_stats(text: str | None) -> dict[str, list[int]] | None:
    """Bytes per bucket of each page kind; None unless it is a version 1.0 file with every kind."""
    if not text:
        return None
    lines = text.strip().splitlines()
    if not lines or lines[0].split()[-1:] != ["1.0"] or "version" not in lines[0]:
        return None
    kinds: dict[str, list[int]] = {}
    for line in lines[1:]:
        fields = line.split()
        if len(fields) == BUCKETS + 1 and fields[0] in KINDS:
            values = [parse_int(v) for v in fields[1:]]
            if any(v is None or v < 0 for v in values):
                return None
            kinds[fields[0]] = values
    if set(kinds) != set(KINDS):
        return None
    return kinds


def cold_bytes(text: str | None, boundary: int = COLD_BOUNDARY) -> int | None:
    """Cold page bytes in one ``memory.idle_page_stats``; None when the file is absent or malformed."""
    kinds = parse_idle_page_stats(text)
    if kinds is None:
        return None
    return sum(sum(kinds[kind][boundary:]) for kind in COLD_KINDS)
