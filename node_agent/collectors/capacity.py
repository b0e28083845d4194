"""Node capacity as the kubelet reports it: online CPUs, MemTotal, max pods, GPUs.

``cpu`` = number of online CPUs (``/sys/devices/system/cpu/online``; the
process's CPU count when the file is unreadable), in milli-cores; ``memory`` =
MemTotal in bytes; ``pods`` = the kubelet's maxPods; ``nvidia.com/gpu`` = the
GPUs NVML found, as NVIDIA's device plugin advertises them. Allocatable is
capacity: this agent reserves nothing (kubelet reservations are not known here).
"""

from __future__ import annotations

import os
from pathlib import Path

from node_agent.collectors.memory import parse_meminfo
from node_agent.collectors.topology import online_cpus
from node_agent.hostfs import read_text
from streams.koordinator.resources import NVIDIA_GPU



def node_capacity(sys_root: Path, proc_root: Path, max_pods: int, gpus: int = 0) -> dict[str, int]:
    """Canonical integers (milli-cores, bytes, counts); a resource that cannot be read is left out."""
    capacity: dict[str, int] = {}
    cpus = online_cpus(sys_root)
    count = len(cpus) if cpus else os.cpu_count()
    if count:
        capacity["cpu"] = count * 1000
    meminfo = parse_meminfo(read_text(proc_root / "meminfo"))
    if meminfo is not None:
        capacity["memory"] = meminfo.total
    capacity["pods"] = max_pods
    if gpus:
        capacity[NVIDIA_GPU] = gpus
    return capacity
